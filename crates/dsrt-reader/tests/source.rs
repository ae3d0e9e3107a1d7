//! A cache whose shards come from a `ShardSource`: served through it, checked the same way, and
//! opened without any file under `shards/`.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

mod common;

use common::{payload, write_cache};
use dsrt_manifest::CompressionAlgo;
use dsrt_reader::{
    Cache, CacheError, CacheFile, MappedPayload, OpenOptions, SampleBuf, ShardSource, SourceError,
};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Serves the shard files moved out of the cache directory, counting reads and recording
/// hints; `flip` corrupts one byte of what it serves.
struct MovedShards {
    files: Vec<PathBuf>,
    reads: AtomicU64,
    hints: Mutex<Vec<u64>>,
    flip: Option<u64>,
}

/// The source's own error type, which a reader's caller gets back whole.
#[derive(Debug, thiserror::Error)]
#[error("the store has no shard {0} now")]
struct Unavailable(u64);

impl ShardSource for MovedShards {
    fn read_at(&self, shard: u64, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let file = self
            .files
            .get(shard as usize)
            .ok_or_else(|| SourceError::new(Unavailable(shard), true))?;
        std::fs::File::open(file)?.read_exact_at(buf, offset)?;
        if let Some(at) = self.flip {
            if (offset..offset + buf.len() as u64).contains(&at) {
                buf[(at - offset) as usize] ^= 0xff;
            }
        }
        Ok(())
    }

    fn will_need(&self, shards: &[u64]) {
        self.hints.lock().unwrap().extend_from_slice(shards);
    }
}

/// A cache of `n` samples whose `shards/` directory has been moved away; the source serves it.
fn sourced(dir: &std::path::Path, n: u64, algo: CompressionAlgo) -> (PathBuf, MovedShards) {
    let (path, _) = write_cache(dir, "c", n, algo);
    let moved = dir.join("elsewhere");
    std::fs::rename(path.join("shards"), &moved).unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&moved)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let source = MovedShards {
        files,
        reads: AtomicU64::new(0),
        hints: Mutex::new(Vec::new()),
        flip: None,
    };
    (path, source)
}

#[test]
fn every_read_goes_through_the_source_with_the_same_checks() {
    for algo in [CompressionAlgo::None, CompressionAlgo::Lz4] {
        let dir = tempfile::tempdir().unwrap();
        let (path, source) = sourced(dir.path(), 30, algo);
        assert!(matches!(
            Cache::open(&path, OpenOptions::default()),
            Err(CacheError::MissingShard { .. })
        ));
        let source = Arc::new(source);
        let cache =
            Cache::open_with_source(&path, OpenOptions::validated(), source.clone()).unwrap();

        assert!(cache.has_shard_source());
        assert_eq!(cache.shard_path(0), None);
        let mut buf = SampleBuf::new();
        for i in 0..30 {
            assert_eq!(cache.read(i, &mut buf).unwrap().payload, payload(i));
            assert_eq!(cache.read_mapped(i, &mut buf).unwrap().payload, payload(i));
            match cache.read_mapped_location(i, &mut buf).unwrap() {
                MappedPayload::Decoded(bytes) => assert_eq!(bytes, payload(i)),
                other => panic!("a sourced cache has no mapped location: {other:?}"),
            }
            let mut out = Vec::new();
            let range = cache.read_append(i, &mut buf, &mut out).unwrap();
            assert_eq!(out[range], payload(i));
        }
        assert_eq!(source.reads.load(Ordering::Relaxed), 4 * 30);
        cache.will_need(&[0, 1]);
        assert_eq!(*source.hints.lock().unwrap(), [0, 1]);
    }
}

#[test]
fn bytes_a_source_corrupts_are_refused_by_the_envelope_check() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut source) = sourced(dir.path(), 8, CompressionAlgo::None);
    // The first record's header and metadata JSON start at offset 0 of shard 0.
    source.flip = Some(2);
    let cache = Cache::open_with_source(&path, OpenOptions::default(), Arc::new(source)).unwrap();
    let mut buf = SampleBuf::new();
    assert!(matches!(
        cache.read(0, &mut buf),
        Err(CacheError::Record { sample: 0, .. })
    ));
}

#[test]
fn a_source_failure_keeps_its_type_and_retryability_naming_the_shard() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut source) = sourced(dir.path(), 8, CompressionAlgo::None);
    source.files.clear();
    let cache = Cache::open_with_source(&path, OpenOptions::default(), Arc::new(source)).unwrap();
    let error = cache.read(3, &mut SampleBuf::new()).unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
    assert_eq!(
        (error.kind(), error.file()),
        ("io", Some(CacheFile::Shard(0)))
    );
    assert!(
        error.to_string().contains("the store has no shard 0 now"),
        "{error}"
    );
    let CacheError::Source { source, .. } = error else {
        panic!("{error:?}");
    };
    assert!(matches!(
        source.downcast::<Unavailable>(),
        Ok(Unavailable(0))
    ));
}

#[test]
fn a_source_file_out_of_descriptors_is_a_resource_error_not_retryable() {
    struct Exhausted;
    impl ShardSource for Exhausted {
        fn read_at(&self, _: u64, _: u64, _: &mut [u8]) -> Result<(), SourceError> {
            Err(io::Error::from_raw_os_error(24).into())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = sourced(dir.path(), 8, CompressionAlgo::None);
    let cache =
        Cache::open_with_source(&path, OpenOptions::default(), Arc::new(Exhausted)).unwrap();
    let error = cache.read(3, &mut SampleBuf::new()).unwrap_err();
    assert!(matches!(error, CacheError::Resource { .. }), "{error:?}");
    assert!(!error.is_retryable());
}

#[test]
fn validation_still_hashes_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let (path, source) = sourced(dir.path(), 8, CompressionAlgo::None);
    // Two index rows swapped: every row still in bounds, the bytes no longer the manifest's.
    let honest = std::fs::read(path.join("index.bin")).unwrap();
    let mut index = honest.clone();
    index[..24].copy_from_slice(&honest[24..48]);
    index[24..48].copy_from_slice(&honest[..24]);
    std::fs::write(path.join("index.bin"), index).unwrap();
    let error =
        Cache::open_with_source(&path, OpenOptions::validated(), Arc::new(source)).unwrap_err();
    assert!(
        matches!(
            &error,
            CacheError::Checksum {
                file: CacheFile::Index,
                ..
            }
        ),
        "{error:?}"
    );
}
