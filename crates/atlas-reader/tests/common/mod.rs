//! Collections written for the reader tests.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.
#![allow(dead_code)] // Each test file uses a different part of this module.

use array_format::{FillValue, TimestampNs};
use atlas_writer::{ArraySpec, AtlasWriter, Attr, DatasetSpec, WriterOptions};
use ndarray::{ArrayD, IxDyn};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStore;
use std::sync::Arc;

pub(crate) fn prefix() -> Path {
    Path::from("collections/demo")
}

pub(crate) fn options() -> WriterOptions {
    WriterOptions {
        created_unix_ms: 1_700_000_000_000,
        ..WriterOptions::default()
    }
}

fn arr<T: Clone>(shape: &[usize], values: Vec<T>) -> ArrayD<T> {
    ArrayD::from_shape_vec(IxDyn(shape), values).unwrap()
}

/// A dataset holding one array of every writable element type, with attributes.
pub(crate) fn every_dtype(name: &str, seed: i64) -> DatasetSpec {
    let s = seed as f64;
    DatasetSpec::new(name)
        .attr("source", Attr::from("synthetic"))
        .attr("seed", Attr::Int64(seed))
        .array(
            ArraySpec::new(
                "f32",
                arr(&[2, 4], (0..8).map(|i| i as f32 + s as f32).collect()),
            )
            .dims(["y", "x"])
            .chunks(vec![1, 2])
            .attr("units", Attr::from("K")),
        )
        .array(
            ArraySpec::new("f64", arr(&[3], vec![s, f64::NAN, -s]))
                .fill(FillValue::Float(f64::NAN)),
        )
        .array(ArraySpec::new("i8", arr(&[2], vec![-1i8, seed as i8])))
        .array(ArraySpec::new("i16", arr(&[2], vec![-300i16, 7])))
        .array(ArraySpec::new(
            "i32",
            arr(&[2], vec![i32::MIN, seed as i32]),
        ))
        .array(ArraySpec::new("i64", arr(&[2], vec![i64::MAX, seed])))
        .array(ArraySpec::new("u8", arr(&[3], vec![0u8, 255, 9])).fill(FillValue::UInt(9)))
        .array(ArraySpec::new("u16", arr(&[1], vec![65535u16])))
        .array(ArraySpec::new("u32", arr(&[1], vec![7u32])))
        .array(ArraySpec::new("u64", arr(&[1], vec![u64::MAX])))
        .array(ArraySpec::new(
            "text",
            arr(&[2], vec![format!("name-{seed}"), "é".to_owned()]),
        ))
        .array(ArraySpec::new(
            "bytes",
            arr(&[2], vec![vec![1u8, 2], vec![]]),
        ))
        .array(ArraySpec::new(
            "time",
            arr(&[2], vec![TimestampNs(seed), TimestampNs(-1)]),
        ))
        .array(ArraySpec::declared::<f32>("never_written", vec![3]).fill(FillValue::Float(-9.0)))
}

/// Writes `datasets` to a fresh InMemory store under `prefix()`.
pub(crate) async fn write(datasets: impl IntoIterator<Item = DatasetSpec>) -> Arc<dyn ObjectStore> {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    write_to(Arc::clone(&store), datasets).await;
    store
}

pub(crate) async fn write_to(
    store: Arc<dyn ObjectStore>,
    datasets: impl IntoIterator<Item = DatasetSpec>,
) {
    let mut writer = AtlasWriter::new(store, &prefix(), options());
    for dataset in datasets {
        writer.write_dataset(dataset).unwrap();
    }
    writer.finish().await.unwrap();
}

/// `n` small datasets named like `station_000123_2024`, one f32 array each.
pub(crate) fn stations(n: usize) -> impl Iterator<Item = DatasetSpec> {
    (0..n).map(|i| {
        DatasetSpec::new(format!("station_{i:06}_2024")).array(ArraySpec::new(
            "temp",
            arr(&[2], vec![i as f32, -(i as f32)]),
        ))
    })
}

/// The bucket to test in; without a configured server the test fails (it was asked to run).
pub(crate) fn bucket(test: &str) -> String {
    let Ok(bucket) = std::env::var("ATLAS_S3_TEST_BUCKET") else {
        panic!(
            "{test}: ATLAS_S3_TEST_BUCKET is not set, so no S3 server is configured. \
             Run `cargo xtask test`, or start one with `bash .ci/s3-server.sh start DIR` and \
             `source DIR/env` first."
        );
    };
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        dsrt_atlas_link_shaper::loopback_addr(&endpoint).is_some(),
        "ATLAS_S3_TEST_BUCKET is set but AWS_ENDPOINT_URL ('{endpoint}') is not an http URL on \
         127.0.0.1/localhost; these tests only talk to a local server"
    );
    bucket
}
