//! DatasetRT caches on object storage, against the loopback S3 test server
//! (`.ci/s3-server.sh`, configured by its `AWS_*` and `ATLAS_S3_TEST_BUCKET` variables; the
//! bench prints why and measures nothing without them: a bench is not a test).
//!
//! One cache of about 200 MB in 16 MiB shards (incompressible payloads of 64-192 KiB), published
//! once per server under a fixed prefix and reused. The baselines and floors use an
//! object_store client of their own on the bench's runtime (the cache's clients are shared
//! process-wide, and must not lend them connections). Three groups, each with its baseline in
//! the same run:
//! - `dsrt_remote_epoch`: a whole epoch with a cold local cache (an empty local directory each
//!   iteration, the open included), `Loader` with 2 workers, every payload consumed, against
//!   `baseline_parallel_gets`: every shard object fetched into memory by plain GETs, 2 at a
//!   time, and `baseline_parallel_gets_4`, 4 at a time (as many as the cache keeps in
//!   flight by default). Target: >= 0.7 of the faster baseline. `floor_get_hash_write` (not
//!   a target) does the least a cache could: the same GETs 2 at a time, each shard hashed and
//!   written to a local file as it arrives.
//! - `dsrt_remote_first_sample`: a cold open and the first sample of a 2-worker `Loader`
//!   (default options: the first records are read by range requests while their shards
//!   download), against `baseline_four_gets`: the GETs of manifest.json, index.bin,
//!   metadata.arrow and one full-size shard, one after another. Target: the time to the first
//!   sample at most 1.1x the baseline's, a ratio of at least 0.91. Not targets, to say where
//!   the time goes: `cold_open_first_sample_checked_shard` (`read_while_downloading` off: the
//!   first sample waits for its whole shard, hashed and written), its floor
//!   `floor_four_gets_hashed` (the same GETs, each hashed and written as it arrives),
//!   `cold_open_only`, and the checked path with the loader's chunks one step long
//!   (`cold_open_first_sample_chunks_of_1`) or with no background download competing with
//!   the first shard's (`cold_open_first_sample_inline_no_prefetch`).
//! - `dsrt_remote_warm_epoch`: a second epoch from the filled local cache (the dataset stays
//!   open, as in a job), against `baseline_local_dir_epoch`: the same epoch over the local
//!   copy the cache was published from. Target: >= 0.9.
#![allow(missing_docs)] // criterion_group! generates undocumented items
#![allow(clippy::cast_possible_truncation)] // small known sizes

use criterion::{criterion_group, Criterion, Throughput};
use datasetrt::{Dataset, Loader, LoaderConfig, OpenOptions};
use dsrt_atlas_benches::atlas::time_iters;
use dsrt_atlas_benches::remote::{
    consume, fixture, fresh_dir, get_all, get_hash_write_all, loader_config, runtime,
    server_or_skip, settle_and_remove, shard_objects, TOTAL_BYTES,
};
use dsrt_remote::object_store::{ObjectStore, ObjectStoreExt};
use dsrt_remote::{open_dataset, RemoteOptions, RemotePrefix};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The baselines' own client of the bench's store: built the way `StoreLocation::parse`
/// builds one, but not shared with the cache code (whose clients are reused process-wide),
/// so neither side's pooled connections serve the other.
fn baseline_store(url: &str) -> Arc<dyn ObjectStore> {
    let url = url::Url::parse(url).expect("bench URL");
    let options = std::env::vars().filter_map(|(key, value)| {
        let lower = key.to_ascii_lowercase();
        lower.starts_with("aws_").then_some((lower, value))
    });
    let (store, _) = dsrt_remote::object_store::parse_url_opts(&url, options).expect("store");
    Arc::from(store)
}

/// One object, whole, into memory, on `rt` through `store`.
fn get_with(
    rt: &tokio::runtime::Runtime,
    store: &Arc<dyn ObjectStore>,
    remote: &RemotePrefix,
    relative: &str,
) -> usize {
    let store = Arc::clone(store);
    let path = remote.object(relative);
    rt.block_on(async move {
        let got = store.get(&path).await.expect("GET");
        got.bytes().await.expect("body").len()
    })
}

/// Where a floor measurement fetches from and writes to.
struct Floor<'a> {
    rt: &'a tokio::runtime::Runtime,
    store: &'a Arc<dyn ObjectStore>,
    remote: &'a RemotePrefix,
    root: &'a Path,
}

impl Floor<'_> {
    /// `iters` times, [`get_hash_write_all`] into a fresh directory; the time of the fetches
    /// only.
    fn time(&self, iters: u64, n: &mut u64, objects: &[&str], at_once: usize) -> Duration {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let dir = fresh_dir(self.root, n);
            std::fs::create_dir_all(&dir).expect("floor dir");
            let started = Instant::now();
            get_hash_write_all(self.rt, self.store, self.remote, objects, &dir, at_once);
            total += started.elapsed();
            let _ = std::fs::remove_dir_all(&dir);
        }
        total
    }
}

/// `iters` times: a cold open of `url` in a fresh local directory (`options` for it) and the
/// first sample of a `config` loader; the summed time of those, not of the clean-up.
fn first_sample(
    iters: u64,
    root: &Path,
    n: &mut u64,
    url: &str,
    options: impl Fn(&Path) -> RemoteOptions,
    config: LoaderConfig,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let dir = fresh_dir(root, n);
        let started = Instant::now();
        let dataset = Arc::new(open_dataset(&[url], &options(&dir)).expect("remote dataset opens"));
        let mut loader = Loader::new(Arc::clone(&dataset), config.clone()).expect("loader starts");
        let first = loader.next().expect("a sample").expect("it loads");
        std::hint::black_box(first.payload);
        total += started.elapsed();
        drop(loader);
        drop(dataset);
        settle_and_remove(&dir);
    }
    total
}

fn remote_bench(c: &mut Criterion) {
    let Some(bucket) = server_or_skip("dsrt_remote") else {
        return;
    };
    let (copy, remote) = fixture(&bucket, TOTAL_BYTES);
    let url = remote.url().to_owned();
    let shards = shard_objects(&copy);
    let shard_bytes: u64 = shards
        .iter()
        .map(|s| std::fs::metadata(copy.join(s)).expect("shard").len())
        .sum();
    let work = tempfile::tempdir().expect("temp dir");
    let mut n = 0u64;
    let rt = runtime();
    let store = baseline_store(&url);
    let floor = Floor {
        rt: &rt,
        store: &store,
        remote: &remote,
        root: work.path(),
    };

    let mut group = c.benchmark_group("dsrt_remote_epoch");
    group.throughput(Throughput::Bytes(shard_bytes));
    let objects: Vec<&str> = shards.iter().map(String::as_str).collect();
    let parallel_gets = |at_once: usize| {
        let (rt, store, remote, objects) = (&rt, &store, &remote, &objects);
        move |b: &mut criterion::Bencher<'_>| {
            b.iter_custom(|iters| {
                time_iters(iters, || get_all(rt, store, remote, objects, at_once))
            });
        }
    };
    group.bench_function("baseline_parallel_gets", parallel_gets(2));
    // The same GETs 4 at a time (the cache keeps `prefetch_shards`, 8 by default, in flight;
    // on this loopback server plain GETs gain nothing past 2). The target holds against the faster of the two baselines.
    group.bench_function("baseline_parallel_gets_4", parallel_gets(4));
    // Not a target: the least any cache could do with the same GETs, each shard hashed
    // (SHA-256) and written to a local file as it arrives, 2 at a time on the runtime's 2
    // threads. Its ratio to the baseline bounds what `cold_epoch_2_workers` can reach on
    // this machine.
    group.bench_function("floor_get_hash_write", |b| {
        b.iter_custom(|iters| {
            let objects: Vec<&str> = shards.iter().map(String::as_str).collect();
            floor.time(iters, &mut n, &objects, 2)
        });
    });
    group.bench_function("cold_epoch_2_workers", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = fresh_dir(work.path(), &mut n);
                let started = Instant::now();
                let dataset = Arc::new(
                    open_dataset(&[url.as_str()], &RemoteOptions::new(&dir))
                        .expect("remote dataset opens"),
                );
                std::hint::black_box(consume(&dataset));
                total += started.elapsed();
                drop(dataset);
                settle_and_remove(&dir);
            }
            total
        });
    });
    group.finish();

    let mut group = c.benchmark_group("dsrt_remote_first_sample");
    group.bench_function("baseline_four_gets", |b| {
        b.iter_custom(|iters| {
            time_iters(iters, || {
                for object in ["manifest.json", "index.bin", "metadata.arrow", &shards[0]] {
                    std::hint::black_box(get_with(&rt, &store, &remote, object));
                }
            })
        });
    });
    // Not a target: the four GETs of the baseline, each hashed and written to a file as it
    // arrives (what any cache must do at least before serving the first sample).
    group.bench_function("floor_four_gets_hashed", |b| {
        b.iter_custom(|iters| {
            let objects = ["manifest.json", "index.bin", "metadata.arrow", &shards[0]];
            floor.time(iters, &mut n, &objects, 1)
        });
    });
    group.bench_function("cold_open_first_sample", |b| {
        b.iter_custom(|iters| {
            first_sample(
                iters,
                work.path(),
                &mut n,
                &url,
                |dir| RemoteOptions::new(dir),
                loader_config(),
            )
        });
    });
    // Not targets, to tell where the time goes: the open alone, and the checked path's first
    // sample with no background downloads competing (no prefetch, the loader reading on the
    // calling thread).
    group.bench_function("cold_open_only", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = fresh_dir(work.path(), &mut n);
                let started = Instant::now();
                let dataset = open_dataset(&[url.as_str()], &RemoteOptions::new(&dir))
                    .expect("remote dataset opens");
                total += started.elapsed();
                drop(dataset);
                settle_and_remove(&dir);
            }
            total
        });
    });
    // The checked path again, with the loader's chunks one step long instead of ramping up
    // from one step (kept to compare with earlier runs).
    group.bench_function("cold_open_first_sample_chunks_of_1", |b| {
        b.iter_custom(|iters| {
            let config = LoaderConfig {
                prefetch: 1,
                ..loader_config()
            };
            let options = |dir: &Path| RemoteOptions::new(dir).read_while_downloading(false);
            first_sample(iters, work.path(), &mut n, &url, options, config)
        });
    });
    // With `read_while_downloading` off: the first sample waits for its shard to be
    // downloaded, hashed and written (compare with `floor_four_gets_hashed`).
    group.bench_function("cold_open_first_sample_checked_shard", |b| {
        b.iter_custom(|iters| {
            let options = |dir: &Path| RemoteOptions::new(dir).read_while_downloading(false);
            first_sample(iters, work.path(), &mut n, &url, options, loader_config())
        });
    });
    group.bench_function("cold_open_first_sample_inline_no_prefetch", |b| {
        b.iter_custom(|iters| {
            let config = LoaderConfig {
                workers: 0,
                ..loader_config()
            };
            let options = |dir: &Path| {
                RemoteOptions::new(dir)
                    .prefetch_shards(0)
                    .read_while_downloading(false)
            };
            first_sample(iters, work.path(), &mut n, &url, options, config)
        });
    });
    group.finish();

    // The warm cache: filled by one epoch before measuring; the dataset stays open.
    let warm_dir = work.path().join("warm");
    let warm = Arc::new(
        open_dataset(&[url.as_str()], &RemoteOptions::new(&warm_dir))
            .expect("remote dataset opens"),
    );
    let samples = consume(&warm);
    let local = Arc::new(Dataset::open(&[&copy], OpenOptions::default()).expect("local copy"));
    assert_eq!(local.len(), samples);
    let mut group = c.benchmark_group("dsrt_remote_warm_epoch");
    group.throughput(Throughput::Bytes(shard_bytes));
    group.bench_function("baseline_local_dir_epoch", |b| {
        b.iter_custom(|iters| time_iters(iters, || consume(&local)));
    });
    group.bench_function("warm_epoch_2_workers", |b| {
        b.iter_custom(|iters| time_iters(iters, || consume(&warm)));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(Duration::from_secs(1));
    targets = remote_bench
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
