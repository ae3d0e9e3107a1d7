//! Reading whole arrays from a local collection against reading the same arrays from a
//! standalone array-format file with `ArrayFile`.
//!
//! Target: at least 50% of the baseline's throughput. 64 datasets of one
//! f32 variable, 256 x 512 each (512 KiB, 32 MiB in all), chunked 64 x 512, zstd level 3 and
//! 8 MiB blocks on both sides, on `LocalFileSystem` in a temp dir (warm page cache).
//! - `atlas_read_warm`: one open `Atlas` / `ArrayFile`, block cache warm: Atlas's own overhead
//!   per read (lookup, dtype cross-check, selection check) is all that differs.
//! - `atlas_read_cold`: each iteration opens afresh (`Atlas::open` / `ArrayFile::open`), so
//!   every block is read and decompressed again.
//!
//! `ATLAS_BENCH_CLOCK=cpu` times with process CPU time instead of the wall clock (see
//! `dsrt_atlas_benches::atlas::cpu_clock`).
#![allow(missing_docs)] // criterion_group! generates undocumented items

use array_format::{ArrayFile, ReadConfig};
use atlas::object_store::local::LocalFileSystem;
use atlas::object_store::path::Path;
use atlas::object_store::ObjectStore;
use atlas::Atlas;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dsrt_atlas_benches::atlas::{
    float_fields, runtime, time_iters, write_field_collection, write_field_file,
};
use std::hint::black_box;
use std::sync::Arc;

const DATASETS: usize = 64;
const ROWS: usize = 256;
const COLS: usize = 512;
const CHUNKS: [usize; 2] = [64, 512];

async fn read_all_atlas(atlas: &Atlas, names: &[String]) -> f32 {
    let mut sum = 0.0;
    for name in names {
        let dataset = atlas.dataset(name).expect("dataset exists");
        let data = dataset
            .read_array::<f32>("field", vec![], vec![])
            .await
            .expect("array reads");
        sum += data[[0, 0]];
    }
    sum
}

async fn read_all_file(file: &ArrayFile, names: &[String]) -> f32 {
    let mut sum = 0.0;
    for name in names {
        let data = file
            .read_array::<f32>(name, vec![], vec![])
            .await
            .expect("array reads");
        sum += data[[0, 0]];
    }
    sum
}

fn whole_array_reads(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(dir.path()).expect("local store"));
    let prefix = Path::from("collection");
    let baseline = Path::from("baseline/field.af");
    let fields = float_fields(DATASETS, ROWS, COLS);
    let names: Vec<String> = fields.iter().map(|(n, _)| n.clone()).collect();
    let bytes = (DATASETS * ROWS * COLS * std::mem::size_of::<f32>()) as u64;
    rt.block_on(async {
        write_field_collection(Arc::clone(&store), &prefix, &fields, &CHUNKS).await;
        write_field_file(Arc::clone(&store), &baseline, &fields, &CHUNKS).await;
    });
    drop(fields);
    let open_atlas = || async {
        Atlas::open(Arc::clone(&store), &prefix)
            .await
            .expect("collection opens")
    };
    let open_file = || async {
        ArrayFile::open(Arc::clone(&store), baseline.clone(), ReadConfig::default())
            .await
            .expect("file opens")
    };

    let atlas = rt.block_on(open_atlas());
    let file = rt.block_on(open_file());
    let expected = rt.block_on(read_all_file(&file, &names));
    assert_eq!(rt.block_on(read_all_atlas(&atlas, &names)), expected);

    let mut group = c.benchmark_group("atlas_read_warm");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("baseline_arrayfile", |b| {
        b.iter_custom(|iters| {
            time_iters(iters, || {
                rt.block_on(read_all_file(black_box(&file), &names))
            })
        });
    });
    group.bench_function("atlas_read_array", |b| {
        b.iter_custom(|iters| {
            time_iters(iters, || {
                rt.block_on(read_all_atlas(black_box(&atlas), &names))
            })
        });
    });
    group.finish();

    let mut group = c.benchmark_group("atlas_read_cold");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("baseline_arrayfile", |b| {
        b.iter_custom(|iters| {
            time_iters(iters, || {
                rt.block_on(async {
                    let file = open_file().await;
                    read_all_file(&file, &names).await
                })
            })
        });
    });
    group.bench_function("atlas_read_array", |b| {
        b.iter_custom(|iters| {
            time_iters(iters, || {
                rt.block_on(async {
                    let atlas = open_atlas().await;
                    read_all_atlas(&atlas, &names).await
                })
            })
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(5));
    targets = whole_array_reads
}
criterion_main!(benches);
