//! Deletes on local disk that lose nothing across threads and processes of one host.
//!
//! object_store's `LocalFileSystem` has no conditional update, so this committer takes an
//! advisory `flock` on the collection directory itself (no lock file, so none is ever left
//! behind; the kernel drops the lock when its holder dies, so a crashed deleter never blocks the
//! next), and under it reads the mask, merges, and replaces the mask by temp file + fsync +
//! rename + directory fsync. A reader therefore sees the old mask or the new one, never a torn one.

use crate::delete::{CommitOutcome, MaskCommitter, MergeFn};
use crate::error::AtlasError;
use atlas_footer::MASK_OBJECT;
use futures::future::BoxFuture;
use std::fs::File;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Prefix of the temp file a commit writes before its rename. A crash can leave one behind; the
/// next commit, holding the lock, removes it.
const TEMP_PREFIX: &str = ".deleted.mask.";

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

/// Commits `deleted.mask` in a local collection directory under a directory `flock`.
#[derive(Clone)]
pub struct LocalFlockCommitter {
    dir: PathBuf,
    hook: Option<StepHook>,
}

impl std::fmt::Debug for LocalFlockCommitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalFlockCommitter")
            .field("dir", &self.dir)
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

impl LocalFlockCommitter {
    /// Commits the mask of the collection in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
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

    fn step(&self, step: CommitStep) {
        if let Some(hook) = &self.hook {
            hook(step);
        }
    }

    /// The whole attempt runs without an await, so the lock is never held across a yield: a
    /// task that waits for it blocks only its own thread, never the holder.
    fn commit_locked(&self, merge: &MergeFn<'_>) -> Result<CommitOutcome, AtlasError> {
        let io = |path: &Path| {
            let path = path.display().to_string();
            move |source| AtlasError::Io { path, source }
        };
        let dir = File::open(&self.dir).map_err(io(&self.dir))?;
        lock_exclusive(&dir).map_err(io(&self.dir))?;
        self.step(CommitStep::Locked);
        remove_stale_temps(&self.dir);
        let mask = self.dir.join(MASK_OBJECT);
        let current = match std::fs::read(&mask) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(io(&mask)(e)),
        };
        let merged = merge(current.as_deref())?;
        self.step(CommitStep::Merged);
        let mut temp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(&self.dir)
            .map_err(io(&self.dir))?;
        temp.write_all(&merged).map_err(io(temp.path()))?;
        temp.as_file().sync_all().map_err(io(temp.path()))?;
        self.step(CommitStep::TempWritten);
        temp.persist(&mask).map_err(|e| io(&mask)(e.error))?;
        self.step(CommitStep::Renamed);
        dir.sync_all().map_err(io(&self.dir))?;
        // Dropping `dir` closes the descriptor, which releases the lock.
        Ok(CommitOutcome::Committed)
    }
}

impl MaskCommitter for LocalFlockCommitter {
    fn attempt<'a>(
        &'a self,
        merge: &'a MergeFn<'a>,
    ) -> BoxFuture<'a, Result<CommitOutcome, AtlasError>> {
        Box::pin(async move { self.commit_locked(merge) })
    }
}

#[cfg(unix)]
fn lock_exclusive(dir: &File) -> std::io::Result<()> {
    rustix::fs::flock(dir, rustix::fs::FlockOperation::LockExclusive).map_err(std::io::Error::from)
}

#[cfg(not(unix))]
fn lock_exclusive(_dir: &File) -> std::io::Result<()> {
    Err(std::io::Error::new(
        ErrorKind::Unsupported,
        "directory locks need a Unix flock",
    ))
}

fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
            if let Err(e) = std::fs::remove_file(entry.path()) {
                tracing::warn!(path = %entry.path().display(), %e, "could not remove a stale mask temp file");
            }
        }
    }
}
