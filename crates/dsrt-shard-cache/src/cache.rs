//! The cache: claims, downloads, eviction, pinned files, reads.

use crate::lock::{sync_dir, try_lock_mutex, Backoff, DirLock};
use crate::rel::{kind, Kind, Rel, PIN_LIST, TEMP_PREFIX};
use crate::sink::PartialSink;
use crate::unpublished::Unpublished;
use crate::{FetchError, FetchSink, ShardCacheError};
use durable_fs::{lock_file, try_lock_file, LockMode};
use std::collections::{BTreeSet, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};
use tracing::debug;

/// A process re-touches a file's mtime (its LRU position) at most this often.
const RETOUCH_AFTER: Duration = Duration::from_secs(60);

/// The cache's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLimits {
    /// The most bytes (apparent sizes of every regular file under the root, downloads in
    /// progress included) the directory ever holds.
    pub max_bytes: u64,
    /// How long a claim waits for other processes to release room (or to finish downloading
    /// the same file) before failing with [`ShardCacheError::NoRoom`] (or
    /// [`ShardCacheError::Busy`]). Default 10 minutes.
    pub wait_for_room: Duration,
}

impl CacheLimits {
    /// `max_bytes`, waiting up to 10 minutes for room.
    pub fn new(max_bytes: u64) -> Self {
        Self {
            max_bytes,
            wait_for_room: Duration::from_secs(600),
        }
    }

    /// The same limits with another `wait_for_room`.
    pub fn with_wait_for_room(mut self, wait: Duration) -> Self {
        self.wait_for_room = wait;
        self
    }
}

/// A bounded directory of immutable, checksum-verified files shared by the processes of one
/// node. See the crate documentation for the protocol.
#[derive(Debug)]
pub struct ShardCache {
    root: PathBuf,
    limits: CacheLimits,
    /// When this instance last set each file's mtime.
    touched: Mutex<HashMap<String, Instant>>,
    /// Checked downloads being made durable and visible (see [`ShardCache::get_or_fetch`]);
    /// joined when the cache is dropped or [`ShardCache::wait_published`] is called.
    publishing: Mutex<PublishThreads>,
    /// Those downloads until they are published, for this process's readers.
    unpublished: Unpublished,
}

/// A file of the cache, open and read-locked (a shared `flock`): no process evicts it while
/// this lives. Dropping it releases the lock.
#[derive(Debug)]
pub struct CachedFile {
    file: File,
    path: PathBuf,
    len: u64,
}

impl CachedFile {
    /// The open file (read-only).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its path under the cache root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads exactly `buf.len()` bytes at `offset` (`pread`; no shared cursor).
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    /// The whole file, mapped read-only, through a descriptor of its own that carries no
    /// lock: the mapping (which keeps its descriptor's open file description alive) does not
    /// keep the file read-locked once this `CachedFile` is dropped, so holding a mapping
    /// never keeps the file from being evicted. An evicted file is unlinked, never
    /// truncated, so the mapping stays readable; its pages leave the disk with it.
    /// (On Linux, through `/proc/self/fd`; elsewhere the mapping holds the lock.)
    pub fn map(&self) -> io::Result<memmap2::Mmap> {
        let file = match unlocked_descriptor(&self.file) {
            Some(own) => own?,
            None => self.file.try_clone()?,
        };
        // SAFETY: a cached file never changes once checked: the cache writes only partial
        // files, each by the one downloader holding its exclusive lock, and only before the
        // check (the `CachedFile` of a download is handed out after it); eviction and
        // replacement unlink a file, never truncate or rewrite it. Only a process that breaks
        // the protocol (truncating files under the root) could make an access through the
        // mapping fault (`SIGBUS`).
        #[allow(unsafe_code)]
        unsafe {
            memmap2::Mmap::map(&file)
        }
    }

    /// The whole file.
    pub fn read_all(&self) -> io::Result<Vec<u8>> {
        let len = usize::try_from(self.len).map_err(io::Error::other)?;
        let mut buf = vec![0; len];
        self.file.read_exact_at(&mut buf, 0)?;
        Ok(buf)
    }
}

/// A final file seen by a scan.
struct Candidate {
    path: PathBuf,
    rel: String,
    mtime: SystemTime,
    ino: u64,
}

/// What one walk of the root found.
#[derive(Default)]
struct Scan {
    usage: u64,
    finals: Vec<Candidate>,
    partials: Vec<PathBuf>,
}

/// The outcome of one claim under the directory lock.
enum Claim {
    /// The final file is there; read-locked.
    Present(CachedFile),
    /// Ours to download: the partial file, exclusively locked and reserved.
    Claimed(File),
    /// A live process is downloading it: its partial file, to wait on.
    Downloading(File),
    /// A different-length old version is held open by readers; wait.
    Held,
    /// Not enough room now; wait.
    NoRoom,
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> ShardCacheError + '_ {
    move |e| ShardCacheError::io(path, e)
}

impl ShardCache {
    /// Opens (creating it if needed) the cache root, then, under the directory lock, removes
    /// stale partial files (no process holds their lock: their downloader died) and stale
    /// temporary files, and evicts down to `max_bytes` if the directory holds more (a lowered
    /// limit).
    pub fn open(root: impl Into<PathBuf>, limits: CacheLimits) -> Result<Self, ShardCacheError> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(io_at(&root))?;
        let cache = Self {
            root,
            limits,
            touched: Mutex::new(HashMap::new()),
            publishing: Mutex::new(PublishThreads::default()),
            unpublished: Unpublished::default(),
        };
        let _dir = DirLock::acquire(&cache.root, true)?;
        let mut scan = cache.scan(true)?;
        cache.sweep_partials(&mut scan)?;
        let pins = cache.read_pins()?;
        cache.make_room(&mut scan, &pins, 0)?;
        Ok(cache)
    }

    /// The cache root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The limits it was opened with.
    pub fn limits(&self) -> CacheLimits {
        self.limits
    }

    /// The file `rel`, present in full with `len` bytes and SHA-256 `sha256`, downloading it
    /// with `fetch` when absent. Returns it open and read-locked.
    ///
    /// When another process (or thread) is downloading the same file, this waits for it
    /// (at most `wait_for_room`) instead of downloading it twice. A download whose bytes do
    /// not match `len` and `sha256`, or whose fetch fails, leaves nothing behind.
    ///
    /// A download is published (fsynced, renamed into place, its directory fsynced) before
    /// this returns, so the file is at [`CachedFile::path`]; see
    /// [`ShardCache::get_or_fetch_with`] for a caller that only reads through the returned
    /// file.
    pub fn get_or_fetch(
        &self,
        rel: &Path,
        len: u64,
        sha256: &[u8; 32],
        fetch: &mut dyn FnMut(&mut dyn FetchSink) -> Result<(), FetchError>,
    ) -> Result<CachedFile, ShardCacheError> {
        self.get_or_fetch_with(rel, len, sha256, Publication::BeforeReturn, fetch)
    }

    /// [`ShardCache::get_or_fetch`], publishing a download as `publication` says.
    ///
    /// With [`Publication::InBackground`] a download returns as soon as its bytes are
    /// checked: the caller reads them through the returned file at once, while a background
    /// thread fsyncs it, renames it into place (only now do other processes see it) and
    /// fsyncs the directory, so no other process ever sees it before it is durable: until
    /// then they wait as for any download. A caller of this instance (another thread of the
    /// process) gets the checked file at once, through another descriptor sharing its lock;
    /// the file is not yet at [`CachedFile::path`]. If publishing fails the partial file is
    /// removed and the caller keeps reading its checked copy. [`ShardCache::wait_published`]
    /// (and dropping the cache) waits for those threads.
    pub fn get_or_fetch_with(
        &self,
        rel: &Path,
        len: u64,
        sha256: &[u8; 32],
        publication: Publication,
        fetch: &mut dyn FnMut(&mut dyn FetchSink) -> Result<(), FetchError>,
    ) -> Result<CachedFile, ShardCacheError> {
        let rel = Rel::new(rel)?;
        let final_path = rel.final_path(&self.root);
        if len > self.limits.max_bytes {
            return Err(ShardCacheError::TooLarge {
                path: final_path,
                len,
                limit: self.limits.max_bytes,
            });
        }
        if let Some(file) = self.lookup(&rel, len)? {
            return Ok(file);
        }
        let start = Instant::now();
        let mut backoff = Backoff::new();
        loop {
            match self.claim(&rel, len)? {
                Claim::Present(file) => return Ok(file),
                Claim::Claimed(partial) => {
                    let download = Download {
                        rel: &rel,
                        len,
                        sha256,
                        publication,
                    };
                    return self.download(&download, partial, fetch);
                }
                Claim::Downloading(partial) => {
                    self.wait_for_download(&partial, &final_path, start)?;
                }
                Claim::Held => {
                    if start.elapsed() >= self.limits.wait_for_room {
                        return Err(ShardCacheError::Busy {
                            path: final_path,
                            waited: start.elapsed(),
                        });
                    }
                    backoff.sleep(&final_path)?;
                }
                Claim::NoRoom => {
                    if start.elapsed() >= self.limits.wait_for_room {
                        return Err(ShardCacheError::NoRoom {
                            path: final_path,
                            needed: len,
                            limit: self.limits.max_bytes,
                            waited: start.elapsed(),
                        });
                    }
                    backoff.sleep(&final_path)?;
                }
            }
        }
    }

    /// The file `rel` if it is present with `len` bytes (a file of another length counts as
    /// absent); never downloads.
    pub fn get(&self, rel: &Path, len: u64) -> Result<Option<CachedFile>, ShardCacheError> {
        self.lookup(&Rel::new(rel)?, len)
    }

    /// The file `rel` whatever its length (for files placed with [`ShardCache::put_bytes`],
    /// whose length the reader may not know), or `None`.
    pub fn get_any_len(&self, rel: &Path) -> Result<Option<CachedFile>, ShardCacheError> {
        self.lookup_inner(&Rel::new(rel)?, None)
    }

    /// Bytes the directory holds now: the apparent sizes of every regular file under the
    /// root (downloads in progress and temporary files included), counted under a shared
    /// directory lock so the view is consistent.
    pub fn usage(&self) -> Result<u64, ShardCacheError> {
        let _dir = DirLock::acquire(&self.root, false)?;
        Ok(self.scan(false)?.usage)
    }

    /// Places a small file (manifest, index, metadata) at `rel` under the same limit,
    /// replacing any file there, and pins it: the LRU never evicts it.
    ///
    /// Written crash-safely (temporary file beside it, fsync, rename, directory fsync) while
    /// holding the directory lock, with its bytes (and those of the pin list it adds to)
    /// reserved first, evicting unpinned files if needed.
    pub fn put_bytes(&self, rel: &Path, bytes: &[u8]) -> Result<(), ShardCacheError> {
        let rel = Rel::new(rel)?;
        let final_path = rel.final_path(&self.root);
        let start = Instant::now();
        let mut backoff = Backoff::new();
        loop {
            let dir = DirLock::acquire(&self.root, true)?;
            let mut pins = self.read_pins()?;
            let pin_text = if pins.contains(rel.as_str()) {
                None
            } else {
                pins.insert(rel.as_str().to_owned());
                Some(render_pins(&pins))
            };
            let need = bytes.len() as u64 + pin_text.as_ref().map_or(0, |t| t.len() as u64);
            if need > self.limits.max_bytes {
                return Err(ShardCacheError::TooLarge {
                    path: final_path,
                    len: need,
                    limit: self.limits.max_bytes,
                });
            }
            let mut scan = self.scan(true)?;
            if !self.make_room(&mut scan, &pins, need)? {
                drop(dir);
                if start.elapsed() >= self.limits.wait_for_room {
                    return Err(ShardCacheError::NoRoom {
                        path: final_path,
                        needed: need,
                        limit: self.limits.max_bytes,
                        waited: start.elapsed(),
                    });
                }
                backoff.sleep(&final_path)?;
                continue;
            }
            // The pin goes first: a crash in between leaves a pin naming no file (harmless),
            // never an unpinned manifest.
            if let Some(text) = pin_text {
                write_atomic(&self.root.join(PIN_LIST), text.as_bytes())?;
            }
            let parent = final_path.parent().unwrap_or(&self.root).to_path_buf();
            std::fs::create_dir_all(&parent).map_err(io_at(&parent))?;
            write_atomic(&final_path, bytes)?;
            drop(dir);
            if parent != self.root {
                sync_dir(&self.root)?;
            }
            debug!(path = %final_path.display(), len = bytes.len(), "placed a pinned file");
            return Ok(());
        }
    }

    /// Reads without the directory lock: open, shared lock, and a retry if the file was
    /// evicted between the two.
    fn lookup(&self, rel: &Rel, len: u64) -> Result<Option<CachedFile>, ShardCacheError> {
        self.lookup_inner(rel, Some(len))
    }

    fn lookup_inner(
        &self,
        rel: &Rel,
        len: Option<u64>,
    ) -> Result<Option<CachedFile>, ShardCacheError> {
        let path = rel.final_path(&self.root);
        if let Some((file, len)) = self.unpublished.get(rel.as_str(), len) {
            return Ok(Some(CachedFile { file, path, len }));
        }
        loop {
            let file = match File::open(&path) {
                Ok(file) => file,
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(ShardCacheError::io(path, e)),
            };
            // Blocks only while an evictor or a publishing downloader holds it exclusively,
            // both briefly.
            lock_file(&file, LockMode::Shared).map_err(io_at(&path))?;
            let meta = file.metadata().map_err(io_at(&path))?;
            if meta.nlink() == 0 {
                continue; // evicted between the open and the lock: look again
            }
            if !meta.is_file() || len.is_some_and(|len| meta.len() != len) {
                return Ok(None);
            }
            self.touch(rel, &file);
            return Ok(Some(CachedFile {
                file,
                path,
                len: meta.len(),
            }));
        }
    }

    /// One attempt at claiming `rel`, under the exclusive directory lock.
    fn claim(&self, rel: &Rel, len: u64) -> Result<Claim, ShardCacheError> {
        let _dir = DirLock::acquire(&self.root, true)?;
        let final_path = rel.final_path(&self.root);
        match File::open(&final_path) {
            Ok(file) => {
                let meta = file.metadata().map_err(io_at(&final_path))?;
                if !meta.is_file() {
                    return Err(ShardCacheError::io(
                        final_path,
                        io::Error::other("not a regular file"),
                    ));
                }
                if meta.len() == len {
                    // No exclusive holder exists while we hold the directory lock.
                    lock_file(&file, LockMode::Shared).map_err(io_at(&final_path))?;
                    self.touch(rel, &file);
                    return Ok(Claim::Present(CachedFile {
                        file,
                        path: final_path,
                        len,
                    }));
                }
                // Another version of the file: replace it once no reader holds it.
                if !try_lock_file(&file, LockMode::Exclusive).map_err(io_at(&final_path))? {
                    return Ok(Claim::Held);
                }
                remove_if_present(&final_path)?;
                debug!(path = %final_path.display(), "removed a file of another length");
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(ShardCacheError::io(final_path, e)),
        }
        let partial_path = rel.partial_path(&self.root);
        match File::open(&partial_path) {
            Ok(partial) => {
                if !try_lock_file(&partial, LockMode::Exclusive).map_err(io_at(&partial_path))? {
                    return Ok(Claim::Downloading(partial));
                }
                // Nobody holds it: its downloader died.
                remove_if_present(&partial_path)?;
                debug!(path = %partial_path.display(), "removed a stale partial file");
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(ShardCacheError::io(partial_path, e)),
        }
        let pins = self.read_pins()?;
        let mut scan = self.scan(true)?;
        if !self.make_room(&mut scan, &pins, len)? {
            return Ok(Claim::NoRoom);
        }
        if let Some(parent) = partial_path.parent() {
            std::fs::create_dir_all(parent).map_err(io_at(parent))?;
        }
        let partial = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&partial_path)
            .map_err(io_at(&partial_path))?;
        let reserved = try_lock_file(&partial, LockMode::Exclusive).and_then(|locked| {
            if locked {
                partial.set_len(len)
            } else {
                Err(io::Error::other("a new partial file was locked by another"))
            }
        });
        if let Err(e) = reserved {
            let _ = std::fs::remove_file(&partial_path);
            return Err(ShardCacheError::io(partial_path, e));
        }
        Ok(Claim::Claimed(partial))
    }

    /// Waits (polling a shared lock, bounded by `wait_for_room` from `start`) until the
    /// process downloading into `partial` publishes, fails or dies.
    fn wait_for_download(
        &self,
        partial: &File,
        final_path: &Path,
        start: Instant,
    ) -> Result<(), ShardCacheError> {
        // A reader waits for the download it needs: poll often, so it does not sleep long past
        // the moment the file is published (a lock test is one system call).
        let mut backoff = Backoff::with_cap(Duration::from_millis(5));
        loop {
            if try_lock_file(partial, LockMode::Shared).map_err(io_at(final_path))? {
                return Ok(()); // dropping our descriptor releases it; the caller looks again
            }
            if start.elapsed() >= self.limits.wait_for_room {
                return Err(ShardCacheError::Busy {
                    path: final_path.to_path_buf(),
                    waited: start.elapsed(),
                });
            }
            backoff.sleep(final_path)?;
        }
    }

    /// Runs the fetch into the claimed partial file, checks it and publishes it.
    fn download(
        &self,
        download: &Download<'_>,
        partial: File,
        fetch: &mut dyn FnMut(&mut dyn FetchSink) -> Result<(), FetchError>,
    ) -> Result<CachedFile, ShardCacheError> {
        let Download {
            rel,
            len,
            sha256,
            publication,
        } = *download;
        let final_path = rel.final_path(&self.root);
        let mut guard = PartialGuard {
            root: &self.root,
            path: rel.partial_path(&self.root),
            armed: true,
        };
        let mut sink = PartialSink::new(&self.root, &partial, len);
        let fetched = fetch(&mut sink);
        if sink.overflow.is_none() {
            if let Err(FetchError { retryable, source }) = fetched {
                return Err(ShardCacheError::Fetch {
                    path: final_path,
                    retryable,
                    source,
                });
            }
        }
        sink.verify(&final_path, sha256)?;
        // The caller's descriptor shares the partial file's open file description, and so its
        // lock: exclusive now, shared once published, held while the caller reads.
        let file = partial.try_clone().map_err(io_at(&guard.path))?;
        guard.armed = false;
        let mut publish = Publish {
            root: self.root.clone(),
            partial_path: guard.path.clone(),
            final_path: final_path.clone(),
            partial,
            registered: None,
        };
        match publication {
            Publication::BeforeReturn => publish.publish()?,
            Publication::InBackground => {
                let registered = file
                    .try_clone()
                    .is_ok_and(|copy| self.unpublished.insert(rel.as_str(), copy, len));
                if registered {
                    publish.registered = Some((self.unpublished.clone(), rel.as_str().to_owned()));
                }
                self.publish_in_background(publish);
            }
        }
        debug!(path = %final_path.display(), len, "downloaded");
        self.touch(rel, &file);
        Ok(CachedFile {
            file,
            path: final_path,
            len,
        })
    }

    /// Runs `publish` on its own thread (on the caller's if the OS refuses one).
    fn publish_in_background(&self, publish: Publish) {
        let mut publishing = self
            .publishing
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        publishing.reap();
        let shared = std::sync::Arc::new(Mutex::new(Some(publish)));
        let job = std::sync::Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("shard-cache-publish".into())
            .spawn(move || {
                if let Some(publish) = job.lock().unwrap_or_else(PoisonError::into_inner).take() {
                    publish.run();
                }
            });
        match spawned {
            Ok(handle) => publishing.handles.push(handle),
            Err(_) => {
                drop(publishing);
                if let Some(publish) = shared.lock().unwrap_or_else(PoisonError::into_inner).take()
                {
                    publish.run();
                }
            }
        }
    }

    /// Waits until every download this instance checked is published (or failed to be).
    pub fn wait_published(&self) {
        let handles = self
            .publishing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        for handle in handles {
            let _ = handle.join();
        }
    }

    /// Sets the file's mtime (its LRU position) to now, when this instance has not done so
    /// in the last minute. Best effort: a file owned by another user keeps its mtime.
    fn touch(&self, rel: &Rel, file: &File) {
        let now = Instant::now();
        {
            // Never waits (see `try_lock_mutex`): the touch is best effort anyway.
            let Some(mut touched) = try_lock_mutex(&self.touched) else {
                return;
            };
            if touched
                .get(rel.as_str())
                .is_some_and(|at| now.duration_since(*at) < RETOUCH_AFTER)
            {
                return;
            }
            touched.insert(rel.as_str().to_owned(), now);
        }
        let _ = file.set_modified(SystemTime::now());
    }

    /// The pinned relative paths.
    fn read_pins(&self) -> Result<BTreeSet<String>, ShardCacheError> {
        let path = self.root.join(PIN_LIST);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(text
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(BTreeSet::new()),
            Err(e) => Err(ShardCacheError::io(path, e)),
        }
    }

    /// Walks the root. With `sweep_temps` (only under the exclusive directory lock, when
    /// every temporary file is stale) removes temporary files of `put_bytes`.
    fn scan(&self, sweep_temps: bool) -> Result<Scan, ShardCacheError> {
        let mut scan = Scan::default();
        self.walk(&self.root, "", sweep_temps, &mut scan)?;
        Ok(scan)
    }

    fn walk(
        &self,
        dir: &Path,
        prefix: &str,
        sweep_temps: bool,
        scan: &mut Scan,
    ) -> Result<(), ShardCacheError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(ShardCacheError::io(dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(io_at(dir))?;
            let path = entry.path();
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(ShardCacheError::io(path, e)),
            };
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let rel = format!("{prefix}{name}");
            if meta.is_dir() {
                self.walk(&path, &format!("{rel}/"), sweep_temps, scan)?;
                continue;
            }
            if !meta.is_file() {
                continue; // symlinks and the like are not the cache's
            }
            match kind(&name) {
                Kind::Temp if sweep_temps => {
                    remove_if_present(&path)?;
                    debug!(path = %path.display(), "removed a stale temporary file");
                    continue;
                }
                Kind::Partial => scan.partials.push(path.clone()),
                Kind::Final => scan.finals.push(Candidate {
                    path: path.clone(),
                    rel,
                    mtime: meta.modified().map_err(io_at(&path))?,
                    ino: meta.ino(),
                }),
                Kind::Temp | Kind::PinList | Kind::OtherReserved => {}
            }
            scan.usage += meta.len();
        }
        Ok(())
    }

    /// Removes the partial files no process holds (their downloaders died). Under the
    /// exclusive directory lock.
    fn sweep_partials(&self, scan: &mut Scan) -> Result<(), ShardCacheError> {
        for path in std::mem::take(&mut scan.partials) {
            let file = match File::open(&path) {
                Ok(file) => file,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(ShardCacheError::io(path, e)),
            };
            if try_lock_file(&file, LockMode::Exclusive).map_err(io_at(&path))? {
                let len = file.metadata().map_err(io_at(&path))?.len();
                remove_if_present(&path)?;
                scan.usage = scan.usage.saturating_sub(len);
                debug!(path = %path.display(), "removed a stale partial file");
            } else {
                scan.partials.push(path);
            }
        }
        Ok(())
    }

    /// Evicts until `usage + need <= max_bytes`: stale partial files first, then final files
    /// least recently used first (oldest mtime), skipping pinned ones and any a process holds
    /// open (a non-blocking exclusive lock fails). Under the exclusive directory lock.
    /// Whether it made enough room.
    fn make_room(
        &self,
        scan: &mut Scan,
        pins: &BTreeSet<String>,
        need: u64,
    ) -> Result<bool, ShardCacheError> {
        let max = self.limits.max_bytes;
        let fits = |usage: u64| usage.saturating_add(need) <= max;
        if fits(scan.usage) {
            return Ok(true);
        }
        self.sweep_partials(scan)?;
        scan.finals
            .sort_by(|a, b| a.mtime.cmp(&b.mtime).then_with(|| a.rel.cmp(&b.rel)));
        for candidate in &scan.finals {
            if fits(scan.usage) {
                break;
            }
            if pins.contains(&candidate.rel) {
                continue;
            }
            let path = &candidate.path;
            let file = match File::open(path) {
                Ok(file) => file,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(ShardCacheError::io(path, e)),
            };
            if !try_lock_file(&file, LockMode::Exclusive).map_err(io_at(path))? {
                continue; // a reader holds it
            }
            let meta = file.metadata().map_err(io_at(path))?;
            if meta.nlink() == 0 || meta.ino() != candidate.ino {
                continue;
            }
            remove_if_present(path)?;
            scan.usage = scan.usage.saturating_sub(meta.len());
            debug!(path = %path.display(), len = meta.len(), "evicted");
        }
        Ok(fits(scan.usage))
    }
}

/// The publishing threads this process started. A process forked from the one that started
/// them (a PyTorch `DataLoader` worker, say) inherits the handles but not the threads, and
/// must never join them: it forgets them instead.
struct PublishThreads {
    pid: u32,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Default for PublishThreads {
    fn default() -> Self {
        Self {
            pid: std::process::id(),
            handles: Vec::new(),
        }
    }
}

impl std::fmt::Debug for PublishThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublishThreads")
            .field("pid", &self.pid)
            .field("handles", &self.handles.len())
            .finish()
    }
}

impl PublishThreads {
    /// Drops the handles of finished threads, and every handle inherited from another process.
    fn reap(&mut self) {
        self.forget_inherited();
        self.handles.retain(|handle| !handle.is_finished());
    }

    /// The handles this process may join.
    fn take(&mut self) -> Vec<std::thread::JoinHandle<()>> {
        self.forget_inherited();
        std::mem::take(&mut self.handles)
    }

    fn forget_inherited(&mut self) {
        let pid = std::process::id();
        if self.pid != pid {
            // Their threads exist only in the parent: joining (or detaching) one here would
            // act on a thread this process does not have.
            for handle in self.handles.drain(..) {
                std::mem::forget(handle);
            }
            self.pid = pid;
        }
    }
}

impl Drop for ShardCache {
    /// Joins the publishing threads, without taking their lock (`get_mut`): a process forked
    /// while another thread held it inherits it locked, and there the handles, inherited
    /// from the parent, are forgotten anyway.
    fn drop(&mut self) {
        let publishing = self
            .publishing
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        for handle in publishing.take() {
            let _ = handle.join();
        }
    }
}

/// When a download becomes visible to other processes, relative to `get_or_fetch_with`
/// returning it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publication {
    /// Published before the call returns: the file is at its final path.
    BeforeReturn,
    /// Returned once checked, published by a background thread.
    InBackground,
}

/// One claimed download's parameters.
#[derive(Clone, Copy)]
struct Download<'a> {
    rel: &'a Rel,
    len: u64,
    sha256: &'a [u8; 32],
    publication: Publication,
}

/// A checked download to make durable and visible: fsync, rename into place under the
/// directory lock (its lock turning shared there), fsync the directory.
struct Publish {
    root: PathBuf,
    partial_path: PathBuf,
    final_path: PathBuf,
    partial: File,
    /// Where this process's readers find the checked file until it is published.
    registered: Option<(Unpublished, String)>,
}

impl Publish {
    fn run(self) {
        let published = self.publish();
        if let Some((unpublished, rel)) = &self.registered {
            unpublished.remove(rel);
        }
        if let Err(e) = published {
            // Nothing was published; the downloader's reader keeps its checked copy.
            tracing::warn!(error = %e, "publishing a download failed; it stays private to this process");
        }
    }

    fn publish(&self) -> Result<(), ShardCacheError> {
        let mut guard = PartialGuard {
            root: &self.root,
            path: self.partial_path.clone(),
            armed: true,
        };
        self.partial.sync_all().map_err(io_at(&self.partial_path))?;
        {
            let _dir = DirLock::acquire(&self.root, true)?;
            std::fs::rename(&self.partial_path, &self.final_path)
                .map_err(io_at(&self.final_path))?;
            guard.armed = false;
            // Under the directory lock no evictor can take the file while the exclusive lock
            // turns shared (a conversion that is not atomic).
            lock_file(&self.partial, LockMode::Shared).map_err(io_at(&self.final_path))?;
        }
        sync_dir(self.final_path.parent().unwrap_or(&self.root))
    }
}

/// Unlinks a download's partial file unless disarmed (on failure, error or panic).
struct PartialGuard<'a> {
    root: &'a Path,
    path: PathBuf,
    armed: bool,
}

impl Drop for PartialGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _dir = DirLock::acquire(self.root, true);
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A new open file description of `file`'s inode (read-only, unlocked), also when the file
/// has been renamed or unlinked since it was opened; `None` without `/proc/self/fd`.
fn unlocked_descriptor(file: &File) -> Option<io::Result<File>> {
    use std::os::fd::AsRawFd;
    let fds = Path::new("/proc/self/fd");
    fds.is_dir()
        .then(|| File::open(fds.join(file.as_raw_fd().to_string())))
}

fn remove_if_present(path: &Path) -> Result<(), ShardCacheError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ShardCacheError::io(path, e)),
    }
}

fn render_pins(pins: &BTreeSet<String>) -> String {
    pins.iter().fold(String::new(), |mut s, p| {
        s.push_str(p);
        s.push('\n');
        s
    })
}

/// Replaces `target` with `bytes` through durable-fs (temp file, fsync, rename, fsync of the
/// directory). The caller holds the exclusive directory lock, so a leftover temp file of this
/// cache's prefix is a crashed write's, which a scan removes.
fn write_atomic(target: &Path, bytes: &[u8]) -> Result<(), ShardCacheError> {
    match durable_fs::publish(&durable_fs::StdFileSystem, target, TEMP_PREFIX, bytes) {
        Ok(durable_fs::Published::Durable) => Ok(()),
        Ok(durable_fs::Published::DurabilityUnknown(e)) => Err(ShardCacheError::io(
            target.parent().unwrap_or(Path::new(".")),
            e,
        )),
        Err(e) => Err(ShardCacheError::io(&e.target, e.source)),
    }
}
