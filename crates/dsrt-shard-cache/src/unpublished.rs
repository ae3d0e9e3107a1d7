//! Checked downloads of this process that a background thread is still publishing.
//!
//! Between the check and the rename (an fsync of the whole file) a download is invisible at
//! its final path, so other processes wait for it, as they must. A reader in the process that
//! downloaded it need not: it gets another descriptor of the checked file, which shares the
//! partial file's open file description and so its lock.

use std::collections::HashMap;
use std::fs::File;
use std::sync::{Arc, Mutex, PoisonError};

/// Relative path -> (the checked file, its length), for one process.
#[derive(Debug, Default, Clone)]
pub(crate) struct Unpublished {
    inner: Arc<Mutex<Entries>>,
}

#[derive(Debug)]
struct Entries {
    /// The process the entries belong to: a forked child starts with none of them (their
    /// publishing threads exist only in the parent, so nothing would remove them).
    pid: u32,
    files: HashMap<String, (File, u64)>,
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
    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        let mut entries = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let pid = std::process::id();
        if entries.pid != pid {
            entries.files.clear();
            entries.pid = pid;
        }
        entries
    }

    /// Registers `file` (`len` bytes) as the checked copy of `rel` until [`Self::remove`].
    pub(crate) fn insert(&self, rel: &str, file: File, len: u64) {
        self.entries().files.insert(rel.to_owned(), (file, len));
    }

    /// Called once `rel` is published (or failed to be): lookups go to its final path again.
    pub(crate) fn remove(&self, rel: &str) {
        self.entries().files.remove(rel);
    }

    /// Another descriptor of the checked copy of `rel`, with its length, if it is being
    /// published and has `len` bytes (any length when `len` is `None`).
    pub(crate) fn get(&self, rel: &str, len: Option<u64>) -> Option<(File, u64)> {
        let entries = self.entries();
        let (file, found) = entries.files.get(rel)?;
        if len.is_some_and(|len| len != *found) {
            return None;
        }
        Some((file.try_clone().ok()?, *found))
    }
}
