//! What the bound on open shard files costs: random reads and an epoch over a cache of 5,000
//! shards, against the same reads with every shard kept open (a bound above the shard count).
//! Both arms do the same checked reads of the same samples in the same order; only how many
//! shard files stay open differs.
//!
//! Each arm is interleaved with `all_open`, not run after it as criterion runs its functions:
//! each round runs both once, in an order that alternates from round to round, and a ratio is
//! taken within each round. The machine's drift (a neighbour's build, frequency changes) then
//! falls on both sides of each ratio alike; the report is the median ratio over the rounds,
//! with the lowest and highest. Each arm's pass is preceded by an untimed pass under its own
//! bound, so no arm pays for the files the arm before it closed.
//!
//! - `default`: the process's default bound (`HandlePool::global`, which first raises the soft
//!   open-file limit toward the hard one; printed). Target (bounded-resources issue): >= 0.9x
//!   `all_open`, for `Cache::read`, `Cache::read_mapped` and a `Loader` epoch.
//! - `quarter`: a bound of a quarter of the shards, so that random reads mostly reopen (or
//!   remap) their shard: what the LRU costs once the limits are the constraint. No target.
//!
//! `cargo bench -p dsrt-atlas-benches --bench dsrt_bounded [-- ROUNDS]` (default 15 rounds);
//! `BENCH_CLOCK=cpu` times process CPU instead of the wall clock. The all-open arm needs a
//! hard open-file limit above 10,100.
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // bench code
#![allow(clippy::cast_precision_loss)] // ratios of durations

use datasetrt::{
    Cache, CacheWriter, Column, ColumnType, Dataset, HandlePool, Loader, LoaderConfig, OpenOptions,
    PlanConfig, Row, SampleBuf, Schema, Shuffle, WriterOptions,
};
use dsrt_atlas_benches::atlas::{cpu_clock, Stamp};
use dsrt_atlas_benches::median;
use std::sync::Arc;
use std::time::Duration;

const SHARDS: u64 = 5_000;
const PER_SHARD: u64 = 4;
const EVERY_SHARD_OPEN: usize = 1 << 20;
/// Random-order passes over every sample per timed read measurement (a pass of `read_mapped`
/// takes about 2 ms, too short to time alone).
const READ_PASSES: usize = 10;

/// One workload: what a pass does, given the cache, the dataset and the order.
struct Workload {
    name: &'static str,
    passes: usize,
    run: fn(&Fixture),
}

struct Fixture {
    cache: Cache,
    dataset: Arc<Dataset>,
    order: Vec<u64>,
}

fn read_pass(f: &Fixture) {
    let mut buf = SampleBuf::new();
    for &i in &f.order {
        std::hint::black_box(f.cache.read(i, &mut buf).unwrap().payload);
    }
}

fn read_mapped_pass(f: &Fixture) {
    let mut buf = SampleBuf::new();
    for &i in &f.order {
        std::hint::black_box(f.cache.read_mapped(i, &mut buf).unwrap().payload);
    }
}

fn epoch_pass(f: &Fixture) {
    let config = LoaderConfig {
        plan: PlanConfig {
            seed: 1,
            shuffle: Shuffle::Local { window_shards: 4 },
            ..PlanConfig::default()
        },
        workers: 2,
        ..LoaderConfig::default()
    };
    for sample in Loader::new(Arc::clone(&f.dataset), config).unwrap() {
        std::hint::black_box(sample.unwrap().payload);
    }
}

const WORKLOADS: [Workload; 3] = [
    Workload {
        name: "read",
        passes: READ_PASSES,
        run: read_pass,
    },
    Workload {
        name: "read_mapped",
        passes: READ_PASSES,
        run: read_mapped_pass,
    },
    Workload {
        name: "epoch",
        passes: 1,
        run: epoch_pass,
    },
];

fn fixture(dir: &std::path::Path) -> Fixture {
    let path = dir.join("cache");
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let options = WriterOptions::new("bounded", schema).max_shard_bytes(PER_SHARD * 1_100 - 100);
    let mut writer = CacheWriter::create(&path, options).unwrap();
    let samples = SHARDS * PER_SHARD;
    for i in 0..samples {
        writer
            .add(
                &vec![(i % 251) as u8; 1_000],
                &Row::new().with("n", i as i64),
            )
            .unwrap();
    }
    writer.finish().unwrap();
    let cache = Cache::open(&path, OpenOptions::default()).unwrap();
    assert_eq!(cache.manifest().description().shards.len() as u64, SHARDS);
    let dataset = Arc::new(Dataset::open(&[&path], OpenOptions::default()).unwrap());
    let order = (0..samples).map(|k| (k * 7_919) % samples).collect();
    Fixture {
        cache,
        dataset,
        order,
    }
}

/// The soft limit on open files, from `/proc/self/limits` (0 where there is none).
fn soft_open_file_limit() -> String {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
            line.split_whitespace().nth(3).map(str::to_owned)
        })
        .unwrap_or_default()
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(15);
    let soft_before = soft_open_file_limit();
    let pool = HandlePool::global();
    let default = pool.capacity();
    eprintln!(
        "open-file soft limit {soft_before} at start, {} after the pool's raise; default bound \
         {default}; {} clock; {rounds} rounds",
        soft_open_file_limit(),
        if cpu_clock() { "CPU" } else { "wall" },
    );
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture(dir.path());
    let candidates = [("default", default), ("quarter", (SHARDS / 4) as usize)];

    println!("| workload | arm | median time | all_open's median time | ratio to all_open (median) | lowest | highest |");
    println!("|---|---|---|---|---|---|---|");
    for workload in &WORKLOADS {
        for (name, capacity) in candidates {
            // Each candidate meets all_open in rounds of its own: the quarter arm's reopening
            // (page-table work for the whole machine) must not land in the default arm's rounds.
            let pair = [EVERY_SHARD_OPEN, capacity];
            let mut times: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
            for round in 0..rounds {
                for k in 0..2 {
                    let arm = (round + k) % 2;
                    pool.set_capacity(pair[arm]);
                    (workload.run)(&fixture);
                    let start = Stamp::now();
                    for _ in 0..workload.passes {
                        (workload.run)(&fixture);
                    }
                    times[arm].push(start.elapsed());
                }
            }
            let mut ratios: Vec<f64> = (0..rounds)
                .map(|r| times[0][r].as_secs_f64() / times[1][r].as_secs_f64())
                .collect();
            let per_pass = |arm: &[Duration]| {
                let mut secs: Vec<f64> = arm.iter().map(Duration::as_secs_f64).collect();
                median(&mut secs) / workload.passes as f64 * 1e3
            };
            let mid = median(&mut ratios);
            println!(
                "| {} | {name} | {:.2} ms | {:.2} ms | {mid:.3} | {:.3} | {:.3} |",
                workload.name,
                per_pass(&times[1]),
                per_pass(&times[0]),
                ratios[0],
                ratios[rounds - 1],
            );
        }
    }
    pool.set_capacity(default);
}
