//! What the bound on open shard files costs: random reads and an epoch over a cache of 5,000
//! shards, against the same reads with every shard kept open (a bound above the shard count),
//! in the same run. Both arms do the same checked reads of the same samples in the same order;
//! only how many shard files stay open differs.
//!
//! - `default_*`: the process's default bound (`handle_pool::default_capacity`, from the
//!   open-file limit and `vm.max_map_count`; printed). Target (bounded-resources issue):
//!   >= 0.9x `all_open_*`, for `Cache::read`, `Cache::read_mapped` and a `Loader` epoch.
//! - `quarter_*`: a bound of a quarter of the shards, so that random reads mostly reopen (or
//!   remap) their shard: what the LRU costs once the limits are the constraint. No target.
//!
//! The all-open arms need `ulimit -n` above 5,100 (this machine's is 20,000).
#![allow(missing_docs)] // criterion_group! generates undocumented items
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // bench code

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use datasetrt::{
    Cache, CacheWriter, Column, ColumnType, Dataset, HandlePool, Loader, LoaderConfig, OpenOptions,
    PlanConfig, Row, SampleBuf, Schema, Shuffle, WriterOptions,
};
use dsrt_atlas_benches::atlas::time_iters;
use std::sync::Arc;

const SHARDS: u64 = 5_000;
const PER_SHARD: u64 = 4;
const EVERY_SHARD_OPEN: usize = 1 << 20;

fn bounded(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache");
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
    let order: Vec<u64> = (0..samples).map(|k| (k * 7_919) % samples).collect();
    let pool = HandlePool::global();
    let default = pool.capacity();
    let quarter = (SHARDS / 4) as usize;
    eprintln!("default bound: {default} (open-file soft limit / 2, vm.max_map_count / 4)");
    let arms = [
        ("all_open", EVERY_SHARD_OPEN),
        ("default", default),
        ("quarter", quarter),
    ];

    let mut group = c.benchmark_group("dsrt_bounded_shards");
    group.throughput(Throughput::Elements(samples));
    for (name, capacity) in arms {
        group.bench_function(format!("{name}_read"), |b| {
            pool.set_capacity(capacity);
            let mut buf = SampleBuf::new();
            b.iter_custom(|iters| {
                time_iters(iters, || {
                    for &i in &order {
                        std::hint::black_box(cache.read(i, &mut buf).unwrap().payload);
                    }
                })
            });
        });
        group.bench_function(format!("{name}_read_mapped"), |b| {
            pool.set_capacity(capacity);
            let mut buf = SampleBuf::new();
            b.iter_custom(|iters| {
                time_iters(iters, || {
                    for &i in &order {
                        std::hint::black_box(cache.read_mapped(i, &mut buf).unwrap().payload);
                    }
                })
            });
        });
    }
    let dataset = Arc::new(Dataset::open(&[&path], OpenOptions::default()).unwrap());
    for (name, capacity) in arms {
        group.bench_function(format!("{name}_epoch"), |b| {
            pool.set_capacity(capacity);
            b.iter_custom(|iters| {
                time_iters(iters, || {
                    let config = LoaderConfig {
                        plan: PlanConfig {
                            seed: 1,
                            shuffle: Shuffle::Local { window_shards: 4 },
                            ..PlanConfig::default()
                        },
                        workers: 2,
                        ..LoaderConfig::default()
                    };
                    for sample in Loader::new(Arc::clone(&dataset), config).unwrap() {
                        std::hint::black_box(sample.unwrap().payload);
                    }
                })
            });
        });
    }
    pool.set_capacity(default);
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(std::time::Duration::from_secs(3));
    targets = bounded
}
criterion_main!(benches);
