//! The shards of a remote cache, served to `dsrt_reader::Cache` through the local cache.

use crate::error::RemoteError;
use crate::fetch::{read_range, stream_object, Retry};
use crate::location::RemotePrefix;
use crate::options::ShardFetch;
use dsrt_manifest::ShardEntry;
use dsrt_reader::ShardSource;
use dsrt_shard_cache::{CachedFile, FetchError, FetchSink, ShardCache};
use std::collections::VecDeque;
use std::io;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};

/// Idle shard files a process keeps open (read-locked) beyond those being read: the one it
/// read last, so reading on through it opens nothing. More would keep other processes (and
/// this one) from evicting them.
const MAX_IDLE_OPEN: usize = 1;

/// One remote cache's shards: where they are, what they must hash to, and the local copies
/// this process has open.
pub(crate) struct RemoteShards {
    inner: Arc<Shared>,
    prefetch: Option<SyncSender<Vec<u64>>>,
}

struct Shared {
    remote: RemotePrefix,
    /// The cache's directory under the local cache root: `<cache id>-<manifest hash>`.
    key: String,
    entries: Vec<ShardEntry>,
    local: Arc<ShardCache>,
    fetch: ShardFetch,
    retry: Retry,
    /// The SHA-256 of the manifest bytes the cache was opened with.
    manifest_sha: [u8; 32],
    _held: Vec<CachedFile>,
    open: Mutex<OpenShards>,
}

/// Shard files open in this process, and the order they were last used in.
#[derive(Default)]
struct OpenShards {
    files: Vec<Option<Arc<CachedFile>>>,
    recent: VecDeque<u64>,
}

/// What [`RemoteShards::new`] needs: the cache's shards and where they go.
pub(crate) struct ShardsSpec {
    pub(crate) remote: RemotePrefix,
    /// The cache's directory under the local cache root.
    pub(crate) key: String,
    pub(crate) entries: Vec<ShardEntry>,
    pub(crate) local: Arc<ShardCache>,
    pub(crate) fetch: ShardFetch,
    pub(crate) retry: Retry,
    pub(crate) manifest_sha: [u8; 32],
    /// The cache's small files (manifest, index, metadata), kept open and read-locked while
    /// the cache is, so no process evicts them.
    pub(crate) held: Vec<CachedFile>,
}

impl RemoteShards {
    pub(crate) fn new(spec: ShardsSpec, prefetch_shards: usize) -> Self {
        let open = OpenShards {
            files: vec![None; spec.entries.len()],
            recent: VecDeque::new(),
        };
        let fetch = spec.fetch;
        let inner = Arc::new(Shared {
            remote: spec.remote,
            key: spec.key,
            entries: spec.entries,
            local: spec.local,
            fetch,
            retry: spec.retry,
            manifest_sha: spec.manifest_sha,
            _held: spec.held,
            open: Mutex::new(open),
        });
        let prefetch = (fetch == ShardFetch::Whole && prefetch_shards > 0)
            .then(|| start_prefetcher(Arc::clone(&inner), prefetch_shards));
        Self { inner, prefetch }
    }
}

impl ShardSource for RemoteShards {
    fn read_at(&self, shard: u64, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let shared = &self.inner;
        match shared.fetch {
            ShardFetch::Whole => shared
                .shard_file(shard)
                .map_err(io::Error::other)?
                .read_exact_at(buf, offset),
            ShardFetch::Range => {
                let entry = shared.entry(shard).map_err(io::Error::other)?;
                let relative = shard_object(&entry.name);
                let url = shared.remote.object_url(&relative);
                let object = shared.remote.object(&relative);
                shared
                    .retry
                    .run(|| read_range(shared.remote.store().as_ref(), &object, &url, offset, buf))
                    .map_err(io::Error::other)
            }
        }
    }

    fn will_need(&self, shards: &[u64]) {
        if let Some(prefetch) = &self.prefetch {
            // A full queue means the prefetcher is busy with an earlier hint: drop this one.
            let _ = prefetch.try_send(shards.to_vec());
        }
    }
}

impl Shared {
    fn entry(&self, shard: u64) -> Result<&ShardEntry, RemoteError> {
        usize::try_from(shard)
            .ok()
            .and_then(|i| self.entries.get(i))
            .ok_or_else(|| RemoteError::Integrity {
                url: self.remote.url().to_owned(),
                reason: format!("no shard {shard} in the manifest"),
            })
    }

    /// Shard `shard`'s local file, open and read-locked, downloading it if needed.
    fn shard_file(&self, shard: u64) -> Result<Arc<CachedFile>, RemoteError> {
        let index = usize::try_from(shard).unwrap_or(usize::MAX);
        if let Some(file) = self.cached(index) {
            return Ok(file);
        }
        // Whatever this process holds open but is not reading must not keep the download
        // from making room.
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .close_idle(0);
        let file = Arc::new(self.download(shard)?);
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let file = match open.files.get_mut(index) {
            Some(Some(present)) => Arc::clone(present),
            Some(slot) => {
                *slot = Some(Arc::clone(&file));
                file
            }
            None => file,
        };
        open.touch(shard);
        open.close_idle(MAX_IDLE_OPEN);
        Ok(file)
    }

    /// Whether this process has shard `index` open already (no download needed).
    fn is_open(&self, index: usize) -> bool {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.files.get(index).is_some_and(Option::is_some)
    }

    fn cached(&self, index: usize) -> Option<Arc<CachedFile>> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let file = open.files.get(index)?.as_ref().map(Arc::clone)?;
        open.touch(index as u64);
        Some(file)
    }

    /// Downloads shard `shard` into the local cache (or finds it there, fetched by another
    /// process), checked against the manifest's length and SHA-256.
    fn download(&self, shard: u64) -> Result<CachedFile, RemoteError> {
        let entry = self.entry(shard)?;
        let relative = shard_object(&entry.name);
        let url = self.remote.object_url(&relative);
        let object = self.remote.object(&relative);
        let sha = parse_sha(&entry.sha256).ok_or_else(|| RemoteError::Integrity {
            url: url.clone(),
            reason: format!(
                "the manifest's sha256 '{}' is not 64 hex digits",
                entry.sha256
            ),
        })?;
        let local_rel = PathBuf::from(&self.key).join(&relative);
        let mut fetch = |sink: &mut dyn FetchSink| -> Result<(), FetchError> {
            let store = self.remote.store().as_ref();
            self.retry
                .run(|| {
                    sink.restart().map_err(|source| RemoteError::LocalIo {
                        path: url.clone(),
                        source,
                    })?;
                    stream_object(store, &object, &url, &mut |at, bytes| {
                        sink.write_at(at, bytes)
                    })
                    .map(|_| ())
                })
                .map_err(|e| {
                    if e.is_retryable() {
                        FetchError::retryable(e)
                    } else {
                        FetchError::permanent(e)
                    }
                })
        };
        match self
            .local
            .get_or_fetch(&local_rel, entry.byte_len, &sha, &mut fetch)
        {
            Ok(file) => Ok(file),
            Err(source) => Err(self.explain(url, source)),
        }
    }

    /// A download that failed because the bytes did not match (or the object vanished) may
    /// mean the whole cache was replaced: say so when the manifest changed.
    fn explain(&self, url: String, source: dsrt_shard_cache::ShardCacheError) -> RemoteError {
        use dsrt_shard_cache::ShardCacheError as E;
        let mismatch = matches!(
            source,
            E::Integrity { .. }
                | E::Length { .. }
                | E::Fetch {
                    retryable: false,
                    ..
                }
        );
        if mismatch && self.manifest_changed() {
            return RemoteError::ManifestChanged {
                url: self.remote.object_url(dsrt_manifest::MANIFEST_FILE_NAME),
            };
        }
        match source {
            E::Integrity {
                expected, found, ..
            } => RemoteError::Integrity {
                url,
                reason: format!("SHA-256 {found}, the manifest says {expected}"),
            },
            E::Length {
                expected, found, ..
            } => RemoteError::Integrity {
                url,
                reason: format!("{found} bytes, the manifest says {expected}"),
            },
            other => RemoteError::LocalCache { url, source: other },
        }
    }

    /// Whether the remote manifest.json now differs from the one this cache was opened with.
    fn manifest_changed(&self) -> bool {
        let url = self.remote.object_url(dsrt_manifest::MANIFEST_FILE_NAME);
        let object = self.remote.object(dsrt_manifest::MANIFEST_FILE_NAME);
        match crate::fetch::get_bytes(
            self.remote.store().as_ref(),
            &object,
            &url,
            crate::open::MAX_MANIFEST_BYTES,
        ) {
            Ok((bytes, _)) => dsrt_atlas_codec::sha::sha256(&bytes) != self.manifest_sha,
            Err(RemoteError::Store {
                source: object_store::Error::NotFound { .. },
                ..
            }) => true,
            Err(_) => false,
        }
    }
}

impl OpenShards {
    fn touch(&mut self, shard: u64) {
        self.recent.retain(|&s| s != shard);
        self.recent.push_back(shard);
    }

    /// Closes the least recently used files nobody is reading, keeping at most `keep` of the
    /// most recent, so that they may be evicted.
    fn close_idle(&mut self, keep: usize) {
        let mut excess = self.recent.len().saturating_sub(keep);
        let mut kept = VecDeque::with_capacity(self.recent.len());
        while let Some(shard) = self.recent.pop_front() {
            let slot = usize::try_from(shard)
                .ok()
                .and_then(|i| self.files.get_mut(i));
            let idle = slot
                .as_ref()
                .and_then(|s| s.as_ref())
                .is_some_and(|f| Arc::strong_count(f) == 1);
            if excess > 0 && idle {
                if let Some(slot) = slot {
                    *slot = None;
                }
                excess -= 1;
            } else {
                kept.push_back(shard);
            }
        }
        self.recent = kept;
    }
}

/// Downloads, in order, the first `depth` shards of each hint that are not open yet; a new
/// hint replaces what is left of the old one.
fn start_prefetcher(shared: Arc<Shared>, depth: usize) -> SyncSender<Vec<u64>> {
    let (sender, receiver) = mpsc::sync_channel::<Vec<u64>>(1);
    let worker = Arc::downgrade(&shared);
    drop(shared);
    let spawned = std::thread::Builder::new()
        .name("dsrt-prefetch".into())
        .spawn(move || prefetch_loop(&worker, &receiver, depth));
    if let Err(e) = spawned {
        tracing_warn(&format!("dsrt-remote: no prefetch thread: {e}"));
    }
    sender
}

fn prefetch_loop(shared: &std::sync::Weak<Shared>, hints: &Receiver<Vec<u64>>, depth: usize) {
    while let Ok(mut hint) = hints.recv() {
        // Only the newest hint matters.
        while let Ok(newer) = hints.try_recv() {
            hint = newer;
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let mut wanted: Vec<u64> = Vec::with_capacity(depth);
        for shard in hint {
            if wanted.len() >= depth {
                break;
            }
            let open = usize::try_from(shard).is_ok_and(|i| shared.is_open(i));
            if !open && !wanted.contains(&shard) {
                wanted.push(shard);
            }
        }
        // The first `depth` shards download side by side, as a reader would want them; a
        // failure here is reported when a reader needs the shard.
        std::thread::scope(|scope| {
            for &shard in &wanted {
                let shared = &shared;
                scope.spawn(move || {
                    let _ = shared.shard_file(shard);
                });
            }
        });
    }
}

fn tracing_warn(message: &str) {
    eprintln!("{message}");
}

/// The object of shard file `name`, relative to the cache's prefix.
fn shard_object(name: &str) -> String {
    format!("{}/{name}", dsrt_shard::SHARDS_DIR_NAME)
}

/// 64 lowercase or uppercase hex digits as 32 bytes.
pub(crate) fn parse_sha(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let digit = |b: u8| (b as char).to_digit(16);
        out[i] = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(out)
}
