//! Shared helpers: write small caches through the public writer API.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values
#![allow(dead_code, unreachable_pub)]

use dsrt_manifest::CompressionAlgo;
use dsrt_schema::{Column, ColumnType, Row, Schema, Value};
use dsrt_writer::{CacheSummary, CacheWriter, WriterOptions};
use std::path::{Path, PathBuf};

pub fn schema() -> Schema {
    Schema::new(vec![
        Column::new("label", ColumnType::Int64, false),
        Column::new("score", ColumnType::Float64, true),
        Column::new("caption", ColumnType::Utf8, true),
        Column::new("flag", ColumnType::Bool, true),
    ])
    .unwrap()
}

pub fn row(i: i64) -> Row {
    Row::new()
        .with("label", i)
        .with(
            "score",
            if i % 3 == 0 {
                Value::Null
            } else {
                Value::Float64(i as f64 / 7.0)
            },
        )
        .with("caption", format!("sample {i} ünïcode"))
        .with("flag", i % 2 == 0)
}

pub fn payload(i: u64) -> Vec<u8> {
    (0..(i * 37 % 500)).map(|b| (b * 7 + i) as u8).collect()
}

/// Writes `count` samples with 3 samples per shard or so; returns the directory and summary.
pub fn write_cache(
    root: &Path,
    name: &str,
    count: u64,
    algo: CompressionAlgo,
) -> (PathBuf, CacheSummary) {
    let path = root.join(name);
    let options = WriterOptions::new(name, schema())
        .compression(algo)
        .max_shard_bytes(1500);
    let mut writer = CacheWriter::create(&path, options).unwrap();
    for i in 0..count {
        writer.add(&payload(i), &row(i as i64)).unwrap();
    }
    let summary = writer.finish().unwrap();
    (path, summary)
}

pub fn manifest_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path.join("manifest.json")).unwrap()).unwrap()
}

pub fn write_manifest_json(path: &Path, value: &serde_json::Value) {
    std::fs::write(
        path.join("manifest.json"),
        serde_json::to_vec_pretty(value).unwrap(),
    )
    .unwrap();
}
