//! `Cache::read_mapped` serves exactly what `Cache::read` serves, with the same checks.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

mod common;

use common::{payload, write_cache};
use dsrt_manifest::CompressionAlgo;
use dsrt_reader::{Cache, CacheError, MappedPayload, OpenOptions, SampleBuf};
use dsrt_shard::RecordError;

#[test]
fn mapped_reads_equal_positional_reads() {
    for algo in [CompressionAlgo::None, CompressionAlgo::Lz4] {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = write_cache(dir.path(), "c", 40, algo);
        let cache = Cache::open(&path, OpenOptions::default()).unwrap();
        let (mut a, mut b) = (SampleBuf::new(), SampleBuf::new());
        for i in (0..40).rev() {
            let mapped = cache.read_mapped(i, &mut a).unwrap().to_owned();
            let read = cache.read(i, &mut b).unwrap().to_owned();
            assert_eq!(mapped, read);
            assert_eq!(mapped.payload, payload(i));
        }
        assert!(matches!(
            cache.read_mapped(40, &mut a),
            Err(CacheError::Index { .. })
        ));
    }
}

#[test]
fn mapped_reads_check_the_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_cache(dir.path(), "c", 12, CompressionAlgo::None);
    let index = std::fs::read(path.join("index.bin")).unwrap();
    let row = |i: usize| {
        let field = |k: usize| u64::from_le_bytes(index[24 * i + 8 * k..][..8].try_into().unwrap());
        (field(0), field(1))
    };
    let (shard, offset) = row(7);
    let shard = path.join(format!("shards/{shard:06}.bin"));
    let mut bytes = std::fs::read(&shard).unwrap();
    // The envelope starts with {"label":7 for sample 7; make it 8.
    bytes[offset as usize + 8 + r#"{"label":"#.len()] = b'8';
    std::fs::write(&shard, bytes).unwrap();
    let cache = Cache::open(&path, OpenOptions::default()).unwrap();
    let mut buf = SampleBuf::new();
    let err = cache.read_mapped(7, &mut buf).unwrap_err();
    assert!(
        matches!(
            err,
            CacheError::Record {
                sample: 7,
                source: RecordError::Envelope(_),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(cache.read_mapped(6, &mut buf).unwrap().payload, payload(6));
}

#[test]
fn mapped_locations_point_at_the_payload_bytes() {
    for algo in [CompressionAlgo::None, CompressionAlgo::Lz4] {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = write_cache(dir.path(), "c", 30, algo);
        let cache = Cache::open(&path, OpenOptions::default()).unwrap();
        let mut buf = SampleBuf::new();
        for i in 0..30 {
            match cache.read_mapped_location(i, &mut buf).unwrap() {
                MappedPayload::InShard {
                    shard,
                    offset,
                    len,
                    map,
                } => {
                    assert_eq!(algo, CompressionAlgo::None);
                    let bytes = std::fs::read(cache.shard_path(shard).unwrap()).unwrap();
                    let at = offset as usize;
                    assert_eq!(&bytes[at..at + len], payload(i).as_slice());
                    assert_eq!(&map[at..at + len], payload(i).as_slice());
                }
                MappedPayload::Decoded(decoded) => {
                    assert_eq!(algo, CompressionAlgo::Lz4);
                    assert_eq!(decoded, payload(i).as_slice());
                }
            }
        }
        assert!(cache.shard_path(999).is_none());
    }
}

/// A shard shortened after the cache was opened but before it is first mapped: a record past
/// the new end is a typed I/O error naming the shard, never a fault. (A shard shortened after
/// it was mapped cannot be detected without a system call per read: docs/format/datasetrt.md.)
#[test]
fn a_shard_truncated_before_it_is_mapped_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = write_cache(dir.path(), "c", 12, CompressionAlgo::None);
    let cache = Cache::open(&path, OpenOptions::default()).unwrap();
    let shard = path.join("shards/000000.bin");
    let len = std::fs::metadata(&shard).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&shard)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let mut buf = SampleBuf::new();
    let last_in_shard = (0..12)
        .rev()
        .find(|&i| cache.read_mapped(i, &mut buf).is_err())
        .expect("a record past the cut");
    let err = cache.read_mapped(last_in_shard, &mut buf).unwrap_err();
    assert!(
        matches!(
            &err,
            CacheError::Io {
                file: dsrt_reader::CacheFile::Shard(0),
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("past the end"), "{err}");
    // The first sample still lies inside what is left of the shard.
    assert_eq!(
        cache.read_mapped(0, &mut buf).unwrap().to_owned().payload,
        payload(0)
    );
}
