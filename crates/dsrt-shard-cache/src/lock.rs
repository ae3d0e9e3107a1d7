//! The cache root's lock, backoff while another process makes progress, and
//! [`try_lock_mutex`] for the process-local state that must never be waited for. The `flock`
//! primitives themselves are durable-fs's.

use std::path::Path;
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

/// The cache root's protocol lock, held until dropped: every directory-level decision is made
/// while holding the exclusive one. The lock itself is durable-fs's (fork-safe, `EINTR`
/// retried); this adds the cache's error.
pub(crate) struct DirLock {
    _held: durable_fs::DirLock,
}

impl DirLock {
    /// Locks the root, blocking: exclusively, or shared with other readers.
    pub(crate) fn acquire(root: &Path, exclusive: bool) -> Result<Self, crate::ShardCacheError> {
        let mode = if exclusive {
            durable_fs::LockMode::Exclusive
        } else {
            durable_fs::LockMode::Shared
        };
        durable_fs::DirLock::acquire(root, mode)
            .map(|held| Self { _held: held })
            .map_err(|e| crate::ShardCacheError::io(root, e))
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
        Self::with_cap(durable_fs::INTERRUPT_POLL)
    }

    /// Waits of 1, 2, 4, ... ms, at most `cap`.
    pub(crate) fn with_cap(cap: Duration) -> Self {
        Self {
            next: Duration::from_millis(1),
            cap,
        }
    }

    /// Sleeps the next step, unless the process's interrupt hook asks the wait for
    /// `waiting_for` to stop.
    pub(crate) fn sleep(&mut self, waiting_for: &Path) -> Result<(), crate::ShardCacheError> {
        if durable_fs::wait_interrupted() {
            return Err(crate::ShardCacheError::Interrupted {
                path: waiting_for.to_path_buf(),
            });
        }
        std::thread::sleep(self.next);
        self.next = (self.next * 2).min(self.cap);
        Ok(())
    }
}
