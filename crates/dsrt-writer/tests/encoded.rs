//! Samples encoded on other threads make the same cache, byte for byte, as samples added one
//! by one.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: a failure is the test failing.

use dsrt_manifest::CompressionAlgo;
use dsrt_schema::{Column, ColumnType, Schema, Value, ValueRef};
use dsrt_writer::{CacheWriter, WriteError, WriterOptions};
use proptest::prelude::*;
use std::path::Path;

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("label", ColumnType::Int64, false),
        Column::new("name", ColumnType::Utf8, true),
        Column::new("score", ColumnType::Float64, true),
        Column::new("flag", ColumnType::Bool, false),
    ])
    .unwrap()
}

type Sample = (Vec<u8>, Vec<Value>);

fn options(compression: CompressionAlgo) -> WriterOptions {
    WriterOptions::new("encoded", schema())
        .compression(compression)
        .max_shard_bytes(3_000)
}

use dsrt_atlas_test_runner::files_below as files;

fn serial(dir: &Path, compression: CompressionAlgo, samples: &[Sample]) {
    let mut writer = CacheWriter::create(dir, options(compression)).unwrap();
    for (payload, values) in samples {
        let refs: Vec<ValueRef<'_>> = values.iter().map(Value::as_ref).collect();
        writer.add_values(payload, &refs).unwrap();
    }
    writer.finish().unwrap();
}

/// Encodes on `threads` threads (each taking every `threads`-th sample), appends in order.
fn parallel(dir: &Path, compression: CompressionAlgo, samples: &[Sample], threads: usize) {
    let mut writer = CacheWriter::create(dir, options(compression)).unwrap();
    let encoder = writer.encoder();
    let mut encoded: Vec<Option<dsrt_writer::EncodedSample>> = vec![None; samples.len()];
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let encoder = encoder.clone();
                scope.spawn(move || {
                    samples
                        .iter()
                        .enumerate()
                        .skip(t)
                        .step_by(threads)
                        .map(|(i, (payload, values))| {
                            (i, encoder.encode(payload.clone(), values.clone()).unwrap())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            for (i, sample) in handle.join().unwrap() {
                encoded[i] = Some(sample);
            }
        }
    });
    for sample in encoded {
        writer.add_encoded(&sample.unwrap()).unwrap();
    }
    writer.finish().unwrap();
}

fn sample_strategy() -> impl Strategy<Value = Sample> {
    (
        proptest::collection::vec(any::<u8>(), 0..700),
        any::<i64>(),
        proptest::option::of("[a-z\"\\\\é]{0,12}"),
        proptest::option::of(-1e9f64..1e9),
        any::<bool>(),
    )
        .prop_map(|(payload, label, name, score, flag)| {
            let values = vec![
                Value::Int64(label),
                name.map_or(Value::Null, Value::Utf8),
                score.map_or(Value::Null, Value::Float64),
                Value::Bool(flag),
            ];
            (payload, values)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn encoded_samples_write_the_same_bytes(
        samples in proptest::collection::vec(sample_strategy(), 0..60),
        lz4 in any::<bool>(),
        threads in 1usize..4,
    ) {
        let compression = if lz4 { CompressionAlgo::Lz4 } else { CompressionAlgo::None };
        let root = tempfile::tempdir().unwrap();
        serial(&root.path().join("serial"), compression, &samples);
        parallel(&root.path().join("parallel"), compression, &samples, threads);
        prop_assert_eq!(
            files(&root.path().join("serial")),
            files(&root.path().join("parallel"))
        );
    }
}

#[test]
fn a_sample_that_breaks_the_schema_is_refused_by_the_encoder() {
    let root = tempfile::tempdir().unwrap();
    let writer =
        CacheWriter::create(root.path().join("c"), options(CompressionAlgo::None)).unwrap();
    let encoder = writer.encoder();
    let wrong = vec![
        Value::Utf8("x".into()),
        Value::Null,
        Value::Null,
        Value::Bool(true),
    ];
    let error = encoder.encode(b"p".to_vec(), wrong).unwrap_err();
    assert!(error.to_string().contains("label"), "{error}");
    let short = vec![Value::Int64(1)];
    assert!(encoder.encode(Vec::new(), short).is_err());
}

#[test]
fn a_sample_of_another_writer_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let mut one =
        CacheWriter::create(root.path().join("a"), options(CompressionAlgo::None)).unwrap();
    let other = CacheWriter::create(root.path().join("b"), options(CompressionAlgo::Lz4)).unwrap();
    let values = vec![Value::Int64(1), Value::Null, Value::Null, Value::Bool(true)];
    let foreign = other
        .encoder()
        .encode(b"payload".to_vec(), values.clone())
        .unwrap();
    let error = one.add_encoded(&foreign).unwrap_err();
    assert!(
        matches!(
            error,
            WriteError::InvalidOption {
                option: "encoded sample",
                ..
            }
        ),
        "{error}"
    );
    // The writer is still usable.
    let own = one.encoder().encode(b"payload".to_vec(), values).unwrap();
    assert_eq!(one.add_encoded(&own).unwrap(), 0);
    assert_eq!(one.finish().unwrap().samples, 1);
}
