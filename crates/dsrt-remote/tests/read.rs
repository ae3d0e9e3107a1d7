//! Opening and reading caches under a store prefix through the local cache: byte-exact reads,
//! refused bad shards, a replaced manifest, the cache limit, range reads and datasets.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: known small values.

use dsrt_manifest::CompressionAlgo;
use dsrt_reader::{Cache, CacheError, SampleBuf};
use dsrt_remote::object_store::local::LocalFileSystem;
use dsrt_remote::object_store::path::Path as StorePath;
use dsrt_remote::{
    open_dataset, open_remote, RemoteError, RemoteOptions, RemotePrefix, ShardFetch,
};
use dsrt_schema::{Column, ColumnType, Row, Schema};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn payload(i: u64) -> Vec<u8> {
    (0..(200 + i * 7) % 900).map(|b| (b ^ i) as u8).collect()
}

/// Writes a cache of `n` samples (several shards) at `root/name` and returns its directory.
fn write_cache(root: &Path, name: &str, n: u64, algo: CompressionAlgo) -> PathBuf {
    let schema = Schema::new(vec![Column::new("label", ColumnType::Int64, false)]).unwrap();
    let options = WriterOptions::new(name, schema)
        .compression(algo)
        .max_shard_bytes(4096);
    let dir = root.join(name);
    let mut writer = CacheWriter::create(&dir, options).unwrap();
    for i in 0..n {
        writer
            .add(&payload(i), &Row::new().with("label", i as i64))
            .unwrap();
    }
    writer.finish().unwrap();
    dir
}

/// A "remote" prefix: the store is a local directory tree seen through object_store.
fn remote(root: &Path, name: &str) -> RemotePrefix {
    let store = LocalFileSystem::new_with_prefix(root).unwrap();
    RemotePrefix::new(
        Arc::new(store),
        StorePath::from(name),
        format!("test://{name}"),
    )
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries {
        let entry = entry.unwrap();
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if !dsrt_atlas_test_runner::is_shard_cache_bookkeeping(&entry.file_name()) {
            out.push(path);
        }
    }
    out
}

fn shard_count(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("shards")).unwrap().count()
}

#[test]
fn a_remote_cache_reads_byte_exact_and_downloads_each_shard_once() {
    for algo in [CompressionAlgo::None, CompressionAlgo::Lz4] {
        let (store_root, local) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let dir = write_cache(store_root.path(), "c", 120, algo);
        let options = RemoteOptions::new(local.path()).prefetch_shards(0);
        let cache = open_remote(&remote(store_root.path(), "c"), &options).unwrap();
        assert!(cache.has_shard_source());
        assert_eq!(cache.len(), 120);
        let mut buf = SampleBuf::new();
        for i in (0..120).rev() {
            let sample = cache.read(i, &mut buf).unwrap();
            assert_eq!(sample.payload, payload(i), "sample {i}");
        }
        // Closing the cache waits for its downloads to be published (fsynced and renamed).
        drop(cache);
        let local_files = files_under(local.path());
        let local_shards: Vec<_> = local_files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "bin") && !p.ends_with("index.bin"))
            .collect();
        assert_eq!(local_shards.len(), shard_count(&dir), "{local_files:?}");
        assert!(local_files
            .iter()
            .all(|p| !p.to_string_lossy().contains(".shard-cache-partial.")));
        // Every local shard is byte-equal to the remote one.
        for shard in local_shards {
            let name = shard.file_name().unwrap();
            assert_eq!(
                std::fs::read(shard).unwrap(),
                std::fs::read(dir.join("shards").join(name)).unwrap()
            );
        }
        // A second open reuses the local files: deleting the remote shards changes nothing.
        std::fs::remove_dir_all(dir.join("shards")).unwrap();
        let again = open_remote(&remote(store_root.path(), "c"), &options).unwrap();
        assert_eq!(again.read(7, &mut buf).unwrap().payload, payload(7));
    }
}

#[test]
fn a_shard_that_does_not_match_the_manifest_is_refused_and_not_cached() {
    let (store_root, local) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dir = write_cache(store_root.path(), "c", 60, CompressionAlgo::None);
    let shard = dir.join("shards").join("000000.bin");
    let mut bytes = std::fs::read(&shard).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    std::fs::write(&shard, bytes).unwrap();
    let options = RemoteOptions::new(local.path()).retries(1, std::time::Duration::ZERO);
    let cache = open_remote(&remote(store_root.path(), "c"), &options).unwrap();
    // The first read is served by a range request (its record is intact, and checked against
    // metadata.arrow); the next read of the shard waits for it whole, which is refused.
    assert_eq!(
        cache.read(0, &mut SampleBuf::new()).unwrap().payload,
        payload(0)
    );
    let error = cache.read(1, &mut SampleBuf::new()).unwrap_err();
    assert_refused_and_not_cached(cache, &error, local.path());

    // With `read_while_downloading` off, or with `validate_cache`, the first read is refused.
    for options in [
        options.clone().read_while_downloading(false),
        options.clone().validate_cache(true),
    ] {
        let local = tempfile::tempdir().unwrap();
        let mut options = options;
        options.cache_dir = local.path().to_path_buf();
        let cache = open_remote(&remote(store_root.path(), "c"), &options).unwrap();
        let error = cache.read(0, &mut SampleBuf::new()).unwrap_err();
        assert_refused_and_not_cached(cache, &error, local.path());
    }
}

/// Checks `error` and, once `cache` is closed (its background downloads of the bad shard
/// ended), that nothing of the bad shard is under `local`.
fn assert_refused_and_not_cached(cache: Cache, error: &CacheError, local: &Path) {
    let text = error.to_string();
    // The store's bytes disagree with the manifest: the source's typed error, not worth a retry.
    assert!(matches!(error, CacheError::Source { .. }), "{error:?}");
    assert!(!error.is_retryable(), "{error:?}");
    assert!(
        text.contains("shards/000000.bin") && text.contains("SHA-256"),
        "{text}"
    );
    drop(cache);
    assert!(
        files_under(local)
            .iter()
            .all(|p| !p.to_string_lossy().contains("000000.bin")),
        "nothing of the bad shard is cached"
    );
}

#[test]
fn a_manifest_replaced_while_in_use_is_reported_not_mixed() {
    let (store_root, local) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_cache(store_root.path(), "c", 60, CompressionAlgo::None);
    let options = RemoteOptions::new(local.path()).prefetch_shards(0);
    let cache = open_remote(&remote(store_root.path(), "c"), &options).unwrap();
    cache.read(0, &mut SampleBuf::new()).unwrap();
    // Replace the whole remote cache with different samples.
    let other = tempfile::tempdir().unwrap();
    let replacement = write_cache(other.path(), "c", 70, CompressionAlgo::Lz4);
    std::fs::remove_dir_all(store_root.path().join("c")).unwrap();
    copy_dir(&replacement, &store_root.path().join("c"));
    let last = cache.len() - 1;
    let error = cache.read(last, &mut SampleBuf::new()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("manifest.json changed since the cache was opened"),
        "{error}"
    );
    // Reopening sees the new cache in a new local directory.
    let reopened = open_remote(&remote(store_root.path(), "c"), &options).unwrap();
    assert_eq!(reopened.len(), 70);
    assert_eq!(
        reopened.read(69, &mut SampleBuf::new()).unwrap().payload,
        payload(69)
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

#[test]
fn a_limit_below_the_largest_shard_fails_at_open_and_the_limit_holds() {
    let (store_root, local) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dir = write_cache(store_root.path(), "c", 200, CompressionAlgo::None);
    let largest = std::fs::read_dir(dir.join("shards"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .max()
        .unwrap();
    let too_small = RemoteOptions::new(local.path()).cache_limit(largest - 1);
    let error = open_remote(&remote(store_root.path(), "c"), &too_small).unwrap_err();
    assert!(matches!(error, RemoteError::CacheLimit { .. }), "{error}");
    // Room for the small files and about three shards: reading everything evicts.
    let small: u64 = ["manifest.json", "index.bin", "metadata.arrow"]
        .iter()
        .map(|f| std::fs::metadata(dir.join(f)).unwrap().len())
        .sum();
    let limit = small + 3 * largest + 1024;
    let options = RemoteOptions::new(local.path())
        .cache_limit(limit)
        .prefetch_shards(0)
        .wait_for_room(std::time::Duration::from_secs(20));
    let cache = open_remote(&remote(store_root.path(), "c"), &options).unwrap();
    let mut buf = SampleBuf::new();
    for i in 0..cache.len() {
        assert_eq!(cache.read(i, &mut buf).unwrap().payload, payload(i));
        let used: u64 = files_under(local.path())
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        assert!(used <= limit, "{used} > {limit} after sample {i}");
    }
    assert!(shard_count(&dir) > 4, "the test needs more shards than fit");
}

#[test]
fn range_fetches_read_records_and_cache_no_shard() {
    let (store_root, local) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_cache(store_root.path(), "c", 50, CompressionAlgo::Lz4);
    let options = RemoteOptions::new(local.path()).fetch(ShardFetch::Range);
    let cache = open_remote(&remote(store_root.path(), "c"), &options).unwrap();
    let mut buf = SampleBuf::new();
    for i in [49, 0, 17, 33] {
        assert_eq!(cache.read(i, &mut buf).unwrap().payload, payload(i));
    }
    assert!(files_under(local.path())
        .iter()
        .all(|p| !p.to_string_lossy().contains("/shards/")));
}

#[test]
fn a_dataset_of_paths_and_file_urls_is_read_in_place() {
    let (store_root, local) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let remote_dir = write_cache(store_root.path(), "r", 30, CompressionAlgo::None);
    let local_dir = write_cache(local.path(), "l", 20, CompressionAlgo::None);
    let url = url_of(&remote_dir);
    let cache_dir = local.path().join("cache");
    let options = RemoteOptions::new(&cache_dir);
    // A file:// URL is a local directory: opened in place.
    let dataset = open_dataset(&[local_dir.to_str().unwrap(), url.as_str()], &options).unwrap();
    assert_eq!(dataset.len(), 50);
    assert!(!cache_dir.exists(), "file:// caches are read in place");
    let mut buf = SampleBuf::new();
    let second = dataset.caches()[1].cache_id;
    let key = dsrt_dataset::SampleKey {
        cache_id: second,
        sample_id: 29,
    };
    assert_eq!(dataset.read(key, &mut buf).unwrap().payload, payload(29));
}

fn url_of(dir: &Path) -> String {
    format!("file://{}", dir.display())
}
