//! Reading while shards download: `read_while_downloading` serves the first records of a cache
//! by range requests before any whole shard has arrived, within its bound, and never with
//! `validate_cache`; the shards themselves still download whole, checked, once.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod write_support;

use dsrt_reader::SampleBuf;
use dsrt_remote::object_store::memory::InMemory;
use dsrt_remote::{open_remote, publish_cache, PublishOptions, RemoteOptions};
use dsrt_writer::ManifestVersion;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use write_support::{make_cache, prefix, Behaviour, TestStore};

const SAMPLES: u64 = 40;
const PAYLOAD: usize = 1000;

fn payload(i: u64) -> Vec<u8> {
    (0..PAYLOAD).map(|b| (b as u64 ^ i) as u8).collect()
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
fn the_first_records_are_served_by_range_while_their_shards_download() {
    let (store, to, shards) = held_cache();
    let dir = tempfile::tempdir().unwrap();
    let options = RemoteOptions::new(dir.path())
        .prefetch_shards(0)
        .read_while_downloading(true);
    let cache = open_remote(&to, &options).unwrap();
    let mut buf = SampleBuf::new();
    // Every whole-shard GET is held: these reads can only be served by range.
    for i in [0, 13, 26] {
        assert_eq!(cache.read(i, &mut buf).unwrap().payload, payload(i), "{i}");
    }
    assert_eq!(count(&store.gets(), "range"), 3, "{:?}", store.gets());
    // Each read also started its shard's whole download (held).
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(count(&store.gets(), "get"), 3, "{:?}", store.gets());

    store
        .behaviour
        .hold_shard_gets
        .store(false, Ordering::SeqCst);
    for i in 0..SAMPLES {
        assert_eq!(cache.read(i, &mut buf).unwrap().payload, payload(i), "{i}");
    }
    let gets = store.gets();
    assert!(
        count(&gets, "range") <= 8,
        "early reads are bounded: {gets:?}"
    );
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
fn by_default_a_read_waits_for_its_whole_checked_shard() {
    let options = |dir: &std::path::Path| RemoteOptions::new(dir).prefetch_shards(0);
    assert_read_waits_for_its_whole_shard(options, 7);
}
