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
        /// The manifest path.
        manifest: PathBuf,
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
        first: PathBuf,
        /// The later cache.
        second: PathBuf,
    },
    /// One cache directory is listed twice (after resolving symlinks).
    #[error("{first} and {second} are the same cache directory")]
    DuplicateCache {
        /// The earlier listing.
        first: PathBuf,
        /// The later listing.
        second: PathBuf,
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
        }
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
    /// The cache being processed when it failed (`None` for failures of the whole request).
    pub failed: Option<PathBuf>,
    /// The cause (boxed: the error travels up through callers that are often `Result`s of
    /// small values).
    pub cause: Box<UpdateCause>,
}

impl fmt::Display for ManifestUpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failed {
            Some(cache) => write!(f, "migrating {}: {}", cache.display(), self.cause)?,
            None => write!(f, "migration refused: {}", self.cause)?,
        }
        write!(f, " ({} cache(s) completed before)", self.done.len())
    }
}

impl std::error::Error for ManifestUpdateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.cause)
    }
}
