//! Deletes on local disk that lose nothing across threads and processes of one host.
//!
//! object_store's `LocalFileSystem` has no conditional update, so this committer takes an
//! advisory `flock` on the collection directory itself (no lock file, so none is ever left
//! behind; the kernel drops the lock when its holder dies, so a crashed deleter never blocks the
//! next), and under it reads the mask, merges, and replaces the mask through `durable-fs`
//! (temp file + fsync + rename + directory fsync). A reader therefore sees the old mask or the
//! new one, never a torn one. Waiting for the lock and the file operations run on Tokio's
//! blocking pool, never on an async worker thread.

use crate::delete::{CommitOutcome, MaskCommitter, MergeFn};
use crate::error::AtlasError;
use atlas_footer::{CONTAINER_OBJECT, MASK_OBJECT};
use durable_fs::{DirLock, DurableFile, FileSystem, LockMode, Published, StdFileSystem};
use futures::future::BoxFuture;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The temp file a commit of `object` writes before its rename is named `.<object>.` and a
/// unique tail. A crash can leave one behind; the next commit of that object, holding the lock,
/// removes it.
fn temp_prefix(object: &str) -> String {
    format!(".{object}.")
}

/// A point inside one [`LocalFlockCommitter`] commit, reported to its step hook.
///
/// The steps come in this order; a process that dies after any of them leaves `deleted.mask`
/// as it was before the commit (up to and including [`CommitStep::TempWritten`]) or as the
/// commit made it ([`CommitStep::Renamed`]).
///
/// Only exported with the `test-hooks` feature: it exists for the crash-safety tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[cfg_attr(not(feature = "test-hooks"), allow(unreachable_pub))]
pub enum CommitStep {
    /// The directory lock is held; nothing is read yet.
    Locked,
    /// The current mask is read and merged; nothing is written yet.
    Merged,
    /// The merged mask sits, fsynced, in a temp file beside `deleted.mask`; not renamed yet.
    TempWritten,
    /// The temp file has replaced `deleted.mask`; the directory is not fsynced yet.
    Renamed,
}

/// Called at each [`CommitStep`] of a commit, while the lock is held. Only exported with the
/// `test-hooks` feature.
#[cfg_attr(not(feature = "test-hooks"), allow(unreachable_pub))]
pub type StepHook = Arc<dyn Fn(CommitStep) + Send + Sync>;

/// Commits `deleted.mask` (or, [`LocalFlockCommitter::for_object`], another small object of
/// the collection, such as a growing collection's manifest) in a local collection directory
/// under a directory `flock`.
#[derive(Clone)]
pub struct LocalFlockCommitter {
    dir: PathBuf,
    /// The file committed, in `dir`.
    object: String,
    hook: Option<StepHook>,
}

impl std::fmt::Debug for LocalFlockCommitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalFlockCommitter")
            .field("dir", &self.dir)
            .field("object", &self.object)
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

impl LocalFlockCommitter {
    /// Commits the mask of the collection in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self::for_object(dir, MASK_OBJECT)
    }

    /// Commits the file `object` of the collection in `dir` (the same lock as the mask's: one
    /// commit of the collection at a time on this host). `dir` must exist.
    pub fn for_object(dir: impl Into<PathBuf>, object: &str) -> Self {
        Self {
            dir: dir.into(),
            object: object.to_owned(),
            hook: None,
        }
    }

    /// Calls `hook` at every [`CommitStep`] of every commit, with the lock held.
    ///
    /// For tests and instrumentation: the crash-safety test stops a deleter process at a chosen
    /// step and kills it there. A hook that blocks holds the lock, and so blocks every other
    /// deleter of the collection on this host. Only with the `test-hooks` feature.
    #[cfg(feature = "test-hooks")]
    pub fn with_step_hook(mut self, hook: StepHook) -> Self {
        self.hook = Some(hook);
        self
    }

    /// The collection directory this committer locks.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl MaskCommitter for LocalFlockCommitter {
    /// The blocking parts (waiting for the lock, reading, publishing) run on Tokio's blocking
    /// pool, so a deleter waiting for the lock never holds up an async worker thread; only the
    /// merge runs on the calling task. The lock is held from the first blocking part to the end
    /// of the second; dropping the attempt in between closes the directory and so releases it.
    fn attempt<'a>(
        &'a self,
        merge: &'a MergeFn<'a>,
    ) -> BoxFuture<'a, Result<CommitOutcome, AtlasError>> {
        Box::pin(async move {
            let (dir, object, hook) = (self.dir.clone(), self.object.clone(), self.hook.clone());
            let (locked, current) = blocking(&self.dir, move || {
                lock_and_read(&dir, &object, hook.as_ref())
            })
            .await?;
            let merged = merge(current.as_deref())?;
            let (dir, object, hook) = (self.dir.clone(), self.object.clone(), self.hook.clone());
            blocking(&self.dir, move || {
                publish_locked(&dir, &object, &locked, &merged, hook.as_ref())
            })
            .await
        })
    }
}

/// Runs `work` on Tokio's blocking pool; a panic there resumes here.
async fn blocking<T: Send + 'static>(
    dir: &Path,
    work: impl FnOnce() -> Result<T, AtlasError> + Send + 'static,
) -> Result<T, AtlasError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(AtlasError::Io {
            path: dir.display().to_string(),
            source: std::io::Error::other(format!("mask commit task cancelled: {e}")),
        }),
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> AtlasError {
    let path = path.display().to_string();
    move |source| AtlasError::Io { path, source }
}

fn step(hook: Option<&StepHook>, step: CommitStep) {
    if let Some(hook) = hook {
        hook(step);
    }
}

/// Refuses a local collection that would hang or mislead a reader, before any read: `dir` must
/// be a directory, and `data.atlas` and `deleted.mask`, where they exist, regular files (or
/// links to them). A FIFO in their place would block the open for ever (object_store's
/// `LocalFileSystem` opens it for reading, which waits for a writer), a directory would read as
/// a missing object, a device as endless bytes. A missing `dir` or `data.atlas` is left to the
/// open, which reports it as it does on any store.
///
/// [`Atlas::open_local`](crate::Atlas::open_local) and [`Atlas::open`](crate::Atlas::open) of an
/// `Arc<LocalFileSystem>` call it; so must any other code that opens a local directory through
/// a store of its own making.
pub fn check_local_collection(dir: &Path) -> Result<(), AtlasError> {
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => {
            return Err(AtlasError::NotAnAtlasCollection {
                path: dir.display().to_string(),
                reason: format!("{}, not a collection directory", file_kind(&meta)),
            });
        }
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error(dir)(e)),
    }
    let container = dir.join(CONTAINER_OBJECT);
    if let Some(kind) = not_a_regular_file(&container)? {
        return Err(AtlasError::NotAnAtlasCollection {
            path: container.display().to_string(),
            reason: format!("{kind}, not a regular file"),
        });
    }
    let mask = dir.join(MASK_OBJECT);
    if let Some(kind) = not_a_regular_file(&mask)? {
        return Err(AtlasError::Mask {
            path: mask.display().to_string(),
            source: atlas_mask::MaskError::NotAMask(format!("{kind}, not a regular file")),
        });
    }
    Ok(())
}

/// What `path` is when it exists and is not a regular file (links followed).
fn not_a_regular_file(path: &Path) -> Result<Option<&'static str>, AtlasError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(None),
        Ok(meta) => Ok(Some(file_kind(&meta))),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(path)(e)),
    }
}

/// A file's kind, for an error message.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Blocking: opens and locks the collection directory (the returned file holds the lock until
/// it is dropped), removes temp files a crashed commit left, and reads the current `object`.
fn lock_and_read(
    dir: &Path,
    object: &str,
    hook: Option<&StepHook>,
) -> Result<(DirLock, Option<Vec<u8>>), AtlasError> {
    // durable-fs's lock retries an interrupted wait and unlocks before closing, so a child
    // forked mid-commit cannot keep the directory locked.
    let locked = DirLock::acquire(dir, LockMode::Exclusive).map_err(io_error(dir))?;
    step(hook, CommitStep::Locked);
    remove_stale_temps(dir, object);
    // Checked again under the lock: a FIFO put in place since the open would hang the read.
    check_local_collection(dir)?;
    let mask = dir.join(object);
    if let Some(kind) = not_a_regular_file(&mask)? {
        return Err(AtlasError::Io {
            path: mask.display().to_string(),
            source: std::io::Error::new(
                ErrorKind::InvalidData,
                format!("{kind}, not a regular file"),
            ),
        });
    }
    let current = match std::fs::read(&mask) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(io_error(&mask)(e)),
    };
    Ok((locked, current))
}

/// Blocking, with the lock held (`_locked`): publishes `merged` as the mask through
/// durable-fs (temp file, fsync, rename, directory fsync). A failed directory fsync is an
/// error, as the commit's durability is unknown.
fn publish_locked(
    dir: &Path,
    object: &str,
    _locked: &DirLock,
    merged: &[u8],
    hook: Option<&StepHook>,
) -> Result<CommitOutcome, AtlasError> {
    step(hook, CommitStep::Merged);
    let mask = dir.join(object);
    let fs = SteppingFs { hook };
    match durable_fs::publish(&fs, &mask, &temp_prefix(object), merged) {
        Ok(Published::Durable) => Ok(CommitOutcome::Committed),
        Ok(Published::DurabilityUnknown(e)) => Err(io_error(dir)(e)),
        Err(e) => Err(io_error(&e.target)(std::io::Error::new(
            e.source.kind(),
            format!("{}: {}", e.step, e.source),
        ))),
    }
}

/// The real file system, reporting [`CommitStep::TempWritten`] before the rename (the temp
/// file is written and fsynced then) and [`CommitStep::Renamed`] after it.
struct SteppingFs<'h> {
    hook: Option<&'h StepHook>,
}

impl FileSystem for SteppingFs<'_> {
    fn create_new(&self, path: &Path) -> std::io::Result<Box<dyn DurableFile>> {
        StdFileSystem.create_new(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        step(self.hook, CommitStep::TempWritten);
        StdFileSystem.rename(from, to)?;
        step(self.hook, CommitStep::Renamed);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        StdFileSystem.sync_dir(dir)
    }

    fn sync_existing(&self, path: &Path) -> std::io::Result<()> {
        StdFileSystem.sync_existing(path)
    }

    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        StdFileSystem.remove_file(path)
    }
}

fn remove_stale_temps(dir: &Path, object: &str) {
    let prefix = temp_prefix(object);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if durable_fs::is_temp_name(&entry.file_name().to_string_lossy(), &prefix) {
            if let Err(e) = std::fs::remove_file(entry.path()) {
                tracing::warn!(path = %entry.path().display(), %e, "could not remove a stale commit temp file");
            }
        }
    }
}
