//! Reading while shards download: `read_while_downloading` (the default) serves the first
//! records of a cache by range requests before any whole shard has arrived, within its bound,
//! and never with `validate_cache`; the shards themselves still download whole, checked, once,
//! and closing the cache stops those downloads cleanly.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod write_support;

use dsrt_reader::SampleBuf;
use dsrt_remote::object_store::memory::InMemory;
use dsrt_remote::{open_remote, publish_cache, PublishOptions, RemoteOptions};
use dsrt_writer::ManifestVersion;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use write_support::{local_names, make_cache, prefix, sample_payload, Behaviour, TestStore};

const SAMPLES: u64 = 40;
const PAYLOAD: usize = 1000;

fn payload(i: u64) -> Vec<u8> {
    sample_payload(i, PAYLOAD)
}

/// A published cache of a few samples per shard behind a store that holds whole-shard GETs,
/// and its number of shards.
fn held_cache() -> (Arc<TestStore>, dsrt_remote::RemotePrefix, usize) {
    let local = tempfile::tempdir().unwrap();
    make_cache(local.path(), SAMPLES, PAYLOAD, ManifestVersion::V3);
    let shards = std::fs::read_dir(local.path().join("shards"))
        .unwrap()
        .count();
    assert!(shards >= 8, "{shards} shards");
    let store = TestStore::new(Arc::new(InMemory::new()), Behaviour::default());
    let to = prefix(store.clone(), "early");
    publish_cache(local.path(), &to, &PublishOptions::default()).unwrap();
    store
        .behaviour
        .hold_shard_gets
        .store(true, Ordering::SeqCst);
    store.gets.lock().unwrap().clear(); // the publish's own reads
    (store, to, shards)
}

fn count(gets: &[String], kind: &str) -> usize {
    gets.iter()
        .filter(|g| g.starts_with(kind) && g.contains("/shards/"))
        .count()
}

#[test]
fn by_default_the_first_records_are_served_by_range_while_their_shards_download() {
    let (store, to, shards) = held_cache();
    let dir = tempfile::tempdir().unwrap();
    let options = RemoteOptions::new(dir.path()).prefetch_shards(0);
    assert!(options.read_while_downloading);
    let cache = Arc::new(open_remote(&to, &options).unwrap());
    // Three reads under way at once before any has returned (every whole-shard GET is held,
    // so they can only be served by range).
    store
        .behaviour
        .hold_range_gets
        .store(true, Ordering::SeqCst);
    let first: Vec<_> = [0, 13, 26]
        .into_iter()
        .map(|i| {
            let cache = Arc::clone(&cache);
            std::thread::spawn(move || {
                let mut buf = SampleBuf::new();
                (i, cache.read(i, &mut buf).unwrap().payload.to_vec())
            })
        })
        .collect();
    while count(&store.gets(), "range") < 3 {
        std::thread::sleep(Duration::from_millis(1));
    }
    store
        .behaviour
        .hold_range_gets
        .store(false, Ordering::SeqCst);
    for reader in first {
        let (i, got) = reader.join().unwrap();
        assert_eq!(got, payload(i), "{i}");
    }
    // Each read also started its shard's whole download (held).
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(count(&store.gets(), "get"), 3, "{:?}", store.gets());

    // A read has returned: the next read of a shard not yet local waits for the shard.
    let later = {
        let cache = Arc::clone(&cache);
        std::thread::spawn(move || {
            let mut buf = SampleBuf::new();
            cache.read(5, &mut buf).unwrap().payload.to_vec()
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !later.is_finished(),
        "a later read waits for its whole shard"
    );
    assert_eq!(count(&store.gets(), "range"), 3, "{:?}", store.gets());

    store
        .behaviour
        .hold_shard_gets
        .store(false, Ordering::SeqCst);
    assert_eq!(later.join().unwrap(), payload(5));
    let mut buf = SampleBuf::new();
    for i in 0..SAMPLES {
        assert_eq!(cache.read(i, &mut buf).unwrap().payload, payload(i), "{i}");
    }
    let gets = store.gets();
    assert_eq!(count(&gets, "range"), 3, "only the first reads: {gets:?}");
    assert_eq!(
        count(&gets, "get"),
        shards,
        "each shard downloaded once: {gets:?}"
    );
}

/// Opens the held cache with `options` and checks that reading `sample` waits for its whole
/// shard (and makes no range request).
fn assert_read_waits_for_its_whole_shard(
    options: impl FnOnce(&std::path::Path) -> RemoteOptions,
    sample: u64,
) {
    let (store, to, _) = held_cache();
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(open_remote(&to, &options(dir.path())).unwrap());
    let reader = {
        let cache = Arc::clone(&cache);
        std::thread::spawn(move || {
            let mut buf = SampleBuf::new();
            cache.read(sample, &mut buf).unwrap().payload.to_vec()
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    assert!(!reader.is_finished(), "the read waits for the whole shard");
    store
        .behaviour
        .hold_shard_gets
        .store(false, Ordering::SeqCst);
    assert_eq!(reader.join().unwrap(), payload(sample));
    assert_eq!(count(&store.gets(), "range"), 0, "{:?}", store.gets());
}

#[test]
fn with_validate_cache_no_record_is_served_before_its_shard_is_checked() {
    let options = |dir: &std::path::Path| {
        RemoteOptions::new(dir)
            .prefetch_shards(0)
            .read_while_downloading(true)
            .validate_cache(true)
    };
    assert_read_waits_for_its_whole_shard(options, 0);
}

#[test]
fn with_the_option_off_a_read_waits_for_its_whole_checked_shard() {
    let options = |dir: &std::path::Path| {
        RemoteOptions::new(dir)
            .prefetch_shards(0)
            .read_while_downloading(false)
    };
    assert_read_waits_for_its_whole_shard(options, 7);
}

#[test]
fn closing_the_cache_stops_the_downloads_its_early_reads_started_and_leaves_no_partial() {
    let (store, to, _) = held_cache();
    let dir = tempfile::tempdir().unwrap();
    let cache = open_remote(&to, &RemoteOptions::new(dir.path()).prefetch_shards(0)).unwrap();
    let mut buf = SampleBuf::new();
    assert_eq!(cache.read(0, &mut buf).unwrap().payload, payload(0));
    // The read was served by range; its shard's download is held until after the close began.
    let release = {
        let store = store.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            store
                .behaviour
                .hold_shard_gets
                .store(false, Ordering::SeqCst);
        })
    };
    drop(cache);
    release.join().unwrap();
    // No reader needed the shard any more: its download stopped, and its partial file is gone
    // before the close returned.
    let files: Vec<String> = local_names(dir.path());
    assert!(
        !files.iter().any(|f| f.contains("shards/")),
        "nothing of the shard is left: {files:?}"
    );
    // At most the shard's own GET (the close may come before it starts); the manifest is not
    // fetched again to explain the stop.
    let gets = store.gets();
    assert!(count(&gets, "get") <= 1, "{gets:?}");
    assert_eq!(
        gets.iter().filter(|g| g.ends_with("manifest.json")).count(),
        1,
        "{gets:?}"
    );
}
