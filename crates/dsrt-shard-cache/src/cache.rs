//! The cache: ownership of the root, claims, downloads, seals, eviction, reads.

use crate::lock::{try_lock_mutex, Backoff, DirLock};
use crate::rel::{kind, Kind, Rel, MARKER, RESERVED_PREFIX, TEMP_PREFIX};
use crate::seal::{marker_bytes, read_marker, Access, Marker, Seal};
use crate::sink::{hash_file, PartialSink};
use crate::unpublished::Unpublished;
use crate::{FetchError, FetchSink, ShardCacheError};
use durable_fs::{lock_file, try_lock_file, Dir, EntryKind, FileAccess, LockMode};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, ErrorKind};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};
use tracing::debug;

/// A process re-touches a file's mtime (its LRU position) at most this often.
const RETOUCH_AFTER: Duration = Duration::from_secs(60);

/// Bytes counted for a file's seal on top of its length, from its claim on: a seal (at most
/// 122 bytes) and, while it is written, its temporary copy. A file of `len` bytes needs
/// `len + SEAL_ALLOWANCE` of the limit.
pub const SEAL_ALLOWANCE: u64 = 256;

/// The cache's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheLimits {
    /// The most bytes (apparent sizes of the cache's own files under the root, downloads in
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
    /// The root, opened once: every entry below it is reached through it, never by a path
    /// that could follow a symbolic link.
    dir: Dir,
    access: Access,
    limits: CacheLimits,
    /// When this instance last set each file's mtime.
    touched: Mutex<HashMap<String, Instant>>,
    /// Checked downloads being made durable and visible (see [`ShardCache::get_or_fetch`]);
    /// joined when the cache is dropped or [`ShardCache::wait_published`] is called.
    publishing: Mutex<PublishThreads>,
    /// Those downloads until they are published, for this process's readers.
    unpublished: Unpublished,
}

/// A final file seen by a scan: a file whose name has a seal beside it.
struct Candidate {
    rel: String,
    mtime: SystemTime,
    ino: u64,
    len: u64,
}

/// What one walk of the root found.
#[derive(Default)]
struct Scan {
    usage: u64,
    finals: Vec<Candidate>,
    /// Partial files, as (directory below the root, name, length).
    partials: Vec<(String, String, u64)>,
}

/// The outcome of one claim under the directory lock.
enum Claim {
    /// The final file is there; read-locked.
    Present(CachedFile),
    /// Ours to download: the partial file, exclusively locked and reserved, in its directory.
    Claimed(File, Dir),
    /// A live process is downloading it: its partial file, to wait on.
    Downloading(File),
    /// A different old version is held open by readers; wait.
    Held,
    /// Not enough room now; wait.
    NoRoom,
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> ShardCacheError + '_ {
    move |e| ShardCacheError::io(path, e)
}

/// An entry at a name the cache needs that it did not make: reported, never touched.
fn foreign(path: PathBuf, kind: EntryKind) -> ShardCacheError {
    let found = match kind {
        EntryKind::File => "a file the shard cache did not write (no seal names it)",
        EntryKind::Dir => "a directory where the shard cache needs a file",
        EntryKind::Symlink => "a symbolic link (the shard cache never follows one)",
        EntryKind::Other => "a FIFO, socket or device",
    };
    ShardCacheError::Foreign { path, found }
}

/// `e` from an operation on `path` below the root: a symbolic link or a non-directory where
/// a directory must be is foreign, not an I/O failure.
fn below_root(path: &Path, e: io::Error) -> ShardCacheError {
    match e.kind() {
        ErrorKind::NotADirectory => foreign(path.to_path_buf(), EntryKind::Symlink),
        ErrorKind::InvalidInput => ShardCacheError::Foreign {
            path: path.to_path_buf(),
            found: "something other than a regular file",
        },
        _ => ShardCacheError::io(path, e),
    }
}

impl ShardCache {
    /// Opens a private cache at `root` (see [`ShardCache::open_with_access`]).
    pub fn open(root: impl Into<PathBuf>, limits: CacheLimits) -> Result<Self, ShardCacheError> {
        Self::open_with_access(root, limits, Access::Private)
    }

    /// Opens the cache at `root`, making it one if it is new or empty; then, under the
    /// directory lock, removes stale partial, temporary and seal files of the cache's own
    /// (their writers died) and evicts down to `max_bytes` if the directory holds more (a
    /// lowered limit).
    ///
    /// A directory that holds anything and no marker of a shard cache is refused
    /// ([`ShardCacheError::NotOwned`]): the cache never takes over, counts or removes files
    /// it did not write. A cache made with one [`Access`] is refused under the other, and a
    /// root that others may write into is refused ([`ShardCacheError::Insecure`]).
    pub fn open_with_access(
        root: impl Into<PathBuf>,
        limits: CacheLimits,
        access: Access,
    ) -> Result<Self, ShardCacheError> {
        let root = root.into();
        make_root(&root, access)?;
        let dir = Dir::open(&root)
            .map_err(io_at(&root))?
            .with_modes(access.file_mode(), access.dir_mode());
        let cache = Self {
            root,
            dir,
            access,
            limits,
            touched: Mutex::new(HashMap::new()),
            publishing: Mutex::new(PublishThreads::default()),
            unpublished: Unpublished::default(),
        };
        let _dir = DirLock::acquire(&cache.root, true)?;
        cache.claim_root()?;
        cache.check_root_modes()?;
        let mut scan = cache.scan(true)?;
        cache.sweep_partials(&mut scan)?;
        cache.make_room(&mut scan, 0)?;
        Ok(cache)
    }

    /// Checks the marker, or writes it into an empty directory. Under the directory lock.
    fn claim_root(&self) -> Result<(), ShardCacheError> {
        let not_owned = |reason: String| ShardCacheError::NotOwned {
            path: self.root.clone(),
            reason,
        };
        match read_marker(&self.dir).map_err(io_at(&self.root))? {
            Marker::Cache(access) if access == self.access => Ok(()),
            Marker::Cache(access) => Err(not_owned(format!(
                "it is a {access} shard cache, opened as a {} one",
                self.access
            ))),
            Marker::Unreadable(reason) => Err(not_owned(reason)),
            Marker::Absent => {
                let entries = self.dir.entries().map_err(io_at(&self.root))?;
                if let Some((name, _)) = entries.first() {
                    return Err(not_owned(format!(
                        "it is not empty (it holds {:?}, and {} entries in all) and has no \
                         {MARKER} marker: a shard cache takes only a new or empty directory, \
                         so that it never counts or removes files it did not write (an older \
                         DatasetRT's shard cache has no marker either: delete it)",
                        name.to_string_lossy(),
                        entries.len()
                    )));
                }
                // An empty directory becomes the cache's: it gets the access's mode, which
                // only its owner can set (anyone else's directory is refused below).
                let stat = self.dir.stat_self().map_err(io_at(&self.root))?;
                if stat.uid == rustix::process::geteuid().as_raw() {
                    self.dir
                        .set_mode(self.access.dir_mode())
                        .map_err(io_at(&self.root))?;
                }
                let marker = self.root.join(MARKER);
                match durable_fs::publish(
                    &self.dir,
                    Path::new(MARKER),
                    TEMP_PREFIX,
                    &marker_bytes(self.access),
                ) {
                    Ok(durable_fs::Published::Durable) => Ok(()),
                    Ok(durable_fs::Published::DurabilityUnknown(e)) => {
                        Err(ShardCacheError::io(&self.root, e))
                    }
                    Err(e) => Err(ShardCacheError::io(marker, e.source)),
                }
            }
        }
    }

    /// Refuses a root others could write into: a private cache's belongs to this user and is
    /// writable by nobody else; a group cache's is not writable by others.
    fn check_root_modes(&self) -> Result<(), ShardCacheError> {
        let stat = self.dir.stat_self().map_err(io_at(&self.root))?;
        let insecure = |reason: String| ShardCacheError::Insecure {
            path: self.root.clone(),
            reason,
        };
        let me = rustix::process::geteuid().as_raw();
        match self.access {
            Access::Private if stat.uid != me => Err(insecure(format!(
                "it belongs to user {} (a private shard cache must be the user's own)",
                stat.uid
            ))),
            Access::Private if stat.mode & 0o022 != 0 => Err(insecure(format!(
                "its mode {:o} lets other users write into it (a private shard cache must be \
                 writable by its owner alone: chmod go-w it)",
                stat.mode
            ))),
            Access::Group if stat.mode & 0o002 != 0 => Err(insecure(format!(
                "its mode {:o} lets every user write into it (a group shard cache must not \
                 be writable by others: chmod o-w it)",
                stat.mode
            ))),
            _ => Ok(()),
        }
    }

    /// The cache root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The limits it was opened with.
    pub fn limits(&self) -> CacheLimits {
        self.limits
    }

    /// Who may use it.
    pub fn access(&self) -> Access {
        self.access
    }

    /// The file `rel`, present in full with `len` bytes and SHA-256 `sha256`, downloading it
    /// with `fetch` when absent. Returns it open and read-locked.
    ///
    /// When another process (or thread) is downloading the same file, this waits for it
    /// (at most `wait_for_room`) instead of downloading it twice. A download whose bytes do
    /// not match `len` and `sha256`, or whose fetch fails, leaves nothing behind. Something
    /// the cache did not write at `rel` (a file without the cache's seal, a symbolic link, a
    /// directory) is never served, replaced or removed: the call fails with
    /// [`ShardCacheError::Foreign`].
    ///
    /// A download is published (fsynced, sealed, renamed into place, its directory fsynced)
    /// before this returns, so the file is at [`CachedFile::path`]; see
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
    /// thread fsyncs it, seals it, renames it into place (only now do other processes see it)
    /// and fsyncs the directory, so no other process ever sees it before it is durable: until
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
        let needed = len.saturating_add(SEAL_ALLOWANCE);
        if needed > self.limits.max_bytes {
            return Err(ShardCacheError::TooLarge {
                path: final_path,
                len: needed,
                limit: self.limits.max_bytes,
            });
        }
        if let Some(file) = self.lookup(&rel, sha256)?.filter(|f| f.len == len) {
            return Ok(file);
        }
        let start = Instant::now();
        let mut backoff = Backoff::new();
        loop {
            match self.claim(&rel, len, sha256)? {
                Claim::Present(file) => return Ok(file),
                Claim::Claimed(partial, parent) => {
                    let download = Download {
                        rel: &rel,
                        len,
                        sha256,
                        publication,
                    };
                    return self.download(&download, partial, parent, fetch);
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
                            needed,
                            limit: self.limits.max_bytes,
                            waited: start.elapsed(),
                        });
                    }
                    backoff.sleep(&final_path)?;
                }
            }
        }
    }

    /// The file `rel` if the cache holds it, sealed with SHA-256 `sha256`; never downloads.
    /// Anything else at `rel` (another version, a file the cache did not write) counts as
    /// absent.
    pub fn get(
        &self,
        rel: &Path,
        sha256: &[u8; 32],
    ) -> Result<Option<CachedFile>, ShardCacheError> {
        self.lookup(&Rel::new(rel)?, sha256)
    }

    /// Hashes the cached file `rel` again (it was checked when it entered the cache; a disk
    /// can still damage it): `Ok(false)` when the cache does not hold it with `sha256`,
    /// `Ok(true)` when its bytes still hash to it, [`ShardCache::check`]'s error otherwise.
    pub fn verify(&self, rel: &Path, sha256: &[u8; 32]) -> Result<bool, ShardCacheError> {
        match self.lookup(&Rel::new(rel)?, sha256)? {
            Some(file) => self.check(rel, &file, sha256).map(|()| true),
            None => Ok(false),
        }
    }

    /// Hashes `file`, the cache's copy of `rel`, again. A copy that no longer hashes to
    /// `sha256` is removed (with its seal, if the seal still names it), so the next
    /// [`ShardCache::get_or_fetch`] downloads it again, and the call fails with
    /// [`ShardCacheError::Corrupt`].
    pub fn check(
        &self,
        rel: &Path,
        file: &CachedFile,
        sha256: &[u8; 32],
    ) -> Result<(), ShardCacheError> {
        let rel = Rel::new(rel)?;
        let found = hash_file(&file.file, file.len).map_err(io_at(&file.path))?;
        if &found == sha256 {
            return Ok(());
        }
        let ino = file.file.metadata().map_err(io_at(&file.path))?.ino();
        {
            let _dir = DirLock::acquire(&self.root, true)?;
            if let Some(parent) = self.parent(&rel)? {
                let sealed = Seal::read(&parent, &rel.seal_name())
                    .map_err(io_at(&file.path))?
                    .is_some_and(|seal| seal.ino == ino);
                let placed = parent
                    .stat(rel.name())
                    .map_err(io_at(&file.path))?
                    .is_some_and(|stat| stat.ino == ino);
                if sealed && placed {
                    parent.remove_file(rel.name()).map_err(io_at(&file.path))?;
                    parent
                        .remove_file(&rel.seal_name())
                        .map_err(io_at(&file.path))?;
                }
            }
        }
        Err(ShardCacheError::Corrupt {
            path: file.path.clone(),
            expected: dsrt_atlas_codec::to_hex(sha256),
            found: dsrt_atlas_codec::to_hex(&found),
        })
    }

    /// Bytes the directory holds now: the apparent sizes of the cache's own files under the
    /// root (downloads in progress, seals and temporary files included; files it did not
    /// write are not its and do not count), counted under a shared directory lock so the view
    /// is consistent.
    pub fn usage(&self) -> Result<u64, ShardCacheError> {
        let _dir = DirLock::acquire(&self.root, false)?;
        Ok(self.scan(false)?.usage)
    }

    /// The directory holding `rel`'s files, reached from the root without following a
    /// symbolic link, or `None` when it is absent.
    fn parent(&self, rel: &Rel) -> Result<Option<Dir>, ShardCacheError> {
        self.walk_to(rel, false)
    }

    /// [`ShardCache::parent`], creating what is missing with the access's mode.
    fn create_parent(&self, rel: &Rel) -> Result<Dir, ShardCacheError> {
        self.walk_to(rel, true)?.ok_or_else(|| {
            ShardCacheError::io(
                rel.final_path(&self.root),
                io::Error::new(ErrorKind::NotFound, "its directory vanished"),
            )
        })
    }

    fn walk_to(&self, rel: &Rel, create: bool) -> Result<Option<Dir>, ShardCacheError> {
        let mut path = self.root.clone();
        let mut dir: Option<Dir> = None;
        for name in rel.dirs() {
            path.push(name);
            let current = dir.as_ref().unwrap_or(&self.dir);
            let next = if create {
                current.create_subdir(name)
            } else {
                current.subdir(name)
            };
            match next {
                Ok(next) => dir = Some(next),
                Err(e) if e.kind() == ErrorKind::NotFound && !create => return Ok(None),
                Err(e) => return Err(below_root(&path, e)),
            }
        }
        match dir {
            Some(dir) => Ok(Some(dir)),
            None => self.dir.try_clone().map(Some).map_err(io_at(&self.root)),
        }
    }

    /// The directory `below` (a relative directory, `""` for the root) if it is there.
    fn dir_at(&self, below: &str) -> Result<Option<Dir>, ShardCacheError> {
        if below.is_empty() {
            return self.dir.try_clone().map(Some).map_err(io_at(&self.root));
        }
        self.parent(&Rel::new(&Path::new(below).join("x"))?)
    }

    /// Reads without the directory lock: open, shared lock, a retry if the file was evicted
    /// between the two, and the seal's word that the cache wrote it.
    fn lookup(&self, rel: &Rel, sha256: &[u8; 32]) -> Result<Option<CachedFile>, ShardCacheError> {
        let path = rel.final_path(&self.root);
        if let Some((file, len)) = self.unpublished.get(rel.as_str(), sha256) {
            return Ok(Some(CachedFile {
                file,
                path,
                len,
                downloaded: true,
            }));
        }
        let parent = match self.parent(rel) {
            Ok(Some(parent)) => parent,
            Ok(None) | Err(ShardCacheError::Foreign { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        loop {
            let file = match parent.open_file(rel.name(), FileAccess::Read) {
                Ok(file) => file,
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::InvalidInput) => {
                    return Ok(None)
                }
                Err(e) => return Err(ShardCacheError::io(path, e)),
            };
            // Blocks only while an evictor or a publishing downloader holds it exclusively,
            // both briefly.
            lock_file(&file, LockMode::Shared).map_err(io_at(&path))?;
            let meta = file.metadata().map_err(io_at(&path))?;
            if meta.nlink() == 0 {
                continue; // evicted between the open and the lock: look again
            }
            let sealed = Seal::read(&parent, &rel.seal_name())
                .map_err(io_at(&path))?
                .is_some_and(|seal| seal.names(meta.ino(), meta.len()) && &seal.sha256 == sha256);
            if !sealed {
                return Ok(None);
            }
            self.touch(rel, &file);
            return Ok(Some(CachedFile {
                file,
                path,
                len: meta.len(),
                downloaded: false,
            }));
        }
    }

    /// One attempt at claiming `rel`, under the exclusive directory lock.
    fn claim(&self, rel: &Rel, len: u64, sha256: &[u8; 32]) -> Result<Claim, ShardCacheError> {
        let _dir = DirLock::acquire(&self.root, true)?;
        let final_path = rel.final_path(&self.root);
        let parent = self.create_parent(rel)?;
        if let Some(stat) = parent.stat(rel.name()).map_err(io_at(&final_path))? {
            if stat.kind != EntryKind::File {
                return Err(foreign(final_path, stat.kind));
            }
            let seal = Seal::read(&parent, &rel.seal_name())
                .map_err(io_at(&final_path))?
                .filter(|seal| seal.names(stat.ino, stat.len))
                .ok_or_else(|| foreign(final_path.clone(), EntryKind::File))?;
            let file = parent
                .open_file(rel.name(), FileAccess::Read)
                .map_err(|e| below_root(&final_path, e))?;
            if seal.len == len && &seal.sha256 == sha256 {
                // No exclusive holder exists while we hold the directory lock.
                lock_file(&file, LockMode::Shared).map_err(io_at(&final_path))?;
                self.touch(rel, &file);
                return Ok(Claim::Present(CachedFile {
                    file,
                    path: final_path,
                    len,
                    downloaded: false,
                }));
            }
            // Another version of the file: replace it once no reader holds it.
            if !try_lock_file(&file, LockMode::Exclusive).map_err(io_at(&final_path))? {
                return Ok(Claim::Held);
            }
            parent.remove_file(rel.name()).map_err(io_at(&final_path))?;
            parent
                .remove_file(&rel.seal_name())
                .map_err(io_at(&final_path))?;
            debug!(path = %final_path.display(), "removed another version");
        }
        let partial_name = rel.partial_name();
        let partial_path = rel.sibling_path(&self.root, &partial_name);
        match parent.open_file(&partial_name, FileAccess::Read) {
            Ok(partial) => {
                if !try_lock_file(&partial, LockMode::Exclusive).map_err(io_at(&partial_path))? {
                    return Ok(Claim::Downloading(partial));
                }
                // Nobody holds it: its downloader died.
                parent
                    .remove_file(&partial_name)
                    .map_err(io_at(&partial_path))?;
                debug!(path = %partial_path.display(), "removed a stale partial file");
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(below_root(&partial_path, e)),
        }
        let mut scan = self.scan(true)?;
        if !self.make_room(&mut scan, len + SEAL_ALLOWANCE)? {
            return Ok(Claim::NoRoom);
        }
        let partial = parent
            .create_new_file(&partial_name)
            .map_err(io_at(&partial_path))?;
        let reserved = try_lock_file(&partial, LockMode::Exclusive).and_then(|locked| {
            if locked {
                partial.set_len(len)
            } else {
                Err(io::Error::other("a new partial file was locked by another"))
            }
        });
        if let Err(e) = reserved {
            let _ = parent.remove_file(&partial_name);
            return Err(ShardCacheError::io(partial_path, e));
        }
        Ok(Claim::Claimed(partial, parent))
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
        parent: Dir,
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
            parent: &parent,
            name: rel.partial_name(),
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
        let file = partial
            .try_clone()
            .map_err(io_at(&rel.sibling_path(&self.root, &guard.name)))?;
        guard.armed = false;
        drop(guard);
        let mut publish = Publish {
            root: self.root.clone(),
            parent,
            rel: rel.clone(),
            partial,
            seal: Seal {
                sha256: *sha256,
                len,
                ino: 0,
            },
            registered: None,
        };
        match publication {
            Publication::BeforeReturn => publish.publish()?,
            Publication::InBackground => {
                let registered = file
                    .try_clone()
                    .is_ok_and(|copy| self.unpublished.insert(rel.as_str(), copy, len, sha256));
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
            downloaded: true,
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

    /// Walks the root, counting the cache's own files only. With `sweep` (only under the
    /// exclusive directory lock, when every temporary file and every seal without its file
    /// is stale) removes those.
    fn scan(&self, sweep: bool) -> Result<Scan, ShardCacheError> {
        let mut scan = Scan::default();
        self.walk(&self.dir, "", sweep, &mut scan)?;
        Ok(scan)
    }

    fn walk(
        &self,
        dir: &Dir,
        below: &str,
        sweep: bool,
        scan: &mut Scan,
    ) -> Result<(), ShardCacheError> {
        let entries = match dir.entries() {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(ShardCacheError::io(dir.path(), e)),
        };
        let mut seals = HashSet::new();
        let mut unreserved = Vec::new();
        for (name, entry_kind) in entries {
            // A name that is not UTF-8 is none of the cache's.
            let Some(name) = name.to_str() else { continue };
            let path = dir.path().join(name);
            match entry_kind {
                EntryKind::Dir if !name.starts_with(RESERVED_PREFIX) => {
                    match dir.subdir(name) {
                        Ok(sub) => self.walk(&sub, &format!("{below}{name}/"), sweep, scan)?,
                        // Replaced by something else since the listing: not ours to walk.
                        Err(e)
                            if matches!(
                                e.kind(),
                                ErrorKind::NotFound | ErrorKind::NotADirectory
                            ) => {}
                        Err(e) => return Err(ShardCacheError::io(path, e)),
                    }
                    continue;
                }
                EntryKind::File => {}
                // Symbolic links, FIFOs and the like are never the cache's.
                _ => continue,
            }
            let Some(stat) = dir.stat(name).map_err(io_at(&path))? else {
                continue;
            };
            if stat.kind != EntryKind::File {
                continue;
            }
            match kind(name) {
                Kind::Temp if sweep => {
                    dir.remove_file(name).map_err(io_at(&path))?;
                    debug!(path = %path.display(), "removed a stale temporary file");
                }
                Kind::Temp | Kind::Marker => scan.usage += stat.len,
                Kind::Partial => {
                    // It will grow a seal: counted now, so publishing never exceeds the limit.
                    let counted = stat.len + SEAL_ALLOWANCE;
                    scan.partials
                        .push((below.to_owned(), name.to_owned(), counted));
                    scan.usage += counted;
                }
                Kind::Seal(sealed) => {
                    seals.insert((sealed.to_owned(), name.to_owned(), stat.len));
                }
                Kind::OtherReserved => {}
                Kind::Unreserved => unreserved.push((name.to_owned(), stat)),
            }
        }
        // A file counts as the cache's when a seal beside it bears its name (the seal's
        // content is read only when the file is served or evicted).
        let mut sealed: HashMap<String, (String, u64)> = seals
            .into_iter()
            .map(|(file, seal, len)| (file, (seal, len)))
            .collect();
        for (name, stat) in unreserved {
            if let Some((_, seal_len)) = sealed.remove(&name) {
                scan.usage += stat.len + seal_len;
                scan.finals.push(Candidate {
                    rel: format!("{below}{name}"),
                    mtime: stat.modified,
                    ino: stat.ino,
                    len: stat.len + seal_len,
                });
            }
        }
        // Seals left over name no file: their file was evicted (or never renamed into place
        // by a downloader that died).
        for (_, (seal, len)) in sealed {
            if sweep {
                dir.remove_file(&seal)
                    .map_err(io_at(&dir.path().join(&seal)))?;
            } else {
                scan.usage += len;
            }
        }
        Ok(())
    }

    /// Removes the partial files no process holds (their downloaders died). Under the
    /// exclusive directory lock.
    fn sweep_partials(&self, scan: &mut Scan) -> Result<(), ShardCacheError> {
        for (below, name, len) in std::mem::take(&mut scan.partials) {
            let path = self.root.join(&below).join(&name);
            let Some(dir) = self.dir_at(below.trim_end_matches('/'))? else {
                continue;
            };
            let file = match dir.open_file(&name, FileAccess::Read) {
                Ok(file) => file,
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::InvalidInput) => {
                    continue
                }
                Err(e) => return Err(ShardCacheError::io(path, e)),
            };
            if try_lock_file(&file, LockMode::Exclusive).map_err(io_at(&path))? {
                dir.remove_file(&name).map_err(io_at(&path))?;
                scan.usage = scan.usage.saturating_sub(len);
                debug!(path = %path.display(), "removed a stale partial file");
            } else {
                scan.partials.push((below, name, len));
            }
        }
        Ok(())
    }

    /// Evicts until `usage + need <= max_bytes`: stale partial files first, then final files
    /// least recently used first (oldest mtime), skipping any a process holds open (a
    /// non-blocking exclusive lock fails) and any whose seal turns out not to name it (it is
    /// not the cache's). Under the exclusive directory lock. Whether it made enough room.
    fn make_room(&self, scan: &mut Scan, need: u64) -> Result<bool, ShardCacheError> {
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
            let rel = Rel::new(Path::new(&candidate.rel))?;
            let path = rel.final_path(&self.root);
            let Some(parent) = self.parent(&rel)? else {
                continue;
            };
            let file = match parent.open_file(rel.name(), FileAccess::Read) {
                Ok(file) => file,
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::InvalidInput) => {
                    continue
                }
                Err(e) => return Err(ShardCacheError::io(path, e)),
            };
            if !try_lock_file(&file, LockMode::Exclusive).map_err(io_at(&path))? {
                continue; // a reader holds it
            }
            let meta = file.metadata().map_err(io_at(&path))?;
            if meta.nlink() == 0 || meta.ino() != candidate.ino {
                continue;
            }
            let ours = Seal::read(&parent, &rel.seal_name())
                .map_err(io_at(&path))?
                .is_some_and(|seal| seal.names(meta.ino(), meta.len()));
            if !ours {
                // Counted for its seal's name, but the seal names another file: this one is
                // not the cache's, and stays.
                scan.usage = scan.usage.saturating_sub(candidate.len);
                continue;
            }
            parent.remove_file(rel.name()).map_err(io_at(&path))?;
            parent.remove_file(&rel.seal_name()).map_err(io_at(&path))?;
            scan.usage = scan.usage.saturating_sub(candidate.len);
            debug!(path = %path.display(), len = meta.len(), "evicted");
        }
        Ok(fits(scan.usage))
    }
}

/// Creates `root` (its parents as any directory, itself with the access's mode) if it does
/// not exist; an existing root must be a directory.
fn make_root(root: &Path, access: Access) -> Result<(), ShardCacheError> {
    match std::fs::metadata(root) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => {
            return Err(ShardCacheError::NotOwned {
                path: root.to_path_buf(),
                reason: "it is not a directory".into(),
            })
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(ShardCacheError::io(root, e)),
    }
    if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(io_at(parent))?;
    }
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(root) {
        Ok(()) => Dir::open(root)
            .and_then(|dir| dir.set_mode(access.dir_mode()))
            .map_err(io_at(root)),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(ShardCacheError::io(root, e)),
    }
}

/// A file of the cache, open and read-locked (a shared `flock`): no process evicts it while
/// this lives. Dropping it releases the lock.
#[derive(Debug)]
pub struct CachedFile {
    file: File,
    path: PathBuf,
    len: u64,
    /// Whether this process checked its bytes against their SHA-256 as it downloaded them.
    downloaded: bool,
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

    /// Whether this process downloaded it, and so checked its bytes against their SHA-256
    /// just now; otherwise it was found in the cache, checked when it entered, and
    /// [`ShardCache::check`] can hash it again.
    pub fn downloaded(&self) -> bool {
        self.downloaded
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

/// A checked download to make durable and visible: fsync, then under the directory lock the
/// seal (written durably first, so a final file never stands without it) and the rename into
/// place (never over anything), its lock turning shared there, then fsync the directory.
struct Publish {
    root: PathBuf,
    parent: Dir,
    rel: Rel,
    partial: File,
    /// The seal to write; its inode is the partial file's, taken at publication.
    seal: Seal,
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
        let final_path = self.rel.final_path(&self.root);
        let partial_name = self.rel.partial_name();
        let mut guard = PartialGuard {
            root: &self.root,
            parent: &self.parent,
            name: partial_name.clone(),
            armed: true,
        };
        self.partial.sync_all().map_err(io_at(&final_path))?;
        let ino = self.partial.metadata().map_err(io_at(&final_path))?.ino();
        {
            let _dir = DirLock::acquire(&self.root, true)?;
            // The claim found the name free; whatever stands there now the cache did not put.
            if let Some(stat) = self
                .parent
                .stat(self.rel.name())
                .map_err(io_at(&final_path))?
            {
                return Err(foreign(final_path, stat.kind));
            }
            let seal = Seal { ino, ..self.seal };
            let seal_name = self.rel.seal_name();
            match durable_fs::publish(
                &self.parent,
                Path::new(&seal_name),
                TEMP_PREFIX,
                &seal.to_bytes(),
            ) {
                Ok(durable_fs::Published::Durable) => {}
                Ok(durable_fs::Published::DurabilityUnknown(e)) => {
                    let _ = self.parent.remove_file(&seal_name);
                    return Err(ShardCacheError::io(self.parent.path(), e));
                }
                Err(e) => return Err(ShardCacheError::io(final_path, e.source)),
            }
            if let Err(e) = self
                .parent
                .rename_no_replace(&partial_name, self.rel.name())
            {
                let _ = self.parent.remove_file(&seal_name);
                return Err(match e.kind() {
                    ErrorKind::AlreadyExists => foreign(final_path, EntryKind::File),
                    _ => ShardCacheError::io(final_path, e),
                });
            }
            guard.armed = false;
            // Under the directory lock no evictor can take the file while the exclusive lock
            // turns shared (a conversion that is not atomic).
            lock_file(&self.partial, LockMode::Shared).map_err(io_at(&final_path))?;
        }
        self.parent.sync().map_err(io_at(self.parent.path()))
    }
}

/// Unlinks a download's partial file unless disarmed (on failure, error or panic).
struct PartialGuard<'a> {
    root: &'a Path,
    parent: &'a Dir,
    name: String,
    armed: bool,
}

impl Drop for PartialGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _dir = DirLock::acquire(self.root, true);
            let _ = self.parent.remove_file(&self.name);
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
