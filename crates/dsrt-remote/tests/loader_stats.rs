//! A loader's stats tell whether it keeps up: a consumer that takes its time while the loader
//! reads a local cache waits for almost nothing, and the same consumer reading the same cache
//! through a slow store (every shard GET delayed, no S3 server needed) waits most of the
//! time, and the stats name downloads as where the reading threads' time went.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod write_support;

use dsrt_dataset::{Dataset, Loader, LoaderConfig, StatsSnapshot};
use dsrt_plan::{PlanConfig, Shuffle};
use dsrt_reader::OpenOptions;
use dsrt_remote::object_store::memory::InMemory;
use dsrt_remote::{open_remote, publish_cache, PublishOptions, RemoteOptions};
use dsrt_writer::ManifestVersion;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use write_support::{make_cache, prefix, Behaviour, TestStore};

/// 192 samples of 1,000 bytes, three records to a shard of at most 4,000 bytes: 64 shards.
const SAMPLES: u64 = 192;
const PAYLOAD: usize = 1000;

/// What the consumer does with each sample: 1 ms of work.
const WORK: Duration = Duration::from_millis(1);

fn config() -> LoaderConfig {
    LoaderConfig {
        plan: PlanConfig {
            seed: 3,
            shuffle: Shuffle::Sequential,
            ..PlanConfig::default()
        },
        world_size: 1,
        workers: 2,
        prefetch: 16,
        ..LoaderConfig::default()
    }
}

/// Reads every sample, working `WORK` on each, and returns the loader's stats.
fn consume(dataset: Arc<Dataset>) -> StatsSnapshot {
    let mut loader = Loader::new(dataset, config()).unwrap();
    let mut samples = 0;
    for sample in loader.by_ref() {
        sample.unwrap();
        samples += 1;
        std::thread::sleep(WORK);
    }
    assert_eq!(samples, SAMPLES);
    let stats = loader.stats();
    assert_eq!(stats.samples, SAMPLES);
    assert_eq!(stats.per_source, vec![SAMPLES]);
    assert_eq!(stats.bytes_read, SAMPLES * PAYLOAD as u64);
    assert!(stats.time_to_first_batch.is_some());
    stats
}

fn local_cache(root: &Path) -> PathBuf {
    let path = root.join("cache");
    make_cache(&path, SAMPLES, PAYLOAD, ManifestVersion::V3);
    path
}

#[test]
fn a_consumer_slower_than_a_local_loader_waits_for_almost_nothing() {
    let root = tempfile::tempdir().unwrap();
    let path = local_cache(root.path());
    let dataset = Arc::new(Dataset::open(&[path], OpenOptions::default()).unwrap());
    let stats = consume(dataset);
    assert!(
        stats.stall_share() < 0.1,
        "stall share {} ({stats:?})",
        stats.stall_share()
    );
    assert!(stats.wall >= WORK * (SAMPLES as u32 - 16), "{stats:?}");
}

#[test]
fn the_same_consumer_through_a_slow_store_mostly_waits_and_downloads_are_named() {
    let root = tempfile::tempdir().unwrap();
    let path = local_cache(root.path());
    let behaviour = Behaviour {
        shard_get_delay: Some(Duration::from_millis(300)),
        ..Behaviour::default()
    };
    let store = TestStore::new(Arc::new(InMemory::new()), behaviour);
    let to = prefix(store, "slow");
    publish_cache(&path, &to, &PublishOptions::default()).unwrap();
    let cache_dir = tempfile::tempdir().unwrap();
    let cache = open_remote(&to, &RemoteOptions::new(cache_dir.path())).unwrap();
    let shards = cache.manifest().description().shards.len() as u64;
    let dataset = Arc::new(Dataset::from_caches(vec![(path, cache)]).unwrap());
    let stats = consume(dataset);
    // Eight downloads in flight bring a shard of 3 samples every 300 / 8 ms; the consumer
    // wants one every 3 ms.
    assert!(
        stats.stall_share() > 0.7,
        "stall share {} ({stats:?})",
        stats.stall_share()
    );
    assert_eq!(stats.stages()[0].0, "download", "{stats:?}");
    // Every shard downloaded once, and nothing else.
    assert_eq!(stats.fetch.downloads, shards, "{stats:?}");
    assert!(
        stats.fetch.fetched_bytes >= SAMPLES * PAYLOAD as u64,
        "{stats:?}"
    );
}
