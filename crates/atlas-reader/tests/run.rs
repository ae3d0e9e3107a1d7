//! `Atlas::read_run`: one array of many datasets read together equals the datasets read one by
//! one, refuses what a single read refuses, and fetches its blocks in few ranged requests.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use array_format::{FillValue, TimestampNs};
use atlas_reader::{Atlas, AtlasError};
use atlas_store::CountingStore;
use atlas_writer::{ArraySpec, AtlasWriter, DatasetSpec, WriterOptions};
use common::*;
use ndarray::{ArrayD, IxDyn};
use object_store::memory::InMemory;
use object_store::ObjectStore;
use std::sync::Arc;

fn arr<T: Clone>(shape: &[usize], values: Vec<T>) -> ArrayD<T> {
    ArrayD::from_shape_vec(IxDyn(shape), values).unwrap()
}

/// Station `i`: `days` daily values, a 0-d latitude and name, a time axis.
fn station(i: usize, days: usize) -> DatasetSpec {
    DatasetSpec::new(format!("st_{i:04}"))
        .array(
            ArraySpec::new(
                "tas",
                arr(&[days], (0..days).map(|d| (i * 1000 + d) as f32).collect()),
            )
            .dims(["time"]),
        )
        .array(ArraySpec::new("lat", arr(&[], vec![i as f64 / 10.0])))
        .array(ArraySpec::new(
            "name",
            arr(&[], vec![format!("station {i}")]),
        ))
        .array(
            ArraySpec::new(
                "time",
                arr(&[days], (0..days as i64).map(TimestampNs).collect()),
            )
            .dims(["time"]),
        )
        .array(ArraySpec::declared::<f32>("gap", vec![3]).fill(FillValue::Float(-9.0)))
}

async fn open(datasets: impl IntoIterator<Item = DatasetSpec>) -> Atlas {
    Atlas::open(write(datasets).await, &prefix()).await.unwrap()
}

#[tokio::test]
async fn a_run_equals_the_datasets_read_one_by_one_stacked_or_concatenated() {
    let atlas = open((0..300).map(|i| station(i, 10 + i % 3))).await;
    let ordinals: Vec<u32> = vec![5, 0, 299, 17, 17, 120];
    let run = atlas.read_run::<f32>("tas", &ordinals).await.unwrap();
    let mut expected = Vec::new();
    for &o in &ordinals {
        let view = atlas.dataset_at(o).unwrap();
        let one = view.read_array::<f32>("tas", vec![], vec![]).await.unwrap();
        expected.extend(one.iter().copied());
    }
    assert_eq!(run.values(), &expected[..]);
    let lengths: Vec<usize> = run.shapes().iter().map(|s| s[0]).collect();
    assert_eq!(lengths, vec![12, 10, 12, 12, 12, 10]);
    let concatenated = run.clone().concatenated("tas").unwrap();
    assert_eq!(concatenated.shape(), &[68]);
    // Unequal lengths cannot stack; the error names the array and the position.
    let err = run.stacked("tas").unwrap_err();
    assert!(
        matches!(&err, AtlasError::InvalidSelection { array, reason } if array == "tas" && reason.contains("position 1")),
        "{err}"
    );

    let lat = atlas.read_run::<f64>("lat", &ordinals).await.unwrap();
    let lat = lat.stacked("lat").unwrap();
    assert_eq!(lat.shape(), &[6]);
    assert_eq!(
        lat.iter().copied().collect::<Vec<_>>(),
        vec![0.5, 0.0, 29.9, 1.7, 1.7, 12.0]
    );
    let names = atlas.read_run::<String>("name", &[3, 1]).await.unwrap();
    assert_eq!(
        names.values(),
        &["station 3".to_owned(), "station 1".to_owned()]
    );
    let gap = atlas.read_run::<f32>("gap", &[0, 1]).await.unwrap();
    assert_eq!(gap.stacked("gap").unwrap().shape(), &[2, 3]);
    assert!(
        gap_values(&atlas).await.iter().all(|&v| v == -9.0),
        "fill value"
    );
    let time = atlas.read_run::<TimestampNs>("time", &[2]).await.unwrap();
    assert_eq!(time.values().len(), 12);
    let empty = atlas.read_run::<f32>("tas", &[]).await.unwrap();
    assert_eq!(empty.stacked("tas").unwrap().shape(), &[0]);
}

async fn gap_values(atlas: &Atlas) -> Vec<f32> {
    atlas
        .read_run::<f32>("gap", &[0, 1, 2])
        .await
        .unwrap()
        .into_parts()
        .0
}

#[tokio::test]
async fn a_run_refuses_deleted_missing_and_mistyped_datasets_before_reading() {
    let atlas = open((0..20).map(|i| station(i, 4))).await;
    atlas.delete(&["st_0007".to_owned()]).await.unwrap();
    let err = atlas.read_run::<f32>("tas", &[1, 7]).await.unwrap_err();
    assert!(
        matches!(&err, AtlasError::DatasetNotFound(n) if n == "st_0007"),
        "{err}"
    );
    let err = atlas.read_run::<f32>("tas", &[1, 20]).await.unwrap_err();
    assert!(
        matches!(&err, AtlasError::InvalidSelection { reason, .. } if reason.contains("ordinal 20")),
        "{err}"
    );
    let err = atlas.read_run::<f64>("tas", &[1]).await.unwrap_err();
    assert!(matches!(err, AtlasError::TypeMismatch { .. }), "{err}");
    let err = atlas.read_run::<f32>("nope", &[1]).await.unwrap_err();
    assert!(matches!(err, AtlasError::ArrayNotFound { .. }), "{err}");
    let err = atlas
        .read_run::<f64>("lat", &[0])
        .await
        .unwrap()
        .concatenated("lat")
        .unwrap_err();
    assert!(matches!(err, AtlasError::InvalidSelection { .. }), "{err}");
}

/// A segment too large to be kept whole (over 16 MiB) in small blocks: a run read fetches
/// its blocks by spans, far fewer requests than blocks; reading the same datasets one by one
/// costs a request per block.
#[tokio::test]
async fn a_run_fetches_its_blocks_in_few_ranged_requests() {
    const DATASETS: usize = 80;
    const VALUES: usize = 64 * 1024; // 256 KiB of f32 per dataset: 20 MiB in all
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let options = WriterOptions {
        codec: atlas_writer::Codec::None,
        block_target_size: 512 * 1024,
        ..options()
    };
    let mut writer = AtlasWriter::new(Arc::clone(&store), &prefix(), options);
    for i in 0..DATASETS {
        writer
            .write_dataset(
                DatasetSpec::new(format!("d{i:03}"))
                    .array(ArraySpec::new("v", arr(&[VALUES], vec![i as f32; VALUES]))),
            )
            .unwrap();
    }
    writer.finish().await.unwrap();

    let open_counted = || async {
        let counting = CountingStore::new(Arc::clone(&store));
        let atlas = Atlas::open(Arc::new(counting.clone()), &prefix())
            .await
            .unwrap();
        // Open the segment (its footer) before counting.
        atlas
            .dataset_at(0)
            .unwrap()
            .array_layout("v")
            .await
            .unwrap();
        counting.reset();
        (atlas, counting)
    };
    let ordinals: Vec<u32> = (0..DATASETS as u32).collect();

    let (atlas, counting) = open_counted().await;
    let run = atlas.read_run::<f32>("v", &ordinals).await.unwrap();
    let run_requests = counting.count();
    let stacked = run.stacked("v").unwrap();
    assert_eq!(stacked.shape(), &[DATASETS, VALUES]);
    for i in 0..DATASETS {
        assert!(stacked
            .index_axis(ndarray::Axis(0), i)
            .iter()
            .all(|&v| v == i as f32));
    }

    let (atlas, counting) = open_counted().await;
    for &o in &ordinals {
        let view = atlas.dataset_at(o).unwrap();
        view.read_array::<f32>("v", vec![], vec![]).await.unwrap();
    }
    let one_by_one = counting.count();
    eprintln!("run: {run_requests} requests, one by one: {one_by_one}");
    // 20 MiB is one span, fetched as at most 8 parts; one by one, a request per block or per
    // 1 MiB slab of the block cache.
    assert!(run_requests <= 8, "run: {run_requests} requests");
    assert!(one_by_one >= 20, "one by one: {one_by_one} requests");
    // A second run read hits the cache.
    let (atlas, counting) = open_counted().await;
    atlas.read_run::<f32>("v", &ordinals[..10]).await.unwrap();
    let first = counting.count();
    atlas.read_run::<f32>("v", &ordinals[..10]).await.unwrap();
    assert_eq!(counting.count(), first, "cached blocks cost nothing");
}
