//! Epoch plans and partitions: determinism, coverage, weights, locality, equal rank lengths and
//! elastic resume.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_plan::{
    CacheShape, EpochPlan, IterState, Partition, PlanConfig, PlanError, PlanReport, PlannedSample,
    RemainderPolicy, ReportOptions, Sampling, Shuffle, Topology,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A cache of `len` samples in shards of `per_shard` samples.
fn shape(len: u64, per_shard: u64) -> CacheShape {
    CacheShape::from_shard_ids((0..len).map(|i| i / per_shard.max(1)))
}

fn order(plan: &EpochPlan) -> Vec<PlannedSample> {
    let mut cursor = plan.cursor();
    (0..plan.len())
        .map(|p| cursor.get(plan, p).unwrap())
        .collect()
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
fn runs_with_replacement_draw_whole_runs_per_pass() {
    // Runs of 100 and a short last one of 50: a pass of 1,050 samples cuts its last drawn run.
    let shapes = [shape(1050, 100)];
    let config = PlanConfig {
        seed: 3,
        weights: Some(vec![1.0]),
        samples_per_epoch: Some(1050 * 40),
        sampling: Sampling::RunsWithReplacement,
        shuffle: Shuffle::Local { window_shards: 2 },
        schedule: None,
    };
    let plan = EpochPlan::build(&shapes, &config, 0).unwrap();
    let order = order(&plan);
    let mut per_run = vec![0u64; 11];
    let mut repeated = 0;
    for pass in order.chunks(1050) {
        let mut counts = vec![0u64; 1050];
        for s in pass {
            counts[s.sample as usize] += 1;
        }
        // A run drawn is read whole (but the pass's last, cut to fit): its samples' counts
        // differ by at most one.
        for run in counts.chunks(100) {
            let (low, high) = (run.iter().min().unwrap(), run.iter().max().unwrap());
            assert!(high - low <= 1, "{run:?}");
        }
        repeated += u64::from(counts.iter().any(|&c| c > 1));
        for (r, run) in counts.chunks(100).enumerate() {
            per_run[r] += run[0];
        }
    }
    assert!(repeated > 30, "runs come twice in a pass");
    // Over 40 passes every run is drawn about 40 * 1050 / 1000 times.
    assert!(
        per_run.iter().all(|&c| (15..80).contains(&c)),
        "{per_run:?}"
    );
    assert_eq!(
        order,
        self::order(&EpochPlan::build(&shapes, &config, 0).unwrap())
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
fn partitions_refuse_bad_ranks_and_topologies() {
    let state = IterState::start(0, 0, 10, Topology::ranks(2).unwrap(), RemainderPolicy::Pad);
    assert!(Partition::new(2, Topology::ranks(2).unwrap(), RemainderPolicy::Pad, &state).is_err());
    assert!(Topology::ranks(0).is_err());
    assert!(matches!(
        Topology::new(6, 4),
        Err(PlanError::Topology {
            world_size: 6,
            ranks_per_node: 4
        })
    ));
}

/// The global positions every rank of `topology` reads from `state`, and the padding flags.
fn rank_positions(
    topology: Topology,
    policy: RemainderPolicy,
    state: &IterState,
) -> Vec<Vec<(u64, bool)>> {
    (0..topology.world_size)
        .map(|rank| {
            let p = Partition::new(rank, topology, policy, state).unwrap();
            (0..p.len())
                .map(|s| (p.global_position(s), p.is_padding(s)))
                .collect()
        })
        .collect()
}

fn topology(nodes: u64, per_node: u64) -> Topology {
    Topology::new(nodes * per_node, per_node).unwrap()
}

/// Which node reads each shard of cache 0, over one epoch of `plan` on `topology`.
fn shards_by_node(
    plan: &EpochPlan,
    topology: Topology,
    state: &IterState,
    per_shard: u64,
) -> BTreeMap<(usize, u64), BTreeSet<u64>> {
    let mut cursor = plan.cursor();
    let mut readers: BTreeMap<(usize, u64), BTreeSet<u64>> = BTreeMap::new();
    for (rank, positions) in rank_positions(topology, RemainderPolicy::Pad, state)
        .iter()
        .enumerate()
    {
        for &(p, _) in positions {
            let s = cursor.get(plan, p).unwrap();
            readers
                .entry((s.cache, s.sample / per_shard))
                .or_default()
                .insert(rank as u64 / topology.ranks_per_node);
        }
    }
    readers
}

#[test]
fn each_shard_is_read_by_one_node_but_where_two_nodes_shares_meet() {
    let shapes = [shape(64 * 100, 100)];
    for (nodes, per_node) in [(4, 2), (3, 2), (7, 1), (1, 8)] {
        let topology = topology(nodes, per_node);
        let state = IterState::start(5, 0, 6400, topology, RemainderPolicy::Pad);
        let plan = EpochPlan::build(
            &shapes,
            &PlanConfig {
                seed: 5,
                ..PlanConfig::default()
            },
            0,
        )
        .unwrap()
        .with_cuts(&state.cuts);
        let readers = shards_by_node(&plan, topology, &state, 100);
        assert_eq!(readers.len(), 64, "every shard is read");
        let shared = readers.values().filter(|n| n.len() > 1).count() as u64;
        assert!(
            shared < nodes,
            "{nodes}x{per_node}: {shared} shards read by two nodes"
        );
    }
}

#[test]
fn mixed_caches_split_at_most_one_shard_per_cache_per_boundary() {
    let shapes = [shape(3000, 50), shape(1000, 25), shape(500, 10)];
    // Shares within one pass of each cache (an up-sampled cache reads its shards again in
    // each pass, on whichever nodes the passes fall).
    let config = PlanConfig {
        seed: 2,
        weights: Some(vec![1.0, 2.0, 1.0]),
        samples_per_epoch: Some(2000),
        ..PlanConfig::default()
    };
    let topology = topology(4, 2);
    let len = EpochPlan::build(&shapes, &config, 0).unwrap().len();
    let state = IterState::start(2, 0, len, topology, RemainderPolicy::Pad);
    let plan = EpochPlan::build(&shapes, &config, 0)
        .unwrap()
        .with_cuts(&state.cuts);
    let mut cursor = plan.cursor();
    let per_shard = [50, 25, 10];
    let mut readers: BTreeMap<(usize, u64), BTreeSet<u64>> = BTreeMap::new();
    for (rank, positions) in rank_positions(topology, RemainderPolicy::Pad, &state)
        .iter()
        .enumerate()
    {
        for &(p, _) in positions {
            let s = cursor.get(&plan, p).unwrap();
            readers
                .entry((s.cache, s.sample / per_shard[s.cache]))
                .or_default()
                .insert(rank as u64 / 2);
        }
    }
    for cache in 0..3 {
        let shared = readers
            .iter()
            .filter(|(k, n)| k.0 == cache && n.len() > 1)
            .count();
        assert!(
            shared <= 3,
            "cache {cache}: {shared} shards read by two nodes"
        );
    }
}

#[test]
fn reports_count_what_the_ranks_read() {
    let shapes = [shape(5000, 40), shape(700, 30)];
    for shuffle in [
        Shuffle::Local { window_shards: 4 },
        Shuffle::Sequential,
        Shuffle::Full,
    ] {
        for (nodes, per_node, sampling) in [
            (4, 2, Sampling::WithoutReplacement),
            (3, 1, Sampling::WithReplacement),
            (1, 3, Sampling::WithoutReplacement),
        ] {
            let config = PlanConfig {
                seed: 9,
                shuffle,
                sampling,
                ..PlanConfig::default()
            };
            let topology = topology(nodes, per_node);
            let len = EpochPlan::build(&shapes, &config, 0).unwrap().len();
            let state = IterState::start(9, 0, len, topology, RemainderPolicy::Pad);
            let plan = EpochPlan::build(&shapes, &config, 0)
                .unwrap()
                .with_cuts(&state.cuts);
            let per_shard = [40u64, 30];
            let mut cursor = plan.cursor();
            let mut node_shards: Vec<BTreeSet<(usize, u64)>> =
                vec![BTreeSet::new(); nodes as usize];
            for (rank, positions) in rank_positions(topology, RemainderPolicy::Pad, &state)
                .iter()
                .enumerate()
            {
                for &(p, _) in positions {
                    let s = cursor.get(&plan, p).unwrap();
                    node_shards[rank / per_node as usize]
                        .insert((s.cache, s.sample / per_shard[s.cache]));
                }
            }
            let bytes = |cache: usize, shard: u64| (cache as u64 + 1) * 1000 + shard;
            let report = PlanReport::compute(
                &plan,
                topology,
                RemainderPolicy::Pad,
                &state,
                &bytes,
                ReportOptions::default(),
            )
            .unwrap();
            for (node, shards) in node_shards.iter().enumerate() {
                assert_eq!(
                    report.nodes[node].shards,
                    shards.len() as u64,
                    "{shuffle:?} node {node}"
                );
                assert_eq!(
                    report.nodes[node].bytes,
                    shards.iter().map(|&(c, s)| bytes(c, s)).sum::<u64>()
                );
            }
            let mut count: BTreeMap<(usize, u64), u64> = BTreeMap::new();
            for shard in node_shards.iter().flatten() {
                *count.entry(*shard).or_default() += 1;
            }
            assert_eq!(report.shards_read, count.len() as u64);
            assert_eq!(
                report.shards_read_by_more_than_one_node,
                count.values().filter(|&&c| c > 1).count() as u64
            );
            assert_eq!(report.steps_per_rank, len.div_ceil(nodes * per_node));
        }
    }
}

proptest! {
    #[test]
    fn every_rank_gets_the_same_count_and_together_they_cover_the_epoch(len in 0u64..300, nodes in 1u64..8, per_node in 1u64..5, pad in any::<bool>()) {
        let policy = if pad { RemainderPolicy::Pad } else { RemainderPolicy::Drop };
        let topology = topology(nodes, per_node);
        let world = topology.world_size;
        let state = IterState::start(0, 0, len, topology, policy);
        let per_rank = rank_positions(topology, policy, &state);
        let count = per_rank[0].len() as u64;
        prop_assert!(per_rank.iter().all(|p| p.len() as u64 == count));
        let all: Vec<u64> = per_rank.iter().flatten().map(|&(p, _)| p).collect();
        let mut distinct = all.clone();
        distinct.sort_unstable();
        distinct.dedup();
        match policy {
            RemainderPolicy::Pad => {
                prop_assert_eq!(count, len.div_ceil(world));
                prop_assert_eq!(distinct, (0..len).collect::<Vec<_>>(), "pad covers the epoch");
                // Repeats only in the padding: at most world - 1 of them (fewer than one round).
                prop_assert!(all.len() as u64 - len < world.max(1) || len == 0);
                let flagged = per_rank.iter().flatten().filter(|&&(_, pad)| pad).count() as u64;
                prop_assert_eq!(flagged, all.len() as u64 - len);
            }
            RemainderPolicy::Drop => {
                prop_assert_eq!(count, len / world);
                prop_assert_eq!(distinct.len(), all.len(), "drop never repeats");
                prop_assert_eq!(all.len() as u64, len - len % world);
            }
        }
    }

    #[test]
    fn elastic_resume_yields_exactly_the_rest_of_the_epoch(
        len in 1u64..400,
        topologies in proptest::collection::vec((1u64..6, 1u64..4, 0u64..40), 1..4),
        pad in any::<bool>(),
    ) {
        // Run each topology for some steps, save the state, resume on the next; finish on the
        // last. Every position is read, none twice, padding aside (fewer than one round per run).
        let policy = if pad { RemainderPolicy::Pad } else { RemainderPolicy::Drop };
        let (n0, r0, _) = topologies[0];
        let mut state = IterState::start(0, 0, len, topology(n0, r0), policy);
        let mixture = EpochPlan::build(&[shape(len, 7)], &PlanConfig::default(), 0).unwrap().mixture();
        let mut read: Vec<u64> = Vec::new();
        for (i, &(nodes, per_node, steps)) in topologies.iter().enumerate() {
            let topology = topology(nodes, per_node);
            let last = i + 1 == topologies.len();
            let first = Partition::new(0, topology, policy, &state).unwrap();
            let steps = if last { first.len() } else { steps.min(first.len()) };
            let before = read.len();
            for positions in rank_positions(topology, policy, &state) {
                prop_assert_eq!(positions.len() as u64, first.len(), "equal counts");
                read.extend(positions.iter().take(steps as usize).filter(|p| !p.1).map(|p| p.0));
            }
            let padding = (0..topology.world_size).map(|r| {
                let p = Partition::new(r, topology, policy, &state).unwrap();
                (0..steps).filter(|&s| p.is_padding(s)).count() as u64
            }).sum::<u64>();
            prop_assert!(padding < topology.world_size);
            let next = first.state_after(&state, steps);
            let json = serde_json::to_string(&next).unwrap();
            let next: IterState = serde_json::from_str(&json).unwrap();
            next.check(0, 0, len, &mixture).unwrap();
            prop_assert_eq!(next.position - state.position, (read.len() - before) as u64);
            state = next;
        }
        let mut sorted = read.clone();
        sorted.sort_unstable();
        sorted.dedup();
        prop_assert_eq!(sorted.len(), read.len(), "nothing read twice");
        let unread: Vec<u64> = state.remaining().into_iter().flatten().collect();
        sorted.extend(unread);
        sorted.sort_unstable();
        prop_assert_eq!(sorted, (0..len).collect::<Vec<_>>(), "read and unread make the epoch");
        if pad { prop_assert!(state.is_finished()); }
    }

    #[test]
    fn a_resume_on_the_same_topology_continues_every_rank_exactly(len in 1u64..300, nodes in 1u64..5, per_node in 1u64..4, stop in 0u64..100, pad in any::<bool>()) {
        let policy = if pad { RemainderPolicy::Pad } else { RemainderPolicy::Drop };
        let topology = topology(nodes, per_node);
        let start = IterState::start(0, 0, len, topology, policy);
        let whole = rank_positions(topology, policy, &start);
        let first = Partition::new(0, topology, policy, &start).unwrap();
        let stop = stop.min(first.len());
        // Padding repeats a node's last positions; resumed so late that fewer of them are
        // left than it pads, it wraps around what is left instead (still its own, still
        // fewer than one round).
        let span = first.len() * per_node;
        let mut short = (0..nodes).map(|n| {
            let real = len.saturating_sub(n * span).min(span);
            (real, span - real)
        });
        prop_assume!(short.all(|(real, padding)| padding == 0 || real.saturating_sub(stop * per_node) >= padding));
        let state = first.state_after(&start, stop);
        let resumed = rank_positions(topology, policy, &state);
        for (rank, positions) in whole.iter().enumerate() {
            prop_assert_eq!(&positions[stop as usize..], &resumed[rank][..], "rank {}", rank);
        }
    }

    #[test]
    fn random_access_and_stepping_agree(lens in proptest::collection::vec(0u64..60, 1..5), seed in any::<u64>(), window in 1usize..4, cut in 0u64..100) {
        let shapes: Vec<CacheShape> = lens.iter().map(|&l| shape(l, 7)).collect();
        let config = PlanConfig { seed, shuffle: Shuffle::Local { window_shards: window }, ..PlanConfig::default() };
        let plan = EpochPlan::build(&shapes, &config, 1).unwrap().with_cuts(&[cut]);
        let stepped = order(&plan);
        let mut cursor = plan.cursor();
        for p in (0..plan.len()).rev() {
            prop_assert_eq!(cursor.get(&plan, p), Some(stepped[p as usize]));
        }
        let mut seen: Vec<(usize, u64)> = stepped.iter().map(|s| (s.cache, s.sample)).collect();
        seen.sort_unstable();
        let expected: Vec<(usize, u64)> = lens.iter().enumerate().flat_map(|(c, &l)| (0..l).map(move |i| (c, i))).collect();
        prop_assert_eq!(seen, expected, "a cut plan still reads every sample once");
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
