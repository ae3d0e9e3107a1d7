use crate::ManifestUpdateEntry;
use std::fmt;
use std::path::PathBuf;
use thiserror::Error;

/// Why a migration stopped.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum UpdateCause {
    /// Only `version = 3` is a migration target.
    #[error("cannot migrate to format_version {0}: the only target is 3")]
    UnsupportedTarget(u64),
    /// The manifest could not be read.
    #[error("reading {manifest}: {source}")]
    Read {
        /// The manifest path.
        manifest: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The manifest is not a valid manifest of a supported version.
    #[error("{manifest}: {source}")]
    Manifest {
        /// The manifest's path (symlinks resolved) or URL.
        manifest: String,
        /// The cause.
        #[source]
        source: dsrt_manifest::ManifestError,
    },
    /// The manifest's directory does not accept a new file.
    #[error("{dir} is not writable: {source}")]
    NotWritable {
        /// The directory.
        dir: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
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
    /// One cache is listed twice: the same directory (after resolving symlinks) or prefix.
    #[error("{first} and {second} are the same cache")]
    DuplicateCache {
        /// The earlier listing.
        first: String,
        /// The later listing.
        second: String,
    },
    /// Writing the new manifest failed before its rename; the old manifest is intact.
    #[error(transparent)]
    Publish(#[from] durable_fs::PublishError),
    /// Fsyncing an unchanged v3 manifest failed.
    #[error("fsync {manifest}: {source}")]
    Sync {
        /// The manifest path.
        manifest: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The cancellation token fired; the operation removed its temporary file.
    #[error("interrupted")]
    Interrupted,
    /// Reading or writing a manifest on a store failed; the text names the object.
    #[error("{source}")]
    Store {
        /// Whether the same migration run again later may pass (the store's retryable rule).
        retryable: bool,
        /// The store's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The manifest changed between the check and the replacement; it was not overwritten.
    #[error("{manifest}: the manifest changed while migrating (another writer?); it was not overwritten, check it and run again")]
    ChangedConcurrently {
        /// The manifest's URL.
        manifest: String,
    },
}

impl UpdateCause {
    /// A stable name of the cause, the same for every message wording: what the bindings call
    /// the error's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnsupportedTarget(_) => "unsupported_target",
            Self::Read { .. } => "read",
            Self::Manifest { .. } => "manifest",
            Self::NotWritable { .. } => "not_writable",
            Self::DuplicateId { .. } => "duplicate_id",
            Self::DuplicateCache { .. } => "duplicate_cache",
            Self::Publish(_) => "publish",
            Self::Sync { .. } => "sync",
            Self::Interrupted => "interrupted",
            Self::Store { .. } => "store",
            Self::ChangedConcurrently { .. } => "changed_concurrently",
        }
    }

    /// Whether running the same migration again later may pass: a store failure its store
    /// calls retryable, nothing else.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Store {
                retryable: true,
                ..
            }
        )
    }
}

/// A migration that stopped: what was done, which cache failed, and why.
///
/// Several caches are not one transaction: the entries in `done` are migrated. Retry with the
/// same ordered list to finish.
#[derive(Debug)]
pub struct ManifestUpdateError {
    /// Caches completed before the failure, in order.
    pub done: Vec<ManifestUpdateEntry>,
    /// The cache being processed when it failed, as the caller named it (`None` for failures
    /// of the whole request).
    pub failed: Option<String>,
    /// The cause (boxed: the error travels up through callers that are often `Result`s of
    /// small values).
    pub cause: Box<UpdateCause>,
}

impl fmt::Display for ManifestUpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failed {
            Some(cache) => write!(f, "migrating {cache}: {}", self.cause)?,
            None => write!(f, "migration refused: {}", self.cause)?,
        }
        write!(f, " ({} cache(s) completed before)", self.done.len())
    }
}

impl ManifestUpdateError {
    /// Whether running the same migration again later may pass ([`UpdateCause::is_retryable`]).
    pub fn is_retryable(&self) -> bool {
        self.cause.is_retryable()
    }
}

impl std::error::Error for ManifestUpdateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}
