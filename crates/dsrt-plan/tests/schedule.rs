//! Schedules: an epoch of phases, each mixing the caches at its own weights, with every
//! cache's stream running on across phases. Counts per phase, exact phase boundaries, ranks
//! that agree, passes without repeats, resume mid-phase, reports, and random schedules.
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)] // test code: known small values, counts compared as floats

use dsrt_plan::{
    weighted_shares, CacheShape, EpochPlan, IterState, Partition, Phase, PlanConfig, PlanError,
    PlanReport, PlannedSample, RemainderPolicy, ReportOptions, Sampling, Schedule, Shuffle,
    Topology,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// A cache of `len` samples in shards of `per_shard` samples.
fn shape(len: u64, per_shard: u64) -> CacheShape {
    CacheShape::from_shard_ids((0..len).map(|i| i / per_shard.max(1)))
}

fn phase(samples: u64, weights: &[f64]) -> Phase {
    Phase {
        samples,
        weights: weights.to_vec(),
    }
}

fn order(plan: &EpochPlan) -> Vec<PlannedSample> {
    let mut cursor = plan.cursor();
    (0..plan.len())
        .map(|p| cursor.get(plan, p).unwrap())
        .collect()
}

/// How far a cache's count among a phase's first `t` positions may stray from
/// `t * share / len`. Counted by time, every cache is within one sample of its rate (its
/// `k`-th sample sits at `(k + u) / share`); the first `t` positions end at a time where the
/// other caches' errors add up, so cache `c` of fraction `f` is off by less than
/// `(1 - f) + f * (drawing - 1)`: under one with two caches, not with more.
fn count_bound(shares: &[u64], cache: usize) -> f64 {
    let len: u64 = shares.iter().sum();
    let drawing = shares.iter().filter(|&&s| s > 0).count() as f64;
    let f = shares[cache] as f64 / len as f64;
    (1.0 - f) + f * (drawing - 1.0) + 1e-9
}

/// Checks `order` (the whole epoch of `plan`) against the plan's phases: the realised count
/// of each cache within each phase, at every prefix, against the phase's pro-rated count (by
/// `count_bound` when interleaved, exactly when concatenated); the stream positions the plan
/// reports at `checkpoints` and at every phase boundary; each cache's samples in order being
/// its own stream, one stream over the whole epoch; and, without replacement, no sample twice
/// in a pass over its cache.
fn check_phases(
    plan: &EpochPlan,
    order: &[PlannedSample],
    shapes: &[CacheShape],
    sampling: Sampling,
    every: u64,
) {
    let caches = shapes.len();
    let mut counts = vec![0u64; caches];
    let mut cursor = plan.cursor();
    let mut pass_seen: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); caches];
    for (position, sample) in order.iter().enumerate() {
        let position = position as u64;
        let phase_index = plan.phase_at(position);
        let phase = &plan.phases()[phase_index];
        if position == phase.positions().start {
            assert_eq!(
                counts,
                phase.stream_starts(),
                "phase {phase_index} starts where the earlier phases left each stream"
            );
            assert_eq!(plan.stream_positions_at(position), counts);
        }
        if position % every == 0 {
            assert_eq!(plan.stream_positions_at(position), counts, "at {position}");
        }
        let k = counts[sample.cache];
        assert_eq!(
            plan.stream_sample(sample.cache, k, &mut cursor),
            sample.sample,
            "position {position} reads stream position {k} of cache {}",
            sample.cache
        );
        if sampling == Sampling::WithoutReplacement {
            let len = shapes[sample.cache].len;
            if k % len == 0 {
                pass_seen[sample.cache].clear();
            }
            assert!(
                pass_seen[sample.cache].insert(sample.sample),
                "cache {} sample {} twice in pass {}",
                sample.cache,
                sample.sample,
                k / len
            );
        }
        counts[sample.cache] += 1;
        // The prefix ending after this position, within its phase.
        let t = position + 1 - phase.positions().start;
        let len = phase.positions().end - phase.positions().start;
        for (cache, &count) in counts.iter().enumerate() {
            let realised = (count - phase.stream_starts()[cache]) as f64;
            let pro_rated = t as f64 * phase.shares()[cache] as f64 / len as f64;
            let off = (realised - pro_rated).abs();
            assert!(
                off <= count_bound(phase.shares(), cache),
                "phase {phase_index}, cache {cache}, {t} positions in: {realised} vs {pro_rated}"
            );
        }
    }
    assert_eq!(
        counts,
        plan.shares(),
        "each stream as long as its shares summed"
    );
    assert_eq!(plan.stream_positions_at(plan.len()), counts);
    for (index, phase) in plan.phases().iter().enumerate() {
        let next: Vec<u64> = plan
            .phases()
            .get(index + 1)
            .map_or(counts.clone(), |p| p.stream_starts().to_vec());
        let read: Vec<u64> = next
            .iter()
            .zip(phase.stream_starts())
            .map(|(b, a)| b - a)
            .collect();
        assert_eq!(
            read,
            phase.shares(),
            "phase {index} reads exactly its shares"
        );
    }
}

const SEED: u64 = 2024;
const EPOCH: u64 = 3;

/// Code, web and math: 150,000, 400,000 and 90,000 samples. The schedule draws about 530,000
/// from code (three and a half passes, the pass boundaries inside phases), 310,000 from web
/// (under one pass) and 160,000 from math (which starts in phase 1 and passes over itself
/// inside phase 2); the last two phases' lengths do not divide by their weights.
fn three_caches() -> Vec<CacheShape> {
    vec![
        shape(150_000, 1000),
        shape(400_000, 2500),
        shape(90_000, 700),
    ]
}

fn three_phases() -> Schedule {
    Schedule {
        phases: vec![
            phase(400_000, &[0.5, 0.5, 0.0]),
            phase(349_999, &[0.8, 0.1, 0.1]),
            phase(250_001, &[0.2, 0.3, 0.5]),
        ],
    }
}

fn scheduled(schedule: Schedule) -> PlanConfig {
    PlanConfig {
        seed: SEED,
        shuffle: Shuffle::Local { window_shards: 4 },
        schedule: Some(schedule),
        ..PlanConfig::default()
    }
}

/// Eight ranks in four nodes of two.
fn eight_ranks() -> Topology {
    Topology::new(8, 2).unwrap()
}

#[test]
fn three_phases_on_eight_ranks_follow_the_schedule() {
    let shapes = three_caches();
    let config = scheduled(three_phases());
    let topology = eight_ranks();
    let (plan, state) = EpochPlan::for_run(
        &shapes,
        &config,
        EPOCH,
        topology,
        RemainderPolicy::Pad,
        None,
    )
    .unwrap();
    assert_eq!(plan.len(), 1_000_000);
    assert!(plan.is_scheduled());
    assert!(
        !plan.cuts().is_empty(),
        "windows cut at the nodes' boundaries"
    );
    let starts: Vec<u64> = plan.phases().iter().map(|p| p.positions().start).collect();
    assert_eq!(starts, [0, 400_000, 749_999]);
    for (planned, phase) in plan.phases().iter().zip(&three_phases().phases) {
        assert_eq!(
            planned.shares(),
            weighted_shares(&phase.weights, phase.samples).unwrap()
        );
    }
    // Phase 1's 349,999 split 0.8/0.1/0.1 is 279,999 + 35,000 + 35,000 (largest remainder),
    // phase 2's 250,001 split 0.2/0.3/0.5 is 50,000 + 75,000 + 125,001.
    assert_eq!(plan.shares(), [529_999, 310_000, 160_001]);

    let order = order(&plan);
    check_phases(&plan, &order, &shapes, Sampling::WithoutReplacement, 997);

    // Every rank builds its own plan, as each process of a job does, and reads its share.
    let mut read = vec![0u8; order.len()];
    for rank in 0..topology.world_size {
        let (own, own_state) = EpochPlan::for_run(
            &shapes,
            &config,
            EPOCH,
            topology,
            RemainderPolicy::Pad,
            None,
        )
        .unwrap();
        assert_eq!(own, plan, "rank {rank} plans the same epoch");
        assert_eq!(own_state, state);
        let partition = Partition::new(rank, topology, RemainderPolicy::Pad, &own_state).unwrap();
        assert_eq!(partition.len(), 125_000);
        let mut cursor = own.cursor();
        for step in 0..partition.len() {
            let position = partition.global_position(step);
            assert_eq!(
                cursor.get(&own, position),
                Some(order[position as usize]),
                "rank {rank} step {step}"
            );
            read[position as usize] += 1;
        }
    }
    assert!(
        read.iter().all(|&n| n == 1),
        "the ranks read each position once"
    );
}

#[test]
fn a_scheduled_epoch_resumed_mid_phase_continues_identically() {
    let shapes = three_caches();
    let config = scheduled(three_phases());
    let topology = eight_ranks();
    let policy = RemainderPolicy::Pad;
    let (plan, start) =
        EpochPlan::for_run(&shapes, &config, EPOCH, topology, policy, None).unwrap();
    let stop = 60_000;
    let first = Partition::new(0, topology, policy, &start).unwrap();
    let state = first.state_after(&start, stop);
    // Node 1 stopped inside phase 0, node 2 inside phase 1 (each node has taken 120,000
    // positions of its span of 250,000).
    let remaining = state.remaining();
    assert_eq!(remaining[1].start, 250_000 + 120_000);
    assert_eq!(remaining[2].start, 500_000 + 120_000);
    assert_eq!(plan.phase_at(remaining[1].start), 0);
    assert_eq!(plan.phase_at(remaining[2].start), 1);
    let state: IterState = serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();

    let (resumed, resumed_state) =
        EpochPlan::for_run(&shapes, &config, EPOCH, topology, policy, Some(&state)).unwrap();
    assert_eq!(resumed, plan);
    let mut whole_cursor = plan.cursor();
    let mut resumed_cursor = resumed.cursor();
    for rank in 0..topology.world_size {
        let whole = Partition::new(rank, topology, policy, &start).unwrap();
        let rest = Partition::new(rank, topology, policy, &resumed_state).unwrap();
        assert_eq!(rest.len(), whole.len() - stop);
        for step in 0..rest.len() {
            assert_eq!(
                rest.global_position(step),
                whole.global_position(stop + step)
            );
            assert_eq!(
                resumed_cursor.get(&resumed, rest.global_position(step)),
                whole_cursor.get(&plan, whole.global_position(stop + step)),
                "rank {rank} step {}",
                stop + step
            );
        }
    }

    // On another topology (three nodes of two), the ranks read exactly the samples of the
    // positions left, phases and all.
    let other = Topology::new(6, 2).unwrap();
    let (on_other, other_state) =
        EpochPlan::for_run(&shapes, &config, EPOCH, other, policy, Some(&state)).unwrap();
    let mut expected: BTreeMap<(usize, u64), u64> = BTreeMap::new();
    for position in state.remaining().into_iter().flatten() {
        let s = whole_cursor.get(&plan, position).unwrap();
        *expected.entry((s.cache, s.sample)).or_default() += 1;
    }
    let mut got: BTreeMap<(usize, u64), u64> = BTreeMap::new();
    let mut cursor = on_other.cursor();
    for rank in 0..other.world_size {
        let partition = Partition::new(rank, other, policy, &other_state).unwrap();
        for step in (0..partition.len()).filter(|&s| !partition.is_padding(s)) {
            let s = cursor
                .get(&on_other, partition.global_position(step))
                .unwrap();
            *got.entry((s.cache, s.sample)).or_default() += 1;
        }
    }
    assert_eq!(got, expected);
}

#[test]
fn a_state_resumed_under_a_longer_schedule_follows_it() {
    let shapes = three_caches();
    let topology = eight_ranks();
    let (_, state) = EpochPlan::for_run(
        &shapes,
        &scheduled(three_phases()),
        EPOCH,
        topology,
        RemainderPolicy::Pad,
        None,
    )
    .unwrap();
    let mut longer = three_phases();
    longer.phases[2].samples += 1;
    let (plan, resumed) = EpochPlan::for_run(
        &shapes,
        &scheduled(longer),
        EPOCH,
        topology,
        RemainderPolicy::Pad,
        Some(&state),
    )
    .unwrap();
    assert!(plan.mixture_change().is_some_and(|c| c.schedule));
    assert_eq!((resumed.position, resumed.epoch_len), (0, plan.len()));
}

#[test]
fn reports_of_a_scheduled_plan_show_its_phases_and_count_what_the_ranks_read() {
    let shapes = [shape(3000, 40), shape(1200, 30)];
    let schedule = Schedule {
        phases: vec![phase(2000, &[1.0, 1.0]), phase(1500, &[0.1, 0.9])],
    };
    let config = scheduled(schedule);
    let topology = Topology::new(6, 2).unwrap();
    let policy = RemainderPolicy::Pad;
    let (plan, state) = EpochPlan::for_run(&shapes, &config, 0, topology, policy, None).unwrap();
    let per_shard = [40u64, 30];
    let mut cursor = plan.cursor();
    let mut node_shards: Vec<BTreeSet<(usize, u64)>> = vec![BTreeSet::new(); 3];
    for rank in 0..topology.world_size {
        let partition = Partition::new(rank, topology, policy, &state).unwrap();
        for step in 0..partition.len() {
            let s = cursor.get(&plan, partition.global_position(step)).unwrap();
            node_shards[partition.node() as usize].insert((s.cache, s.sample / per_shard[s.cache]));
        }
    }
    let bytes = |cache: usize, shard: u64| (cache as u64 + 1) * 1000 + shard;
    let report = PlanReport::compute(
        &plan,
        topology,
        policy,
        &state,
        &bytes,
        ReportOptions::default(),
    )
    .unwrap();
    for (node, shards) in node_shards.iter().enumerate() {
        assert_eq!(
            report.nodes[node].shards,
            shards.len() as u64,
            "node {node}"
        );
    }
    assert_eq!(report.phases.len(), 2);
    assert_eq!(
        (
            report.phases[1].start,
            report.phases[1].samples,
            &report.phases[1].shares
        ),
        (2000, 1500, &vec![150, 1350])
    );
    assert_eq!(report.phases[0].shares, [1000, 1000]);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["phases"][1]["shares"], serde_json::json!([150, 1350]));
    // Without a schedule, no phases (and none in JSON).
    let unscheduled = EpochPlan::build(&shapes, &PlanConfig::default(), 0).unwrap();
    let state = IterState::start(0, 0, unscheduled.len(), topology, policy);
    let report = PlanReport::compute(
        &unscheduled,
        topology,
        policy,
        &state,
        &bytes,
        ReportOptions::default(),
    )
    .unwrap();
    assert!(report.phases.is_empty());
    assert!(serde_json::to_value(&report)
        .unwrap()
        .get("phases")
        .is_none());
}

#[test]
fn schedules_parse_from_json_and_old_configs_still_do() {
    let config: PlanConfig = serde_json::from_str(
        r#"{"seed": 1, "weights": null, "samples_per_epoch": null,
            "sampling": "without_replacement", "shuffle": "full"}"#,
    )
    .unwrap();
    assert_eq!(config.schedule, None);
    assert!(!serde_json::to_string(&config).unwrap().contains("schedule"));
    let schedule: Schedule = serde_json::from_str(
        r#"{"phases": [{"samples": 300000, "weights": [0.5, 0.5]},
                       {"samples": 100000, "weights": [0.8, 0.2]}]}"#,
    )
    .unwrap();
    assert_eq!(schedule.samples(), Some(400_000));
    assert!(
        serde_json::from_str::<Schedule>(r#"{"phases": [{"sample": 3, "weights": [1]}]}"#).is_err()
    );
}

/// Whether `schedule` over caches of `lens` is one a plan accepts, decided independently of
/// the plan's code.
fn is_valid(schedule: &Schedule, lens: &[u64]) -> bool {
    !schedule.phases.is_empty()
        && schedule.phases.iter().all(|phase| {
            phase.samples > 0
                && phase.weights.len() == lens.len()
                && phase.weights.iter().all(|w| w.is_finite() && *w >= 0.0)
                && phase.weights.iter().any(|&w| w > 0.0)
                && phase
                    .weights
                    .iter()
                    .zip(lens)
                    .all(|(&w, &len)| w == 0.0 || len > 0)
        })
}

fn weight() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => 0.0f64..4.0,
        3 => Just(0.0),
        1 => prop_oneof![Just(-1.0), Just(f64::NAN), Just(f64::INFINITY)],
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn random_schedules_never_panic_and_hold_their_counts(
        lens in proptest::collection::vec(prop_oneof![1 => Just(0u64), 6 => 1u64..120], 1..5),
        raw_phases in proptest::collection::vec(
            (prop_oneof![1 => Just(0u64), 12 => 1u64..400], proptest::collection::vec(weight(), 5), any::<bool>()),
            0..5,
        ),
        seed in any::<u64>(),
        shuffle in prop_oneof![
            Just(Shuffle::Sequential),
            Just(Shuffle::Full),
            (1usize..4).prop_map(|window_shards| Shuffle::Local { window_shards }),
        ],
        sampling in prop_oneof![
            Just(Sampling::WithoutReplacement),
            Just(Sampling::WithReplacement),
            Just(Sampling::RunsWithReplacement),
        ],
        cut in 0u64..2000,
    ) {
        let shapes: Vec<CacheShape> = lens.iter().map(|&l| shape(l, 7)).collect();
        // Mostly one weight per cache; now and then one too many.
        let schedule = Schedule {
            phases: raw_phases
                .iter()
                .map(|(samples, weights, extra)| {
                    let count = lens.len() + usize::from(*extra && *samples % 7 == 0);
                    phase(*samples, &weights[..count])
                })
                .collect(),
        };
        let config = PlanConfig { seed, shuffle, sampling, schedule: Some(schedule.clone()), ..PlanConfig::default() };
        match EpochPlan::build(&shapes, &config, 1) {
            Err(error) => {
                prop_assert!(!is_valid(&schedule, &lens), "refused a valid schedule: {}", error);
                let typed = matches!(error, PlanError::Phase { .. } | PlanError::Schedule(_));
                prop_assert!(typed, "{:?}", error);
            }
            Ok(plan) => {
                prop_assert!(is_valid(&schedule, &lens), "accepted an invalid schedule");
                prop_assert_eq!(Some(plan.len()), schedule.samples());
                let plan = plan.with_cuts(&[cut]);
                let order = order(&plan);
                // Random access agrees with stepping, across phase boundaries.
                let mut cursor = plan.cursor();
                for p in (0..plan.len()).rev().step_by(3) {
                    prop_assert_eq!(cursor.get(&plan, p), Some(order[p as usize]));
                }
                if shuffle == Shuffle::Sequential {
                    // Concatenated within each phase: exact counts at phase ends only.
                    let mut counts = vec![0u64; lens.len()];
                    for (p, s) in order.iter().enumerate() {
                        counts[s.cache] += 1;
                        let at = p as u64 + 1;
                        let phase = &plan.phases()[plan.phase_at(at - 1)];
                        if at == phase.positions().end {
                            let expected: Vec<u64> = phase.stream_starts().iter().zip(phase.shares()).map(|(a, b)| a + b).collect();
                            prop_assert_eq!(&counts, &expected);
                        }
                    }
                } else {
                    check_phases(&plan, &order, &shapes, sampling, 17);
                }
            }
        }
    }
}
