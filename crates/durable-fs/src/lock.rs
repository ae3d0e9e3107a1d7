//! `flock` on files and directories: blocking and non-blocking, shared and exclusive, retried
//! on `EINTR`, and released before close so a forked child cannot keep a lock alive.
//!
//! `flock` locks belong to an open file description: two `File`s opened separately conflict
//! even inside one process, which lets threads of one process follow the same protocol as
//! separate processes. A lock goes away when its last descriptor closes, so a killed process
//! leaves none behind.

use rustix::fs::FlockOperation;
use rustix::io::Errno;
use std::fs::File;
use std::io;
use std::path::Path;

/// Who else may hold the lock at the same time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Other shared holders, no exclusive one.
    Shared,
    /// Nobody else.
    Exclusive,
}

impl LockMode {
    fn blocking(self) -> FlockOperation {
        match self {
            Self::Shared => FlockOperation::LockShared,
            Self::Exclusive => FlockOperation::LockExclusive,
        }
    }

    fn non_blocking(self) -> FlockOperation {
        match self {
            Self::Shared => FlockOperation::NonBlockingLockShared,
            Self::Exclusive => FlockOperation::NonBlockingLockExclusive,
        }
    }
}

/// Locks `file` in `mode`, waiting for conflicting holders; a signal that interrupts the wait
/// (`EINTR`) is retried, not reported.
pub fn lock_file(file: &File, mode: LockMode) -> io::Result<()> {
    loop {
        match rustix::fs::flock(file, mode.blocking()) {
            Ok(()) => return Ok(()),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Locks `file` in `mode` if nobody conflicts: `Ok(false)` when another holder does.
pub fn try_lock_file(file: &File, mode: LockMode) -> io::Result<bool> {
    loop {
        match rustix::fs::flock(file, mode.non_blocking()) {
            Ok(()) => return Ok(true),
            Err(Errno::WOULDBLOCK) => return Ok(false),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Releases `file`'s lock. Needed before the descriptor closes whenever the process may have
/// forked while holding it: the child's copy of the descriptor shares the open file
/// description, and closing ours alone would leave the lock held for the child's whole life.
pub fn unlock_file(file: &File) -> io::Result<()> {
    loop {
        match rustix::fs::flock(file, FlockOperation::Unlock) {
            Ok(()) => return Ok(()),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A lock on a directory, held until dropped: the protocol lock of a directory whose entries
/// several processes change (a node's shard cache, a local collection's mask).
#[derive(Debug)]
pub struct DirLock {
    dir: File,
}

impl DirLock {
    /// Opens `dir` read-only (a fresh open file description) and locks it in `mode`, waiting
    /// for conflicting holders.
    pub fn acquire(dir: &Path, mode: LockMode) -> io::Result<Self> {
        let file = File::open(dir)?;
        lock_file(&file, mode)?;
        Ok(Self { dir: file })
    }

    /// [`DirLock::acquire`] without waiting: `None` when another holder conflicts.
    pub fn try_acquire(dir: &Path, mode: LockMode) -> io::Result<Option<Self>> {
        let file = File::open(dir)?;
        Ok(try_lock_file(&file, mode)?.then_some(Self { dir: file }))
    }

    /// The open directory the lock is on.
    pub fn file(&self) -> &File {
        &self.dir
    }
}

impl Drop for DirLock {
    /// Unlocks before the descriptor closes (see [`unlock_file`] for why).
    fn drop(&mut self) {
        let _ = unlock_file(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_conflicts_with_any_other_open_description() {
        let root = tempfile::tempdir().unwrap();
        let held = DirLock::acquire(root.path(), LockMode::Exclusive).unwrap();
        assert!(DirLock::try_acquire(root.path(), LockMode::Shared)
            .unwrap()
            .is_none());
        drop(held);
        let a = DirLock::try_acquire(root.path(), LockMode::Shared).unwrap();
        let b = DirLock::try_acquire(root.path(), LockMode::Shared).unwrap();
        assert!(a.is_some() && b.is_some());
        assert!(DirLock::try_acquire(root.path(), LockMode::Exclusive)
            .unwrap()
            .is_none());
    }

    /// A copy of the lock's descriptor (what a child forked while it was held inherits) does
    /// not keep the directory locked once the lock is dropped.
    #[test]
    fn a_copied_descriptor_does_not_keep_the_directory_locked() {
        let root = tempfile::tempdir().unwrap();
        let held = DirLock::acquire(root.path(), LockMode::Exclusive).unwrap();
        let inherited = held.file().try_clone().unwrap();
        drop(held);
        assert!(DirLock::try_acquire(root.path(), LockMode::Exclusive)
            .unwrap()
            .is_some());
        drop(inherited);
    }

    #[test]
    fn a_missing_directory_is_an_io_error() {
        let root = tempfile::tempdir().unwrap();
        let error = DirLock::acquire(&root.path().join("nope"), LockMode::Shared).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }
}
