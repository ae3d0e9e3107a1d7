//! The shards of a remote cache, served to `dsrt_reader::Cache` through the local cache.

use crate::background::Background;
use crate::error::RemoteError;
use crate::fetch::{read_range, stream_object, Retry};
use crate::mapped::{MappedShard, MappedShards};
use crate::options::ShardFetch;
use crate::prefetch::Prefetcher;
use crate::RemotePrefix;
use dsrt_manifest::ShardEntry;
use dsrt_reader::{fetch_counters, ShardSource, SharedShard, SourceError};
use dsrt_shard_cache::{CachedFile, FetchError, FetchSink, Publication, ShardCache};
use handle_pool::{HandlePool, Holder};
use std::collections::VecDeque;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::time::Duration;

/// Idle shard files a process keeps open (read-locked) beyond those being read: the one it
/// read last, so reading on through it opens nothing. More would keep other processes (and
/// this one) from evicting them.
const MAX_IDLE_OPEN: usize = 1;

/// Records a cache may serve by range requests while their shards download: those read
/// before the cache's first read returns (the first sample's, and those of the loader's other
/// workers started beside it), at most this many; never a cold epoch's worth, which would
/// fetch its bytes twice.
const EARLY_READS: u64 = 8;

/// How long closing a cache waits for its background threads to stop (see `Drop`).
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// One remote cache's shards: where they are, what they must hash to, and the local copies
/// this process has open.
pub(crate) struct RemoteShards {
    inner: Arc<Shared>,
    prefetch: Option<Prefetcher>,
    /// The process that opened the cache (see `Drop`).
    pid: u32,
}

pub(crate) struct Shared {
    remote: RemotePrefix,
    /// The cache's directory under the local cache root: `<cache id>-<manifest hash>`.
    key: String,
    entries: Vec<ShardEntry>,
    local: Arc<ShardCache>,
    fetch: ShardFetch,
    retry: Retry,
    /// See [`ShardsSpec::recheck`].
    recheck: bool,
    /// The SHA-256 of the manifest bytes the cache was opened with.
    manifest_sha: [u8; 32],
    open: Mutex<OpenShards>,
    /// Per pool key ([`pool_key`]): used since the process's handle pool last looked.
    used: Vec<AtomicBool>,
    /// This cache as the pool knows it.
    this: Weak<Shared>,
    /// Signalled when a download this process runs ends (see [`OpenShards::downloading`]).
    downloaded: Condvar,
    /// Reads by range while a shard downloads, when enabled.
    early: Option<EarlyReads>,
    /// Opened when the first read returns; background downloads wait for it (briefly).
    first_read: Gate,
    /// Set when the cache is closed: downloads still running (only background ones can be)
    /// stop at their next chunk or attempt, and their partial files are removed.
    closing: AtomicBool,
    /// The prefetch threads and the downloads early reads started.
    pub(crate) background: Arc<Background>,
}

/// A flag that threads can wait on, with a timeout.
#[derive(Default)]
struct Gate {
    /// Read without the lock: every read opens the gate, and all but the first find it open.
    is_open: AtomicBool,
    /// Taken to open the gate and to wait, so no wake-up is lost between a waiter's check and
    /// its wait.
    lock: Mutex<()>,
    opened: Condvar,
}

impl Gate {
    fn open(&self) {
        if self.is_open.swap(true, Ordering::AcqRel) {
            return;
        }
        let _locked = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.opened.notify_all();
    }

    fn wait(&self, timeout: Duration) {
        let locked = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = self
            .opened
            .wait_timeout_while(locked, timeout, |_| !self.is_open.load(Ordering::Acquire))
            .unwrap_or_else(PoisonError::into_inner);
    }
}

/// What readers may take by range requests from shards still downloading.
struct EarlyReads {
    /// Whether a background download of each shard was started by a reader.
    started: Vec<AtomicBool>,
    /// Range reads left.
    left: AtomicU64,
}

/// Shard files open in this process, and the order they were last used in.
#[derive(Default)]
struct OpenShards {
    files: Vec<Option<Arc<CachedFile>>>,
    /// Mapped shards for zero-copy payloads ([`ShardSource::shared`]).
    maps: MappedShards,
    recent: VecDeque<u64>,
    /// Shards a thread of this process is downloading. Another reader of the same shard
    /// waits for that download's checked file instead of for its publication (an fsync
    /// later), which other processes must wait for.
    downloading: Vec<bool>,
}

/// The handle pool's key of shard `index`'s file (`map == false`) or mapping.
fn pool_key(index: usize, map: bool) -> u64 {
    (index as u64) << 1 | u64::from(map)
}

/// Handles a cache's [`OpenShards`] kept or closed under its lock, for the pool to hear of
/// once the lock is dropped. The pool counts a file or mapping exactly while its slot holds
/// it.
#[derive(Default)]
#[must_use]
struct PoolChanges {
    admit: Option<u64>,
    forget: Vec<u64>,
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
    /// Serve records by range requests while their shard downloads (see
    /// [`RemoteOptions::read_while_downloading`](crate::RemoteOptions::read_while_downloading)).
    pub(crate) read_while_downloading: bool,
    /// Hash again every shard found in the shard cache (checked when it entered it) before
    /// this process reads it: what `validate_cache` asks.
    pub(crate) recheck: bool,
}

impl RemoteShards {
    pub(crate) fn new(spec: ShardsSpec, prefetch_shards: usize) -> Self {
        let open = OpenShards {
            files: vec![None; spec.entries.len()],
            maps: MappedShards::new(spec.entries.len()),
            recent: VecDeque::new(),
            downloading: vec![false; spec.entries.len()],
        };
        let keys = 2 * spec.entries.len();
        let fetch = spec.fetch;
        let early = (fetch == ShardFetch::Whole && spec.read_while_downloading).then(|| {
            let n = spec.entries.len();
            EarlyReads {
                started: (0..n).map(|_| AtomicBool::new(false)).collect(),
                left: AtomicU64::new(EARLY_READS),
            }
        });
        let inner = Arc::new_cyclic(|this| Shared {
            remote: spec.remote,
            key: spec.key,
            entries: spec.entries,
            local: spec.local,
            fetch,
            retry: spec.retry,
            recheck: spec.recheck,
            manifest_sha: spec.manifest_sha,
            open: Mutex::new(open),
            used: (0..keys).map(|_| AtomicBool::new(false)).collect(),
            this: this.clone(),
            downloaded: Condvar::new(),
            early,
            first_read: Gate::default(),
            closing: AtomicBool::new(false),
            background: Arc::default(),
        });
        let prefetch = (fetch == ShardFetch::Whole && prefetch_shards > 0)
            .then(|| Prefetcher::start(&inner, prefetch_shards));
        Self {
            inner,
            prefetch,
            pid: std::process::id(),
        }
    }
}

impl Drop for RemoteShards {
    /// Closing the cache stops the downloads no reader waits for (the prefetcher's and those
    /// early reads started) at their next chunk, and waits for their threads (at most
    /// [`CLOSE_WAIT`]), which remove their partial files; then it waits until every download
    /// it was served is published (renamed into place, durable). A process that exits next
    /// keeps what it read and leaves no partial file.
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            // A forked child (a `DataLoader` worker given this cache) has neither the prefetch
            // nor the publishing threads, and may have inherited their locks held: it leaves
            // both alone.
            std::mem::forget(self.prefetch.take());
            return;
        }
        self.inner.closing.store(true, Ordering::Release);
        drop(self.prefetch.take());
        // A thread waiting for another process's download of its shard notices the close only
        // when that download ends: the close does not wait for it without bound.
        self.inner.background.wait(CLOSE_WAIT);
        self.inner.local.wait_published();
    }
}

impl ShardSource for RemoteShards {
    fn read_at(&self, shard: u64, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        let read = self.read_through(shard, offset, buf);
        self.inner.first_read_served();
        read
    }

    fn will_need(&self, shards: &[u64]) {
        if let Some(prefetch) = &self.prefetch {
            prefetch.hint(shards);
        }
    }

    fn shared(&self, shard: u64) -> Option<Result<SharedShard, SourceError>> {
        let shared = &self.inner;
        if shared.fetch != ShardFetch::Whole {
            return None;
        }
        // Records served early come by range requests, through `read_at`.
        if shared.early_reads_left() && !shared.is_local(shard) {
            return None;
        }
        let mapped = shared.mapped(shard).map_err(SourceError::from);
        shared.first_read_served();
        Some(mapped.map(|m| m as SharedShard))
    }
}

impl RemoteShards {
    fn read_through(&self, shard: u64, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        let shared = &self.inner;
        match shared.fetch {
            ShardFetch::Whole => {
                if let Some(file) = shared.local_file(shard) {
                    return Ok(file.read_exact_at(buf, offset)?);
                }
                if let Some(read) = shared.read_kept_map(shard, offset, buf) {
                    return Ok(read?);
                }
                if shared.read_early(shard, offset, buf) {
                    return Ok(());
                }
                Ok(shared
                    .shard_file_waited(shard)?
                    .read_exact_at(buf, offset)?)
            }
            ShardFetch::Range => {
                let started = std::time::Instant::now();
                let read = shared
                    .retry
                    .run(|| shared.read_range(shard, offset, buf))
                    .map_err(SourceError::from);
                fetch_counters().add_wait(started.elapsed());
                read
            }
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

    /// Where shard `entry` lives in the local cache, relative to its root.
    fn local_rel(&self, entry: &ShardEntry) -> PathBuf {
        PathBuf::from(&self.key).join(shard_object(&entry.name))
    }

    /// One range request for bytes `offset..` of shard `shard`.
    fn read_range(&self, shard: u64, offset: u64, buf: &mut [u8]) -> Result<(), RemoteError> {
        let entry = self.entry(shard)?;
        let relative = shard_object(&entry.name);
        let url = self.remote.object_url(&relative);
        let object = self.remote.object(&relative);
        read_range(self.remote.store().as_ref(), &object, &url, offset, buf)?;
        fetch_counters().add_fetched(buf.len() as u64);
        Ok(())
    }

    /// Shard `shard`'s local file if this process has it open or the local cache holds it
    /// whole (another process downloaded it); never downloads.
    fn local_file(&self, shard: u64) -> Option<Arc<CachedFile>> {
        let index = usize::try_from(shard).ok()?;
        if let Some(file) = self.cached(index) {
            return Some(file);
        }
        // A copy to hash again goes through `download`, which reports one that fails.
        if self.recheck {
            return None;
        }
        let entry = self.entries.get(index)?;
        let sha = dsrt_atlas_codec::parse_sha256_hex(&entry.sha256)?;
        let file = Arc::new(self.local.get(&self.local_rel(entry), &sha).ok()??);
        fetch_counters().add_hit();
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let (file, placed) = match open.files.get_mut(index)? {
            Some(present) => (Arc::clone(present), false),
            slot => {
                *slot = Some(Arc::clone(&file));
                (file, true)
            }
        };
        let changes = open.file_used(index, placed, Some(MAX_IDLE_OPEN));
        drop(open);
        self.tell_pool(index, false, changes);
        Some(file)
    }

    /// Serves `buf` by one range request while shard `shard` downloads in the background
    /// (starting that download if no reader has), while the cache has early reads left
    /// ([`EARLY_READS`]). `false` when they are spent, early reads are off, or the request
    /// failed: the caller then waits for the whole shard, whose download reports any error.
    fn read_early(self: &Arc<Self>, shard: u64, offset: u64, buf: &mut [u8]) -> bool {
        let Some(early) = &self.early else {
            return false;
        };
        let Some(index) = usize::try_from(shard)
            .ok()
            .filter(|&i| i < self.entries.len())
        else {
            return false;
        };
        let took = early
            .left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(1)
            });
        if took.is_err() {
            return false;
        }
        // The record first, then the shard's download: the reader waits on the record only.
        let started = std::time::Instant::now();
        let read = self.read_range(shard, offset, buf).is_ok();
        fetch_counters().add_wait(started.elapsed());
        if !early.started[index].swap(true, Ordering::AcqRel) {
            let shared = Arc::clone(self);
            let spawned = self.background.spawn("dsrt-download", move || {
                // A failure is reported to the reader that next needs the shard.
                let _ = shared.shard_file(shard);
            });
            if !spawned {
                early.started[index].store(false, Ordering::Release);
            }
        }
        read
    }

    /// [`Shared::shard_file`] for a reader, the time it takes counted as the process's wait
    /// for downloads (`dsrt_reader::fetch_counters`): readers get here only when the shard is
    /// not local, so a read that finds it costs no clock.
    fn shard_file_waited(&self, shard: u64) -> Result<Arc<CachedFile>, RemoteError> {
        let started = std::time::Instant::now();
        let file = self.shard_file(shard);
        fetch_counters().add_wait(started.elapsed());
        file
    }

    /// Shard `shard`'s local file, open and read-locked, downloading it if needed. While
    /// another thread of this process downloads it, waits for that download; if it fails,
    /// tries once itself (and reports its own error).
    pub(crate) fn shard_file(&self, shard: u64) -> Result<Arc<CachedFile>, RemoteError> {
        let index = usize::try_from(shard).unwrap_or(usize::MAX);
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(file) = open.files.get(index).and_then(Option::as_ref) {
                let file = Arc::clone(file);
                let changes = open.file_used(index, false, None);
                drop(open);
                self.tell_pool(index, false, changes);
                return Ok(file);
            }
            match open.downloading.get(index) {
                Some(true) => {
                    open = self
                        .downloaded
                        .wait(open)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                // `download` names a shard missing from the manifest.
                _ => break,
            }
        }
        if let Some(flag) = open.downloading.get_mut(index) {
            *flag = true;
        }
        // Whatever this process holds open but is not reading must not keep the download
        // from making room.
        let changes = open.close_idle(0);
        drop(open);
        self.tell_pool(index, false, changes);
        let downloaded = self.download(shard).map(Arc::new);
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(flag) = open.downloading.get_mut(index) {
            *flag = false;
        }
        self.downloaded.notify_all();
        let file = downloaded?;
        let (file, placed) = match open.files.get_mut(index) {
            Some(Some(present)) => (Arc::clone(present), false),
            Some(slot) => {
                *slot = Some(Arc::clone(&file));
                (file, true)
            }
            None => (file, false),
        };
        let changes = open.file_used(index, placed, Some(MAX_IDLE_OPEN));
        drop(open);
        self.tell_pool(index, false, changes);
        Ok(file)
    }

    /// Shard `shard`'s local file mapped (downloading it if needed): the mapping this cache
    /// keeps for it ([`MappedShards`]), or a new one.
    pub(crate) fn mapped(&self, shard: u64) -> Result<Arc<MappedShard>, RemoteError> {
        let index = usize::try_from(shard).unwrap_or(usize::MAX);
        if let Some(map) = self
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .maps
            .get(index)
        {
            self.mark_used(pool_key(index, true));
            return Ok(map);
        }
        let file = match self.local_file(shard) {
            Some(file) => file,
            None => self.shard_file_waited(shard)?,
        };
        let map = file.map().map_err(|source| RemoteError::LocalIo {
            path: file.path().display().to_string(),
            source,
        })?;
        let mapped = Arc::new(MappedShard { map });
        let max_bytes = self.cache_limit() / 2;
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let placed = !open.maps.contains(index);
        let (map, dropped) = open.maps.insert(index, mapped, max_bytes);
        let changes = PoolChanges {
            admit: placed.then(|| pool_key(index, true)),
            forget: dropped.into_iter().map(|i| pool_key(i, true)).collect(),
        };
        drop(open);
        self.tell_pool(index, true, changes);
        Ok(map)
    }

    /// Serves `buf` from shard `shard`'s kept mapping, if there is one (its file may have been
    /// evicted since: the mapping still holds the checked bytes).
    fn read_kept_map(&self, shard: u64, offset: u64, buf: &mut [u8]) -> Option<io::Result<()>> {
        let index = usize::try_from(shard).ok()?;
        let map = self
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .maps
            .get(index)?;
        self.mark_used(pool_key(index, true));
        let bytes = usize::try_from(offset)
            .ok()
            .and_then(|start| map.map.get(start..start.checked_add(buf.len())?));
        Some(match bytes {
            Some(bytes) => {
                buf.copy_from_slice(bytes);
                Ok(())
            }
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "bytes {offset}..+{} lie past the end of shard {shard} ({} bytes)",
                    buf.len(),
                    map.map.len()
                ),
            )),
        })
    }

    /// Whether this cache may still serve records by range requests.
    fn early_reads_left(&self) -> bool {
        self.early
            .as_ref()
            .is_some_and(|early| early.left.load(Ordering::Acquire) > 0)
    }

    /// Whether shard `shard` needs no download: this process has it open or mapped (a kept
    /// mapping serves its reads even after another process evicted the file), or the local
    /// cache holds it whole.
    pub(crate) fn is_local(&self, shard: u64) -> bool {
        let Some(index) = usize::try_from(shard).ok() else {
            return false;
        };
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.files.get(index).is_some_and(Option::is_some) || open.maps.contains(index) {
            return true;
        }
        drop(open);
        self.entries.get(index).is_some_and(|entry| {
            dsrt_atlas_codec::parse_sha256_hex(&entry.sha256).is_some_and(|sha| {
                matches!(self.local.get(&self.local_rel(entry), &sha), Ok(Some(_)))
            })
        })
    }

    /// The byte length of every shard, in manifest order.
    pub(crate) fn shard_lens(&self) -> Vec<u64> {
        self.entries.iter().map(|e| e.byte_len).collect()
    }

    /// The byte limit of the local cache directory.
    pub(crate) fn cache_limit(&self) -> u64 {
        self.local.limits().max_bytes
    }

    /// An error once the cache is closed (see [`Shared::closing`]): no reader waits for the
    /// download that asks, as a reader holds the cache open.
    fn check_open(&self) -> io::Result<()> {
        if self.closing.load(Ordering::Acquire) {
            return Err(io::Error::other(
                "the cache was closed before this background download finished",
            ));
        }
        Ok(())
    }

    /// Ends the early reads (those already under way finish) and lets background downloads
    /// start: a read has returned. Once the first sample is out, what the reads need is
    /// throughput, and range requests would compete with the downloads that serve every later
    /// record (on the loopback bench, going on to 8 early reads cost a cold epoch 10%).
    fn first_read_served(&self) {
        // Called for every read: it writes nothing shared once the early reads are over.
        if let Some(early) = self
            .early
            .as_ref()
            .filter(|e| e.left.load(Ordering::Acquire) > 0)
        {
            early.left.store(0, Ordering::Release);
        }
        self.first_read.open();
    }

    /// Waits until a reader has been served (or `timeout`).
    pub(crate) fn wait_for_first_read(&self, timeout: Duration) {
        self.first_read.wait(timeout);
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
        let sha = dsrt_atlas_codec::parse_sha256_hex(&entry.sha256).ok_or_else(|| {
            RemoteError::Integrity {
                url: url.clone(),
                reason: format!(
                    "the manifest's sha256 '{}' is not 64 hex digits",
                    entry.sha256
                ),
            }
        })?;
        let local_rel = self.local_rel(entry);
        let mut fetch = |sink: &mut dyn FetchSink| -> Result<(), FetchError> {
            let _in_flight = fetch_counters().download();
            let store = self.remote.store();
            let store = store.as_ref();
            self.retry
                .run(|| {
                    let local_io = |source| RemoteError::LocalIo {
                        path: url.clone(),
                        source,
                    };
                    self.check_open().map_err(local_io)?;
                    sink.restart().map_err(local_io)?;
                    stream_object(store, &object, &url, &mut |at, bytes| {
                        self.check_open()?;
                        fetch_counters().add_fetched(bytes.len() as u64);
                        sink.write_owned(at, bytes)
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
        let got = self
            .local
            // This process reads the shard as soon as it is checked; other processes see it
            // once it is durable.
            .get_or_fetch_with(
                &local_rel,
                entry.byte_len,
                &sha,
                Publication::InBackground,
                &mut fetch,
            );
        match got {
            // Found in the shard cache (checked when it entered): hashed again when asked,
            // so what validation passes is what is read. A damaged copy is removed, and
            // reported; the next read downloads it again.
            Ok(file) if !file.downloaded() && !self.recheck => {
                fetch_counters().add_hit();
                Ok(file)
            }
            Ok(file) if self.recheck && !file.downloaded() => {
                fetch_counters().add_hit();
                match self.local.check(&local_rel, &file, &sha) {
                    Ok(()) => Ok(file),
                    Err(source) => Err(RemoteError::LocalCache { url, source }),
                }
            }
            Ok(file) => Ok(file),
            // A download stopped by the close: nothing to explain.
            Err(source) if self.closing.load(Ordering::Acquire) => {
                Err(RemoteError::LocalCache { url, source })
            }
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

impl Shared {
    fn mark_used(&self, key: u64) {
        if let Some(used) = usize::try_from(key).ok().and_then(|k| self.used.get(k)) {
            if !used.load(Ordering::Relaxed) {
                used.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Marks shard `index`'s file or mapping used and tells the process's handle pool what
    /// the cache opened and closed (never under the cache's lock: the pool may release
    /// handles of this cache).
    fn tell_pool(&self, index: usize, map: bool, changes: PoolChanges) {
        self.mark_used(pool_key(index, map));
        let pool = HandlePool::global();
        let this: Weak<dyn Holder> = self.this.clone();
        for key in changes.forget {
            pool.forget(&this, key);
        }
        if let Some(key) = changes.admit {
            pool.admit(this, key);
        }
    }
}

/// The process's handle pool counts each kept file and mapping of a remote cache; the
/// least recently used idle ones beyond its capacity, across every cache, are closed.
impl Holder for Shared {
    fn take_used(&self, key: u64) -> bool {
        usize::try_from(key)
            .ok()
            .and_then(|k| self.used.get(k))
            .is_some_and(|used| used.swap(false, Ordering::Relaxed))
    }

    fn release(&self, key: u64) -> bool {
        let Ok(index) = usize::try_from(key >> 1) else {
            return true;
        };
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let (file, map) = if key & 1 == 1 {
            (None, open.maps.remove(index))
        } else if open.is_idle(index) || open.files.get(index).is_none_or(Option::is_none) {
            open.recent.retain(|&s| s != index as u64);
            (open.files.get_mut(index).and_then(Option::take), None)
        } else {
            // Being read (its read lock keeps other processes from evicting it): it stays
            // open, and counted.
            return false;
        };
        drop(open);
        drop(file);
        drop(map);
        true
    }
}

impl OpenShards {
    /// Shard `index`'s file is in use, just placed in its slot (`placed`: the pool counts it
    /// from now) or found there: marked most recent; with `keep`, idle files beyond the `keep`
    /// most recent are closed.
    fn file_used(&mut self, index: usize, placed: bool, keep: Option<usize>) -> PoolChanges {
        self.touch(index as u64);
        let mut changes = keep.map_or_else(PoolChanges::default, |keep| self.close_idle(keep));
        changes.admit = placed.then(|| pool_key(index, false));
        changes
    }

    fn touch(&mut self, shard: u64) {
        self.recent.retain(|&s| s != shard);
        self.recent.push_back(shard);
    }

    /// Closes the least recently used files nobody is reading, keeping at most `keep` of the
    /// most recent, so that they may be evicted; the pool is to forget them.
    fn close_idle(&mut self, keep: usize) -> PoolChanges {
        let mut closed = PoolChanges::default();
        let mut excess = self.recent.len().saturating_sub(keep);
        let mut kept = VecDeque::with_capacity(self.recent.len());
        while let Some(shard) = self.recent.pop_front() {
            let index = usize::try_from(shard).unwrap_or(usize::MAX);
            if excess > 0 && self.is_idle(index) {
                if let Some(slot) = self.files.get_mut(index) {
                    *slot = None;
                    closed.forget.push(pool_key(index, false));
                }
                excess -= 1;
            } else {
                kept.push_back(shard);
            }
        }
        self.recent = kept;
        closed
    }

    /// Whether nothing but its slot holds shard `index`'s file (payloads in its mapping do
    /// not count: they keep the mapping only).
    fn is_idle(&self, index: usize) -> bool {
        matches!(self.files.get(index), Some(Some(file)) if Arc::strong_count(file) == 1)
    }
}

/// The object of shard file `name`, relative to the cache's prefix.
fn shard_object(name: &str) -> String {
    format!("{}/{name}", dsrt_shard::SHARDS_DIR_NAME)
}
