//! Datasets of real caches: identity rules, selection without shards, sample tables across a
//! migration.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_dataset::{Dataset, DatasetError, SampleKey, SampleTable};
use dsrt_migrate::UpdateOutcome;
use dsrt_reader::OpenOptions;
use dsrt_schema::{Column, ColumnType, Row, Schema, ValueRef};
use dsrt_writer::{CacheWriter, ManifestVersion, WriterOptions};
use durable_fs::CancelToken;
use std::path::{Path, PathBuf};

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("label", ColumnType::Int64, false),
        Column::new("split", ColumnType::Utf8, false),
    ])
    .unwrap()
}

fn write(root: &Path, name: &str, count: i64, version: ManifestVersion) -> PathBuf {
    let path = root.join(name);
    let options = WriterOptions::new(name, schema())
        .manifest_version(version)
        .max_shard_bytes(2000);
    let mut writer = CacheWriter::create(&path, options).unwrap();
    for i in 0..count {
        let split = if i % 4 == 0 { "val" } else { "train" };
        writer
            .add(
                format!("{name}:{i}").as_bytes(),
                &Row::new().with("label", i).with("split", split),
            )
            .unwrap();
    }
    writer.finish().unwrap();
    path
}

#[test]
fn v2_ids_are_positions_and_v3_ids_are_stored() {
    let root = tempfile::tempdir().unwrap();
    let a = write(root.path(), "a", 5, ManifestVersion::V2);
    let b = write(root.path(), "b", 5, ManifestVersion::V3);
    let c = write(root.path(), "c", 5, ManifestVersion::V2);
    let dataset = Dataset::open(&[&a, &b, &c], OpenOptions::default()).unwrap();
    let ids: Vec<u64> = dataset.caches().iter().map(|c| c.cache_id).collect();
    assert_eq!(ids, vec![0, dsrt_manifest::cache_id_for_source("b"), 2]);
    assert_eq!(dataset.sample(2, 3).unwrap().payload, b"c:3");
    assert_eq!(dataset.sample(ids[1], 4).unwrap().payload, b"b:4");
    assert!(matches!(
        dataset.sample(1, 0),
        Err(DatasetError::UnknownCache { cache_id: 1 })
    ));
    let key = |cache_id, sample_id| SampleKey {
        cache_id,
        sample_id,
    };
    assert_eq!(dataset.locate(key(ids[1], 4)).unwrap(), 1);
    assert!(matches!(
        dataset.locate(key(1, 0)),
        Err(DatasetError::UnknownCache { cache_id: 1 })
    ));
    let past = dataset.locate(key(2, 5)).unwrap_err();
    assert_eq!(past.kind(), "sample_index");
    assert_eq!(
        past.to_string(),
        "sample id 5 out of range for cache 2 of 5 samples"
    );
    // The v3 id does not depend on position; v2 ids follow the list.
    let reordered = Dataset::open(&[&c, &b, &a], OpenOptions::default()).unwrap();
    assert_eq!(reordered.sample(0, 3).unwrap().payload, b"c:3");
    assert_eq!(reordered.sample(ids[1], 4).unwrap().payload, b"b:4");
}

#[test]
fn duplicate_ids_and_paths_are_refused_naming_both() {
    let root = tempfile::tempdir().unwrap();
    let a = write(root.path(), "a", 2, ManifestVersion::V3);
    let copy = root.path().join("copy-of-a");
    std::fs::create_dir(&copy).unwrap();
    for file in ["manifest.json", "metadata.arrow", "index.bin"] {
        std::fs::copy(a.join(file), copy.join(file)).unwrap();
    }
    std::fs::create_dir(copy.join("shards")).unwrap();
    std::fs::copy(a.join("shards/000000.bin"), copy.join("shards/000000.bin")).unwrap();
    let err = Dataset::open(&[&a, &copy], OpenOptions::default()).unwrap_err();
    assert!(
        matches!(err, DatasetError::DuplicateCacheId { .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("copy-of-a") && text.contains(&a.display().to_string()),
        "{text}"
    );

    let link = root.path().join("link");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let err = Dataset::open(&[&a, &link], OpenOptions::default()).unwrap_err();
    assert!(matches!(err, DatasetError::DuplicatePath { .. }), "{err}");
}

#[test]
fn selection_reads_metadata_only_and_tables_survive_migration() {
    let root = tempfile::tempdir().unwrap();
    let paths = vec![
        write(root.path(), "a", 9, ManifestVersion::V2),
        write(root.path(), "b", 7, ManifestVersion::V2),
    ];
    let dataset = Dataset::open(&paths, OpenOptions::default()).unwrap();

    // Hide every shard: selection must not need them.
    for path in &paths {
        std::fs::rename(path.join("shards"), path.join("shards.hidden")).unwrap();
    }
    let table = dataset.select(|row| row.get("split") == Some(ValueRef::Utf8("val")));
    let expected: Vec<SampleKey> = [(0, 0), (0, 4), (0, 8), (1, 0), (1, 4)]
        .iter()
        .map(|&(cache_id, sample_id)| SampleKey {
            cache_id,
            sample_id,
        })
        .collect();
    assert_eq!(table.keys(), expected.as_slice());
    for path in &paths {
        std::fs::rename(path.join("shards.hidden"), path.join("shards")).unwrap();
    }
    let table_path = root.path().join("val.arrow");
    table.save(&table_path).unwrap();
    let before: Vec<Vec<u8>> = table
        .keys()
        .iter()
        .map(|k| dataset.sample(k.cache_id, k.sample_id).unwrap().payload)
        .collect();

    let report = dataset.update_manifests(3, &CancelToken::new()).unwrap();
    assert!(report
        .entries
        .iter()
        .all(|e| e.outcome == UpdateOutcome::Updated));
    // The open dataset is unchanged, and a fresh one resolves the same ids from v3 manifests.
    assert_eq!(dataset.caches()[1].cache_id, 1);
    let reopened = Dataset::open(&paths, OpenOptions::validated()).unwrap();
    assert!(reopened
        .caches()
        .iter()
        .all(|c| c.cache.manifest().format_version() == 3));
    let loaded = SampleTable::load(&table_path).unwrap();
    assert_eq!(loaded, table);
    let after: Vec<Vec<u8>> = loaded
        .keys()
        .iter()
        .map(|k| reopened.sample(k.cache_id, k.sample_id).unwrap().payload)
        .collect();
    assert_eq!(after, before);
    // After migration the list order no longer matters.
    let reversed: Vec<_> = paths.iter().rev().collect();
    let reordered = Dataset::open(&reversed, OpenOptions::default()).unwrap();
    assert_eq!(reordered.sample(1, 4).unwrap().payload, b"b:4");
}

#[test]
fn a_foreign_file_is_not_a_sample_table() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("t.arrow");
    std::fs::write(&path, b"not arrow").unwrap();
    assert!(matches!(
        SampleTable::load(&path),
        Err(DatasetError::Table { .. })
    ));
}
