//! Epoch plans and partitions: determinism, coverage, weights, locality, equal rank lengths and
//! elastic resume.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_plan::{
    CacheShape, EpochPlan, IterState, Partition, PlanConfig, PlanError, PlannedSample,
    RemainderPolicy, Sampling, Shuffle,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// A cache of `len` samples in shards of `per_shard` samples.
fn shape(len: u64, per_shard: u64) -> CacheShape {
    CacheShape::from_shard_ids((0..len).map(|i| i / per_shard.max(1)))
}

fn order(plan: &EpochPlan) -> Vec<PlannedSample> {
    (0..plan.len()).map(|p| plan.get(p).unwrap()).collect()
}

#[test]
fn shapes_from_shard_ids_are_runs() {
    let s = CacheShape::from_shard_ids([0, 0, 1, 1, 1, 0]);
    assert_eq!(s.len, 6);
    assert_eq!(s.runs, vec![0..2, 2..5, 5..6]);
}

#[test]
fn without_weights_every_sample_appears_exactly_once() {
    let shapes = [shape(100, 10), shape(37, 5), shape(0, 1)];
    for shuffle in [
        Shuffle::Sequential,
        Shuffle::Full,
        Shuffle::Local { window_shards: 2 },
    ] {
        let config = PlanConfig {
            seed: 9,
            shuffle,
            ..PlanConfig::default()
        };
        let plan = EpochPlan::build(&shapes, &config, 0).unwrap();
        let mut seen: Vec<(usize, u64)> =
            order(&plan).iter().map(|s| (s.cache, s.sample)).collect();
        seen.sort_unstable();
        let expected: Vec<(usize, u64)> = (0..100)
            .map(|i| (0, i))
            .chain((0..37).map(|i| (1, i)))
            .collect();
        assert_eq!(seen, expected, "{shuffle:?}");
    }
}

#[test]
fn the_order_is_a_function_of_seed_and_epoch() {
    let shapes = [shape(200, 16), shape(50, 8)];
    let config = PlanConfig {
        seed: 1,
        ..PlanConfig::default()
    };
    let a = EpochPlan::build(&shapes, &config, 3).unwrap();
    assert_eq!(a, EpochPlan::build(&shapes, &config, 3).unwrap());
    assert_ne!(
        order(&a),
        order(&EpochPlan::build(&shapes, &config, 4).unwrap())
    );
    let other_seed = PlanConfig { seed: 2, ..config };
    assert_ne!(
        order(&a),
        order(&EpochPlan::build(&shapes, &other_seed, 3).unwrap())
    );
}

#[test]
fn weights_set_each_caches_share() {
    let shapes = [shape(1000, 50), shape(10, 5), shape(500, 50)];
    let config = PlanConfig {
        seed: 5,
        weights: Some(vec![1.0, 1.0, 2.0]),
        samples_per_epoch: Some(1000),
        ..PlanConfig::default()
    };
    let plan = EpochPlan::build(&shapes, &config, 0).unwrap();
    let mut counts = [0u64; 3];
    let mut per_cache: HashMap<(usize, u64), u64> = HashMap::new();
    for s in order(&plan) {
        counts[s.cache] += 1;
        *per_cache.entry((s.cache, s.sample)).or_default() += 1;
    }
    assert_eq!(counts, [250, 250, 500]);
    // Without replacement, the 10-sample cache is passed over 25 times, each sample 25 times.
    assert!((0..10).all(|i| per_cache[&(1, i)] == 25));
    // Zero weight: absent.
    let config = PlanConfig {
        weights: Some(vec![0.0, 1.0, 0.0]),
        samples_per_epoch: Some(7),
        ..config
    };
    let plan = EpochPlan::build(&shapes, &config, 0).unwrap();
    assert!(order(&plan).iter().all(|s| s.cache == 1));
    assert_eq!(plan.len(), 7);
}

#[test]
fn with_replacement_draws_uniformly() {
    let shapes = [shape(10, 2)];
    let config = PlanConfig {
        seed: 3,
        weights: Some(vec![1.0]),
        samples_per_epoch: Some(20_000),
        sampling: Sampling::WithReplacement,
        ..PlanConfig::default()
    };
    let plan = EpochPlan::build(&shapes, &config, 0).unwrap();
    let mut counts = [0u64; 10];
    for s in order(&plan) {
        counts[s.sample as usize] += 1;
    }
    assert!(
        counts.iter().all(|&c| (1700..2300).contains(&c)),
        "{counts:?}"
    );
}

#[test]
fn bad_weights_and_empty_caches_are_refused() {
    let shapes = [shape(10, 2), shape(0, 1)];
    let with = |weights: Vec<f64>| PlanConfig {
        weights: Some(weights),
        ..PlanConfig::default()
    };
    assert!(matches!(
        EpochPlan::build(&shapes, &with(vec![1.0]), 0),
        Err(PlanError::Weights(_))
    ));
    assert!(matches!(
        EpochPlan::build(&shapes, &with(vec![1.0, f64::NAN]), 0),
        Err(PlanError::Weights(_))
    ));
    assert!(matches!(
        EpochPlan::build(&shapes, &with(vec![-1.0, 1.0]), 0),
        Err(PlanError::Weights(_))
    ));
    assert!(matches!(
        EpochPlan::build(&shapes, &with(vec![0.0, 0.0]), 0),
        Err(PlanError::Weights(_))
    ));
    assert!(matches!(
        EpochPlan::build(&shapes, &with(vec![1.0, 1.0]), 0),
        Err(PlanError::EmptyCache { cache: 1 })
    ));
}

/// Number of maximal runs of consecutive plan positions (within one cache's stream) that read
/// the same shard: the fewer, the more contiguous the reads.
fn spans_per_shard(plan: &EpochPlan, per_shard: u64) -> f64 {
    let stream: Vec<u64> = order(plan).iter().map(|s| s.sample / per_shard).collect();
    let spans = 1 + stream.windows(2).filter(|w| w[0] != w[1]).count();
    let shards = stream
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    spans as f64 / shards as f64
}

#[test]
fn local_shuffle_reads_each_shard_in_few_spans() {
    let shapes = [shape(4096, 64)];
    let local = PlanConfig {
        seed: 1,
        shuffle: Shuffle::Local { window_shards: 4 },
        ..PlanConfig::default()
    };
    let full = PlanConfig {
        seed: 1,
        shuffle: Shuffle::Full,
        ..PlanConfig::default()
    };
    let local_spans = spans_per_shard(&EpochPlan::build(&shapes, &local, 0).unwrap(), 64);
    let full_spans = spans_per_shard(&EpochPlan::build(&shapes, &full, 0).unwrap(), 64);
    // A window of 4 shards is read before the next starts: every shard's samples fall within
    // one window-long stretch of the epoch.
    let plan = EpochPlan::build(&shapes, &local, 0).unwrap();
    let mut first_last: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for (p, s) in order(&plan).iter().enumerate() {
        let e = first_last
            .entry(s.sample / 64)
            .or_insert((p as u64, p as u64));
        e.1 = p as u64;
    }
    assert!(
        first_last.values().all(|(a, b)| b - a < 4 * 64),
        "a shard spread beyond its window"
    );
    assert!(local_spans < full_spans, "{local_spans} vs {full_spans}");
}

#[test]
fn partitions_refuse_bad_ranks() {
    assert!(Partition::new(2, 2, RemainderPolicy::Pad, 0, 10).is_err());
    assert!(Partition::new(0, 0, RemainderPolicy::Pad, 0, 10).is_err());
}

fn rank_positions(
    len: u64,
    world: u64,
    rank: u64,
    policy: RemainderPolicy,
    start: u64,
) -> Vec<u64> {
    let p = Partition::new(rank, world, policy, start, len).unwrap();
    (0..p.len()).map(|s| p.global_position(s)).collect()
}

proptest! {
    #[test]
    fn every_rank_gets_the_same_count_and_together_they_cover_the_epoch(len in 0u64..300, world in 1u64..40, pad in any::<bool>()) {
        let policy = if pad { RemainderPolicy::Pad } else { RemainderPolicy::Drop };
        let per_rank: Vec<Vec<u64>> = (0..world).map(|r| rank_positions(len, world, r, policy, 0)).collect();
        let count = per_rank[0].len() as u64;
        prop_assert!(per_rank.iter().all(|p| p.len() as u64 == count));
        let all: Vec<u64> = per_rank.concat();
        let mut distinct = all.clone();
        distinct.sort_unstable();
        distinct.dedup();
        match policy {
            RemainderPolicy::Pad => {
                prop_assert_eq!(count, len.div_ceil(world));
                prop_assert_eq!(distinct, (0..len).collect::<Vec<_>>(), "pad covers the epoch");
                // Repeats only in the padding: at most world - 1 of them (fewer than one round).
                prop_assert!(all.len() as u64 - len < world.max(1) || len == 0);
            }
            RemainderPolicy::Drop => {
                prop_assert_eq!(count, len / world);
                prop_assert_eq!(distinct.len(), all.len(), "drop never repeats");
                prop_assert_eq!(all.len() as u64, len - len % world);
            }
        }
    }

    #[test]
    fn elastic_resume_yields_exactly_the_rest_of_the_epoch(len in 1u64..400, w in 1u64..16, w2 in 1u64..16, steps in 0u64..60) {
        // Run with `w` ranks for `steps` steps, save, resume with `w2` ranks.
        let first = Partition::new(0, w, RemainderPolicy::Pad, 0, len).unwrap();
        let steps = steps.min(first.len());
        let consumed: Vec<u64> = (0..w).flat_map(|r| {
            let p = Partition::new(r, w, RemainderPolicy::Pad, 0, len).unwrap();
            (0..steps).map(move |s| p.global_position(s)).collect::<Vec<_>>()
        }).collect();
        let position = first.consumed_after(steps);
        let state = IterState { seed: 0, epoch: 0, position, epoch_len: len };
        let json = serde_json::to_string(&state).unwrap();
        let state: IterState = serde_json::from_str(&json).unwrap();
        state.check(0, 0, len).unwrap();
        let ranks: Vec<Partition> = (0..w2).map(|r| Partition::new(r, w2, RemainderPolicy::Pad, state.position, len).unwrap()).collect();
        prop_assert!(ranks.iter().all(|r| r.len() == ranks[0].len()), "equal counts after resume");
        // What follows the resume point, padding aside, is exactly the rest of the epoch; the
        // padding is fewer than one round.
        let padding: u64 = ranks.iter().map(|r| (0..r.len()).filter(|&s| r.is_padding(s)).count() as u64).sum();
        prop_assert!(padding < w2);
        let mut after: Vec<u64> = ranks
            .iter()
            .flat_map(|r| (0..r.len()).filter(|&s| !r.is_padding(s)).map(|s| r.global_position(s)).collect::<Vec<_>>())
            .collect();
        after.sort_unstable();
        let expected_after: Vec<u64> = (position..len).collect();
        prop_assert_eq!(&after, &expected_after);
        let mut before: Vec<u64> = consumed.into_iter().filter(|&p| p < position).collect();
        before.sort_unstable();
        before.dedup();
        prop_assert_eq!(before, (0..position).collect::<Vec<_>>());
    }

    #[test]
    fn plans_are_deterministic_and_complete(lens in proptest::collection::vec(0u64..50, 1..5), seed in any::<u64>(), window in 1usize..4) {
        let shapes: Vec<CacheShape> = lens.iter().map(|&l| shape(l, 7)).collect();
        let config = PlanConfig { seed, shuffle: Shuffle::Local { window_shards: window }, ..PlanConfig::default() };
        let a = EpochPlan::build(&shapes, &config, 1).unwrap();
        prop_assert_eq!(&a, &EpochPlan::build(&shapes, &config, 1).unwrap());
        prop_assert_eq!(a.len(), lens.iter().sum::<u64>());
    }
}
