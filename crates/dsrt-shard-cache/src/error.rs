//! The errors of the cache and of a caller's fetch.

use std::path::PathBuf;
use std::time::Duration;

/// A failure of the caller's fetch closure, with whether trying again may help.
///
/// Any error converts into one with `?` (as not retryable); say [`FetchError::retryable`] for a
/// transient failure such as a dropped connection. The cache itself never retries: the flag is
/// carried to the caller in [`ShardCacheError::Fetch`].
#[derive(Debug)]
pub struct FetchError {
    /// Whether the same fetch may succeed if tried again.
    pub retryable: bool,
    /// What went wrong.
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl FetchError {
    /// A transient failure: trying again may succeed.
    pub fn retryable(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self {
            retryable: true,
            source: source.into(),
        }
    }

    /// A failure that trying again will not cure.
    pub fn permanent(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self {
            retryable: false,
            source: source.into(),
        }
    }
}

impl<E: Into<Box<dyn std::error::Error + Send + Sync>>> From<E> for FetchError {
    fn from(source: E) -> Self {
        Self::permanent(source)
    }
}

/// Why a cache operation failed. Every variant names the file it concerns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardCacheError {
    /// A relative path the cache refuses (absolute, `..`, a reserved name, ...).
    #[error("shard cache: invalid relative path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: PathBuf,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A file-system operation failed.
    #[error("shard cache: {path}: {source}")]
    Io {
        /// The file or directory operated on.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The fetched bytes have the right length but not the expected SHA-256; nothing was kept.
    #[error("shard cache: {path}: SHA-256 mismatch: expected {expected}, fetched bytes hash to {found}; nothing was kept")]
    Integrity {
        /// The file that was being fetched.
        path: PathBuf,
        /// Expected SHA-256, lowercase hex.
        expected: String,
        /// SHA-256 of the fetched bytes, lowercase hex.
        found: String,
    },
    /// The fetch did not write exactly bytes `0..expected`; nothing was kept.
    #[error(
        "shard cache: {path}: expected {expected} bytes, the fetch wrote {found}; nothing was kept"
    )]
    Length {
        /// The file that was being fetched.
        path: PathBuf,
        /// The length the caller declared.
        expected: u64,
        /// Bytes the fetch wrote: the end of its furthest write, or, when it left holes, how
        /// many distinct bytes it covered.
        found: u64,
    },
    /// The caller's fetch failed; nothing was kept.
    #[error("shard cache: fetching {path} failed{}: {source}", if *retryable { " (retryable)" } else { "" })]
    Fetch {
        /// The file that was being fetched.
        path: PathBuf,
        /// Whether the fetch said trying again may help.
        retryable: bool,
        /// The fetch's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// One file (with its seal, [`crate::SEAL_ALLOWANCE`]) is larger than the whole cache may
    /// hold.
    #[error("shard cache: {path} needs {len} bytes, more than the cache limit of {limit} bytes")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Bytes it needs, its seal included.
        len: u64,
        /// The cache's `max_bytes`.
        limit: u64,
    },
    /// No room could be made: every evictable file stayed open in some process for longer
    /// than `wait_for_room`.
    #[error("shard cache: no room for {path} ({needed} bytes) under the limit of {limit} bytes after waiting {waited:?}: the other files are pinned or open")]
    NoRoom {
        /// The file that needed room.
        path: PathBuf,
        /// Bytes it needed, its seal included.
        needed: u64,
        /// The cache's `max_bytes`.
        limit: u64,
        /// How long the claim waited.
        waited: Duration,
    },
    /// Another process kept the file busy (downloading it, or holding an old version of a
    /// different length open) for longer than `wait_for_room`.
    #[error("shard cache: {path} stayed busy in another process for {waited:?}")]
    Busy {
        /// The file.
        path: PathBuf,
        /// How long the claim waited.
        waited: Duration,
    },
    /// The directory is not the cache's to use: it holds things and no shard cache marker, is
    /// not a directory, or is a cache of the other [`Access`](crate::Access). Nothing in it
    /// was touched.
    #[error("shard cache: refusing {path} as a shard cache directory: {reason}")]
    NotOwned {
        /// The directory given as the cache root.
        path: PathBuf,
        /// Why it is refused.
        reason: String,
    },
    /// The root's owner or permissions would let other users change what the cache serves.
    #[error("shard cache: refusing {path}: {reason}")]
    Insecure {
        /// The cache root.
        path: PathBuf,
        /// What is wrong with its owner or mode.
        reason: String,
    },
    /// Something the cache did not write stands where it needs to work (a file without its
    /// seal, a symbolic link, a directory, a FIFO): it is never served, replaced or removed.
    #[error("shard cache: {path} is {found}; it is left alone (remove it to let the cache use the name)")]
    Foreign {
        /// What stands in the way.
        path: PathBuf,
        /// What it is.
        found: &'static str,
    },
    /// A cached file no longer hashes to the SHA-256 it was checked against when it entered the
    /// cache (a damaged disk, a write behind the cache's back); it was removed, so the next
    /// read downloads it again.
    #[error("shard cache: the cached copy {path} is damaged: expected SHA-256 {expected}, its bytes hash to {found}; it was removed and will be downloaded again")]
    Corrupt {
        /// The cached file.
        path: PathBuf,
        /// Expected SHA-256, lowercase hex.
        expected: String,
        /// SHA-256 of its bytes, lowercase hex.
        found: String,
    },
    /// The wait for `path` was given up because the process's interrupt hook asked
    /// ([`crate::set_wait_interrupt`]; Ctrl-C in Python).
    #[error("shard cache: waiting for {path} was interrupted")]
    Interrupted {
        /// The file waited for.
        path: PathBuf,
    },
}

impl ShardCacheError {
    /// Whether trying the same call again may succeed: a retryable fetch failure, or a wait
    /// for room or for another process that ran out.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Fetch { retryable, .. } => *retryable,
            Self::NoRoom { .. } | Self::Busy { .. } => true,
            _ => false,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
