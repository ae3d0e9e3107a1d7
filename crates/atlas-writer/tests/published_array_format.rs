//! The format pins `array-format = "=0.15.0"`. We build segments with `atlas-array-format`, a
//! copy of 0.15.0 whose reader is hardened; this test proves its writer is still 0.15.0 to the
//! byte: a collection written by `AtlasWriter` holds, in every segment, exactly the bytes the
//! published crate from the registry writes for the same arrays, attributes and codec.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use array_format_published as published;
use atlas_footer::Codec;
use atlas_model::Attr;
use atlas_writer::{ArraySpec, AtlasWriter, DatasetSpec, WriterOptions};
use common::written_segments;
use ndarray::{ArrayD, IxDyn};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use std::sync::Arc;

const DATASETS: usize = 5;

fn temperature(d: usize) -> ArrayD<f32> {
    ArrayD::from_shape_fn(IxDyn(&[3, 4]), |ix| {
        (d * 100 + ix[0] * 4 + ix[1]) as f32 * 0.5
    })
}

fn counts(d: usize) -> ArrayD<i64> {
    ArrayD::from_shape_fn(IxDyn(&[5]), |ix| {
        (d as i64 - 2) * 1_000_000_007 + ix[0] as i64
    })
}

fn flags(d: usize) -> ArrayD<u8> {
    ArrayD::from_shape_fn(IxDyn(&[2, 2, 2]), |ix| {
        (d + ix[0] + ix[1] * 2 + ix[2]) as u8
    })
}

fn dataset_name(d: usize) -> String {
    format!("run_{d:03}")
}

/// Writes the collection with `AtlasWriter` and returns each segment's bytes by variable name.
async fn atlas_segments(codec: Codec) -> Vec<(String, Vec<u8>)> {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let prefix = Path::from("c");
    let options = WriterOptions {
        codec,
        ..WriterOptions::default()
    };
    let mut writer = AtlasWriter::new(store.clone(), &prefix, options);
    for d in 0..DATASETS {
        let spec = DatasetSpec::new(dataset_name(d))
            .array(
                ArraySpec::new("temperature", temperature(d))
                    .dims(["y", "x"])
                    .chunks(vec![2, 3])
                    .attr("units", "K")
                    .attr("scale", 0.5f64),
            )
            .array(ArraySpec::new("count", counts(d)).dims(["t"]))
            .array(ArraySpec::new("flags", flags(d)).attr("bits", Attr::Int32List(vec![1, 2, 4])))
            .attr("member", d as i64)
            .attr("model", "coarse");
        writer.write_dataset(spec).unwrap();
    }
    writer.finish().await.unwrap();
    written_segments(&store, "c").await
}

/// The same segments, written by the given crate's `ArrayWriter` directly, with the calls
/// and configuration the Atlas format prescribes (one array per dataset, named after it).
macro_rules! segments_with {
    ($af:ident, $codec:expr) => {{
        use $af::{AttributeValue, EcoString, WriterConfig, DEFAULT_BLOCK_TARGET_SIZE};
        fn writer(codec: Codec) -> $af::ArrayWriter {
            let size = DEFAULT_BLOCK_TARGET_SIZE;
            match codec {
                Codec::None => $af::ArrayWriter::new(WriterConfig {
                    block_target_size: size,
                    ..WriterConfig::new($af::NoCompression)
                }),
                Codec::Lz4 => $af::ArrayWriter::new(WriterConfig {
                    block_target_size: size,
                    ..WriterConfig::new($af::Lz4Codec)
                }),
                Codec::Zstd => $af::ArrayWriter::new(WriterConfig {
                    block_target_size: size,
                    ..WriterConfig::new($af::ZstdCodec::new(3))
                }),
            }
        }
        let names: Vec<String> = (0..DATASETS).map(dataset_name).collect();
        let dims = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let mut t = writer($codec);
        let mut c = writer($codec);
        let mut f = writer($codec);
        let mut ds = writer($codec);
        for (d, name) in names.iter().enumerate() {
            t.define_array::<f32>(name, dims(&["y", "x"]), vec![3, 4], Some(vec![2, 3]), None)
                .unwrap();
            t.write_array(name, vec![0, 0], temperature(d).view())
                .unwrap();
            t.set_attribute(name, "units", AttributeValue::String(EcoString::from("K")))
                .unwrap();
            t.set_attribute(name, "scale", AttributeValue::Float64(0.5))
                .unwrap();
            c.define_array::<i64>(name, dims(&["t"]), vec![5], None, None)
                .unwrap();
            c.write_array(name, vec![0], counts(d).view()).unwrap();
            f.define_array::<u8>(name, Vec::new(), vec![2, 2, 2], None, None)
                .unwrap();
            f.write_array(name, vec![0, 0, 0], flags(d).view()).unwrap();
            let bits = AttributeValue::Int32List(vec![1, 2, 4].into_boxed_slice());
            f.set_attribute(name, "bits", bits).unwrap();
            ds.define_array::<u8>(name, Vec::new(), Vec::new(), None, None)
                .unwrap();
            ds.set_attribute(name, "member", AttributeValue::Int64(d as i64))
                .unwrap();
            let model = AttributeValue::String(EcoString::from("coarse"));
            ds.set_attribute(name, "model", model).unwrap();
        }
        let mut out = Vec::new();
        for (variable, w) in [
            ("temperature", t),
            ("count", c),
            ("flags", f),
            ("_datasets", ds),
        ] {
            let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let path = Path::from("segment");
            w.finish(store.clone(), path.clone()).await.unwrap();
            let bytes = store.get(&path).await.unwrap().bytes().await.unwrap();
            out.push((variable.to_owned(), bytes.to_vec()));
        }
        out
    }};
}

async fn check_codec(codec: Codec) {
    let ours = atlas_segments(codec).await;
    let hardened = segments_with!(array_format, codec);
    let registry = segments_with!(published, codec);
    assert_eq!(
        ours.len(),
        4,
        "{codec:?}: temperature, count, flags, _datasets"
    );
    for ((name, bytes), (reg_name, reg_bytes)) in ours.iter().zip(&registry) {
        assert_eq!(name, reg_name, "{codec:?}: segment order");
        assert!(
            bytes == reg_bytes,
            "{codec:?}: segment {name} differs from the published array-format 0.15.0 \
             ({} vs {} bytes)",
            bytes.len(),
            reg_bytes.len()
        );
    }
    assert_eq!(hardened, registry, "{codec:?}: the crates' writers differ");
}

#[tokio::test]
async fn every_segment_is_what_published_0_15_0_writes() {
    for codec in [Codec::Zstd, Codec::Lz4, Codec::None] {
        check_codec(codec).await;
    }
}
