//! `flock` helpers: blocking and non-blocking, shared and exclusive.
//!
//! `flock` locks belong to an open file description: two `File`s opened separately conflict
//! even inside one process, which is what lets threads of one process follow the same
//! protocol as separate processes. A lock goes away when its last descriptor closes, so a
//! killed process leaves none behind.
//!
//! Also [`try_lock_mutex`], for the process-local state that must never be waited for.

use rustix::fs::FlockOperation;
use rustix::io::Errno;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

/// `mutex` if it is free (also when poisoned), `None` if it is held. For state a caller can do
/// without: a process forked while another thread held such a mutex inherits it locked for
/// good (that thread does not exist in the child), so waiting for it could hang forever.
pub(crate) fn try_lock_mutex<T>(mutex: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match mutex.try_lock() {
        Ok(guard) => Some(guard),
        Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// Takes `op` (a blocking one), retrying on `EINTR`.
pub(crate) fn lock(file: &File, op: FlockOperation) -> io::Result<()> {
    loop {
        match rustix::fs::flock(file, op) {
            Ok(()) => return Ok(()),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Tries `op` (a non-blocking one): `Ok(false)` when another holder conflicts.
pub(crate) fn try_lock(file: &File, op: FlockOperation) -> io::Result<bool> {
    loop {
        match rustix::fs::flock(file, op) {
            Ok(()) => return Ok(true),
            Err(Errno::WOULDBLOCK) => return Ok(false),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// An exclusive or shared `flock` on the cache root directory, held until dropped. Every
/// directory-level decision is made while holding the exclusive one.
pub(crate) struct DirLock {
    _dir: File,
}

impl DirLock {
    /// Opens the root read-only (a fresh open file description) and locks it, blocking.
    pub(crate) fn acquire(root: &Path, exclusive: bool) -> Result<Self, crate::ShardCacheError> {
        let dir = File::open(root).map_err(|e| crate::ShardCacheError::io(root, e))?;
        let op = if exclusive {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::LockShared
        };
        lock(&dir, op).map_err(|e| crate::ShardCacheError::io(root, e))?;
        Ok(Self { _dir: dir })
    }
}

impl Drop for DirLock {
    /// Unlocks explicitly before the descriptor closes: a process forked while this lock was
    /// held (a `DataLoader` worker) holds a copy of the descriptor, and closing ours alone
    /// would leave the lock held by that copy for the child's whole life, blocking this
    /// process and the child alike.
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self._dir, FlockOperation::Unlock);
    }
}

/// Sleeps growing from 1 ms to 100 ms, for polling another process's progress.
pub(crate) struct Backoff {
    next: Duration,
    cap: Duration,
}

impl Backoff {
    /// Waits of 1, 2, 4, ... ms, at most 100 ms: for room in the cache, which frees slowly.
    pub(crate) fn new() -> Self {
        Self::with_cap(Duration::from_millis(100))
    }

    /// Waits of 1, 2, 4, ... ms, at most `cap`.
    pub(crate) fn with_cap(cap: Duration) -> Self {
        Self {
            next: Duration::from_millis(1),
            cap,
        }
    }

    pub(crate) fn sleep(&mut self) {
        std::thread::sleep(self.next);
        self.next = (self.next * 2).min(self.cap);
    }
}

/// Fsyncs a directory so that creations, renames and unlinks inside it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), crate::ShardCacheError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| crate::ShardCacheError::io(PathBuf::from(dir), e))
}

#[cfg(test)]
mod fork_tests {
    use super::*;

    /// A copy of the lock's descriptor (what a child forked while it was held inherits) does
    /// not keep the directory locked once the lock is dropped.
    #[test]
    fn a_copied_descriptor_does_not_keep_the_directory_locked() {
        let root = tempfile::tempdir().unwrap();
        let held = DirLock::acquire(root.path(), true).unwrap();
        let inherited = held._dir.try_clone().unwrap();
        drop(held);
        let other = File::open(root.path()).unwrap();
        assert!(try_lock(&other, FlockOperation::NonBlockingLockExclusive).unwrap());
        drop(inherited);
    }
}
