//! Faults of remote caches on the local S3-compatible server `.ci/s3-server.sh` starts, read
//! as a training job reads them (`open_remote`/`open_dataset` and a `Loader`):
//!
//! 1. a server killed mid-download: retried with backoff, then a retryable error, nothing
//!    partial cached, and the same read succeeds once the server is back;
//! 2. a shard whose bytes do not match the manifest's SHA-256: refused, not cached, named;
//! 3. the remote cache replaced while a job runs: `ManifestChanged`, never a mix;
//! 4. (four processes, one SIGKILLed: `s3_processes.rs`, a `harness = false` target);
//! 5. the local cache limit holds throughout an epoch with two workers.
//!
//! Every test is `#[ignore]`d; `cargo xtask test` starts the server and runs them with
//! `--ignored`. Only loopback endpoints are accepted. Faults of the server itself (a cut
//! connection, a dead server) come from an in-test HTTP proxy between the client and the
//! server (`s3_support::Proxy`), which also counts the shard GETs.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime

mod s3_support;

use dsrt_dataset::{Dataset, DatasetError, LoadedSample, Loader, LoaderConfig};
use dsrt_plan::{PlanConfig, Shuffle};
use dsrt_remote::object_store::{ObjectStoreExt, PutPayload};
use dsrt_remote::{open_dataset, RemoteError, RemoteOptions, RemotePrefix};
use dsrt_shard_cache::{CacheLimits, ShardCache};
use s3_support::{
    files_under, one_cache_dataset, partials_under, payload, publish, remote_error, s3_prefix,
    shard_names, through_proxy, upstream, Mode, Proxy,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// One epoch of `dataset` through a `Loader` with `workers` workers, up to its first error.
fn epoch(
    dataset: &Arc<Dataset>,
    workers: usize,
    shuffle: Shuffle,
) -> (Vec<LoadedSample>, Option<DatasetError>) {
    epoch_with(dataset, workers, 64, shuffle)
}

/// [`epoch`] with chunks of `prefetch` steps.
fn epoch_with(
    dataset: &Arc<Dataset>,
    workers: usize,
    prefetch: usize,
    shuffle: Shuffle,
) -> (Vec<LoadedSample>, Option<DatasetError>) {
    let config = LoaderConfig {
        plan: PlanConfig {
            seed: 7,
            shuffle,
            ..PlanConfig::default()
        },
        workers,
        prefetch,
        ..LoaderConfig::default()
    };
    let mut samples = Vec::new();
    for sample in Loader::new(Arc::clone(dataset), config).unwrap() {
        match sample {
            Ok(sample) => samples.push(sample),
            Err(e) => return (samples, Some(e)),
        }
    }
    (samples, None)
}

/// Every sample equals payload `(seed, sample id)`.
fn check_payloads(samples: &[LoadedSample], seed: u64) {
    for sample in samples {
        assert_eq!(
            sample.payload.as_ref(),
            payload(seed, sample.key.sample_id).as_slice(),
            "sample {:?}",
            sample.key
        );
    }
}

/// The local files under `root` of the shard `suffix` (`shards/<name>`): its final or partial
/// file.
fn local_files_ending(root: &Path, suffix: &str) -> Vec<PathBuf> {
    let (dir, name) = suffix.rsplit_once('/').unwrap_or(("", suffix));
    let partial = format!("{dir}/.shard-cache-partial.{name}");
    files_under(root)
        .into_iter()
        .filter(|p| {
            let p = p.to_string_lossy();
            p.ends_with(suffix) || p.ends_with(&partial)
        })
        .collect()
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn a_server_killed_mid_download_is_retried_then_retryable_and_nothing_partial_is_cached() {
    let dir = tempfile::tempdir().unwrap();
    let to = s3_prefix("killed");
    let copy = publish(dir.path(), "killed", &to, 80, 1, 64 << 10);
    let shards = shard_names(&copy).len();
    assert!(shards >= 3, "{shards} shards");
    let proxy = Proxy::start(upstream());
    let remote = through_proxy(&to, proxy.addr(), Duration::from_secs(5));
    let cache_dir = dir.path().join("local");
    // Every read goes through its shard's download (the first one's record is not served
    // early by a range GET, which the cut would not reach).
    let options = RemoteOptions::new(&cache_dir)
        .retries(3, Duration::from_millis(50))
        .prefetch_shards(0)
        .read_while_downloading(false);
    let dataset = one_cache_dataset(&remote, &options);
    let first_shard = format!("shards/{}", shard_names(&copy)[0]);

    // (a) The server cuts every shard download mid-body: three attempts, 50 + 100 ms apart.
    // Chunks of one step: a `Loader` reads every step of a chunk even after one failed, and
    // each step whose shard cannot be downloaded goes through all the attempts again, so with
    // longer chunks the first error surfaces only after (steps in the chunk) x 3 attempts.
    proxy.set_mode(Mode::CutShardsAfter(8192));
    let start = Instant::now();
    let (samples, error) = epoch_with(&dataset, 0, 1, Shuffle::Sequential);
    let elapsed = start.elapsed();
    assert!(samples.is_empty());
    let error = error.expect("the epoch fails while every download is cut");
    let remote_err = remote_error(&error).expect("a RemoteError in the source chain");
    assert!(remote_err.is_retryable(), "{remote_err:?}");
    assert!(error.to_string().contains(&first_shard), "{error}");
    let gets = proxy.shard_gets();
    assert_eq!(gets.len(), 3, "one GET per attempt: {gets:?}");
    assert!(gets
        .iter()
        .all(|g| !g.completed && g.forwarded == 8192 && g.path.ends_with(&first_shard)));
    assert!(
        elapsed >= Duration::from_millis(150),
        "backoff: {elapsed:?}"
    );
    assert_eq!(partials_under(&cache_dir), Vec::<PathBuf>::new());
    assert_eq!(
        local_files_ending(&cache_dir, &first_shard),
        Vec::<PathBuf>::new()
    );

    // (b) The server dies in the middle of a shard download and stays dead: the first
    // attempt is cut, the other two find no server.
    proxy.set_mode(Mode::KillDuringShard(8192));
    let (samples, error) = epoch_with(&dataset, 0, 1, Shuffle::Sequential);
    assert!(samples.is_empty());
    let error = error.expect("the epoch fails while the server is dead");
    let remote_err = remote_error(&error).expect("a RemoteError in the source chain");
    assert!(remote_err.is_retryable(), "{remote_err:?}");
    assert_eq!(proxy.mode(), Mode::Refuse);
    let gets = proxy.shard_gets();
    assert_eq!(gets.len(), 4, "one more (cut) shard GET: {gets:?}");
    assert!(!gets[3].completed && gets[3].forwarded == 8192);
    assert!(
        proxy.refused() >= 2,
        "the two later attempts reach a dead server ({} refused)",
        proxy.refused()
    );
    assert_eq!(partials_under(&cache_dir), Vec::<PathBuf>::new());
    assert_eq!(
        local_files_ending(&cache_dir, &first_shard),
        Vec::<PathBuf>::new()
    );

    // (c) The server is back: the same epoch reads every sample byte-exact, each shard
    // downloaded once.
    proxy.set_mode(Mode::Forward);
    let (samples, error) = epoch(&dataset, 2, Shuffle::Sequential);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(samples.len(), 80);
    check_payloads(&samples, 1);
    let completed: Vec<_> = proxy
        .shard_gets()
        .into_iter()
        .filter(|g| g.completed)
        .collect();
    assert_eq!(completed.len(), shards, "{completed:?}");
    // Closing the dataset waits for its checked downloads to be published (fsync, rename).
    drop(dataset);
    assert_eq!(partials_under(&cache_dir), Vec::<PathBuf>::new());
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn a_shard_not_matching_the_manifest_is_refused_not_cached_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let to = s3_prefix("corrupt");
    let copy = publish(dir.path(), "corrupt", &to, 80, 2, 64 << 10);
    let names = shard_names(&copy);
    let bad = format!("shards/{}", names[1]);
    // Same length, one byte flipped: only the SHA-256 can tell.
    let mut bytes = std::fs::read(copy.join(&bad)).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    let store = to.store();
    let object = to.object(&bad);
    runtime()
        .block_on(store.put(&object, PutPayload::from(bytes)))
        .unwrap();

    let cache_dir = dir.path().join("local");
    let options = RemoteOptions::new(&cache_dir).retries(2, Duration::from_millis(10));
    let dataset = Arc::new(open_dataset(&[to.url()], &options).unwrap());
    let (samples, error) = epoch(&dataset, 2, Shuffle::Sequential);
    check_payloads(&samples, 2);
    assert!(samples.len() < 80);
    let error = error.expect("the corrupt shard fails the epoch");
    let text = error.to_string();
    assert!(
        text.contains(&to.object_url(&bad)) && text.contains("SHA-256"),
        "{text}"
    );
    let remote_err = remote_error(&error).expect("a RemoteError in the source chain");
    assert!(
        matches!(remote_err, RemoteError::Integrity { url, .. } if url.ends_with(&bad)),
        "{remote_err:?}"
    );
    assert!(!remote_err.is_retryable());
    // The prefetcher may still be on its own download of the corrupt shard (a download in
    // flight has its partial file); closing the dataset stops it and waits for it.
    drop(dataset);
    assert_eq!(local_files_ending(&cache_dir, &bad), Vec::<PathBuf>::new());
    assert_eq!(partials_under(&cache_dir), Vec::<PathBuf>::new());
    // The good first shard was cached.
    let first = format!("shards/{}", names[0]);
    assert_eq!(local_files_ending(&cache_dir, &first).len(), 1);
}

/// Deletes every object under `prefix`.
fn delete_all(prefix: &RemotePrefix) {
    use futures::TryStreamExt;
    let store = prefix.store();
    let under = prefix.prefix().clone();
    runtime().block_on(async move {
        let all: Vec<_> = store.list(Some(&under)).try_collect().await.unwrap();
        assert!(!all.is_empty());
        for meta in all {
            store.delete(&meta.location).await.unwrap();
        }
    });
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn a_cache_replaced_while_a_job_runs_is_reported_and_never_mixed() {
    let dir = tempfile::tempdir().unwrap();
    let to = s3_prefix("replaced");
    publish(&dir.path().join("old"), "replaced", &to, 80, 3, 64 << 10);
    let cache_dir = dir.path().join("local");
    let options = RemoteOptions::new(&cache_dir).prefetch_shards(0);
    let dataset = Arc::new(open_dataset(&[to.url()], &options).unwrap());
    let config = LoaderConfig {
        plan: PlanConfig {
            shuffle: Shuffle::Sequential,
            ..PlanConfig::default()
        },
        ..LoaderConfig::default()
    };
    let mut loader = Loader::new(Arc::clone(&dataset), config).unwrap();
    let mut read = Vec::new();
    for _ in 0..5 {
        read.push(loader.next().unwrap().unwrap());
    }
    // Another writer replaces the whole cache under the prefix (same name, other samples).
    delete_all(&to);
    publish(&dir.path().join("new"), "replaced", &to, 95, 4, 64 << 10);
    let error = loop {
        match loader.next() {
            Some(Ok(sample)) => read.push(sample),
            Some(Err(e)) => break e,
            None => panic!("the epoch ended without noticing the replaced manifest"),
        }
    };
    // Everything read came from the old cache.
    check_payloads(&read, 3);
    assert!(read.len() < 80);
    let remote_err = remote_error(&error).expect("a RemoteError in the source chain");
    assert!(
        matches!(remote_err, RemoteError::ManifestChanged { url } if url.ends_with("manifest.json")),
        "{remote_err:?}"
    );
    assert!(error.to_string().contains("reopen it"), "{error}");
    drop(loader);
    drop(dataset);

    // Reopening sees the new cache, in a new local directory.
    let before: Vec<_> = std::fs::read_dir(&cache_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| !n.to_string_lossy().starts_with(".shard-cache"))
        .collect();
    assert_eq!(before.len(), 1, "{before:?}");
    let reopened = Arc::new(open_dataset(&[to.url()], &options).unwrap());
    assert_eq!(reopened.len(), 95);
    let (samples, error) = epoch(&reopened, 2, Shuffle::Full);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(samples.len(), 95);
    check_payloads(&samples, 4);
    let after: Vec<_> = std::fs::read_dir(&cache_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| !n.to_string_lossy().starts_with(".shard-cache"))
        .collect();
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(after.contains(&before[0]));
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn the_cache_limit_holds_throughout_an_epoch_with_two_workers() {
    let dir = tempfile::tempdir().unwrap();
    let to = s3_prefix("limit");
    let copy = publish(dir.path(), "limit", &to, 300, 5, 64 << 10);
    let shards = shard_names(&copy);
    let largest = shards
        .iter()
        .map(|s| {
            std::fs::metadata(copy.join("shards").join(s))
                .unwrap()
                .len()
        })
        .max()
        .unwrap();
    let small: u64 = ["manifest.json", "index.bin", "metadata.arrow"]
        .iter()
        .map(|f| std::fs::metadata(copy.join(f)).unwrap().len())
        .sum();
    // Room for the small files and about three shards.
    let limit = small + 3 * largest + 4096;
    assert!(shards.len() >= 8, "{} shards", shards.len());

    let cache_dir = dir.path().join("local");
    let options = RemoteOptions::new(&cache_dir)
        .cache_limit(limit)
        .wait_for_room(Duration::from_secs(60));
    let dataset = Arc::new(open_dataset(&[to.url()], &options).unwrap());
    // The parent's view of the directory: `usage()` sums the apparent size of every file
    // under it (partial downloads included) under the shared directory lock, so a file being
    // renamed is never counted twice.
    let sampler_cache = ShardCache::open(&cache_dir, CacheLimits::new(limit)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let (mut max, mut count) = (0u64, 0u64);
            while !stop.load(Ordering::SeqCst) {
                max = max.max(sampler_cache.usage().unwrap());
                count += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            (max, count)
        })
    };
    let (samples, error) = epoch(&dataset, 2, Shuffle::Local { window_shards: 2 });
    stop.store(true, Ordering::SeqCst);
    let (max, count) = sampler.join().unwrap();
    assert!(error.is_none(), "{error:?}");
    assert_eq!(samples.len(), 300);
    check_payloads(&samples, 5);
    println!("{count} usage samples, at most {max} of {limit} bytes");
    assert!(count >= 10, "only {count} samples");
    assert!(max <= limit, "usage {max} > limit {limit}");
    // Closing the dataset waits for the background publication of what it downloaded.
    drop(samples);
    drop(dataset);
    // Every shard was read, and only what fits in the limit is left: about three shards, or
    // four smaller ones where the small files (mapped, so evictable once closed) were
    // evicted to make room. The others were evicted.
    let files = files_under(&cache_dir);
    let left = files
        .iter()
        .filter(|p| p.to_string_lossy().contains("/shards/"))
        .count();
    let left_bytes: u64 = files
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(
        left_bytes <= limit,
        "{left} shards, {left_bytes} bytes left"
    );
    assert!(left <= 4 && left < shards.len(), "{left} shards left");
    assert_eq!(partials_under(&cache_dir), Vec::<PathBuf>::new());
}
