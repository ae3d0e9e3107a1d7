//! The segment bytes of a many-dataset collection, pinned by their SHA-256.
//!
//! The digests cover every segment of `data.atlas` (the array-format files, found through the
//! collection footer), in container order, with their variable names. They were computed with
//! the writer as it was before array-format began sealing finished arrays into a compact form
//! and streaming segment footers (to bound the writer's memory): that change must not move a
//! byte. The collection mixes what sealing must carry: chunked and
//! single-chunk arrays, written and declared-only arrays, fill values, dimension names,
//! attributes shared across datasets and unique to one, string and list attributes, datasets
//! with different schemas, and names whose order differs from their sort order.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)] // Test code: small known values.

mod common;

use array_format::FillValue;
use atlas_footer::Codec;
use atlas_model::Attr;
use atlas_writer::{ArraySpec, AtlasWriter, DatasetSpec, WriterOptions};
use common::written_segments;
use ndarray::{ArrayD, IxDyn};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStore;
use sha2::{Digest, Sha256};
use std::sync::Arc;

const DATASETS: usize = 3_000;

fn dataset(i: usize) -> DatasetSpec {
    let base = i as f32;
    let temperature = ArrayD::from_shape_vec(
        IxDyn(&[4, 8]),
        (0..32).map(|j| base + j as f32 * 0.5).collect(),
    )
    .unwrap();
    let station = ArrayD::from_shape_vec(IxDyn(&[1]), vec![format!("station-{}", i % 3)]).unwrap();
    // Names count down, so definition order is not name order.
    let mut spec = DatasetSpec::new(format!("run_{:05}", DATASETS - i))
        .array(
            ArraySpec::new("temperature", temperature)
                .dims(["y", "x"])
                .chunks(vec![2, 4])
                .attr("units", "celsius")
                .attr("offset", (i % 7) as f64 * 0.25),
        )
        .array(ArraySpec::new("station", station))
        .array(ArraySpec::declared::<f64>("pressure", vec![4]).fill(FillValue::Float(f64::NAN)))
        .attr("month", Attr::Int64(i as i64))
        .attr(
            "tags",
            Attr::StringList(vec!["a".into(), format!("t{}", i % 5)]),
        );
    if i % 4 == 0 {
        let counts = ArrayD::from_shape_fn(IxDyn(&[10]), |ix| (i * 10 + ix[0]) as i64 - 5_000);
        spec = spec.array(
            ArraySpec::new("counts", counts)
                .dims(["n"])
                .chunks(vec![3])
                .fill(FillValue::Int(-1))
                .attr("bits", Attr::Int32List(vec![1, 2, (i % 3) as i32])),
        );
    }
    if i % 9 == 0 {
        spec = spec.attr("note", Attr::String(format!("dataset {i}")));
    }
    spec
}

/// Segments written, and the SHA-256 of every segment's name, length and bytes in order.
async fn segments_digest(codec: Codec) -> (usize, String) {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let options = WriterOptions {
        codec,
        block_target_size: 64 * 1024,
        created_unix_ms: 1_700_000_000_000,
        ..WriterOptions::default()
    };
    let mut writer = AtlasWriter::new(store.clone(), &Path::from("c"), options);
    for i in 0..DATASETS {
        writer.write_dataset(dataset(i)).unwrap();
    }
    writer.finish().await.unwrap();
    let segments = written_segments(&store, "c").await;
    let mut hasher = Sha256::new();
    for (name, segment) in &segments {
        hasher.update(name.as_bytes());
        hasher.update((segment.len() as u64).to_le_bytes());
        hasher.update(segment);
    }
    let hex = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    (segments.len(), hex)
}

#[tokio::test]
async fn many_datasets_zstd_bytes_are_unchanged() {
    let (len, digest) = segments_digest(Codec::Zstd).await;
    assert_eq!(
        (len, digest.as_str()),
        (
            5,
            "bab4798e6da1e442396b5cf1a09c62b61c7a0aa9ed98b6416382b76f326716d5"
        )
    );
}

#[tokio::test]
async fn many_datasets_uncompressed_bytes_are_unchanged() {
    let (len, digest) = segments_digest(Codec::None).await;
    assert_eq!(
        (len, digest.as_str()),
        (
            5,
            "78b7da7257708a802a36a3ed156fc6b5ec4a313a974367c16621ba2f716aaeaf"
        )
    );
}
