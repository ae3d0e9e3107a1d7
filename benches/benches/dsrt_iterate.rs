//! Epoch iteration through the prefetching `Loader` against the random-read benchmark's
//! workload: the same cache, the same number of samples, single-threaded `Cache::read` in a
//! shuffled order.
//!
//! Target: iteration with 2 workers reaches at least 80% of the random-read
//! throughput per core. On the wall clock (the default) that is the 2-worker throughput over
//! twice the baseline's; with `BENCH_CLOCK=cpu` every function is timed by the CPU time of all
//! the process's threads, so the ratio of throughputs is already per core, and it holds on a
//! loaded machine too (see `dsrt_atlas_benches::atlas::cpu_clock`).
#![allow(missing_docs)] // criterion_group! generates undocumented items
#![allow(clippy::cast_possible_truncation)] // a small bench cache

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use datasetrt::{
    Cache, Dataset, Loader, LoaderConfig, OpenOptions, PlanConfig, SampleBuf, Shuffle,
};
use dsrt_atlas_benches::atlas::time_iters;
use dsrt_atlas_benches::{read_workload, ReadWorkload};
use std::sync::Arc;

const SAMPLES: usize = 20_000;

fn iterate(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ReadWorkload {
        path,
        payload_bytes: total,
        order,
    } = read_workload(dir.path(), SAMPLES, 4 << 20);
    let cache = Cache::open(&path, OpenOptions::default()).expect("bench cache opens");
    let dataset = Arc::new(Dataset::open(&[&path], OpenOptions::default()).expect("dataset opens"));

    let mut group = c.benchmark_group("dsrt_iterate");
    group.throughput(Throughput::Bytes(total));
    group.bench_function("baseline_random_read", |b| {
        let mut buf = SampleBuf::new();
        b.iter_custom(|iters| {
            time_iters(iters, || {
                for &i in &order {
                    std::hint::black_box(cache.read(i, &mut buf).expect("sample reads").payload);
                }
            })
        });
    });
    for (name, workers, shuffle) in [
        (
            "loader_0_workers_local",
            0,
            Shuffle::Local { window_shards: 4 },
        ),
        (
            "loader_1_worker_local",
            1,
            Shuffle::Local { window_shards: 4 },
        ),
        (
            "loader_2_workers_local",
            2,
            Shuffle::Local { window_shards: 4 },
        ),
        ("loader_1_worker_sequential", 1, Shuffle::Sequential),
        ("loader_2_workers_sequential", 2, Shuffle::Sequential),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                time_iters(iters, || {
                    let config = LoaderConfig {
                        plan: PlanConfig {
                            seed: 1,
                            shuffle,
                            ..PlanConfig::default()
                        },
                        workers,
                        // Chunks of 256 steps, one queued per worker besides the one it fills.
                        prefetch: 512,
                        ..LoaderConfig::default()
                    };
                    let loader = Loader::new(Arc::clone(&dataset), config).expect("loader starts");
                    for sample in loader {
                        std::hint::black_box(sample.expect("sample loads").payload);
                    }
                })
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = iterate
}
criterion_main!(benches);
