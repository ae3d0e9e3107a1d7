//! Time to the first batch of a resume under a changed mixture against a resume without one
//! (target: <= 1.2x). Both resume the same plan (four caches, 100M samples, new weights and
//! a cache added) at the same global position on 48 ranks: one from a state saved under that
//! plan, the other from a state saved under the old mixture (three caches, other weights) on
//! 64 ranks, which it must map onto each cache's stream. Timed: `EpochPlan::for_run` plus
//! the 256 samples of rank 0's first batch.
//!
//! `cargo run --release -p dsrt-plan --example resume_after_change [RUNS]`
#![allow(clippy::print_stdout, clippy::unwrap_used)] // a benchmark's report, its setup

use dsrt_plan::{
    CacheShape, EpochPlan, IterState, Partition, Phase, PlanConfig, RemainderPolicy, Schedule,
    Topology,
};
use std::time::{Duration, Instant};

const POLICY: RemainderPolicy = RemainderPolicy::Pad;
const BATCH: u64 = 256;
/// Timed rounds per arm and run; the median is kept.
const ROUNDS: usize = 15;

fn cache(id: u64, len: u64) -> CacheShape {
    CacheShape::equal_shards(len, len / 4096).with_cache_id(id)
}

fn schedule(phases: &[(u64, &[f64])]) -> PlanConfig {
    PlanConfig {
        seed: 17,
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

/// The state once every rank of `topology` has read `steps` steps from `resume`.
fn stopped(
    shapes: &[CacheShape],
    config: &PlanConfig,
    topology: Topology,
    resume: Option<&IterState>,
    steps: u64,
) -> IterState {
    let (_, start) = EpochPlan::for_run(shapes, config, 0, topology, POLICY, resume).unwrap();
    Partition::new(0, topology, POLICY, &start)
        .unwrap()
        .state_after(&start, steps)
}

/// Plans the resume from `state` and reads rank 0's first batch of positions.
fn first_batch(shapes: &[CacheShape], config: &PlanConfig, state: &IterState) -> (Duration, u64) {
    let topology = Topology::new(48, 8).unwrap();
    let started = Instant::now();
    let (plan, start) =
        EpochPlan::for_run(shapes, config, 0, topology, POLICY, Some(state)).unwrap();
    let partition = Partition::new(0, topology, POLICY, &start).unwrap();
    let mut cursor = plan.cursor();
    let mut fold = 0u64;
    for step in 0..BATCH.min(partition.len()) {
        let sample = cursor.get(&plan, partition.global_position(step)).unwrap();
        fold = fold.wrapping_add(sample.sample ^ sample.cache as u64);
    }
    (started.elapsed(), fold)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map_or(3, |runs| runs.parse().unwrap());
    let old_shapes = vec![
        cache(1, 40_000_000),
        cache(2, 35_000_000),
        cache(3, 25_000_000),
    ];
    let old = schedule(&[
        (60_000_000, &[2.0, 2.0, 1.0]),
        (30_000_000, &[1.0, 1.0, 2.0]),
    ]);
    let new_shapes = [&old_shapes[..], &[cache(4, 30_000_000)]].concat();
    let new = schedule(&[
        (50_000_000, &[1.0, 1.0, 1.0, 1.0]),
        (50_000_000, &[1.0, 2.0, 1.0, 2.0]),
    ]);
    // 30% of the first phase on 8 nodes of 8 ranks.
    let old_topology = Topology::new(64, 8).unwrap();
    let changed = stopped(&old_shapes, &old, old_topology, None, 18_000_000 / 64);
    // The same position reached under the new mixture, without a change.
    let unchanged = stopped(&new_shapes, &new, old_topology, None, 18_000_000 / 64);
    assert_eq!(changed.position, unchanged.position);
    let (plan, _) = EpochPlan::for_run(
        &new_shapes,
        &new,
        0,
        Topology::new(48, 8).unwrap(),
        POLICY,
        Some(&changed),
    )
    .unwrap();
    assert!(plan.mixture_change().is_some());
    println!(
        "resume at {} of {} samples, 4 caches of {} shard runs in all; {} rounds per arm, medians",
        changed.position,
        plan.len(),
        new_shapes.iter().map(|s| s.runs.len()).sum::<usize>(),
        ROUNDS
    );
    for run in 1..=runs {
        let (mut with, mut without) = (Vec::new(), Vec::new());
        let mut fold = 0u64;
        for _ in 0..ROUNDS {
            let (time, f) = first_batch(&new_shapes, &new, &changed);
            with.push(time);
            fold ^= f;
            let (time, f) = first_batch(&new_shapes, &new, &unchanged);
            without.push(time);
            fold ^= f;
        }
        let (with, without) = (median(with), median(without));
        println!(
            "run {run}: with a change {:.3} ms, without {:.3} ms: {:.3}x (fold {fold:#x})",
            with.as_secs_f64() * 1e3,
            without.as_secs_f64() * 1e3,
            with.as_secs_f64() / without.as_secs_f64()
        );
    }
}
