//! Checked downloads of this process that a background thread is still publishing.
//!
//! Between the check and the rename (an fsync of the whole file) a download is invisible at
//! its final path, so other processes wait for it, as they must. A reader in the process that
//! downloaded it need not: it gets another descriptor of the checked file, which shares the
//! partial file's open file description and so its lock.

use crate::lock::try_lock_mutex;
use std::collections::HashMap;
use std::fs::File;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Relative path -> (the checked file, its length, its SHA-256), for one process.
#[derive(Debug, Default, Clone)]
pub(crate) struct Unpublished {
    inner: Arc<Mutex<Entries>>,
}

#[derive(Debug)]
struct Entries {
    /// The process the entries belong to: a forked child starts with none of them (their
    /// publishing threads exist only in the parent, so nothing would remove them).
    pid: u32,
    files: HashMap<String, (File, u64, [u8; 32])>,
}

impl Default for Entries {
    fn default() -> Self {
        Self {
            pid: std::process::id(),
            files: HashMap::new(),
        }
    }
}

impl Unpublished {
    /// The entries of this process, or `None` when the lock is taken. Readers and downloaders
    /// never wait for it (see `try_lock_mutex`: a forked child may have inherited it locked
    /// from a publishing thread); they then go without the shortcut.
    fn try_entries(&self) -> Option<MutexGuard<'_, Entries>> {
        try_lock_mutex(&self.inner).map(Self::of_this_process)
    }

    fn of_this_process(mut entries: MutexGuard<'_, Entries>) -> MutexGuard<'_, Entries> {
        let pid = std::process::id();
        if entries.pid != pid {
            entries.files.clear();
            entries.pid = pid;
        }
        entries
    }

    /// Registers `file` (`len` bytes hashing to `sha256`) as the checked copy of `rel` until
    /// [`Self::remove`]; `false` if it could not (the lock was taken), and then nothing needs
    /// removing.
    pub(crate) fn insert(&self, rel: &str, file: File, len: u64, sha256: &[u8; 32]) -> bool {
        let Some(mut entries) = self.try_entries() else {
            return false;
        };
        entries.files.insert(rel.to_owned(), (file, len, *sha256));
        true
    }

    /// Called by the publishing thread once `rel` is published (or failed to be): lookups go
    /// to its final path again. Waits for the lock: only the process that registered `rel`
    /// (and so has that thread) calls it.
    pub(crate) fn remove(&self, rel: &str) {
        let entries = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        Self::of_this_process(entries).files.remove(rel);
    }

    /// Another descriptor of the checked copy of `rel`, with its length, if it is being
    /// published and hashes to `sha256`. `None` also when the lock is taken: the caller then
    /// looks as if the download were another process's.
    pub(crate) fn get(&self, rel: &str, sha256: &[u8; 32]) -> Option<(File, u64)> {
        let entries = self.try_entries()?;
        let (file, len, sha) = entries.files.get(rel)?;
        if sha != sha256 {
            return None;
        }
        Some((file.try_clone().ok()?, *len))
    }
}
