//! The remote benchmarks' shared fixture: the loopback S3 test server's bucket, one cache of
//! about 200 MB in 16 MiB shards published there once and reused, and the epochs and cold
//! directories that `dsrt_remote` (the unshaped link) and `remote_shaped` (the link shaped
//! like S3's) both measure.
#![allow(clippy::unwrap_used)] // bench fixtures: a failure is a broken setup, said at once

use crate::SplitMix;
use datasetrt::{
    CacheWriter, Column, ColumnType, Dataset, Loader, LoaderConfig, PlanConfig, Schema, Shuffle,
    ValueRef, WriterOptions,
};
use dsrt_remote::object_store::{ObjectStore, ObjectStoreExt};
use dsrt_remote::{RemotePrefix, StoreLocation};
use futures::StreamExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The size of the cache `dsrt_remote` publishes: about 200 MB of payloads.
pub const TOTAL_BYTES: u64 = 200 << 20;
/// Its shards' size bound.
pub const SHARD_BYTES: u64 = 16 << 20;
/// The loader's worker threads in every epoch.
pub const WORKERS: usize = 2;

/// The bench's bucket; `None` (having said why on stderr, and how to start a server) where no
/// loopback S3 test server is configured: a bench is not a test, and measures nothing then.
pub fn server_or_skip(bench: &str) -> Option<String> {
    match server() {
        Ok(bucket) => Some(bucket),
        Err(why) => {
            eprintln!(
                "{bench} bench: SKIPPED, no S3 test server ({why}). Start one with \
                 `bash .ci/s3-server.sh start DIR` and `source DIR/env`."
            );
            None
        }
    }
}

/// The bench's bucket, or why it cannot run.
pub fn server() -> Result<String, String> {
    let bucket = std::env::var("ATLAS_S3_TEST_BUCKET")
        .map_err(|_| "ATLAS_S3_TEST_BUCKET is not set".to_owned())?;
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    if dsrt_atlas_link_shaper::loopback_addr(&endpoint).is_none() {
        return Err(format!(
            "AWS_ENDPOINT_URL ('{endpoint}') is not a loopback server"
        ));
    }
    Ok(bucket)
}

/// The local copy of a cache of about `total_bytes` (written once, kept under the temp
/// directory) and the prefix it is published under (published unless the server already holds
/// it).
pub fn fixture(bucket: &str, total_bytes: u64) -> (PathBuf, RemotePrefix) {
    let name = format!(
        "dsrt-remote-bench-{}m-{}m",
        total_bytes >> 20,
        SHARD_BYTES >> 20
    );
    let copy = std::env::temp_dir().join(&name);
    if !copy.join("manifest.json").is_file() {
        let _ = std::fs::remove_dir_all(&copy);
        write_copy(&copy, &name, total_bytes);
    }
    let manifest = std::fs::read(copy.join("manifest.json")).expect("local manifest");
    let digest = <sha2::Sha256 as sha2::Digest>::digest(&manifest);
    let tag: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    let url = format!("s3://{bucket}/dsrt-remote-bench/{name}-{tag}");
    let remote = StoreLocation::parse(&url)
        .expect("bench URL parses")
        .as_remote()
        .expect("an s3 URL is remote")
        .clone();
    if get(&remote, "manifest.json").is_err() {
        let started = Instant::now();
        dsrt_remote::publish_cache(&copy, &remote, &dsrt_remote::PublishOptions::default())
            .expect("bench cache publishes");
        eprintln!(
            "dsrt_remote bench: published {url} in {:.1?}",
            started.elapsed()
        );
    }
    (copy, remote)
}

/// Writes the bench cache into `dir`: incompressible payloads of 64-192 KiB, a label each.
pub fn write_copy(dir: &Path, name: &str, total_bytes: u64) {
    let schema =
        Schema::new(vec![Column::new("label", ColumnType::Int64, false)]).expect("static schema");
    let options = WriterOptions::new(name, schema).max_shard_bytes(SHARD_BYTES);
    let mut writer = CacheWriter::create(dir, options).expect("bench cache directory");
    let mut rng = SplitMix::new(42);
    let mut written = 0u64;
    let mut i = 0i64;
    while written < total_bytes {
        let len = rng.range(64 << 10, 192 << 10) as usize;
        let mut payload = Vec::with_capacity(len + 8);
        while payload.len() < len {
            payload.extend_from_slice(&rng.next_u64().to_le_bytes());
        }
        payload.truncate(len);
        writer
            .add_values(&payload, &[ValueRef::Int64(i)])
            .expect("sample adds");
        written += len as u64;
        i += 1;
    }
    writer.finish().expect("bench cache finishes");
}

/// A runtime of two worker threads, as the machine has two cores.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// One object under `remote`, whole, into memory.
pub fn get(remote: &RemotePrefix, relative: &str) -> Result<Vec<u8>, String> {
    let store = remote.store();
    let path = remote.object(relative);
    runtime().block_on(async move {
        let got = store.get(&path).await.map_err(|e| e.to_string())?;
        got.bytes()
            .await
            .map(|b| b.to_vec())
            .map_err(|e| e.to_string())
    })
}

/// The shard objects of the local copy `copy`, relative to the cache (`shards/NNNNNN.bin`).
pub fn shard_objects(copy: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(copy.join("shards"))
        .expect("shards dir")
        .map(|e| format!("shards/{}", e.expect("entry").file_name().to_string_lossy()))
        .collect();
    names.sort();
    names
}

/// The epochs' loader: two workers, a local shuffle over windows of four shards.
pub fn loader_config() -> LoaderConfig {
    LoaderConfig {
        plan: PlanConfig {
            seed: 1,
            shuffle: Shuffle::Local { window_shards: 4 },
            ..PlanConfig::default()
        },
        workers: WORKERS,
        prefetch: 512,
        ..LoaderConfig::default()
    }
}

/// One epoch over `dataset`, every payload consumed; the samples read.
pub fn consume(dataset: &Arc<Dataset>) -> u64 {
    let mut n = 0;
    for sample in Loader::new(Arc::clone(dataset), loader_config()).expect("loader starts") {
        std::hint::black_box(sample.expect("sample loads").payload);
        n += 1;
    }
    n
}

/// A fresh, empty local cache directory under `root` for one iteration.
pub fn fresh_dir(root: &Path, n: &mut u64) -> PathBuf {
    *n += 1;
    let dir = root.join(format!("cold-{n}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Waits until no download is in flight under `dir` (prefetch threads of a dropped dataset
/// finish their current shard), so that the next iteration does not share the link, then
/// removes it.
pub fn settle_and_remove(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while has_partial(dir) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(20));
    let _ = std::fs::remove_dir_all(dir);
}

/// Whether a download is still being written under `dir`.
pub fn has_partial(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let path = e.path();
        path.is_dir() && has_partial(&path) || path.to_string_lossy().ends_with(".partial")
    })
}

/// Every object of `objects` (under `remote`) whole into memory by plain GETs, `at_once` at
/// a time.
pub fn get_all(
    rt: &tokio::runtime::Runtime,
    store: &Arc<dyn ObjectStore>,
    remote: &RemotePrefix,
    objects: &[&str],
    at_once: usize,
) {
    let store = Arc::clone(store);
    let paths: Vec<_> = objects.iter().map(|s| remote.object(s)).collect();
    rt.block_on(async move {
        let mut fetched = futures::stream::iter(paths)
            .map(|path| {
                let store = Arc::clone(&store);
                async move {
                    let got = store.get(&path).await.expect("GET");
                    got.bytes().await.expect("body").len()
                }
            })
            .buffer_unordered(at_once);
        while let Some(len) = fetched.next().await {
            std::hint::black_box(len);
        }
    });
}

/// Every object of `objects` (under `remote`) by a GET, `at_once` objects at a time, each
/// hashed and written to a file under `dir` as it arrives, by a thread of its own (so that
/// hashing overlaps the transfer, as in the cache).
pub fn get_hash_write_all(
    rt: &tokio::runtime::Runtime,
    store: &Arc<dyn ObjectStore>,
    remote: &RemotePrefix,
    objects: &[&str],
    dir: &Path,
    at_once: usize,
) {
    let jobs: Vec<_> = objects
        .iter()
        .enumerate()
        .map(|(i, s)| (remote.object(s), dir.join(format!("{i}.bin"))))
        .collect();
    let store = Arc::clone(store);
    rt.block_on(async move {
        let mut done = futures::stream::iter(jobs)
            .map(|(path, file)| {
                let store = Arc::clone(&store);
                tokio::spawn(async move {
                    let (chunks, hashing) = hash_write_thread(file);
                    let mut body = store.get(&path).await.expect("GET").into_stream();
                    while let Some(chunk) = body.next().await {
                        chunks.send(chunk.expect("body")).expect("hashing thread");
                    }
                    drop(chunks);
                    hashing.join().expect("hashing thread")
                })
            })
            .buffer_unordered(at_once);
        while let Some(digest) = done.next().await {
            std::hint::black_box(digest.expect("task"));
        }
    });
}

/// A thread that writes the chunks it is sent to `file` and hashes them; joined, the digest.
pub fn hash_write_thread(
    file: PathBuf,
) -> (
    std::sync::mpsc::SyncSender<bytes::Bytes>,
    std::thread::JoinHandle<Vec<u8>>,
) {
    use sha2::Digest;
    use std::io::Write;
    let (send, receive) = std::sync::mpsc::sync_channel::<bytes::Bytes>(16);
    let thread = std::thread::spawn(move || {
        let mut out = std::fs::File::create(&file).expect("floor file");
        let mut hasher = sha2::Sha256::new();
        for chunk in receive {
            out.write_all(&chunk).expect("floor write");
            hasher.update(&chunk);
        }
        hasher.finalize().to_vec()
    });
    (send, thread)
}
