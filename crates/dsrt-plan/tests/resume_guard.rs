//! A state records the mixture its epoch was planned with. A plan of another mixture follows
//! it from the resume point when it can (other weights, another schedule, caches added,
//! removed or moved: `tests/mixture_change.rs`), and refuses it, naming each difference, where
//! the positions it marks consumed would name other samples: another seed or mode, a cache
//! whose contents changed. A state saved before the mixture was recorded resumes as before,
//! and the same mixture resumes on another topology.
#![allow(clippy::unwrap_used)] // test code

use dsrt_plan::{
    CacheShape, EpochPlan, IterState, MixtureChange, Partition, Phase, PlanConfig, PlanError,
    RemainderPolicy, Sampling, Schedule, Shuffle, Topology,
};
use serde_json::json;

const POLICY: RemainderPolicy = RemainderPolicy::Pad;

fn shape(len: u64, per_shard: u64) -> CacheShape {
    CacheShape::from_shard_ids((0..len).map(|i| i / per_shard.max(1)))
}

fn two_caches() -> Vec<CacheShape> {
    vec![shape(301, 101), shape(250, 125)]
}

fn weighted(weights: &[f64], samples: u64) -> PlanConfig {
    PlanConfig {
        seed: 3,
        weights: Some(weights.to_vec()),
        samples_per_epoch: Some(samples),
        ..PlanConfig::default()
    }
}

fn scheduled(phases: &[(u64, &[f64])]) -> PlanConfig {
    PlanConfig {
        seed: 3,
        schedule: Some(Schedule {
            phases: phases
                .iter()
                .map(|&(samples, weights)| Phase {
                    samples,
                    weights: weights.to_vec(),
                })
                .collect(),
        }),
        ..PlanConfig::default()
    }
}

fn two_nodes() -> Topology {
    Topology::new(4, 2).unwrap()
}

/// The state after 10 steps of every rank of 2 nodes of 2 ranks, round-tripped through JSON as
/// a checkpoint stores it.
fn saved(shapes: &[CacheShape], config: &PlanConfig) -> IterState {
    let (_, start) = EpochPlan::for_run(shapes, config, 1, two_nodes(), POLICY, None).unwrap();
    let partition = Partition::new(0, two_nodes(), POLICY, &start).unwrap();
    let state = partition.state_after(&start, 10);
    serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap()
}

/// The refusal of `state` by the plan of `shapes` and `config`, as text.
fn refusal(shapes: &[CacheShape], config: &PlanConfig, state: &IterState) -> String {
    match EpochPlan::for_run(shapes, config, 1, two_nodes(), POLICY, Some(state)) {
        Err(error @ PlanError::State(_)) => error.to_string(),
        Err(other) => panic!("refused for another reason: {other}"),
        Ok((plan, _)) => panic!(
            "a state of another mixture was accepted by a plan of {} samples",
            plan.len()
        ),
    }
}

fn assert_names(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{text:?} should name {part:?}");
    }
}

/// The change the plan of `shapes` and `config` follows resuming `state`.
fn followed(shapes: &[CacheShape], config: &PlanConfig, state: &IterState) -> MixtureChange {
    let (plan, _) =
        EpochPlan::for_run(shapes, config, 1, two_nodes(), POLICY, Some(state)).unwrap();
    plan.mixture_change().cloned().unwrap()
}

#[test]
fn other_weights_at_the_same_epoch_length_are_followed_not_misread() {
    let state = saved(&two_caches(), &weighted(&[0.5, 0.5], 1000));
    let change = followed(&two_caches(), &weighted(&[0.8, 0.2], 1000), &state);
    assert!(change.weights && !change.schedule, "{change:?}");
    assert_eq!(change.position, 40);
    // Weights in other units give the same shares: the same mixture, no change.
    let (plan, _) = EpochPlan::for_run(
        &two_caches(),
        &weighted(&[2.0, 2.0], 1000),
        1,
        two_nodes(),
        POLICY,
        Some(&state),
    )
    .unwrap();
    assert!(plan.mixture_change().is_none());
}

#[test]
fn another_schedule_of_the_same_total_length_is_followed() {
    let caches = two_caches();
    let state = saved(
        &caches,
        &scheduled(&[(600, &[1.0, 1.0]), (400, &[1.0, 3.0])]),
    );
    let swapped = scheduled(&[(600, &[1.0, 1.0]), (400, &[3.0, 1.0])]);
    let change = followed(&caches, &swapped, &state);
    assert!(change.weights && !change.schedule, "{change:?}");
    let three = scheduled(&[(300, &[1.0, 1.0]), (300, &[1.0, 1.0]), (400, &[1.0, 3.0])]);
    assert!(followed(&caches, &three, &state).schedule);
    let unscheduled = weighted(&[4.0, 6.0], 1000);
    assert!(followed(&caches, &unscheduled, &state).schedule);
    let one_phase = scheduled(&[(1000, &[1.0, 1.0])]);
    let state = saved(&caches, &weighted(&[1.0, 1.0], 1000));
    let change = followed(&caches, &one_phase, &state);
    assert!(
        change.schedule && change.to_string().contains("phases changed"),
        "{change}"
    );
}

#[test]
fn another_shuffle_or_sampling_is_refused() {
    let caches = two_caches();
    let state = saved(&caches, &weighted(&[1.0, 1.0], 1000));
    let full = PlanConfig {
        shuffle: Shuffle::Full,
        ..weighted(&[1.0, 1.0], 1000)
    };
    assert_names(
        &refusal(&caches, &full, &state),
        &["shuffle local(4) (the plan's is full)"],
    );
    let narrower = PlanConfig {
        shuffle: Shuffle::Local { window_shards: 2 },
        ..weighted(&[1.0, 1.0], 1000)
    };
    assert_names(
        &refusal(&caches, &narrower, &state),
        &["shuffle local(4) (the plan's is local(2))"],
    );
    let drawn = PlanConfig {
        sampling: Sampling::WithReplacement,
        ..weighted(&[1.0, 1.0], 1000)
    };
    assert_names(
        &refusal(&caches, &drawn, &state),
        &["sampling without_replacement (the plan's is with_replacement)"],
    );
}

#[test]
fn caches_without_ids_in_another_order_are_refused() {
    // Matched by position, each reads as a cache whose contents changed.
    let state = saved(&two_caches(), &PlanConfig::default());
    let mut reordered = two_caches();
    reordered.reverse();
    assert_names(
        &refusal(&reordered, &PlanConfig::default(), &state),
        &[
            "cache 0 of 301 samples in 3 shard runs (the plan's has 250 in 2): its contents changed",
            "cache 1 of 250 samples in 2 shard runs (the plan's has 301 in 3)",
        ],
    );
}

#[test]
fn a_cache_replaced_by_one_of_the_same_length_in_other_runs_is_refused() {
    let state = saved(&two_caches(), &PlanConfig::default());
    let replaced = vec![shape(301, 101), shape(250, 50)];
    let text = refusal(&replaced, &PlanConfig::default(), &state);
    assert_names(
        &text,
        &["cache 1 of 250 samples in 2 shard runs (the plan's has 250 in 5)"],
    );
    assert!(!text.contains("cache 0"), "{text}");
}

#[test]
fn caches_are_matched_by_id_where_the_plan_knows_ids() {
    let with_ids = |ids: [u64; 2]| -> Vec<CacheShape> {
        two_caches()
            .into_iter()
            .zip(ids)
            .map(|(shape, id)| shape.with_cache_id(id))
            .collect()
    };
    let state = saved(&with_ids([0xc0de, 0x7eb]), &PlanConfig::default());
    // Another id in its place: that cache removed, another added.
    let change = followed(&with_ids([0xc0de, 0xbad]), &PlanConfig::default(), &state);
    assert_eq!(change.added, [1]);
    assert_eq!(
        (change.removed.len(), change.removed[0].cache_id),
        (1, Some(0x7eb))
    );
    // Caches of equal shapes swapped: followed by id, nothing added or removed.
    let same = |ids: [u64; 2]| -> Vec<CacheShape> {
        ids.iter()
            .map(|&id| shape(200, 40).with_cache_id(id))
            .collect()
    };
    let state = saved(&same([1, 2]), &PlanConfig::default());
    let change = followed(&same([2, 1]), &PlanConfig::default(), &state);
    assert!(change.added.is_empty() && change.removed.is_empty() && !change.weights);
    assert!(
        change
            .to_string()
            .contains("the same caches in another order"),
        "{change}"
    );
    // A plan of shapes alone (no ids) cannot tell ids apart; the shapes still match.
    EpochPlan::for_run(
        &two_caches(),
        &PlanConfig::default(),
        1,
        two_nodes(),
        POLICY,
        Some(&saved(&with_ids([5, 6]), &PlanConfig::default())),
    )
    .unwrap();
}

#[test]
fn an_added_or_a_removed_cache_is_followed_and_a_removed_one_reported() {
    let three = vec![shape(301, 101), shape(250, 125), shape(80, 20)];
    let state = saved(&two_caches(), &weighted(&[1.0, 1.0], 600));
    let change = followed(&three, &weighted(&[1.0, 1.0, 1.0], 600), &state);
    assert_eq!(change.added, [2]);
    let state = saved(&three, &weighted(&[1.0, 1.0, 1.0], 600));
    let change = followed(&two_caches(), &weighted(&[1.0, 1.0], 600), &state);
    assert_eq!(change.removed.len(), 1);
    assert_eq!(change.removed[0].cache, 2);
    assert!(change.removed[0].consumed > 0);
    assert!(
        change.removed[0]
            .to_string()
            .starts_with("cache 2 was removed after "),
        "{}",
        change.removed[0]
    );
}

#[test]
fn every_difference_that_cannot_be_followed_is_named_in_one_error() {
    let state = saved(&two_caches(), &weighted(&[0.5, 0.5], 1000));
    let other = PlanConfig {
        seed: 4,
        shuffle: Shuffle::Sequential,
        ..weighted(&[0.8, 0.2], 1000)
    };
    let text = refusal(&two_caches(), &other, &state);
    assert_names(
        &text,
        &[
            "iterator state does not match this plan",
            "the state is for seed 3 (the plan's is 4)",
            "shuffle local(4) (the plan's is sequential)",
        ],
    );
}

#[test]
fn the_state_records_the_mixture_and_the_same_mixture_resumes_on_another_topology() {
    let caches: Vec<CacheShape> = two_caches()
        .into_iter()
        .zip([11, 12])
        .map(|(shape, id)| shape.with_cache_id(id))
        .collect();
    let config = scheduled(&[(600, &[1.0, 1.0]), (400, &[1.0, 3.0])]);
    let state = saved(&caches, &config);
    let json = serde_json::to_value(&state).unwrap();
    assert_eq!(
        json["mixture"],
        json!({
            "caches": [
                {"samples": 301, "shard_runs": 3, "cache_id": 11},
                {"samples": 250, "shard_runs": 2, "cache_id": 12}
            ],
            "shares": [400, 600],
            "phases": [[300, 300], [100, 300]],
            "sampling": "without_replacement",
            "shuffle": {"local": {"window_shards": 4}}
        })
    );
    let other = Topology::new(3, 1).unwrap();
    let (plan, resumed) =
        EpochPlan::for_run(&caches, &config, 1, other, POLICY, Some(&state)).unwrap();
    assert_eq!(resumed, state);
    // Every position the state left is read once on the other topology.
    let mut read: Vec<u64> = (0..other.world_size)
        .flat_map(|rank| {
            let partition = Partition::new(rank, other, POLICY, &resumed).unwrap();
            (0..partition.len())
                .filter(|&s| !partition.is_padding(s))
                .map(|s| partition.global_position(s))
                .collect::<Vec<_>>()
        })
        .collect();
    read.sort_unstable();
    let left: Vec<u64> = state.remaining().into_iter().flatten().collect();
    assert_eq!(read, left);
    assert_eq!(plan.len(), 1000);
}

#[test]
fn a_state_saved_before_the_mixture_was_recorded_resumes_as_before() {
    let caches = two_caches();
    let config = weighted(&[0.5, 0.5], 1000);
    let state = saved(&caches, &config);
    let mut old = serde_json::to_value(&state).unwrap();
    old.as_object_mut().unwrap().remove("mixture");
    let old_text = old.to_string();
    assert!(!old_text.contains("mixture"), "{old_text}");
    let old: IterState = serde_json::from_str(&old_text).unwrap();
    assert_eq!(old.mixture, None);
    let other = Topology::new(3, 1).unwrap();
    let (_, from_new) =
        EpochPlan::for_run(&caches, &config, 1, other, POLICY, Some(&state)).unwrap();
    let (_, from_old) = EpochPlan::for_run(&caches, &config, 1, other, POLICY, Some(&old)).unwrap();
    // The same positions are left, dealt the same way; from then on the state records the
    // plan's mixture.
    assert_eq!(from_old, from_new);
    for rank in 0..other.world_size {
        let new = Partition::new(rank, other, POLICY, &from_new).unwrap();
        let old = Partition::new(rank, other, POLICY, &from_old).unwrap();
        assert_eq!(new, old);
    }
    // What it cannot tell, it does not refuse: only seed, epoch and length are checked.
    EpochPlan::for_run(
        &caches,
        &weighted(&[0.8, 0.2], 1000),
        1,
        other,
        POLICY,
        Some(&old),
    )
    .unwrap();
    let text = refusal(&caches, &weighted(&[0.8, 0.2], 1001), &old);
    assert_names(&text, &["1000 samples per epoch (the plan has 1001)"]);
}

#[test]
fn a_literal_state_of_before_resumes() {
    // As states were written before the mixture existed (and before cuts and remaining).
    let old: IterState =
        serde_json::from_str(r#"{"seed": 3, "epoch": 1, "position": 40, "epoch_len": 551}"#)
            .unwrap();
    let (_, resumed) = EpochPlan::for_run(
        &two_caches(),
        &PlanConfig {
            seed: 3,
            ..PlanConfig::default()
        },
        1,
        two_nodes(),
        POLICY,
        Some(&old),
    )
    .unwrap();
    assert_eq!(resumed.remaining, None);
    assert_eq!((resumed.position, resumed.epoch_len), (40, 551));
    assert_eq!(resumed.mixture.unwrap().shares, [301, 250]);
}
