//! Remote caches through a link shaped like S3's from a nearby instance (`dsrt-atlas-link-shaper`
//! in front of the S3 test server: 20 ms to first byte, 80 MB/s per connection, 400 MB/s in
//! all), read as a training job reads them, with default options: a cold epoch reads every
//! payload byte-exact and keeps `DEFAULT_PREFETCH_SHARDS` shard downloads in flight, as many as
//! the link needs to be filled (docs/remote.md), with shards of 1,200 samples each (the
//! loader's hints must look past a few thousand steps to name that many shards); and the first
//! sample, on a link slow enough per connection that a shard takes a second, arrives in half
//! the time of the open's round trips plus one shard (its record comes by a range request
//! while the shard downloads). What the S3 shape does to times is the `remote_shaped` bench's
//! (a release build).
//!
//! Every test is `#[ignore]`d; `cargo xtask test` starts the server and runs them with
//! `--ignored`.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code.
#![allow(clippy::cast_precision_loss)] // rates

mod s3_support;

use dsrt_atlas_link_shaper::{LinkShape, Shaper};
use dsrt_dataset::{Dataset, Loader, LoaderConfig};
use dsrt_plan::{PlanConfig, Shuffle, DEFAULT_PREFETCH_SHARDS};
use dsrt_remote::{RemoteOptions, RemotePrefix};
use s3_support::{
    one_cache_dataset, payload, publish, s3_prefix, shard_names, through_shaper, upstream,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const SHAPE: LinkShape = LinkShape::S3_NEARBY;
const SHARD_BYTES: u64 = 4 << 20;

fn open(remote: &RemotePrefix, cache_dir: &Path) -> Arc<Dataset> {
    one_cache_dataset(remote, &RemoteOptions::new(cache_dir))
}

fn loader(dataset: &Arc<Dataset>) -> Loader {
    let config = LoaderConfig {
        plan: PlanConfig {
            seed: 11,
            shuffle: Shuffle::Local { window_shards: 4 },
            ..PlanConfig::default()
        },
        workers: 2,
        ..LoaderConfig::default()
    };
    Loader::new(Arc::clone(dataset), config).unwrap()
}

/// A cache of about 16 shards of 4 MiB, published on the server; its local copy.
fn published(dir: &Path, name: &str) -> (PathBuf, RemotePrefix) {
    let to = s3_prefix(name);
    // Payloads average 3.5 KiB: 19,000 of them fill 16 shards.
    let copy = publish(dir, name, &to, 19_000, 5, SHARD_BYTES);
    (copy, to)
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn a_cold_epoch_through_an_s3_shaped_link_keeps_the_default_downloads_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let (copy, to) = published(dir.path(), "shaped-epoch");
    let shards = shard_names(&copy).len();
    assert!(shards > DEFAULT_PREFETCH_SHARDS + 2, "{shards} shards");
    let shaper = Shaper::start(upstream(), SHAPE).unwrap();
    let remote = through_shaper(&to, shaper.addr());
    let dataset = open(&remote, &dir.path().join("local"));
    let started = Instant::now();
    let mut seen = vec![false; dataset.len() as usize];
    for sample in loader(&dataset) {
        let sample = sample.unwrap();
        assert_eq!(
            sample.payload.as_ref(),
            payload(5, sample.key.sample_id).as_slice()
        );
        seen[sample.key.sample_id as usize] = true;
    }
    let elapsed = started.elapsed();
    assert!(seen.iter().all(|&s| s), "the epoch missed samples");
    let stats = shaper.stats();
    assert!(
        stats.peak_in_flight >= DEFAULT_PREFETCH_SHARDS as u64,
        "{stats:?}: the default prefetch kept fewer than {DEFAULT_PREFETCH_SHARDS} requests \
         in flight"
    );
    let shard_bytes: u64 = std::fs::read_dir(copy.join("shards"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(stats.bytes_down >= shard_bytes, "{stats:?}");
    eprintln!(
        "shaped cold epoch: {shards} shards, {:.0} MB/s, {stats:?}",
        shard_bytes as f64 / elapsed.as_secs_f64() / 1e6
    );
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn the_first_sample_through_a_shaped_link_does_not_wait_for_its_shard() {
    let dir = tempfile::tempdir().unwrap();
    let (_, to) = published(dir.path(), "shaped-first");
    // A slow connection (4 MB/s): a shard takes a second, so the model (the open's two round
    // trips, then one shard at the per-connection rate) is made of transfer, not of a debug
    // build's CPU time, and a first sample that waited for its shard would miss it.
    let shape = LinkShape {
        per_connection: 4e6,
        ..SHAPE
    };
    let shaper = Shaper::start(upstream(), shape).unwrap();
    let remote = through_shaper(&to, shaper.addr());
    let model = 2.0 * shape.first_byte.as_secs_f64() + SHARD_BYTES as f64 / shape.per_connection;
    let mut times = Vec::new();
    for attempt in 0..3 {
        let cache_dir = dir.path().join(format!("local-{attempt}"));
        let started = Instant::now();
        let dataset = open(&remote, &cache_dir);
        let mut loader = loader(&dataset);
        let first = loader.next().unwrap().unwrap();
        // Taken before the loader is dropped: dropping it waits for the downloads under way.
        times.push(started.elapsed().as_secs_f64());
        assert_eq!(
            first.payload.as_ref(),
            payload(5, first.key.sample_id).as_slice()
        );
    }
    times.sort_by(f64::total_cmp);
    assert!(
        times[1] <= 0.5 * model,
        "first sample in {:.1} ms (median of {times:?}), a shard's model {:.1} ms",
        times[1] * 1e3,
        model * 1e3
    );
}
