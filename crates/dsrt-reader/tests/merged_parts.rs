//! Caches written side by side and joined by `merge_parts` read back as the one cache of all
//! their samples in part order, checksums included; a part that does not fit is refused
//! before anything moves.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: a failure is the test failing.

use dsrt_manifest::{CompressionAlgo, Manifest};
use dsrt_reader::{Cache, OpenOptions};
use dsrt_schema::{Column, ColumnType, Schema, Value, ValueRef};
use dsrt_writer::{merge_parts, CacheSummary, CacheWriter, PartCache, WriteError, WriterOptions};
use std::path::Path;

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("label", ColumnType::Int64, false),
        Column::new("name", ColumnType::Utf8, true),
    ])
    .unwrap()
}

fn options() -> WriterOptions {
    WriterOptions::new("joined", schema()).max_shard_bytes(20_000)
}

fn sample(i: u64) -> (Vec<u8>, Vec<Value>) {
    let payload = vec![(i % 251) as u8; 100 + (i as usize * 53) % 2_000];
    let name = if i % 7 == 0 {
        Value::Null
    } else {
        Value::Utf8(format!("s{i}"))
    };
    (payload, vec![Value::Int64(i as i64), name])
}

/// Writes samples `range` into a part cache at `dir`.
fn part(dir: &Path, range: std::ops::Range<u64>, options: WriterOptions) -> CacheSummary {
    let mut writer = CacheWriter::create(dir, options).unwrap();
    for i in range {
        let (payload, values) = sample(i);
        let refs: Vec<ValueRef<'_>> = values.iter().map(Value::as_ref).collect();
        writer.add_values(&payload, &refs).unwrap();
    }
    writer.finish().unwrap()
}

#[test]
fn joined_parts_read_back_as_one_cache_in_part_order() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cache");
    let staging = out.join(".parts");
    // Uneven parts, one of them compressed and one empty: each shard keeps its own codec.
    let bounds = [0u64, 700, 701, 701, 1_500, 2_600];
    let mut parts = Vec::new();
    let mut expected_shards = 0;
    for (k, pair) in bounds.windows(2).enumerate() {
        let mut options = options();
        if k == 3 {
            options = options.compression(CompressionAlgo::Lz4);
        }
        let summary = part(&staging.join(format!("{k:06}")), pair[0]..pair[1], options);
        expected_shards += summary.shards.len();
        parts.push(PartCache::from(&summary));
    }
    let summary = merge_parts(&out, &parts, &options()).unwrap();
    assert_eq!(summary.samples, 2_600);
    assert_eq!(summary.shards.len(), expected_shards);
    assert!(expected_shards > 20, "{expected_shards}");
    assert_eq!(
        summary.payload_bytes,
        (0..2_600).map(|i| sample(i).0.len() as u64).sum::<u64>()
    );

    let cache = Cache::open(&out, OpenOptions::validated()).unwrap();
    assert_eq!(cache.len(), 2_600);
    for i in 0..2_600 {
        let got = cache.sample(i).unwrap();
        let (payload, values) = sample(i);
        assert_eq!(got.payload, payload, "sample {i}");
        assert_eq!(got.metadata, values, "sample {i}");
    }
    let manifest = Manifest::parse(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let algos: Vec<_> = manifest
        .description()
        .shards
        .iter()
        .map(|s| s.compression.algo)
        .collect();
    assert!(algos.contains(&CompressionAlgo::Lz4) && algos.contains(&CompressionAlgo::None));
    // Every part is gone; the staging directory itself is the caller's.
    assert_eq!(std::fs::read_dir(&staging).unwrap().count(), 0);
}

#[test]
fn no_parts_make_an_empty_cache() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("empty");
    let summary = merge_parts(&out, &[], &options()).unwrap();
    assert_eq!((summary.samples, summary.shards.len()), (0, 0));
    let cache = Cache::open(&out, OpenOptions::validated()).unwrap();
    assert_eq!(cache.len(), 0);
}

fn refused(parts: &[PartCache], out: &Path) -> WriteError {
    let error = merge_parts(out, parts, &options()).unwrap_err();
    assert!(!out.join("manifest.json").exists());
    error
}

#[test]
fn a_part_that_does_not_fit_is_refused_before_anything_moves() {
    let dir = tempfile::tempdir().unwrap();
    let good = part(&dir.path().join("good"), 0..300, options());
    let other_source = part(
        &dir.path().join("other-source"),
        0..10,
        WriterOptions::new("elsewhere", schema()),
    );
    let other_schema = {
        let schema = Schema::new(vec![Column::new("label", ColumnType::Int64, false)]).unwrap();
        let mut writer = CacheWriter::create(
            dir.path().join("other-schema"),
            WriterOptions::new("joined", schema),
        )
        .unwrap();
        writer.add_values(b"x", &[ValueRef::Int64(1)]).unwrap();
        writer.finish().unwrap()
    };
    let good_part = PartCache::from(&good);
    let out = dir.path().join("out");
    for (bad, words) in [
        (&other_source, "source \"elsewhere\""),
        (&other_schema, "metadata schema differs"),
    ] {
        let error = refused(&[good_part.clone(), PartCache::from(bad)], &out);
        assert_eq!(error.kind(), "part");
        assert_eq!(error.path(), Some(bad.path.as_path()));
        assert!(error.to_string().contains(words), "{error}");
        // The good part was not touched: it still opens whole.
        Cache::open(&good.path, OpenOptions::validated()).unwrap();
    }
    // A shard gone missing, and a part that is no cache at all.
    let broken = part(&dir.path().join("broken"), 0..300, options());
    std::fs::remove_file(broken.path.join("shards/000001.bin")).unwrap();
    let error = refused(&[good_part.clone(), PartCache::from(&broken)], &out);
    assert_eq!(error.kind(), "io");
    assert!(error.to_string().contains("000001.bin"), "{error}");
    let nothing = PartCache {
        path: dir.path().join("nothing"),
        payload_bytes: 0,
    };
    let error = refused(&[good_part.clone(), nothing], &out);
    assert!(error.to_string().contains("manifest.json"), "{error}");
    Cache::open(&good.path, OpenOptions::validated()).unwrap();
}

#[test]
fn a_target_holding_a_cache_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = part(&dir.path().join("good"), 0..50, options());
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("index.bin"), b"").unwrap();
    let error = merge_parts(&out, &[PartCache::from(&good)], &options()).unwrap_err();
    assert_eq!(error.kind(), "target_not_empty");
    Cache::open(&good.path, OpenOptions::default()).unwrap();
}
