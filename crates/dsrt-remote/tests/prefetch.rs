//! The prefetcher downloads what a reader's hint names, and not what the reader can already
//! serve: a shard this process keeps mapped is not downloaded again after another process
//! evicted its file from the shared local cache, and its mapping serves every read of it.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod write_support;

use dsrt_reader::{Cache, SampleBuf, SharedPayload};
use dsrt_remote::object_store::memory::InMemory;
use dsrt_remote::{open_remote, publish_cache, PublishOptions, RemoteOptions};
use dsrt_writer::ManifestVersion;
use std::sync::Arc;
use std::time::{Duration, Instant};
use write_support::{
    local_files, local_names, make_cache, prefix, sample_payload, Behaviour, TestStore,
};

const SAMPLES: u64 = 40;
const PAYLOAD: usize = 1000;

fn payload(i: u64) -> Vec<u8> {
    sample_payload(i, PAYLOAD)
}

/// The first sample stored in shard `shard`.
fn first_sample_of(cache: &Cache, shard: u64) -> u64 {
    (0..SAMPLES)
        .find(|&i| cache.index().row(i).unwrap().shard_id == shard)
        .unwrap()
}

/// Reads the first sample of `shard` through `read_shared`: it must be a slice of the shard's
/// mapping, with the bytes written.
fn read_mapped(cache: &Cache, shard: u64) {
    let sample = first_sample_of(cache, shard);
    let (mut buf, mut out) = (SampleBuf::default(), Vec::new());
    match cache.read_shared(sample, &mut buf, &mut out, 0).unwrap() {
        SharedPayload::InShard { bytes, range, .. } => {
            assert_eq!(
                &(*bytes).as_ref()[range],
                &payload(sample)[..],
                "sample {sample}"
            );
        }
        SharedPayload::InOut(_) => panic!("sample {sample} of shard {shard} is not mapped"),
    }
}

fn shard_gets(store: &TestStore, name: &str) -> usize {
    store
        .gets()
        .iter()
        .filter(|g| g.ends_with(&format!("/shards/{name}")))
        .count()
}

#[test]
fn a_shard_served_from_a_kept_mapping_is_not_downloaded_again_after_another_process_evicts_it() {
    let local = tempfile::tempdir().unwrap();
    make_cache(local.path(), SAMPLES, PAYLOAD, ManifestVersion::V3);
    let files = local_files(local.path());
    let largest_shard = files
        .iter()
        .filter(|(name, _)| name.starts_with("shards/"))
        .map(|(_, bytes)| bytes.len() as u64)
        .max()
        .unwrap();
    let small: u64 = files
        .iter()
        .filter(|(name, _)| !name.starts_with("shards/"))
        .map(|(_, bytes)| bytes.len() as u64)
        .sum();
    let store = TestStore::new(Arc::new(InMemory::new()), Behaviour::default());
    let to = prefix(store.clone(), "prefetch");
    publish_cache(local.path(), &to, &PublishOptions::default()).unwrap();
    store.gets.lock().unwrap().clear(); // the publish's own reads

    // Room for the small files (and the pin list) and four shards; a reader keeps mappings of
    // up to half the limit, so two shards' worth.
    let dir = tempfile::tempdir().unwrap();
    let options = RemoteOptions::new(dir.path())
        .cache_limit(small + 256 + 4 * largest_shard)
        .read_while_downloading(false);
    let reader = open_remote(&to, &options.clone().prefetch_shards(1)).unwrap();
    let other = open_remote(&to, &options.prefetch_shards(0)).unwrap();
    read_mapped(&reader, 0);
    read_mapped(&reader, 1);
    // Another reader of the same local cache (another process, as far as the local cache can
    // tell) fills it: shard 0, which `reader` no longer holds open, is evicted.
    let mut buf = SampleBuf::default();
    for shard in 2..=6 {
        other
            .read(first_sample_of(&other, shard), &mut buf)
            .unwrap();
    }
    // Names only: the other reader's background publishing may rename files meanwhile.
    let evicted = !local_names(dir.path())
        .iter()
        .any(|name| name.ends_with("/shards/000000.bin"));
    assert!(evicted, "the set-up must evict shard 0's file");
    assert_eq!(shard_gets(&store, "000000.bin"), 1);

    // One prefetch thread takes the hint in order: shard 0, then shard 7.
    reader.will_need(&[0, 7]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while shard_gets(&store, "000007.bin") == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        shard_gets(&store, "000007.bin"),
        1,
        "shard 7 was prefetched"
    );
    assert_eq!(
        shard_gets(&store, "000000.bin"),
        1,
        "shard 0, still mapped, was downloaded again"
    );
    // Both ways of reading are served by the kept mapping, with no GET.
    read_mapped(&reader, 0);
    let sample = first_sample_of(&reader, 0);
    let read = reader.read(sample, &mut buf).unwrap();
    assert_eq!(read.payload, &payload(sample)[..]);
    assert_eq!(shard_gets(&store, "000000.bin"), 1);
}
