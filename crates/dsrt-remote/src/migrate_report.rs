//! What a remote manifest migration reports, and why one stops.

use crate::error::RemoteError;
use std::fmt;
use thiserror::Error;

/// What happened to one cache's manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteUpdateOutcome {
    /// Rewritten from v2 to v3.
    Updated,
    /// Already v3; not written.
    Unchanged,
}

/// One cache of a remote migration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteUpdateEntry {
    /// The cache's prefix URL, as given.
    pub url: String,
    /// The cache id after migration.
    pub cache_id: u64,
    /// What happened.
    pub outcome: RemoteUpdateOutcome,
    /// `false` when the store has no conditional PUT, so the manifest was replaced by a plain
    /// PUT after checking it unchanged: a change made between that check and the PUT would
    /// be lost. `true` for a conditional replacement and for an unchanged manifest.
    pub atomic: bool,
}

/// A completed remote migration: one entry per cache, in the order given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoteUpdateReport {
    /// The entries.
    pub entries: Vec<RemoteUpdateEntry>,
}

impl RemoteUpdateReport {
    /// Entries replaced without a conditional PUT.
    pub fn not_atomic(&self) -> impl Iterator<Item = &RemoteUpdateEntry> {
        self.entries.iter().filter(|e| !e.atomic)
    }
}

/// Why a remote migration stopped.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RemoteUpdateCause {
    /// Only `version = 3` is a migration target.
    #[error("cannot migrate to format_version {0}: the only target is 3")]
    UnsupportedTarget(u64),
    /// Reading or writing the manifest failed.
    #[error(transparent)]
    Store(#[from] RemoteError),
    /// The manifest is not a valid manifest of a supported version.
    #[error("{url}: {source}")]
    Manifest {
        /// The manifest's URL.
        url: String,
        /// The cause.
        #[source]
        source: dsrt_manifest::ManifestError,
    },
    /// Two caches would share an id after migration.
    #[error("cache id {id} would belong to both {first} and {second}")]
    DuplicateId {
        /// The id.
        id: u64,
        /// The earlier cache.
        first: String,
        /// The later cache.
        second: String,
    },
    /// One prefix is listed twice.
    #[error("{first} and {second} are the same cache")]
    DuplicateCache {
        /// The earlier listing.
        first: String,
        /// The later listing.
        second: String,
    },
    /// The manifest changed between the check and the write; it was not overwritten.
    #[error("{url}: the manifest changed while migrating (another writer?); it was not overwritten, check it and run again")]
    ChangedConcurrently {
        /// The manifest's URL.
        url: String,
    },
}

/// A remote migration that stopped: what was done, which cache failed, and why.
///
/// Several caches are not one transaction: the entries in `done` are migrated. Retry with the
/// same ordered list to finish.
#[derive(Debug)]
pub struct RemoteUpdateError {
    /// Caches completed before the failure, in order.
    pub done: Vec<RemoteUpdateEntry>,
    /// The cache being processed (`None` for failures of the whole request).
    pub failed: Option<String>,
    /// The cause.
    pub cause: Box<RemoteUpdateCause>,
}

impl fmt::Display for RemoteUpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failed {
            Some(cache) => write!(f, "migrating {cache}: {}", self.cause)?,
            None => write!(f, "migration refused: {}", self.cause)?,
        }
        write!(f, " ({} cache(s) completed before)", self.done.len())
    }
}

impl From<RemoteError> for RemoteUpdateError {
    /// A failure of the whole request, before any cache.
    fn from(error: RemoteError) -> Self {
        Self {
            done: Vec::new(),
            failed: None,
            cause: Box::new(RemoteUpdateCause::Store(error)),
        }
    }
}

impl std::error::Error for RemoteUpdateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}
