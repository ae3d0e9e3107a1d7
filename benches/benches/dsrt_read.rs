//! Random-access sample reads against a bare `pread` of the same byte ranges in the same order,
//! 100,000 uncompressed payloads of 256 B to 4 KiB, warm page cache. Every arm folds each
//! payload's bytes into a sum ([`fold_payload`]), as a consumer would: the mapped read hands out
//! a slice, and a baseline that copies bytes against an arm that never reads them would measure
//! the copy, not the read.
//!
//! Targets: `cache_read` (`Cache::read`, the record copied into the caller's buffer) at least
//! 0.5x the baseline's throughput (the reader's first target); `cache_read_mapped` (`Cache::read_mapped`, the
//! payload a slice of the shard's read-only mapping after the same checks) at least 1.5x
//! (performance issue, item 3). Wall clock, or process CPU time with `BENCH_CLOCK=cpu`.
#![allow(missing_docs)] // criterion_group! generates undocumented items
#![allow(clippy::cast_possible_truncation)] // record lengths of a small bench cache

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use datasetrt::raw::{IndexView, INDEX_FILE_NAME};
use datasetrt::{Cache, OpenOptions, SampleBuf};
use dsrt_atlas_benches::atlas::time_iters;
use dsrt_atlas_benches::{fold_payload, read_workload, ReadWorkload};
use std::fs::File;
use std::os::unix::fs::FileExt;

const SAMPLES: usize = 100_000;

fn random_read(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ReadWorkload {
        path,
        payload_bytes: total,
        order,
    } = read_workload(dir.path(), SAMPLES, 16 << 20);
    let cache = Cache::open(&path, OpenOptions::default()).expect("bench cache opens");

    // The baseline reads exactly the record byte ranges the index names, with no checks.
    let index = IndexView::open(&path.join(INDEX_FILE_NAME)).expect("index maps");
    let shards: Vec<File> = cache
        .manifest()
        .description()
        .shards
        .iter()
        .map(|s| File::open(path.join("shards").join(&s.name)).expect("shard opens"))
        .collect();
    let ranges: Vec<_> = order.iter().map(|&i| index.row(i).expect("row")).collect();

    let mut group = c.benchmark_group("dsrt_random_read");
    group.throughput(Throughput::Bytes(total));
    group.bench_function("baseline_pread", |b| {
        let mut buf = vec![0u8; 8192];
        b.iter_custom(|iters| {
            time_iters(iters, || {
                let mut sum = 0;
                for row in &ranges {
                    let slice = &mut buf[..row.length as usize];
                    shards[row.shard_id as usize]
                        .read_exact_at(slice, row.offset)
                        .expect("pread");
                    sum = fold_payload(sum, slice);
                }
                std::hint::black_box(sum);
            })
        });
    });
    group.bench_function("cache_read", |b| {
        let mut buf = SampleBuf::new();
        b.iter_custom(|iters| {
            time_iters(iters, || {
                let mut sum = 0;
                for &i in &order {
                    let sample = cache.read(i, &mut buf).expect("sample reads");
                    sum = fold_payload(sum, sample.payload);
                }
                std::hint::black_box(sum);
            })
        });
    });
    group.bench_function("cache_read_mapped", |b| {
        let mut buf = SampleBuf::new();
        b.iter_custom(|iters| {
            time_iters(iters, || {
                let mut sum = 0;
                for &i in &order {
                    let sample = cache.read_mapped(i, &mut buf).expect("sample reads");
                    sum = fold_payload(sum, sample.payload);
                }
                std::hint::black_box(sum);
            })
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = random_read
}
criterion_main!(benches);
