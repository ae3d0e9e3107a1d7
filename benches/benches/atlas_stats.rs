//! `Atlas::array_stats` over every dataset against reading the same segment's footer
//! statistics straight through array-format.
//!
//! Target: one segment open, linear in datasets (10,000 and 100,000
//! datasets, one f32 variable). Both sides start cold: a fresh `Atlas` (opened outside the
//! timing) whose segment is not yet open, and a fresh `ArrayFile::open` of the segment copied
//! out of `data.atlas` as a standalone object in the same store. Results are dropped outside
//! the timing on both sides. `ATLAS_BENCH_CLOCK=cpu` times with process CPU time instead of
//! the wall clock (see `dsrt_atlas_benches::atlas::cpu_clock`).
#![allow(missing_docs)] // criterion_group! generates undocumented items

use array_format::{ArrayFile, ReadConfig, StatValue};
use atlas::object_store::memory::InMemory;
use atlas::object_store::path::Path;
use atlas::object_store::ObjectStore;
use atlas::Atlas;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dsrt_atlas_benches::atlas::{
    copy_segment_out, runtime, time_batched, write_station_collection,
};
use std::sync::Arc;

/// What the baseline folds: the same four numbers `CollectionStats` carries.
#[derive(Debug, Default, PartialEq)]
struct Folded {
    datasets: u64,
    min: Option<f64>,
    max: Option<f64>,
    null_count: u64,
    row_count: u64,
}

fn fold_segment(file: &ArrayFile) -> Folded {
    let mut out = Folded::default();
    for stats in file.arrays().iter().filter_map(|a| a.stats.as_ref()) {
        out.datasets += 1;
        out.null_count += stats.null_count;
        out.row_count += stats.row_count;
        if let Some(StatValue::Float(v)) = stats.min {
            out.min = Some(out.min.map_or(v, |m| m.min(v)));
        }
        if let Some(StatValue::Float(v)) = stats.max {
            out.max = Some(out.max.map_or(v, |m| m.max(v)));
        }
    }
    out
}

fn array_stats(c: &mut Criterion) {
    let rt = runtime();
    for (label, datasets) in [("10k", 10_000), ("100k", 100_000)] {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let prefix = Path::from("stations");
        let segment = Path::from("baseline/temperature.af");
        rt.block_on(async {
            write_station_collection(Arc::clone(&store), &prefix, datasets).await;
            copy_segment_out(&store, &prefix, "temperature", &segment).await;
        });
        let open_atlas = || {
            rt.block_on(Atlas::open(Arc::clone(&store), &prefix))
                .expect("collection opens")
        };
        let open_segment = || async {
            ArrayFile::open(Arc::clone(&store), segment.clone(), ReadConfig::default())
                .await
                .expect("segment opens")
        };
        // Both sides agree before anything is timed.
        let ours = rt
            .block_on(open_atlas().array_stats("temperature"))
            .expect("stats");
        let theirs = fold_segment(&rt.block_on(open_segment()));
        assert_eq!(ours.datasets, theirs.datasets);
        assert_eq!(
            (ours.null_count, ours.row_count),
            (theirs.null_count, theirs.row_count)
        );
        assert_eq!(ours.min, theirs.min.map(StatValue::Float));

        let mut group = c.benchmark_group(format!("atlas_stats_{label}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements(datasets as u64));
        group.bench_function("baseline_arrayfile_stats", |b| {
            b.iter_custom(|iters| {
                time_batched(
                    iters,
                    || (),
                    |()| {
                        rt.block_on(async {
                            let file = open_segment().await;
                            (fold_segment(&file), file)
                        })
                    },
                )
            });
        });
        group.bench_function("atlas_array_stats", |b| {
            b.iter_custom(|iters| {
                time_batched(iters, open_atlas, |atlas| {
                    let stats = rt
                        .block_on(atlas.array_stats("temperature"))
                        .expect("stats");
                    (stats, atlas)
                })
            });
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(5));
    targets = array_stats
}
criterion_main!(benches);
