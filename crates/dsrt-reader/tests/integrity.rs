//! Requirement 2: each integrity check of the source text, broken on purpose, gives its typed
//! error naming the cache and the sample, shard or column.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

mod common;

use common::{manifest_json, write_cache, write_manifest_json};
use dsrt_index::{IndexError, IndexRow};
use dsrt_manifest::{CompressionAlgo, ManifestError};
use dsrt_metadata::MetadataError;
use dsrt_reader::{Cache, CacheError, CacheFile, OpenOptions};
use dsrt_shard::{EnvelopeError, RecordError};
use serde_json::json;
use std::path::{Path, PathBuf};

const COUNT: u64 = 12;

fn fresh(algo: CompressionAlgo) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_cache(dir.path(), "c", COUNT, algo);
    Cache::open(&path, OpenOptions::validated()).expect("the unbroken cache opens");
    (dir, path)
}

fn open_err(path: &Path, validate_cache: bool) -> CacheError {
    let err = Cache::open(path, OpenOptions { validate_cache }).unwrap_err();
    assert_eq!(err.path(), path);
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    err
}

fn edit_manifest(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut value = manifest_json(path);
    edit(&mut value);
    write_manifest_json(path, &value);
}

fn index_rows(path: &Path) -> Vec<IndexRow> {
    std::fs::read(path.join("index.bin"))
        .unwrap()
        .chunks_exact(24)
        .map(|c| IndexRow::decode(c.try_into().unwrap()))
        .collect()
}

fn write_index_rows(path: &Path, rows: &[IndexRow]) {
    std::fs::write(
        path.join("index.bin"),
        rows.iter().flat_map(|r| r.encode()).collect::<Vec<_>>(),
    )
    .unwrap();
}

/// Overwrites bytes of the shard holding `sample`, at `delta` bytes into its record.
fn patch_record(path: &Path, sample: usize, delta: u64, bytes: &[u8]) {
    let row = index_rows(path)[sample];
    let shard = path.join("shards").join(format!("{:06}.bin", row.shard_id));
    let mut data = std::fs::read(&shard).unwrap();
    let at = (row.offset + delta) as usize;
    data[at..at + bytes.len()].copy_from_slice(bytes);
    std::fs::write(shard, data).unwrap();
}

#[test]
fn missing_manifest_is_an_incomplete_cache() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    std::fs::remove_file(path.join("manifest.json")).unwrap();
    std::fs::write(path.join(".manifest.json.tmp-1-2-3"), b"{}").unwrap();
    assert!(matches!(
        open_err(&path, false),
        CacheError::Incomplete { .. }
    ));
}

#[test]
fn a_missing_path_is_not_an_incomplete_cache() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("typo");
    let err = Cache::open(&missing, OpenOptions::default()).unwrap_err();
    assert!(matches!(err, CacheError::NotADirectory { .. }), "{err}");
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    assert!(matches!(
        Cache::open(&file, OpenOptions::default()),
        Err(CacheError::NotADirectory { .. })
    ));
}

#[test]
fn unsupported_version() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    edit_manifest(&path, |m| m["format_version"] = json!(4));
    let err = open_err(&path, false);
    assert!(
        matches!(
            err,
            CacheError::Manifest {
                source: ManifestError::UnsupportedVersion(_),
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn v2_with_a_cache_id() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    edit_manifest(&path, |m| m["format_version"] = json!(2));
    let err = open_err(&path, false);
    assert!(
        matches!(
            err,
            CacheError::Manifest {
                source: ManifestError::CacheIdInV2,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn sample_count_against_index_rows() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    edit_manifest(&path, |m| m["sample_count"] = json!(COUNT + 1));
    let err = open_err(&path, false);
    assert!(
        matches!(
            err,
            CacheError::Index {
                source: IndexError::RowCount {
                    expected: 13,
                    found: 12
                },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn index_rows_against_sample_count() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    let rows = index_rows(&path);
    write_index_rows(&path, &rows[..rows.len() - 1]);
    let err = open_err(&path, false);
    assert!(
        matches!(
            err,
            CacheError::Index {
                source: IndexError::RowCount {
                    expected: 12,
                    found: 11
                },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn metadata_rows_against_sample_count() {
    let (dir, path) = fresh(CompressionAlgo::None);
    let (other, _) = write_cache(dir.path(), "fewer", COUNT - 2, CompressionAlgo::None);
    std::fs::copy(other.join("metadata.arrow"), path.join("metadata.arrow")).unwrap();
    let err = open_err(&path, false);
    assert!(
        matches!(
            err,
            CacheError::Metadata {
                source: MetadataError::RowCount {
                    expected: 12,
                    found: 10
                },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn index_size_not_a_multiple_of_24() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    let mut bytes = std::fs::read(path.join("index.bin")).unwrap();
    bytes.push(0);
    std::fs::write(path.join("index.bin"), bytes).unwrap();
    let err = open_err(&path, false);
    assert!(
        matches!(
            err,
            CacheError::Index {
                source: IndexError::Size { .. },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn index_row_out_of_bounds_unknown_shard_and_hostile_lengths() {
    type Case = (fn(&mut IndexRow), fn(&IndexError) -> bool);
    let cases: [Case; 4] = [
        (
            |r| r.shard_id = 99,
            |e| {
                matches!(
                    e,
                    IndexError::UnknownShard {
                        sample: 5,
                        shard_id: 99,
                        ..
                    }
                )
            },
        ),
        (
            |r| r.offset += 100_000,
            |e| matches!(e, IndexError::OutOfBounds { sample: 5, .. }),
        ),
        (
            |r| r.length = 1 << 63,
            |e| matches!(e, IndexError::OutOfBounds { sample: 5, .. }),
        ),
        (
            |r| {
                r.offset = u64::MAX - 3;
                r.length = 8
            },
            |e| matches!(e, IndexError::OutOfBounds { sample: 5, .. }),
        ),
    ];
    for (corrupt, expected) in cases {
        let (_dir, path) = fresh(CompressionAlgo::None);
        let mut rows = index_rows(&path);
        corrupt(&mut rows[5]);
        write_index_rows(&path, &rows);
        edit_manifest(&path, |_| {});
        match open_err(&path, false) {
            CacheError::Index { source, .. } => assert!(expected(&source), "{source}"),
            other => panic!("{other}"),
        }
    }
}

#[test]
fn missing_shard() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    std::fs::remove_file(path.join("shards/000001.bin")).unwrap();
    let err = open_err(&path, false);
    assert!(
        matches!(err, CacheError::MissingShard { shard: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("shards/000001.bin"), "{err}");
}

#[test]
fn shard_length_mismatch() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    let shard = path.join("shards/000000.bin");
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes.push(0);
    std::fs::write(&shard, bytes).unwrap();
    let err = open_err(&path, false);
    assert!(
        matches!(
            err,
            CacheError::ShardLength {
                file: CacheFile::Shard(0),
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn shard_checksum_mismatch_is_caught_only_with_validate_cache() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    let row = index_rows(&path)[4];
    let shard = path.join(format!("shards/{:06}.bin", row.shard_id));
    let mut bytes = std::fs::read(&shard).unwrap();
    let last = (row.offset + row.length - 1) as usize;
    bytes[last] ^= 0xff;
    std::fs::write(&shard, bytes).unwrap();
    let err = open_err(&path, true);
    assert!(
        matches!(&err, CacheError::Checksum { file: CacheFile::Shard(id), .. } if *id == row.shard_id),
        "{err}"
    );
    // Without validate_cache the cache opens and the flipped payload byte comes back as is:
    // the documented cost of skipping the hash.
    let cache = Cache::open(&path, OpenOptions::default()).unwrap();
    let sample = cache.sample(4).unwrap();
    assert_eq!(
        sample.payload.last().copied(),
        common::payload(4).last().map(|b| b ^ 0xff)
    );
}

/// Files are hashed in parallel; the error is still the first failing file in manifest order
/// (index, metadata, shards by id), whatever finished first.
#[test]
fn parallel_hashing_reports_the_first_failure_in_manifest_order() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    let shard_count = common::manifest_json(&path)["shards"]
        .as_array()
        .unwrap()
        .len();
    assert!(
        shard_count >= 3,
        "the test needs several shards, got {shard_count}"
    );
    let flip_shard = |id: usize| {
        let shard = path.join(format!("shards/{id:06}.bin"));
        let mut bytes = std::fs::read(&shard).unwrap();
        bytes[0] ^= 0xff;
        std::fs::write(&shard, bytes).unwrap();
    };
    // Damage the last shard first, then an earlier one: the earlier one is reported.
    flip_shard(shard_count - 1);
    flip_shard(1);
    for _ in 0..20 {
        let err = open_err(&path, true);
        assert!(
            matches!(
                &err,
                CacheError::Checksum {
                    file: CacheFile::Shard(1),
                    ..
                }
            ),
            "{err}"
        );
    }
    // A damaged metadata file comes before every shard.
    edit_manifest(&path, |m| m["metadata_sha256"] = json!("0".repeat(64)));
    let err = open_err(&path, true);
    assert!(
        matches!(
            &err,
            CacheError::Checksum {
                file: CacheFile::Metadata,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn index_checksum_mismatch() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    let mut rows = index_rows(&path);
    rows.swap(0, 1);
    write_index_rows(&path, &rows);
    let err = open_err(&path, true);
    assert!(
        matches!(
            err,
            CacheError::Checksum {
                file: CacheFile::Index,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn metadata_checksum_mismatch() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    edit_manifest(&path, |m| m["metadata_sha256"] = json!("0".repeat(64)));
    let err = open_err(&path, true);
    assert!(
        matches!(
            err,
            CacheError::Checksum {
                file: CacheFile::Metadata,
                ..
            }
        ),
        "{err}"
    );
    Cache::open(&path, OpenOptions::default()).expect("no hashing without validate_cache");
}

#[test]
fn manifest_schema_against_arrow_schema() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    edit_manifest(&path, |m| m["metadata_schema"][2]["type"] = json!("int64"));
    let err = open_err(&path, false);
    assert!(
        matches!(
            err,
            CacheError::Metadata {
                source: MetadataError::SchemaMismatch { position: 2, .. },
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("caption"), "{err}");
}

#[test]
fn embedded_metadata_mismatch_at_sample_read() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    // The envelope starts with {"label":7 for sample 7; make it 8.
    patch_record(&path, 7, 8 + r#"{"label":"#.len() as u64, b"8");
    let cache = Cache::open(&path, OpenOptions::default()).unwrap();
    let err = cache.sample(7).unwrap_err();
    let CacheError::Record {
        sample: 7,
        source: RecordError::Envelope(EnvelopeError::Mismatch { column, .. }),
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(column, "label");
    assert!(err.to_string().contains("sample 7"), "{err}");
    cache.sample(6).expect("other samples still read");
}

#[test]
fn bad_lz4_payload() {
    let (_dir, path) = fresh(CompressionAlgo::Lz4);
    let row = index_rows(&path)[3];
    let shard = path.join(format!("shards/{:06}.bin", row.shard_id));
    let bytes = std::fs::read(&shard).unwrap();
    let json_len = u64::from_le_bytes(bytes[row.offset as usize..][..8].try_into().unwrap());
    // The LZ4 size prefix claims 4 GiB.
    patch_record(&path, 3, 8 + json_len, &[0xff, 0xff, 0xff, 0xff]);
    let cache = Cache::open(&path, OpenOptions::default()).unwrap();
    let err = cache.sample(3).unwrap_err();
    assert!(
        matches!(
            err,
            CacheError::Record {
                sample: 3,
                source: RecordError::Lz4(_),
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn json_length_past_the_record_end_and_hostile() {
    for hostile in [1000u64, 1 << 63, u64::MAX] {
        let (_dir, path) = fresh(CompressionAlgo::None);
        patch_record(&path, 2, 0, &hostile.to_le_bytes());
        let cache = Cache::open(&path, OpenOptions::default()).unwrap();
        let err = cache.sample(2).unwrap_err();
        assert!(
            matches!(
                err,
                CacheError::Record {
                    sample: 2,
                    source: RecordError::JsonLength { .. },
                    ..
                }
            ),
            "{err}"
        );
    }
}

#[test]
fn corrupt_manifest_json_and_foreign_files() {
    let (_dir, path) = fresh(CompressionAlgo::None);
    for bytes in [
        &b""[..],
        b"{",
        b"\x89PNG\r\n\x1a\n",
        b"[1,2,3]",
        b"{\"format_version\": 3}",
    ] {
        std::fs::write(path.join("manifest.json"), bytes).unwrap();
        let err = open_err(&path, false);
        assert!(matches!(err, CacheError::Manifest { .. }), "{err}");
    }
    let (_dir, path) = fresh(CompressionAlgo::None);
    std::fs::write(path.join("metadata.arrow"), b"PAR1 not arrow").unwrap();
    assert!(matches!(
        open_err(&path, false),
        CacheError::Metadata {
            source: MetadataError::Arrow(_),
            ..
        }
    ));
}
