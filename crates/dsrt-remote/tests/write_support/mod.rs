//! Helpers of the publish, migrate and read tests: a local cache to publish, and a store
//! wrapper that records writes and reads, fails chosen writes, hides conditional PUT, changes
//! the manifest just before a conditional replacement, or holds whole-shard GETs.
#![allow(dead_code, clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code; each test binary uses a part.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime

use async_trait::async_trait;
use dsrt_remote::object_store::path::Path;
use dsrt_remote::object_store::{
    self, CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use dsrt_remote::RemotePrefix;
use dsrt_schema::{Column, ColumnType, Schema, ValueRef};
use dsrt_writer::{CacheWriter, ManifestVersion, WriterOptions};
use futures::stream::BoxStream;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The payload of sample `i` in a cache [`make_cache`] writes with `len`-byte payloads.
pub(crate) fn sample_payload(i: u64, len: usize) -> Vec<u8> {
    (0..len).map(|b| (b as u64 ^ i) as u8).collect()
}

/// Writes a cache of `samples` samples of `payload` bytes each into `dir`.
pub(crate) fn make_cache(
    dir: &std::path::Path,
    samples: u64,
    payload: usize,
    version: ManifestVersion,
) {
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let options = WriterOptions::new("remote-test", schema)
        .max_shard_bytes(4 * payload as u64)
        .manifest_version(version);
    let mut writer = CacheWriter::create(dir, options).unwrap();
    for i in 0..samples {
        let body = sample_payload(i, payload);
        writer
            .add_values(&body, &[ValueRef::Int64(i as i64)])
            .unwrap();
    }
    writer.finish().unwrap();
}

/// The relative paths (with /) of the files below `dir`, sorted; reads no file, so a file
/// that background work renames or removes meanwhile is simply listed or not.
pub(crate) fn local_names(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path);
            } else if dsrt_atlas_test_runner::is_shard_cache_bookkeeping(&entry.file_name()) {
                continue;
            } else if let Some(rel) = path.strip_prefix(dir).ok().and_then(|p| p.to_str()) {
                out.push(rel.to_owned());
            }
        }
    }
    out.sort();
    out
}

/// Every file below `dir`, as `(relative path with /, bytes)`, sorted.
pub(crate) fn local_files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    dsrt_atlas_test_runner::files_below(dir)
}

/// A store wrapper for fault injection and request recording.
#[derive(Debug, Default)]
pub(crate) struct Behaviour {
    /// Fail the put (single or multipart start) with this 1-based number.
    pub fail_put: Option<usize>,
    /// Whether that failure is transient (`Generic`) or a refusal (`PermissionDenied`).
    pub fail_transient: bool,
    /// Answer `NotImplemented` to `PutMode::Create` and `PutMode::Update`.
    pub no_conditional_put: bool,
    /// Before the first conditional update, overwrite its target with these bytes.
    pub tamper_before_update: Mutex<Option<Vec<u8>>>,
    /// While set, a GET of a whole object under `shards/` waits (range GETs go through).
    pub hold_shard_gets: AtomicBool,
    /// While set, a range GET under `shards/` waits (after it is recorded).
    pub hold_range_gets: AtomicBool,
    /// Every GET under `shards/` takes this long before its response starts: a slow store.
    pub shard_get_delay: Option<std::time::Duration>,
}

pub(crate) struct TestStore {
    pub inner: Arc<dyn ObjectStore>,
    pub behaviour: Behaviour,
    puts: AtomicUsize,
    /// Each write, in order: `put <path>`, `create <path>`, `update <path>`, `multipart <path>`.
    pub log: Mutex<Vec<String>>,
    /// Each GET, in order: `get <path>` or `range <path>`.
    pub gets: Mutex<Vec<String>>,
}

impl TestStore {
    pub(crate) fn new(inner: Arc<dyn ObjectStore>, behaviour: Behaviour) -> Arc<Self> {
        Arc::new(Self {
            inner,
            behaviour,
            puts: AtomicUsize::new(0),
            log: Mutex::new(Vec::new()),
            gets: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn gets(&self) -> Vec<String> {
        self.gets.lock().unwrap().clone()
    }

    pub(crate) fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    fn count_put(&self, what: String) -> Result<()> {
        let n = self.puts.fetch_add(1, Ordering::SeqCst) + 1;
        if self.behaviour.fail_put == Some(n) {
            return Err(if self.behaviour.fail_transient {
                object_store::Error::Generic {
                    store: "TestStore",
                    source: "injected transient failure".into(),
                }
            } else {
                object_store::Error::PermissionDenied {
                    path: what,
                    source: "injected refusal".into(),
                }
            });
        }
        self.log.lock().unwrap().push(what);
        Ok(())
    }
}

impl fmt::Debug for TestStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TestStore")
    }
}

impl fmt::Display for TestStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TestStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for TestStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let kind = match opts.mode {
            PutMode::Overwrite => "put",
            PutMode::Create => "create",
            PutMode::Update(_) => "update",
        };
        let conditional = !matches!(opts.mode, PutMode::Overwrite);
        if conditional && self.behaviour.no_conditional_put {
            return Err(object_store::Error::NotImplemented {
                operation: format!("{kind} in TestStore"),
                implementer: "TestStore".into(),
            });
        }
        if matches!(opts.mode, PutMode::Update(_)) {
            let tamper = self.behaviour.tamper_before_update.lock().unwrap().take();
            if let Some(bytes) = tamper {
                self.inner
                    .put_opts(location, bytes.into(), PutOptions::default())
                    .await?;
            }
        }
        self.count_put(format!("{kind} {location}"))?;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.count_put(format!("multipart {location}"))?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let kind = if options.range.is_some() {
            "range"
        } else {
            "get"
        };
        self.gets.lock().unwrap().push(format!("{kind} {location}"));
        if location.as_ref().contains("/shards/") {
            let hold = if options.range.is_none() {
                &self.behaviour.hold_shard_gets
            } else {
                &self.behaviour.hold_range_gets
            };
            while hold.load(Ordering::SeqCst) {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            if let Some(delay) = self.behaviour.shard_get_delay {
                tokio::time::sleep(delay).await;
            }
        }
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// The prefix `caches/one` of `store`.
pub(crate) fn prefix(store: Arc<dyn ObjectStore>, name: &str) -> RemotePrefix {
    RemotePrefix::new(
        store,
        Path::from(format!("caches/{name}")),
        format!("mem://caches/{name}"),
    )
}

/// The object `relative` under `to`, read whole through `to`'s store.
pub(crate) fn read_object(to: &RemotePrefix, relative: &str) -> Option<Vec<u8>> {
    let store = to.store().clone();
    let location = to.object(relative);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        use object_store::ObjectStoreExt;
        match store.get(&location).await {
            Ok(got) => Some(got.bytes().await.unwrap().to_vec()),
            Err(object_store::Error::NotFound { .. }) => None,
            Err(e) => panic!("{e}"),
        }
    })
}

/// Every object under `to`, as relative paths, sorted.
pub(crate) fn list_objects(to: &RemotePrefix) -> Vec<String> {
    let store = to.store().clone();
    let prefix = to.prefix().clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut names: Vec<String> = runtime.block_on(async move {
        use futures::TryStreamExt;
        let all: Vec<ObjectMeta> = store.list(Some(&prefix)).try_collect().await.unwrap();
        all.into_iter()
            .map(|m| m.location.as_ref()[prefix.as_ref().len() + 1..].to_owned())
            .collect()
    });
    names.sort();
    names
}
