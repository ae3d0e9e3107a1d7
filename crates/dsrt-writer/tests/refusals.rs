//! Requirement 3: the writer refuses bad input with an error naming the sample and column, and
//! never leaves a manifest.json behind.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_schema::{Column, ColumnType, Row, RowProblem, Schema, Value};
use dsrt_writer::{CacheWriter, WriteError, WriterOptions};
use std::path::Path;

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("label", ColumnType::Int64, false),
        Column::new("score", ColumnType::Float64, true),
    ])
    .unwrap()
}

fn good(i: i64) -> Row {
    Row::new().with("label", i).with("score", 0.5)
}

fn assert_unpublished(path: &Path) {
    assert!(
        !path.join("manifest.json").exists(),
        "{} was published",
        path.display()
    );
}

#[test]
fn refuses_a_non_empty_target_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("precious.txt"), b"keep me").unwrap();
    let err = CacheWriter::create(dir.path(), WriterOptions::new("s", schema())).unwrap_err();
    assert!(matches!(err, WriteError::TargetNotEmpty { .. }), "{err}");
    assert_eq!(
        std::fs::read(dir.path().join("precious.txt")).unwrap(),
        b"keep me"
    );
    assert_unpublished(dir.path());
}

#[test]
fn refuses_zero_max_shard_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c");
    let err = CacheWriter::create(&path, WriterOptions::new("s", schema()).max_shard_bytes(0))
        .unwrap_err();
    assert!(
        matches!(
            err,
            WriteError::InvalidOption {
                option: "max_shard_bytes",
                ..
            }
        ),
        "{err}"
    );
    assert!(!path.exists(), "nothing is created for refused options");
}

#[test]
fn refuses_bad_rows_naming_sample_and_column_and_stays_usable() {
    type Case = (Row, &'static str, fn(&RowProblem) -> bool);
    let cases: Vec<Case> = vec![
        (Row::new().with("label", 1i64), "score", |p| {
            matches!(p, RowProblem::Missing)
        }),
        (good(1).with("extra", true), "extra", |p| {
            matches!(p, RowProblem::NotInSchema)
        }),
        (
            Row::new().with("label", "one").with("score", 0.5),
            "label",
            |p| matches!(p, RowProblem::WrongType { .. }),
        ),
        (
            Row::new().with("label", 1i64).with("score", f64::NAN),
            "score",
            |p| matches!(p, RowProblem::NonFinite(_)),
        ),
        (
            Row::new()
                .with("label", 1i64)
                .with("score", f64::NEG_INFINITY),
            "score",
            |p| matches!(p, RowProblem::NonFinite(_)),
        ),
        (
            Row::new().with("label", Value::Null).with("score", 0.5),
            "label",
            |p| matches!(p, RowProblem::NullNotAllowed),
        ),
    ];
    for (row, column, is_expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c");
        let mut writer = CacheWriter::create(&path, WriterOptions::new("s", schema())).unwrap();
        writer.add(b"ok", &good(0)).unwrap();
        writer.add(b"ok", &good(1)).unwrap();
        let err = writer.add(b"bad", &row).unwrap_err();
        let WriteError::Row { sample, source, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(*sample, 2);
        assert_eq!(source.column, column);
        assert!(is_expected(&source.problem), "{err}");
        let text = err.to_string();
        assert!(text.contains("sample 2") && text.contains(column), "{text}");
        assert_unpublished(&path);
        // The refused row wrote nothing; the writer goes on and publishes two samples.
        assert_eq!(writer.add(b"ok", &good(2)).unwrap(), 2);
        assert_eq!(writer.finish().unwrap().samples, 3);
    }
}

#[test]
fn positional_values_are_checked_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c");
    let mut writer = CacheWriter::create(&path, WriterOptions::new("s", schema())).unwrap();
    let err = writer
        .add_values(
            b"x",
            &[
                dsrt_schema::ValueRef::Int64(1),
                dsrt_schema::ValueRef::Float64(f64::INFINITY),
            ],
        )
        .unwrap_err();
    assert!(err.to_string().contains("\"score\""), "{err}");
    drop(writer);
    assert_unpublished(&path);
}

#[test]
fn a_dropped_writer_leaves_no_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c");
    let mut writer = CacheWriter::create(&path, WriterOptions::new("s", schema())).unwrap();
    writer.add(b"payload", &good(0)).unwrap();
    drop(writer);
    assert_unpublished(&path);
    assert!(path.join("index.bin").exists());
}

#[test]
fn a_manifest_key_of_the_format_itself_is_refused_and_others_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let options =
        WriterOptions::new("s", schema()).manifest_key("sample_count", serde_json::json!(5));
    let err = CacheWriter::create(dir.path().join("bad"), options).unwrap_err();
    assert!(
        matches!(
            err,
            WriteError::InvalidOption {
                option: "manifest_keys",
                ..
            }
        ),
        "{err}"
    );
    let options = WriterOptions::new("s", schema())
        .manifest_key("tokens", serde_json::json!({"dtype": "uint16"}));
    let path = dir.path().join("good");
    let mut writer = CacheWriter::create(&path, options).unwrap();
    writer.add(b"x", &good(1)).unwrap();
    writer.finish().unwrap();
    let text = std::fs::read_to_string(path.join("manifest.json")).unwrap();
    let manifest = dsrt_manifest::Manifest::parse(text.as_bytes()).unwrap();
    assert_eq!(manifest.extra_key("tokens").unwrap()["dtype"], "uint16");
    assert!(text.find("\"tokens\"").unwrap() > text.find("\"shards\"").unwrap());
}
