//! Cache writing against SHA-256 over the same payload bytes plus a buffered write of them.
//!
//! Target: the writer reaches at least 60% of the baseline's throughput.
#![allow(missing_docs)] // criterion_group! generates undocumented items
#![allow(clippy::cast_possible_truncation)] // record lengths of a small bench cache

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use datasetrt::{CompressionAlgo, WriterOptions};
use dsrt_atlas_benches::{bench_schema, payloads, write_cache};
use sha2::{Digest, Sha256};
use std::io::{BufWriter, Write};

const SAMPLES: usize = 10_000;

fn write(c: &mut Criterion) {
    let data = payloads(SAMPLES, 3);
    let total: u64 = data.iter().map(|p| p.len() as u64).sum();
    let mut group = c.benchmark_group("dsrt_write");
    group.throughput(Throughput::Bytes(total));
    group.bench_function("baseline_sha256_buffered_write", |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("temp dir"),
            |dir| {
                let file = std::fs::File::create(dir.path().join("out.bin")).expect("create");
                let mut out = BufWriter::with_capacity(1 << 20, file);
                let mut hasher = Sha256::new();
                for payload in &data {
                    hasher.update(payload);
                    out.write_all(payload).expect("write");
                }
                out.flush().expect("flush");
                std::hint::black_box(hasher.finalize());
                dir
            },
            BatchSize::PerIteration,
        );
    });
    for (name, algo) in [
        ("cache_writer_none", CompressionAlgo::None),
        ("cache_writer_lz4", CompressionAlgo::Lz4),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || tempfile::tempdir().expect("temp dir"),
                |dir| {
                    let options = WriterOptions::new("bench", bench_schema())
                        .compression(algo)
                        .max_shard_bytes(16 << 20);
                    write_cache(&dir.path().join("cache"), &data, options);
                    dir
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = write
}
criterion_main!(benches);
