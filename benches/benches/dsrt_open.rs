//! Opening caches of 10k, 100k and 1M samples, and metadata filtering.
//!
//! `cache_open` validates everything a default open validates (manifest, shard sizes, every
//! index row, metadata.arrow decoded in place, schema). Its baseline reads index.bin into
//! memory and decodes every row (what a reader without a mapped index does). `select` filters
//! on metadata.arrow alone; its baseline scans the same Arrow column directly.
#![allow(missing_docs)] // criterion_group! generates undocumented items
#![allow(clippy::cast_possible_truncation)] // small known sizes

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use datasetrt::raw::{IndexRow, INDEX_FILE_NAME};
use datasetrt::{Cache, CacheWriter, Dataset, OpenOptions, ValueRef, WriterOptions};
use dsrt_atlas_benches::bench_schema;
use std::path::Path;

fn write_small_samples(path: &Path, samples: u64) {
    let options = WriterOptions::new("open-bench", bench_schema()).max_shard_bytes(64 << 20);
    let mut writer = CacheWriter::create(path, options).expect("new cache");
    for i in 0..samples {
        let values = [
            ValueRef::Int64(i as i64),
            ValueRef::Float64(0.5),
            ValueRef::Utf8("c"),
        ];
        writer
            .add_values(&i.to_le_bytes(), &values)
            .expect("row fits");
    }
    writer.finish().expect("cache finishes");
}

fn open(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut group = c.benchmark_group("dsrt_open");
    for samples in [10_000u64, 100_000, 1_000_000] {
        let path = dir.path().join(format!("c{samples}"));
        write_small_samples(&path, samples);
        group.throughput(Throughput::Elements(samples));
        group.bench_with_input(
            BenchmarkId::new("baseline_read_and_decode_index", samples),
            &path,
            |b, path| {
                b.iter(|| {
                    let bytes = std::fs::read(path.join(INDEX_FILE_NAME)).expect("index reads");
                    let rows: Vec<IndexRow> = bytes
                        .chunks_exact(24)
                        .map(|c| IndexRow::decode(c.try_into().expect("24 bytes")))
                        .collect();
                    std::hint::black_box(rows.len())
                });
            },
        );
        group.bench_with_input(BenchmarkId::new("cache_open", samples), &path, |b, path| {
            b.iter(|| {
                std::hint::black_box(
                    Cache::open(path, OpenOptions::default())
                        .expect("opens")
                        .len(),
                )
            });
        });
    }
    group.finish();

    let path = dir.path().join("c1000000");
    let dataset = Dataset::open(&[&path], OpenOptions::default()).expect("dataset opens");
    let mut group = c.benchmark_group("dsrt_select");
    group.throughput(Throughput::Elements(1_000_000));
    group.bench_function("baseline_arrow_column_scan", |b| {
        let metadata = dataset.caches()[0].cache.metadata();
        b.iter(|| {
            let mut hits = 0u64;
            for batch in metadata.record_batches() {
                let labels = batch
                    .column(0)
                    .as_any()
                    .downcast_ref::<arrow_array::Int64Array>()
                    .expect("label is Int64");
                hits += labels.values().iter().filter(|v| *v % 10 == 0).count() as u64;
            }
            std::hint::black_box(hits)
        });
    });
    group.bench_function("dataset_select", |b| {
        b.iter(|| {
            let table = dataset
                .select(|row| matches!(row.get_index(0), Some(ValueRef::Int64(v)) if v % 10 == 0));
            std::hint::black_box(table.len())
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = open
}
criterion_main!(benches);
