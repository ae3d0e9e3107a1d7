//! Requirement 1: every sample written reads back byte-identical with equal metadata.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

mod common;

use dsrt_manifest::{CompressionAlgo, Manifest};
use dsrt_reader::{Cache, OpenOptions, SampleBuf};
use dsrt_schema::{Column, ColumnType, Row, Schema, Value};
use dsrt_writer::{CacheWriter, WriterOptions};
use proptest::prelude::*;

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("b", ColumnType::Bool, true),
        Column::new("i", ColumnType::Int64, false),
        Column::new("f", ColumnType::Float64, true),
        Column::new("s", ColumnType::Utf8, true),
    ])
    .unwrap()
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(-0.0),
        Just(0.0),
        Just(5e-324),
        Just(-2.2250738585072014e-308 / 3.0),
        Just(f64::MAX),
        Just(-f64::MAX),
        Just(1e300),
        any::<f64>().prop_filter("finite", |v| v.is_finite()),
    ]
}

fn sample() -> impl Strategy<Value = (Vec<u8>, Vec<Value>)> {
    let payload = prop_oneof![
        Just(Vec::new()),
        proptest::collection::vec(any::<u8>(), 0..16),
        proptest::collection::vec(any::<u8>(), 0..3000),
        proptest::collection::vec(0u8..3, 0..5000),
    ];
    let values = (
        prop_oneof![Just(Value::Null), any::<bool>().prop_map(Value::Bool)],
        prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0i64), any::<i64>()]
            .prop_map(Value::Int64),
        prop_oneof![Just(Value::Null), float().prop_map(Value::Float64)],
        prop_oneof![
            Just(Value::Null),
            "\\PC{0,16}".prop_map(Value::Utf8),
            "[\"\\\\\u{0}-\u{1f}\u{10ffff}]{0,4}".prop_map(Value::Utf8)
        ],
    )
        .prop_map(|(b, i, f, s)| vec![b, i, f, s]);
    (payload, values)
}

fn to_row(values: &[Value]) -> Row {
    let names = ["b", "i", "f", "s"];
    let mut row = Row::new();
    // Keys in reverse order: the writer must not depend on row key order.
    for (name, value) in names.iter().zip(values).rev() {
        row.push(*name, value.clone());
    }
    row
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn samples_round_trip(samples in proptest::collection::vec(sample(), 0..24), max_shard in 1u64..6000, lz4 in any::<bool>(), validate in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache");
        let algo = if lz4 { CompressionAlgo::Lz4 } else { CompressionAlgo::None };
        let options = WriterOptions::new("prop", schema()).compression(algo).max_shard_bytes(max_shard);
        let mut writer = CacheWriter::create(&path, options).unwrap();
        for (i, (payload, values)) in samples.iter().enumerate() {
            prop_assert_eq!(writer.add(payload, &to_row(values)).unwrap(), i as u64);
        }
        let summary = writer.finish().unwrap();
        prop_assert_eq!(summary.samples, samples.len() as u64);

        let cache = Cache::open(&path, OpenOptions { validate_cache: validate }).unwrap();
        prop_assert_eq!(cache.len(), samples.len() as u64);
        let mut buf = SampleBuf::new();
        for (i, (payload, values)) in samples.iter().enumerate() {
            let got = cache.read(i as u64, &mut buf).unwrap();
            prop_assert_eq!(got.payload, &payload[..]);
            for (got, want) in got.metadata.values().zip(values) {
                prop_assert!(got.same_as(&want.as_ref()), "{:?} vs {:?}", got, want);
            }
        }
        prop_assert!(cache.read(samples.len() as u64, &mut buf).is_err());
    }
}

#[test]
fn a_new_cache_is_v3_with_the_source_hash_id() {
    let dir = tempfile::tempdir().unwrap();
    let (path, summary) =
        common::write_cache(dir.path(), "imagenet-train", 10, CompressionAlgo::Lz4);
    let cache = Cache::open(&path, OpenOptions::validated()).unwrap();
    let Manifest::V3(manifest) = cache.manifest() else {
        panic!("not v3")
    };
    assert_eq!(
        manifest.cache_id,
        dsrt_manifest::cache_id_for_source("imagenet-train")
    );
    assert_eq!(summary.cache_id, Some(manifest.cache_id));
    assert!(summary.shards.len() > 1, "1500-byte shards rotate");
    for i in 0..10 {
        let sample = cache.sample(i).unwrap();
        assert_eq!(sample.payload, common::payload(i));
        assert_eq!(sample.metadata[0], Value::Int64(i as i64));
    }
}

#[test]
fn metadata_is_served_without_opening_any_shard() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = common::write_cache(dir.path(), "meta", 20, CompressionAlgo::None);
    let cache = Cache::open(&path, OpenOptions::default()).unwrap();
    // With the shards gone, metadata still answers; payload reads fail naming the shard.
    std::fs::rename(path.join("shards"), dir.path().join("moved")).unwrap();
    for i in 0..20u64 {
        let row = cache.metadata_row(i).unwrap();
        assert_eq!(row.get(0), Some(dsrt_schema::ValueRef::Int64(i as i64)));
    }
    let labels: Vec<_> = cache.metadata().column(0).unwrap().values().collect();
    assert_eq!(labels.len(), 20);
    let err = cache.sample(0).unwrap_err();
    assert!(err.to_string().contains("shards/000000.bin"), "{err}");
}

#[test]
fn read_append_gives_the_same_payloads_into_one_buffer() {
    for algo in [CompressionAlgo::None, CompressionAlgo::Lz4] {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = common::write_cache(dir.path(), "append", 30, algo);
        let cache = Cache::open(&path, OpenOptions::default()).unwrap();
        let (mut buf, mut out) = (SampleBuf::new(), b"prefix".to_vec());
        let ranges: Vec<_> = (0..30)
            .rev()
            .map(|i| (i, cache.read_append(i, &mut buf, &mut out).unwrap()))
            .collect();
        assert_eq!(&out[..6], b"prefix");
        for (i, range) in ranges {
            assert_eq!(
                &out[range],
                common::payload(i).as_slice(),
                "{algo:?} sample {i}"
            );
        }
        let before = out.len();
        assert!(cache.read_append(30, &mut buf, &mut out).is_err());
        assert_eq!(out.len(), before, "a failed read appends nothing");
    }
}

#[test]
fn read_at_overwrites_in_place_and_leaves_the_rest() {
    for algo in [CompressionAlgo::None, CompressionAlgo::Lz4] {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = common::write_cache(dir.path(), "at", 30, algo);
        let cache = Cache::open(&path, OpenOptions::default()).unwrap();
        let mut buf = SampleBuf::new();
        // A recycled buffer: full length, stale bytes everywhere, and a prefix to keep.
        let mut out = vec![0xAA; 4096];
        out[..100].fill(0x55);
        let mut at = 100;
        let mut ranges = Vec::new();
        for i in (0..30).rev() {
            let range = cache.read_at(i, &mut buf, &mut out, at).unwrap();
            assert!(
                range.start >= at,
                "{algo:?} sample {i}: payload before the offset"
            );
            at = range.end;
            ranges.push((i, range));
        }
        assert!(out.len() >= at);
        for (i, range) in ranges {
            assert_eq!(
                &out[range],
                common::payload(i).as_slice(),
                "{algo:?} sample {i}"
            );
        }
        assert!(
            out[..100].iter().all(|&b| b == 0x55),
            "bytes before the offset changed"
        );
        // Far past the end: the buffer grows to fit.
        let range = cache.read_at(7, &mut buf, &mut out, 10_000).unwrap();
        assert_eq!(&out[range], common::payload(7).as_slice());
    }
}
