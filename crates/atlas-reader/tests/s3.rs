//! Atlas on a real S3-compatible server (SeaweedFS, started by `.ci/s3-server.sh`), directly and
//! through a link shaped like S3's (`dsrt-atlas-link-shaper`).
//!
//! Configured from the environment the script writes: `ATLAS_S3_TEST_BUCKET` plus the standard
//! `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`. Every test
//! here is `#[ignore]`d, so a plain `cargo test` reports them as ignored rather than passed;
//! `cargo xtask test` starts the server and runs them with `--ignored` (and fails if none ran).
//! Run by hand without `ATLAS_S3_TEST_BUCKET`, a test fails and says how to start the server.
//! Only loopback endpoints are accepted. Every test runs under a time limit, the client
//! has bounded retries and timeouts, and each test writes under a prefix of its own.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use array_format::StatValue;
use atlas_reader::{Atlas, AtlasError, Attr};
use atlas_store::{CountingStore, RequestKind};
use atlas_writer::{ArraySpec, AtlasWriter, DatasetSpec, WriterOptions};
use common::*;
use ndarray::{ArrayD, IxDyn};
use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
use object_store::path::Path;
use object_store::{
    BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode,
    PutOptions, PutPayload, RetryConfig, UpdateVersion,
};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Upper bound on any one test.
const TEST_LIMIT: Duration = Duration::from_secs(240);

/// A store on `bucket`, from the standard environment, with short bounded retries.
fn s3_store_with(bucket: &str, endpoint: Option<&str>, conditional: bool) -> Arc<dyn ObjectStore> {
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .with_client_options(
            ClientOptions::new()
                .with_allow_http(true)
                .with_connect_timeout(Duration::from_secs(5))
                .with_timeout(Duration::from_secs(60)),
        )
        .with_retry(RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(20),
                max_backoff: Duration::from_millis(500),
                base: 2.0,
            },
            max_retries: 2,
            retry_timeout: Duration::from_secs(10),
        });
    if let Some(endpoint) = endpoint {
        builder = builder.with_endpoint(endpoint);
    }
    if !conditional {
        builder = builder.with_conditional_put(S3ConditionalPut::Disabled);
    }
    Arc::new(builder.build().unwrap())
}

fn s3_store(bucket: &str) -> Arc<dyn ObjectStore> {
    s3_store_with(bucket, None, true)
}

/// A prefix no other test (or earlier run against the same server) uses.
fn unique_prefix(test: &str) -> Path {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    Path::from(format!(
        "atlas-s3-tests/{test}-{}-{nanos}",
        std::process::id()
    ))
}

async fn bounded<F: Future>(test: &str, future: F) -> F::Output {
    tokio::time::timeout(TEST_LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("{test} did not finish within {TEST_LIMIT:?}"))
}

async fn write_at(
    store: &Arc<dyn ObjectStore>,
    prefix: &Path,
    datasets: impl IntoIterator<Item = DatasetSpec>,
) {
    write_with(store, prefix, options(), datasets).await;
}

/// Blocks of about 128 KiB, so a large array spans many blocks (and I/O slabs).
fn small_blocks() -> WriterOptions {
    WriterOptions {
        block_target_size: 128 * 1024,
        ..options()
    }
}

async fn write_with(
    store: &Arc<dyn ObjectStore>,
    prefix: &Path,
    options: WriterOptions,
    datasets: impl IntoIterator<Item = DatasetSpec>,
) {
    let mut writer = AtlasWriter::new(Arc::clone(store), prefix, options);
    for dataset in datasets {
        writer.write_dataset(dataset).unwrap();
    }
    writer.finish().await.unwrap();
}

async fn open_counted(store: &Arc<dyn ObjectStore>, prefix: &Path) -> (Atlas, CountingStore) {
    let counting = CountingStore::new(Arc::clone(store));
    let atlas = Atlas::open(Arc::new(counting.clone()), prefix)
        .await
        .unwrap();
    (atlas, counting)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the S3 test server; cargo xtask test runs them"]
async fn the_server_answers_suffix_ranges_and_conditional_puts() {
    let test = "server_features";
    let bucket = bucket(test);
    let store = s3_store(&bucket);
    bounded(test, async {
        let path = unique_prefix(test).join("object");
        store
            .put(&path, PutPayload::from_static(b"0123456789"))
            .await
            .unwrap();
        let suffix = |n| GetOptions {
            range: Some(GetRange::Suffix(n)),
            ..Default::default()
        };
        let tail = store.get_opts(&path, suffix(4)).await.unwrap();
        assert_eq!(tail.meta.size, 10, "a suffix GET reports the object's size");
        assert_eq!(tail.bytes().await.unwrap().as_ref(), b"6789");
        let all = store.get_opts(&path, suffix(64 * 1024)).await.unwrap();
        assert_eq!(
            all.bytes().await.unwrap().as_ref(),
            b"0123456789",
            "a suffix longer than the object is the whole object"
        );
        assert_eq!(store.get_range(&path, 2..5).await.unwrap().as_ref(), b"234");

        let create = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        let refused = store
            .put_opts(&path, PutPayload::from_static(b"x"), create.clone())
            .await;
        assert!(
            matches!(refused, Err(object_store::Error::AlreadyExists { .. })),
            "If-None-Match: * on an existing object: {refused:?}"
        );
        let first = store.head(&path).await.unwrap();
        let update = |e_tag: Option<String>| PutOptions {
            mode: PutMode::Update(UpdateVersion {
                e_tag,
                version: None,
            }),
            ..Default::default()
        };
        store
            .put_opts(
                &path,
                PutPayload::from_static(b"second"),
                update(first.e_tag.clone()),
            )
            .await
            .unwrap();
        let stale = store
            .put_opts(
                &path,
                PutPayload::from_static(b"third"),
                update(first.e_tag.clone()),
            )
            .await;
        assert!(
            matches!(stale, Err(object_store::Error::Precondition { .. })),
            "If-Match with a stale e-tag: {stale:?}"
        );
        assert_eq!(
            store
                .get(&path)
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap()
                .as_ref(),
            b"second"
        );
        let fresh = unique_prefix(test).join("fresh");
        store
            .put_opts(&fresh, PutPayload::from_static(b"new"), create)
            .await
            .unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the S3 test server; cargo xtask test runs them"]
async fn write_open_in_budget_read_fold_stats_and_attributes() {
    let test = "round_trip";
    let bucket = bucket(test);
    let store = s3_store(&bucket);
    bounded(test, async {
        let prefix = unique_prefix(test);
        write_at(
            &store,
            &prefix,
            [
                every_dtype("jan", 1),
                every_dtype("feb", 2),
                every_dtype("mar", 3),
            ],
        )
        .await;

        let (atlas, counting) = open_counted(&store, &prefix).await;
        let requests = counting.requests();
        assert_eq!(requests.len(), 2, "suffix GET + mask GET: {requests:?}");
        assert_eq!(
            requests[0].kind,
            RequestKind::GetRange(GetRange::Suffix(64 * 1024))
        );
        assert_eq!(requests[1].kind, RequestKind::Get, "the (absent) mask");
        assert!(requests.iter().all(|r| r.kind != RequestKind::Head));
        assert_eq!(atlas.dataset_count(), 3);

        let feb = atlas.dataset("feb").unwrap();
        let f32s = feb.read_array::<f32>("f32", vec![], vec![]).await.unwrap();
        assert_eq!(f32s.shape(), &[2, 4]);
        assert_eq!(
            f32s.iter().copied().collect::<Vec<_>>(),
            (0..8).map(|i| i as f32 + 2.0).collect::<Vec<_>>()
        );
        let part = feb
            .read_array::<f32>("f32", vec![1, 1], vec![1, 2])
            .await
            .unwrap();
        assert_eq!(part.iter().copied().collect::<Vec<_>>(), vec![7.0, 8.0]);
        assert_eq!(
            feb.read_array::<i64>("i64", vec![], vec![])
                .await
                .unwrap()
                .as_slice()
                .unwrap(),
            &[i64::MAX, 2]
        );
        assert_eq!(
            feb.read_array::<String>("text", vec![], vec![])
                .await
                .unwrap()
                .iter()
                .cloned()
                .collect::<Vec<_>>(),
            vec!["name-2".to_owned(), "é".to_owned()]
        );
        let never = feb
            .read_array::<f32>("never_written", vec![], vec![])
            .await
            .unwrap();
        assert!(never.iter().all(|v| *v == -9.0), "fill value: {never:?}");

        let total = atlas.array_stats("i64").await.unwrap();
        assert_eq!(
            (total.datasets, total.row_count, total.null_count),
            (3, 6, 0)
        );
        assert_eq!(
            (total.min, total.max),
            (Some(StatValue::Int(1)), Some(StatValue::Int(i64::MAX)))
        );
        let rows = atlas.array_stats_by_dataset("i64").await.unwrap();
        assert_eq!(
            rows.iter().map(|r| r.dataset.as_str()).collect::<Vec<_>>(),
            ["jan", "feb", "mar"]
        );

        assert_eq!(
            feb.get_attribute("seed").await.unwrap(),
            Some(Attr::Int64(2))
        );
        assert_eq!(
            feb.get_array_attribute("f32", "units").await.unwrap(),
            Some(Attr::from("K"))
        );
        assert_eq!(
            atlas.attributes_by_dataset("seed").await.unwrap(),
            vec![
                ("jan".to_owned(), Attr::Int64(1)),
                ("feb".to_owned(), Attr::Int64(2)),
                ("mar".to_owned(), Attr::Int64(3)),
            ]
        );

        // Delete one, reopen through a fresh client: the mask is read, still within budget.
        let report = atlas.delete(&["jan"]).await.unwrap();
        assert_eq!((report.newly_deleted, report.total_deleted), (1, 1));
        let (reopened, counting) = open_counted(&store, &prefix).await;
        assert!(counting.count() <= 3, "{:?}", counting.requests());
        assert!(reopened.dataset("jan").is_none());
        assert_eq!(
            reopened
                .datasets()
                .map(|d| d.name().to_owned())
                .collect::<Vec<_>>(),
            ["feb", "mar"]
        );
        assert_eq!(reopened.array_stats("i64").await.unwrap().row_count, 4);
        assert_eq!(
            reopened.attributes_by_dataset("seed").await.unwrap(),
            vec![
                ("feb".to_owned(), Attr::Int64(2)),
                ("mar".to_owned(), Attr::Int64(3)),
            ]
        );
    })
    .await;
}

/// Names that do not compress, so the footer outgrows the 64 KiB probe.
fn scattered(n: usize) -> impl Iterator<Item = DatasetSpec> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..n).map(move |i| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        DatasetSpec::new(format!("station_{i:06}_{state:016x}")).array(ArraySpec::new(
            "temp",
            ArrayD::from_shape_vec(IxDyn(&[1]), vec![i as f32]).unwrap(),
        ))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the S3 test server; cargo xtask test runs them"]
async fn a_footer_larger_than_the_probe_opens_in_three_requests() {
    let test = "large_footer";
    let bucket = bucket(test);
    let store = s3_store(&bucket);
    bounded(test, async {
        let prefix = unique_prefix(test);
        write_at(&store, &prefix, scattered(10_000)).await;
        let (atlas, counting) = open_counted(&store, &prefix).await;
        let requests = counting.requests();
        assert_eq!(requests.len(), 3, "{requests:?}");
        assert_eq!(
            requests[0].kind,
            RequestKind::GetRange(GetRange::Suffix(64 * 1024))
        );
        // The footer's range follows the probe; the mask's GET went out with the probe, so
        // it may come before or after the footer's.
        let footer = requests
            .iter()
            .filter(|r| matches!(r.kind, RequestKind::GetRange(GetRange::Bounded(_))))
            .count();
        let mask = requests
            .iter()
            .filter(|r| r.kind == RequestKind::Get && r.path.ends_with("deleted.mask"))
            .count();
        assert_eq!((footer, mask), (1, 1), "{requests:?}");
        assert_eq!(atlas.dataset_count(), 10_000);
        let last = atlas.dataset_at(9_999).unwrap();
        assert_eq!(
            last.read_array::<f32>("temp", vec![], vec![])
                .await
                .unwrap()
                .as_slice()
                .unwrap(),
            &[9_999.0]
        );
        let stats = atlas.array_stats("temp").await.unwrap();
        assert_eq!(stats.datasets, 10_000);
        assert_eq!(stats.max, Some(StatValue::Float(9_999.0)));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the S3 test server; cargo xtask test runs them"]
async fn eight_concurrent_deleters_lose_nothing_with_conditional_put() {
    let test = "concurrent_deletes";
    let bucket = bucket(test);
    let store = s3_store(&bucket);
    bounded(test, async {
        let prefix = unique_prefix(test);
        write_at(&store, &prefix, stations(48)).await;
        let mut tasks = Vec::new();
        for deleter in 0..8usize {
            // A client and an `Atlas` of its own per deleter, as separate processes would have.
            let store = s3_store(&bucket);
            let prefix = prefix.clone();
            tasks.push(tokio::spawn(async move {
                let atlas = Atlas::open(store, &prefix).await.unwrap();
                let mut attempts = 0;
                for i in 0..5 {
                    let name = format!("station_{:06}_2024", deleter * 5 + i);
                    attempts += atlas.delete(&[name]).await.unwrap().attempts;
                }
                attempts
            }));
        }
        let mut attempts = 0;
        for task in tasks {
            attempts += task.await.unwrap();
        }
        eprintln!("{test}: 40 deletes took {attempts} commit attempts");
        let atlas = Atlas::open(Arc::clone(&store), &prefix).await.unwrap();
        assert_eq!(
            atlas.deleted().len(),
            40,
            "every deleter's ordinals survive"
        );
        assert_eq!(
            atlas
                .datasets()
                .map(|d| d.name().to_owned())
                .collect::<Vec<_>>(),
            (40..48)
                .map(|i| format!("station_{i:06}_2024"))
                .collect::<Vec<_>>()
        );
        let stats = atlas.array_stats("temp").await.unwrap();
        assert_eq!(stats.datasets, 8);
        assert_eq!(stats.min, Some(StatValue::Float(-47.0)));
        assert_eq!(stats.max, Some(StatValue::Float(47.0)));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the S3 test server; cargo xtask test runs them"]
async fn without_conditional_put_a_delete_still_lands_whole() {
    // A client with conditional PUT disabled is what a server without it looks like: the
    // committer falls back to an unconditional PUT (last-writer-wins: deletes that truly race
    // can lose one another, see docs/format/atlas.md). Each delete still reads the current mask
    // first, so sequential deletes from stale instances, and every name of one call, land.
    let test = "last_writer_wins";
    let bucket = bucket(test);
    let store = s3_store_with(&bucket, None, false);
    bounded(test, async {
        let prefix = unique_prefix(test);
        write_at(&store, &prefix, stations(10)).await;
        let first = Atlas::open(Arc::clone(&store), &prefix).await.unwrap();
        let second = Atlas::open(Arc::clone(&store), &prefix).await.unwrap();
        let names = |range: std::ops::Range<usize>| {
            range
                .map(|i| format!("station_{i:06}_2024"))
                .collect::<Vec<_>>()
        };
        let report = first.delete(&names(0..4)).await.unwrap();
        assert_eq!((report.newly_deleted, report.attempts), (4, 1));
        let reopened = Atlas::open(Arc::clone(&store), &prefix).await.unwrap();
        assert_eq!(reopened.deleted().len(), 4, "the one delete landed whole");
        // `second` was opened before that delete; its commit re-reads the mask.
        let report = second.delete(&names(4..6)).await.unwrap();
        assert_eq!(report.total_deleted, 6);
        let reopened = Atlas::open(store, &prefix).await.unwrap();
        assert_eq!(
            reopened
                .datasets()
                .map(|d| d.name().to_owned())
                .collect::<Vec<_>>(),
            names(6..10)
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the S3 test server; cargo xtask test runs them"]
async fn truncated_containers_are_refused_by_type() {
    let test = "truncated";
    let bucket = bucket(test);
    let store = s3_store(&bucket);
    bounded(test, async {
        let source = unique_prefix(test).join("whole");
        write_at(&store, &source, stations(30)).await;
        let whole = store
            .get(&source.clone().join("data.atlas"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let len = whole.len();
        let footer_size = u64::from_le_bytes(whole[len - 16..len - 8].try_into().unwrap()) as usize;
        let footer_start = len - 16 - footer_size;
        let upload = |name: &str, bytes: Vec<u8>| {
            let prefix = unique_prefix(test).join(name);
            let store = Arc::clone(&store);
            async move {
                store
                    .put(&prefix.clone().join("data.atlas"), PutPayload::from(bytes))
                    .await
                    .unwrap();
                Atlas::open(store, &prefix).await
            }
        };

        // An upload cut short: the trailer is gone, and the spec checks the trailer's magic
        // first, so this is not (recognisably) an Atlas collection.
        for cut in [len / 2, len - 1, len - 16, 12] {
            let result = upload("prefix", whole[..cut].to_vec()).await;
            assert!(
                matches!(result, Err(AtlasError::NotAnAtlasCollection { .. })),
                "prefix of {cut} of {len} bytes: {result:?}"
            );
            assert!(!result.unwrap_err().is_retryable());
        }

        // The trailer survives but the bytes before it are cut (a broken copy): the footer
        // size no longer fits, or the footer frame is cut.
        for cut in [len / 2, footer_start + footer_size / 2, 8] {
            let mut bytes = whole[..cut].to_vec();
            bytes.extend_from_slice(&whole[len - 16..]);
            let result = upload("trailer_kept", bytes).await;
            assert!(
                matches!(result, Err(AtlasError::CorruptCollection { .. })),
                "first {cut} bytes + trailer: {result:?}"
            );
            assert!(!result.unwrap_err().is_retryable());
        }

        // Segment bytes missing, footer and trailer intact: the segments no longer tile.
        let mut bytes = whole[..footer_start - 10].to_vec();
        bytes.extend_from_slice(&whole[footer_start..]);
        let result = upload("segment_cut", bytes).await;
        match result {
            Err(AtlasError::CorruptCollection { field, .. }) => {
                assert!(field.starts_with("variables"), "{field}");
            }
            other => panic!("segment bytes cut: {other:?}"),
        }
    })
    .await;
}

/// An S3 test server (`.ci/s3-server.sh`: SeaweedFS) private to one test, on its own port,
/// stopped when dropped.
struct PrivateServer {
    state: tempfile::TempDir,
    endpoint: String,
    bucket: String,
}

impl PrivateServer {
    fn script() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/s3-server.sh")
    }

    fn start(bucket: &str) -> Self {
        let state = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("bash")
            .arg(Self::script())
            .arg("start")
            .arg(state.path())
            .arg(bucket)
            .status()
            .unwrap();
        assert!(status.success(), "the private S3 server did not start");
        let port = std::fs::read_to_string(state.path().join("port")).unwrap();
        Self {
            endpoint: format!("http://127.0.0.1:{}", port.trim()),
            state,
            bucket: bucket.to_owned(),
        }
    }

    fn store(&self) -> Arc<dyn ObjectStore> {
        s3_store_with(&self.bucket, Some(&self.endpoint), true)
    }

    /// SIGKILL: no goodbye to open connections.
    fn kill(&self) {
        let pid = std::fs::read_to_string(self.state.path().join("pid")).unwrap();
        let status = std::process::Command::new("kill")
            .args(["-KILL", pid.trim()])
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(self.endpoint.trim_start_matches("http://")).is_ok() {
            assert!(Instant::now() < deadline, "the killed server still answers");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(Self::script())
            .arg("stop")
            .arg(self.state.path())
            .status();
    }
}

fn assert_retryable_store_error(what: &str, error: &AtlasError) {
    assert!(
        matches!(
            error,
            AtlasError::Store(_)
                | AtlasError::Segment {
                    source: array_format::Error::Storage(_),
                    ..
                }
        ),
        "{what}: expected a store error, got {error:?}"
    );
    assert!(error.is_retryable(), "{what}: {error:?} is not retryable");
}

/// Values that do not compress, so `n` of them take `4 n` bytes of segment.
fn noise(n: usize) -> Vec<f32> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32
        })
        .collect()
}

/// One dataset `big` with an array `v` of `values`, chunked in 32 blocks.
fn big(values: &[f32]) -> DatasetSpec {
    let n = values.len();
    DatasetSpec::new("big").array(
        ArraySpec::new(
            "v",
            ArrayD::from_shape_vec(IxDyn(&[n]), values.to_vec()).unwrap(),
        )
        .chunks(vec![n / 32]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the S3 test server; cargo xtask test runs them"]
async fn a_server_stopped_mid_session_gives_retryable_store_errors_and_no_data() {
    let test = "server_stopped";
    bucket(test);
    let server = PrivateServer::start("atlas-private");
    let store = server.store();
    bounded(test, async {
        let prefix = unique_prefix(test);
        // 32 MB of values (compressed, still past the 16 MiB a segment may be kept whole after
        // its first read), so its blocks (of about 128 KiB) are fetched one by one.
        let values = noise(8_000_000);
        write_with(
            &store,
            &prefix,
            small_blocks(),
            [every_dtype("jan", 1), every_dtype("feb", 2), big(&values)],
        )
        .await;
        let atlas = Atlas::open(Arc::clone(&store), &prefix).await.unwrap();
        let (_, v) = atlas.variables().find(|(name, _)| *name == "v").unwrap();
        assert!(v.seg_len > 16 << 20, "segment v is {} bytes", v.seg_len);
        let jan = atlas.dataset("jan").unwrap();
        let big = atlas.dataset("big").unwrap();
        let n = values.len();
        // Two segments are open and read before the server goes.
        assert_eq!(
            jan.read_array::<i64>("i64", vec![], vec![])
                .await
                .unwrap()
                .as_slice()
                .unwrap(),
            &[i64::MAX, 1]
        );
        let tail = big
            .read_array::<f32>("v", vec![n - 4], vec![4])
            .await
            .unwrap();
        assert_eq!(tail.as_slice().unwrap(), &values[n - 4..]);
        server.kill();

        let started = Instant::now();
        // Opening read the segment's head (its first 1 MiB I/O slab) and the tail read its
        // last; the middle has not been fetched.
        let read = big.read_array::<f32>("v", vec![n / 2], vec![4]).await;
        assert!(read.is_err(), "no data from a dead server: {read:?}");
        assert_retryable_store_error("block read of an open segment", &read.unwrap_err());
        let read = jan.read_array::<f32>("f32", vec![], vec![]).await;
        assert!(read.is_err(), "no data from a dead server: {read:?}");
        assert_retryable_store_error("read of an unopened segment", &read.unwrap_err());
        let stats = atlas.array_stats("u16").await;
        assert_retryable_store_error("stats", &stats.unwrap_err());
        let delete = atlas.delete(&["jan"]).await;
        assert_retryable_store_error("delete", &delete.unwrap_err());
        assert!(
            atlas.dataset("jan").is_some(),
            "a failed delete hides nothing"
        );
        let open = Atlas::open(Arc::clone(&store), &prefix).await;
        assert_retryable_store_error("open", &open.unwrap_err());
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "bounded retries: {:?}",
            started.elapsed()
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the S3 test server; cargo xtask test runs them"]
async fn a_server_killed_during_a_large_read_gives_all_or_a_retryable_error() {
    let test = "killed_during_read";
    bucket(test);
    let server = PrivateServer::start("atlas-private");
    let store = server.store();
    bounded(test, async {
        let prefix = unique_prefix(test);
        let values = noise(4 * 1024 * 1024); // About 16 MiB: 16 I/O slabs of 1 MiB.
        write_with(&store, &prefix, small_blocks(), [big(&values)]).await;
        let (atlas, counting) = open_counted(&store, &prefix).await;
        let atlas = Arc::new(atlas);
        let opened = counting.count();
        let reader = {
            let atlas = Arc::clone(&atlas);
            tokio::spawn(async move {
                let big = atlas.dataset("big").unwrap();
                big.read_array::<f32>("v", vec![], vec![]).await
            })
        };
        // Kill once the read is under way: the segment opened (its tail) and block reads sent.
        let deadline = Instant::now() + Duration::from_secs(30);
        while counting.count() < opened + 3 && !reader.is_finished() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::task::spawn_blocking(move || server.kill())
            .await
            .unwrap();
        let sent = counting.count() - opened;
        match reader.await.unwrap() {
            Ok(array) => {
                eprintln!("{test}: the read finished before the kill; checking it is whole");
                assert_eq!(array.as_slice().unwrap(), values.as_slice());
            }
            Err(error) => {
                eprintln!("{test}: killed with {sent} request(s) of the read sent: {error}");
                assert_retryable_store_error("read during the kill", &error);
            }
        }
    })
    .await;
}

/// The Python benchmark's shape through a link shaped like S3's (20 ms to first byte, 80 MB/s
/// per connection, 400 MB/s in all): open + the first read of one variable of one dataset
/// out of 2,000 take three reads in two round trips (the container's tail with
/// `deleted.mask`, then the variable's whole segment, about 6 MB, in parts at once) and at most
/// four round trips' worth of time. In one request at 80 MB/s the segment alone would take
/// nearly four.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the S3 test server; cargo xtask test runs them"]
async fn one_variable_of_one_of_2000_datasets_through_an_s3_shaped_link() {
    use dsrt_atlas_link_shaper::{LinkShape, Shaper};
    let test = "shaped_read";
    let bucket = bucket(test);
    let store = s3_store(&bucket);
    bounded(test, async {
        let prefix = unique_prefix(test);
        let specs = (0..2000).map(|d| {
            ["t2m", "precip", "wind"].into_iter().enumerate().fold(
                DatasetSpec::new(format!("run_{d:05}")),
                |spec, (v, name)| {
                    let values = (0..24 * 32)
                        .map(|i| (d * 3 + v) as f32 + i as f32 * 1e-3)
                        .collect();
                    let data = ArrayD::from_shape_vec(IxDyn(&[24, 32]), values).unwrap();
                    spec.array(ArraySpec::new(name, data).dims(["y", "x"]))
                },
            )
        });
        write_with(&store, &prefix, WriterOptions::default(), specs).await;
        let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap();
        let server = dsrt_atlas_link_shaper::loopback_addr(&endpoint).unwrap();
        let shape = LinkShape {
            per_connection: 10e6,
            ..LinkShape::S3_NEARBY
        };
        let shaper = Shaper::start(server, shape).unwrap();
        let (mut times, mut segment) = (Vec::new(), 0);
        for attempt in 0..3 {
            // A fresh client each time: no connection or byte kept from the attempt before.
            let shaped = s3_store_with(&bucket, Some(&shaper.endpoint()), true);
            let started = Instant::now();
            let (atlas, counting) = open_counted(&shaped, &prefix).await;
            let name = format!("run_{:05}", 1234 + attempt);
            let values = atlas
                .dataset(&name)
                .unwrap()
                .read_array::<f32>("precip", vec![], vec![])
                .await
                .unwrap();
            times.push(started.elapsed());
            assert_eq!(values[[0, 0]], ((1234 + attempt) * 3 + 1) as f32);
            assert_eq!(counting.reads(), 3, "{:?}", counting.requests());
            assert!(
                counting.count() > 3,
                "the segment came in parts: {:?}",
                counting.requests()
            );
            segment = atlas
                .variables()
                .find(|(n, _)| *n == "precip")
                .unwrap()
                .1
                .seg_len;
        }
        times.sort();
        // The segment in one request: two round trips, then its bytes at one connection's rate.
        let one_request =
            2 * shape.first_byte + Duration::from_secs_f64(segment as f64 / shape.per_connection);
        assert!(
            times[1] * 2 < one_request,
            "open + read in {:?} (median of {times:?}); in one request the segment alone would \
             take {one_request:?}",
            times[1],
        );
    })
    .await;
}
