//! Records written by the shard writer, read back and checked.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_index::IndexRow;
use dsrt_manifest::CompressionAlgo;
use dsrt_schema::{Column, ColumnType, Schema, Value, ValueRef};
use dsrt_shard::{
    check_envelope, encode_envelope, load_payload, parse_envelope, split_record, EnvelopeError,
    MaxShardBytes, ShardSetWriter,
};
use proptest::prelude::*;

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("flag", ColumnType::Bool, true),
        Column::new("label", ColumnType::Int64, false),
        Column::new("score", ColumnType::Float64, true),
        Column::new("caption", ColumnType::Utf8, true),
    ])
    .unwrap()
}

fn envelope(values: &[ValueRef<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_envelope(&schema(), values, &mut out);
    out
}

#[test]
fn envelope_is_compact_json_in_schema_order() {
    let json = envelope(&[
        ValueRef::Null,
        ValueRef::Int64(-3),
        ValueRef::Float64(1.0),
        ValueRef::Utf8("a\"é"),
    ]);
    assert_eq!(
        String::from_utf8(json).unwrap(),
        r#"{"flag":null,"label":-3,"score":1.0,"caption":"a\"é"}"#
    );
}

#[test]
fn check_accepts_any_key_order_and_escapes() {
    let expected = [
        ValueRef::Bool(true),
        ValueRef::Int64(5),
        ValueRef::Float64(-0.0),
        ValueRef::Utf8("tab\there"),
    ];
    let json = br#"{ "caption" : "tab\there", "score": -0.0, "label": 5, "fl\u0061g": true }"#;
    check_envelope(json, &schema(), |c| expected[c]).unwrap();
}

#[test]
fn check_names_each_problem() {
    let expected = [
        ValueRef::Bool(true),
        ValueRef::Int64(5),
        ValueRef::Float64(0.5),
        ValueRef::Null,
    ];
    let good = r#"{"flag":true,"label":5,"score":0.5,"caption":null}"#;
    check_envelope(good.as_bytes(), &schema(), |c| expected[c]).unwrap();
    type Case = (&'static str, fn(&EnvelopeError) -> bool);
    let cases: [Case; 9] = [
        (
            r#"{"flag":true,"label":6,"score":0.5,"caption":null}"#,
            |e| matches!(e, EnvelopeError::Mismatch { column, .. } if column == "label"),
        ),
        (
            r#"{"flag":true,"label":5,"score":0.5000001,"caption":null}"#,
            |e| matches!(e, EnvelopeError::Mismatch { column, .. } if column == "score"),
        ),
        (
            r#"{"flag":true,"label":5.0,"score":0.5,"caption":null}"#,
            |e| matches!(e, EnvelopeError::Mismatch { .. }),
        ),
        (
            r#"{"flag":true,"label":5,"score":0.5}"#,
            |e| matches!(e, EnvelopeError::MissingColumn(c) if c == "caption"),
        ),
        (
            r#"{"flag":true,"label":5,"score":0.5,"caption":null,"x":1}"#,
            |e| matches!(e, EnvelopeError::UnknownKey(k) if k == "x"),
        ),
        (
            r#"{"flag":true,"label":5,"label":5,"score":0.5,"caption":null}"#,
            |e| matches!(e, EnvelopeError::RepeatedKey(_)),
        ),
        (
            r#"{"flag":true,"label":5,"score":0.5,"caption":[1]}"#,
            |e| matches!(e, EnvelopeError::Malformed(_)),
        ),
        (
            r#"{"flag":true,"label":5,"score":0.5,"caption":null} x"#,
            |e| matches!(e, EnvelopeError::Malformed(_)),
        ),
        (r#"[1,2]"#, |e| matches!(e, EnvelopeError::Malformed(_))),
    ];
    for (json, is_expected) in cases {
        let err = check_envelope(json.as_bytes(), &schema(), |c| expected[c]).unwrap_err();
        assert!(is_expected(&err), "{json}: {err}");
    }
}

fn value_strategy(ty: ColumnType, nullable: bool) -> BoxedStrategy<Value> {
    let base = match ty {
        ColumnType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        ColumnType::Int64 => prop_oneof![Just(i64::MIN), Just(i64::MAX), any::<i64>()]
            .prop_map(Value::Int64)
            .boxed(),
        ColumnType::Float64 => prop_oneof![
            Just(-0.0f64),
            Just(5e-324),
            Just(f64::MAX),
            Just(-f64::MAX),
            any::<f64>().prop_filter("finite", |v| v.is_finite())
        ]
        .prop_map(Value::Float64)
        .boxed(),
        ColumnType::Utf8 => "\\PC{0,12}|[\"\\\\\u{0}-\u{1f}]{0,4}"
            .prop_map(Value::Utf8)
            .boxed(),
    };
    if nullable {
        prop_oneof![1 => Just(Value::Null), 4 => base].boxed()
    } else {
        base
    }
}

proptest! {
    #[test]
    fn envelopes_round_trip_through_check_and_parse(row in schema().columns().iter().map(|c| value_strategy(c.ty, c.nullable)).collect::<Vec<_>>()) {
        let values: Vec<ValueRef<'_>> = row.iter().map(Value::as_ref).collect();
        let json = envelope(&values);
        check_envelope(&json, &schema(), |c| values[c]).unwrap();
        dsrt_shard::EnvelopeCodec::new(&schema()).check(&json, &schema(), |c| values[c]).unwrap();
        let parsed = parse_envelope(&json, &schema()).unwrap();
        for (a, b) in parsed.iter().zip(&row) {
            prop_assert!(a.as_ref().same_as(&b.as_ref()));
        }
    }

    #[test]
    fn arbitrary_json_never_panics(json in proptest::collection::vec(any::<u8>(), 0..128)) {
        let expected = [ValueRef::Bool(true), ValueRef::Int64(5), ValueRef::Float64(0.5), ValueRef::Null];
        let _ = check_envelope(&json, &schema(), |c| expected[c]);
        let _ = parse_envelope(&json, &schema());
    }

    #[test]
    fn shard_writer_round_trips_and_rotates(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..30),
        max in 1u64..2000,
        lz4 in any::<bool>(),
    ) {
        let algo = if lz4 { CompressionAlgo::Lz4 } else { CompressionAlgo::None };
        let dir = tempfile::tempdir().unwrap();
        let mut writer = ShardSetWriter::new(dir.path(), algo, MaxShardBytes::new(max).unwrap());
        let json = br#"{}"#;
        let rows: Vec<IndexRow> = payloads.iter().map(|p| writer.append(json, p).unwrap()).collect();
        let entries = writer.finish().unwrap();
        let shards: Vec<Vec<u8>> = entries.iter().map(|e| std::fs::read(dir.path().join(&e.name)).unwrap()).collect();
        for (entry, bytes) in entries.iter().zip(&shards) {
            prop_assert_eq!(entry.byte_len, bytes.len() as u64);
            prop_assert_eq!(&entry.sha256, &dsrt_atlas_codec::to_hex(&dsrt_atlas_codec::sha::sha256(bytes)));
            prop_assert!(!bytes.is_empty());
        }
        // Hashing and writing on the appending thread writes the same bytes.
        let inline_dir = tempfile::tempdir().unwrap();
        let mut inline = ShardSetWriter::new(inline_dir.path(), algo, MaxShardBytes::new(max).unwrap())
            .io_threads(false);
        let inline_rows: Vec<IndexRow> = payloads.iter().map(|p| inline.append(json, p).unwrap()).collect();
        prop_assert_eq!(&inline_rows, &rows);
        prop_assert_eq!(&inline.finish().unwrap(), &entries);
        for entry in &entries {
            prop_assert_eq!(std::fs::read(inline_dir.path().join(&entry.name)).unwrap(), std::fs::read(dir.path().join(&entry.name)).unwrap());
        }
        let mut scratch = Vec::new();
        for (row, payload) in rows.iter().zip(&payloads) {
            let shard = &shards[row.shard_id as usize];
            // A shard only exceeds the target when its first record alone does.
            let record = &shard[row.offset as usize..(row.offset + row.length) as usize];
            if shard.len() as u64 > max {
                prop_assert_eq!(row.offset, 0);
                prop_assert_eq!(record.len(), shard.len());
            }
            let (embedded, stored) = split_record(record).unwrap();
            prop_assert_eq!(embedded, &json[..]);
            prop_assert_eq!(load_payload(algo, stored, &mut scratch).unwrap(), &payload[..]);
        }
    }
}

#[test]
fn fast_check_agrees_with_the_full_check() {
    let expected = [
        ValueRef::Bool(true),
        ValueRef::Int64(5),
        ValueRef::Float64(-0.0),
        ValueRef::Utf8("q\""),
    ];
    let codec = dsrt_shard::EnvelopeCodec::new(&schema());
    let canonical = envelope(&expected);
    codec.check(&canonical, &schema(), |c| expected[c]).unwrap();
    // Another writer's spelling takes the slow path and still matches.
    let foreign = br#"{"caption":"q\"", "score":-0.0, "label":5, "flag":true}"#;
    codec.check(foreign, &schema(), |c| expected[c]).unwrap();
    // A different value fails both ways, with the same error.
    let other = [
        ValueRef::Bool(true),
        ValueRef::Int64(5),
        ValueRef::Float64(0.0),
        ValueRef::Utf8("q\""),
    ];
    let fast = codec
        .check(&canonical, &schema(), |c| other[c])
        .unwrap_err();
    assert_eq!(
        fast,
        check_envelope(&canonical, &schema(), |c| other[c]).unwrap_err()
    );
}

#[test]
fn both_io_modes_write_the_same_shards_for_payloads_of_every_size() {
    // Empty, staged, written through, larger than the stage, and several shards' worth.
    let lens = [
        0usize,
        10,
        16_383,
        16_384,
        70_000,
        300_000,
        5,
        1 << 20,
        3,
        2 << 20,
    ];
    let payloads: Vec<Vec<u8>> = lens
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            // Incompressible, so LZ4 shards rotate as often as plain ones.
            let mut state = 0x9e37_79b9_7f4a_7c15_u64 + i as u64;
            (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect()
        })
        .collect();
    for algo in [CompressionAlgo::None, CompressionAlgo::Lz4] {
        let written: Vec<_> = [true, false]
            .into_iter()
            .map(|threads| {
                let dir = tempfile::tempdir().unwrap();
                let max = MaxShardBytes::new(600_000).unwrap();
                let mut writer = ShardSetWriter::new(dir.path(), algo, max).io_threads(threads);
                let rows: Vec<IndexRow> = payloads
                    .iter()
                    .map(|p| writer.append(br#"{"k":1}"#, p).unwrap())
                    .collect();
                let entries = writer.finish().unwrap();
                let bytes: Vec<Vec<u8>> = entries
                    .iter()
                    .map(|e| std::fs::read(dir.path().join(&e.name)).unwrap())
                    .collect();
                (rows, entries, bytes)
            })
            .collect();
        assert!(written[0].1.len() > 2, "several shards");
        assert_eq!(written[0], written[1], "{algo:?}");
    }
}
