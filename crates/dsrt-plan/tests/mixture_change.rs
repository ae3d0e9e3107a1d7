//! Resuming an epoch under a changed mixture: from the resume point the new
//! schedule governs, every cache's stream goes on where it stopped, no consumed sample is
//! served again, a removed cache is reported with what it consumed, and what a state cannot
//! honour (another seed, epoch, sampling or shuffle, a cache whose contents changed) is
//! refused naming the difference. On any topology, across several changes.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code

use dsrt_plan::{
    CacheShape, EpochPlan, IterState, Partition, Phase, PlanConfig, PlanError, RemainderPolicy,
    RemovedCache, Sampling, Schedule, Shuffle, Topology,
};
use proptest::prelude::*;
use std::collections::HashMap;
use std::ops::Range;

const EPOCH: u64 = 2;
const POLICY: RemainderPolicy = RemainderPolicy::Pad;

/// A cache of `len` samples in shards of 1,000, with id `id`.
fn cache(id: u64, len: u64) -> CacheShape {
    CacheShape::equal_shards(len, len.div_ceil(1000)).with_cache_id(id)
}

fn schedule(seed: u64, phases: &[(u64, &[f64])]) -> PlanConfig {
    PlanConfig {
        seed,
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

/// One run of an epoch: its plan, the state it started from and the state it stopped at.
struct Run {
    plan: EpochPlan,
    start: IterState,
    stop: IterState,
    /// Each plan cache's samples served, in the order the ranks read them.
    served: Vec<Vec<u64>>,
}

/// Runs `steps` steps of every rank (all of them with `None`) from `resume`, serving every
/// position that is not a padding repeat; the stop state goes through JSON as a checkpoint
/// stores it.
fn run(
    shapes: &[CacheShape],
    config: &PlanConfig,
    topology: Topology,
    resume: Option<&IterState>,
    steps: Option<u64>,
) -> Run {
    let (plan, start) = EpochPlan::for_run(shapes, config, EPOCH, topology, POLICY, resume)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut served = vec![Vec::new(); shapes.len()];
    let mut taken = 0;
    for rank in 0..topology.world_size {
        let partition = Partition::new(rank, topology, POLICY, &start).unwrap();
        taken = steps.unwrap_or(partition.len()).min(partition.len());
        let mut cursor = plan.cursor();
        for step in (0..taken).filter(|&s| !partition.is_padding(s)) {
            let sample = cursor
                .get(&plan, partition.global_position(step))
                .unwrap_or_else(|| panic!("rank {rank} step {step} reads nothing"));
            served[sample.cache].push(sample.sample);
        }
    }
    let stop = Partition::new(0, topology, POLICY, &start)
        .unwrap()
        .state_after(&start, taken);
    let stop = serde_json::from_str(&serde_json::to_string(&stop).unwrap()).unwrap();
    Run {
        plan,
        start,
        stop,
        served,
    }
}

/// The global positions `start` left to read and `stop` no longer does.
fn consumed_between(start: &IterState, stop: &IterState) -> Vec<Range<u64>> {
    let left = stop.remaining();
    let mut out = Vec::new();
    for range in start.remaining() {
        let mut at = range.start;
        for kept in left
            .iter()
            .filter(|k| k.start < range.end && k.end > range.start)
        {
            if kept.start > at {
                out.push(at..kept.start);
            }
            at = kept.end.max(at);
        }
        if at < range.end {
            out.push(at..range.end);
        }
    }
    out
}

/// Each cache's draws over the global positions a run consumed, as its plan schedules them.
fn scheduled_draws(run: &Run) -> Vec<u64> {
    let mut draws = vec![0; run.served.len()];
    for range in consumed_between(&run.start, &run.stop) {
        let from = run.plan.stream_positions_at(range.start);
        let to = run.plan.stream_positions_at(range.end);
        for (c, draw) in draws.iter_mut().enumerate() {
            *draw += to[c] - from[c];
        }
    }
    draws
}

fn served_counts(run: &Run) -> Vec<u64> {
    run.served.iter().map(|s| s.len() as u64).collect()
}

/// Every sample served by `runs`, by cache id, sorted.
fn by_id(runs: &[(&[CacheShape], &Run)]) -> HashMap<u64, Vec<u64>> {
    let mut all: HashMap<u64, Vec<u64>> = HashMap::new();
    for (shapes, run) in runs {
        for (c, served) in run.served.iter().enumerate() {
            all.entry(shapes[c].cache_id.unwrap())
                .or_default()
                .extend(served);
        }
    }
    for samples in all.values_mut() {
        samples.sort_unstable();
    }
    all
}

/// The first `count` samples of cache `cache`'s stream in `plan`, sorted.
fn stream_prefix(plan: &EpochPlan, cache: usize, count: u64) -> Vec<u64> {
    let mut cursor = plan.cursor();
    let mut samples: Vec<u64> = (0..count)
        .map(|k| plan.stream_sample(cache, k, &mut cursor))
        .collect();
    samples.sort_unstable();
    samples
}

/// 1e6 samples over three caches; stop at 30% of the first phase on 8
/// ranks; resume on 6 ranks with other weights and a fourth cache; stop again; resume on 12
/// ranks without the second cache and read the epoch to its end.
#[test]
fn two_changes_on_three_topologies_serve_nothing_twice_and_follow_each_schedule() {
    let (a, b, c, d) = (
        cache(0xA, 400_000),
        cache(0xB, 350_000),
        cache(0xC, 250_000),
        cache(0xD, 300_000),
    );
    let first = vec![a.clone(), b.clone(), c.clone()];
    let first_config = schedule(
        5,
        &[(500_000, &[2.0, 2.0, 1.0]), (300_000, &[1.0, 1.0, 2.0])],
    );
    let run1 = run(
        &first,
        &first_config,
        Topology::new(8, 4).unwrap(),
        None,
        Some(150_000 / 8),
    );
    assert_eq!(run1.stop.position, 150_000);
    assert!(run1.plan.mixture_change().is_none());

    let second = vec![a.clone(), b.clone(), c.clone(), d.clone()];
    let second_config = schedule(
        5,
        &[
            (300_000, &[1.0, 1.0, 1.0, 1.0]),
            (300_000, &[1.0, 2.0, 1.0, 2.0]),
        ],
    );
    let run2 = run(
        &second,
        &second_config,
        Topology::new(6, 3).unwrap(),
        Some(&run1.stop),
        Some(200_001 / 6),
    );
    let change = run2.plan.mixture_change().unwrap();
    assert_eq!(change.position, 150_000);
    assert!(change.weights && change.schedule);
    assert_eq!(change.added, [3]);
    assert!(change.removed.is_empty());
    assert_eq!(
        (
            run2.start.position,
            run2.start.epoch_len,
            run2.start.remaining.as_ref()
        ),
        (150_000, 600_000, None)
    );

    let third = vec![a.clone(), c.clone(), d.clone()];
    let third_config = schedule(
        5,
        &[(450_000, &[1.0, 1.0, 1.0]), (250_000, &[1.0, 0.0, 1.0])],
    );
    let run3 = run(
        &third,
        &third_config,
        Topology::new(12, 4).unwrap(),
        Some(&run2.stop),
        None,
    );
    assert!(run3.stop.is_finished());
    let change = run3.plan.mixture_change().unwrap();
    assert_eq!(change.position, run2.stop.position);
    assert!(change.added.is_empty());
    let b_served = run1.served[1].len() as u64 + run2.served[1].len() as u64;
    assert_eq!(
        change.removed,
        [RemovedCache {
            cache: 1,
            cache_id: Some(0xB),
            consumed: b_served
        }]
    );

    // Per cache, each run draws what its schedule gives the positions it consumed.
    for run in [&run1, &run2, &run3] {
        assert_eq!(served_counts(run), scheduled_draws(run));
    }
    // From each resume point to the end the new schedule governs: the resumed epoch's
    // positions hold each cache's shares of the new phases past that point.
    let from = run3.plan.stream_positions_at(run3.start.position);
    let expected: Vec<u64> = (0..3).map(|c| run3.plan.shares()[c] - from[c]).collect();
    assert_eq!(served_counts(&run3), expected);

    // No sample twice in the epoch, and every kept cache served exactly the first samples of
    // its own stream (the order it had since the epoch began): nothing skipped.
    let served = by_id(&[(&first, &run1), (&second, &run2), (&third, &run3)]);
    for (id, samples) in &served {
        assert!(
            samples.windows(2).all(|w| w[0] < w[1]),
            "cache {id:#x} served a sample twice"
        );
    }
    for (position, id) in [(0, 0xA), (1, 0xC), (2, 0xD)] {
        let samples = &served[&id];
        assert_eq!(
            samples,
            &stream_prefix(&run3.plan, position, samples.len() as u64),
            "cache {id:#x}"
        );
    }
    // The kept caches' streams are the ones the first plan began (C moved to position 1).
    let first_plan = &run1.plan;
    for (position, id) in [(0, 0xA), (2, 0xC)] {
        let count = served[&id].len() as u64;
        assert_eq!(stream_prefix(first_plan, position, count), served[&id]);
    }
    // The state holds ranges, not samples.
    let json = serde_json::to_string(&run3.stop).unwrap();
    assert!(json.len() < 4096, "{} bytes of state", json.len());
}

fn first_state() -> (Vec<CacheShape>, IterState) {
    let shapes = vec![cache(1, 3000), cache(2, 2000), cache(3, 1000)];
    let config = schedule(9, &[(3000, &[1.0, 1.0, 1.0]), (2000, &[2.0, 1.0, 1.0])]);
    let run = run(
        &shapes,
        &config,
        Topology::new(4, 2).unwrap(),
        None,
        Some(200),
    );
    (shapes, run.stop)
}

fn refusal(shapes: &[CacheShape], config: &PlanConfig, state: &IterState) -> String {
    let topology = Topology::new(2, 1).unwrap();
    match EpochPlan::for_run(shapes, config, EPOCH, topology, POLICY, Some(state)) {
        Err(error @ PlanError::State(_)) => error.to_string(),
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("accepted"),
    }
}

/// What the state cannot honour is refused, naming the difference, even
/// together with a change it could follow.
#[test]
fn another_seed_epoch_mode_or_changed_cache_is_refused_naming_it() {
    let (shapes, state) = first_state();
    let changed = schedule(9, &[(4000, &[1.0, 3.0, 1.0])]);
    let text = refusal(
        &shapes,
        &PlanConfig {
            seed: 10,
            ..changed.clone()
        },
        &state,
    );
    assert!(text.contains("seed 9 (the plan's is 10)"), "{text}");
    let mut grown = shapes.clone();
    grown[1] = cache(2, 2500);
    let text = refusal(&grown, &changed, &state);
    assert!(
        text.contains(
            "cache id 0x0000000000000002 (position 1) of 2000 samples in 2 shard runs \
                       (the plan's has 2500 in 3): its contents changed"
        ),
        "{text}"
    );
    let text = refusal(
        &shapes,
        &PlanConfig {
            sampling: Sampling::WithReplacement,
            ..changed.clone()
        },
        &state,
    );
    assert!(text.contains("sampling without_replacement"), "{text}");
    let text = refusal(
        &shapes,
        &PlanConfig {
            shuffle: Shuffle::Full,
            ..changed.clone()
        },
        &state,
    );
    assert!(
        text.contains("shuffle local(4) (the plan's is full)"),
        "{text}"
    );
    let topology = Topology::new(2, 1).unwrap();
    let error = EpochPlan::for_run(&shapes, &changed, EPOCH + 1, topology, POLICY, Some(&state))
        .err()
        .unwrap();
    assert!(
        error.to_string().contains("epoch 2 (the plan's is 3)"),
        "{error}"
    );
    // The same change of a faithful state is followed.
    EpochPlan::for_run(&shapes, &changed, EPOCH, topology, POLICY, Some(&state)).unwrap();
}

#[test]
fn a_state_without_a_change_keeps_its_bytes_and_a_resume_without_one_reports_none() {
    let (shapes, state) = first_state();
    let json = serde_json::to_string(&state).unwrap();
    assert!(!json.contains("continuation"), "{json}");
    let config = schedule(9, &[(3000, &[1.0, 1.0, 1.0]), (2000, &[2.0, 1.0, 1.0])]);
    let topology = Topology::new(3, 1).unwrap();
    let (plan, resumed) =
        EpochPlan::for_run(&shapes, &config, EPOCH, topology, POLICY, Some(&state)).unwrap();
    assert!(plan.mixture_change().is_none());
    assert_eq!(resumed, state);
}

/// A continuation read from a file is checked before a plan computes with it.
#[test]
fn a_continuation_with_bad_consumed_ranges_is_refused() {
    let (shapes, state) = first_state();
    let changed = schedule(9, &[(4000, &[1.0, 3.0, 1.0])]);
    let topology = Topology::new(2, 1).unwrap();
    let (_, resumed) =
        EpochPlan::for_run(&shapes, &changed, EPOCH, topology, POLICY, Some(&state)).unwrap();
    let mut bad = resumed.clone();
    let consumed = &mut bad.continuation.as_mut().unwrap().streams[0].consumed;
    assert!(consumed.len() >= 2, "{consumed:?}");
    consumed.swap(0, 1);
    for resume in [
        &bad,
        &IterState {
            mixture: None,
            ..bad.clone()
        },
    ] {
        match EpochPlan::for_run(&shapes, &changed, EPOCH, topology, POLICY, Some(resume)) {
            Err(PlanError::State(text)) => {
                assert!(text.contains("stream 0 has consumed range"), "{text}");
            }
            other => panic!("{:?}", other.map(|(_, s)| s)),
        }
    }
    let other = schedule(9, &[(4000, &[1.0, 1.0, 1.0])]);
    let error = EpochPlan::for_run(&shapes, &other, EPOCH, topology, POLICY, Some(&bad));
    assert!(matches!(error, Err(PlanError::State(_))));
}

/// Caches matched by position where they have no ids (v2 manifests): the last one removed.
#[test]
fn caches_without_ids_are_matched_by_position() {
    let shapes: Vec<CacheShape> = [3000, 2000, 1000]
        .iter()
        .map(|&len| CacheShape::equal_shards(len, 3))
        .collect();
    let config = schedule(9, &[(5000, &[1.0, 1.0, 1.0])]);
    let first = run(
        &shapes,
        &config,
        Topology::new(2, 1).unwrap(),
        None,
        Some(500),
    );
    let fewer = &shapes[..2];
    let second = run(
        fewer,
        &schedule(9, &[(4000, &[1.0, 1.0])]),
        Topology::new(3, 1).unwrap(),
        Some(&first.stop),
        None,
    );
    let change = second.plan.mixture_change().unwrap();
    assert_eq!(change.removed.len(), 1);
    assert_eq!(change.removed[0].cache, 2);
    assert_eq!(change.removed[0].cache_id, None);
    assert_eq!(change.removed[0].consumed, first.served[2].len() as u64);
    for c in 0..2 {
        let mut served: Vec<u64> = first.served[c]
            .iter()
            .chain(&second.served[c])
            .copied()
            .collect();
        served.sort_unstable();
        assert_eq!(served, stream_prefix(&second.plan, c, served.len() as u64));
    }
}

/// A change of caches or weights at a random point of a random schedule, once or twice, on
/// random topologies, under every shuffle and sampling.
#[derive(Debug, Clone)]
struct Change {
    /// Cache ids of the plan, from 0..6 (lengths by id).
    ids: Vec<u64>,
    phases: Vec<(u64, Vec<f64>)>,
    topology: (u64, u64),
    /// Steps per rank before stopping (a fraction in thousandths of the rank's length).
    stop: u64,
}

fn change_strategy() -> impl Strategy<Value = Change> {
    (
        proptest::sample::subsequence((0u64..6).collect::<Vec<_>>(), 1..=4),
        1usize..=3,
        (1u64..=3, 1u64..=3),
        0u64..=1000,
    )
        .prop_flat_map(|(ids, phases, (nodes, per_node), stop)| {
            let n = ids.len();
            proptest::collection::vec(
                (20u64..400, proptest::collection::vec(0.0f64..4.0, n)),
                phases,
            )
            .prop_map(move |phases| Change {
                ids: ids.clone(),
                phases: phases
                    .into_iter()
                    .map(|(samples, mut weights)| {
                        weights[0] += 0.5;
                        (samples, weights)
                    })
                    .collect(),
                topology: (nodes * per_node, per_node),
                stop,
            })
        })
}

fn shuffle_strategy() -> impl Strategy<Value = Shuffle> {
    prop_oneof![
        Just(Shuffle::Sequential),
        Just(Shuffle::Full),
        (1usize..4).prop_map(|window_shards| Shuffle::Local { window_shards }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_changes_serve_each_stream_once_in_order(
        changes in proptest::collection::vec(change_strategy(), 2..=3),
        shuffle in shuffle_strategy(),
        sampling in prop_oneof![
            Just(Sampling::WithoutReplacement),
            Just(Sampling::WithReplacement),
            Just(Sampling::RunsWithReplacement),
        ],
        seed in 0u64..1000,
    ) {
        let lens = [300u64, 170, 90, 400, 55, 260];
        let mut runs: Vec<(Vec<CacheShape>, Run)> = Vec::new();
        for (i, change) in changes.iter().enumerate() {
            let shapes: Vec<CacheShape> = change
                .ids
                .iter()
                .map(|&id| CacheShape::equal_shards(lens[id as usize], 7).with_cache_id(id))
                .collect();
            let config = PlanConfig {
                shuffle,
                sampling,
                ..schedule(
                    seed,
                    &change.phases.iter().map(|(s, w)| (*s, &w[..])).collect::<Vec<_>>(),
                )
            };
            let topology = Topology::new(change.topology.0, change.topology.1).unwrap();
            let last = i + 1 == changes.len();
            let steps = {
                let resume = runs.last().map(|(_, r)| &r.stop);
                let (_, start) =
                    EpochPlan::for_run(&shapes, &config, EPOCH, topology, POLICY, resume).unwrap();
                let len = Partition::new(0, topology, POLICY, &start).unwrap().len();
                (!last).then_some(len * change.stop / 1000)
            };
            let this = run(&shapes, &config, topology, runs.last().map(|(_, r)| &r.stop), steps);
            prop_assert_eq!(served_counts(&this), scheduled_draws(&this));
            if let (Some(change), Some((before, _))) = (this.plan.mixture_change(), runs.last()) {
                for removed in &change.removed {
                    prop_assert!(!shapes.iter().any(|s| s.cache_id == before[removed.cache].cache_id));
                }
            }
            runs.push((shapes, this));
        }
        let (shapes, last) = runs.last().unwrap();
        prop_assert!(last.stop.is_finished());
        let pairs: Vec<(&[CacheShape], &Run)> =
            runs.iter().map(|(s, r)| (&s[..], r)).collect();
        let served = by_id(&pairs);
        // Each cache of the last plan served, across every change, the samples of exactly
        // the stream positions its continuation records consumed plus those the last run
        // mapped past them: each position once, none skipped before the last one served.
        let continuation = last.start.continuation.as_ref();
        let from = last.plan.stream_positions_at(continuation.map_or(0, |c| c.position));
        let mut cursor = last.plan.cursor();
        for (c, shape) in shapes.iter().enumerate() {
            let mut positions: Vec<Range<u64>> = continuation
                .map(|k| k.streams[c].consumed.iter().map(|&[s, e]| s..e).collect())
                .unwrap_or_default();
            let before = positions.len();
            positions.extend(last.plan.stream_ranges(c, from[c]..last.plan.shares()[c]));
            positions.sort_unstable_by_key(|r| r.start);
            prop_assert!(
                positions.windows(2).all(|w| w[0].end <= w[1].start),
                "cache {}: the last run reread consumed positions ({} recorded)", c, before
            );
            let mut expected: Vec<u64> = positions
                .into_iter()
                .flatten()
                .map(|k| last.plan.stream_sample(c, k, &mut cursor))
                .collect();
            expected.sort_unstable();
            prop_assert_eq!(&served[&shape.cache_id.unwrap()], &expected);
        }
    }
}
