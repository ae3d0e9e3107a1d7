use dsrt_schema::RowError;
use std::path::PathBuf;
use thiserror::Error;

/// Why a cache could not be written. Every variant names the cache directory.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The target directory already holds something.
    #[error(
        "{path}: target directory is not empty; a cache is written into an empty or new directory"
    )]
    TargetNotEmpty {
        /// The cache directory.
        path: PathBuf,
    },
    /// An option is out of range.
    #[error("{path}: invalid {option}: {reason}")]
    InvalidOption {
        /// The cache directory.
        path: PathBuf,
        /// Which option.
        option: &'static str,
        /// Why it is refused.
        reason: String,
    },
    /// A sample's metadata row does not fit the schema; nothing of it was written.
    #[error("{path}: sample {sample}: {source}")]
    Row {
        /// The cache directory.
        path: PathBuf,
        /// The sample's number (its position in the cache).
        sample: u64,
        /// What is wrong, naming the column.
        #[source]
        source: RowError,
    },
    /// An LZ4 payload larger than the 4 GiB its size prefix can describe.
    #[error("{path}: sample {sample}: payload of {len} bytes exceeds the 4 GiB an LZ4 size prefix can hold")]
    PayloadTooLarge {
        /// The cache directory.
        path: PathBuf,
        /// The sample's number.
        sample: u64,
        /// Payload length.
        len: usize,
    },
    /// A file operation failed; the writer is unusable afterwards.
    #[error("{path}: {action}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// metadata.arrow could not be written.
    #[error("{path}: {source}")]
    Metadata {
        /// The cache directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: dsrt_metadata::MetadataError,
    },
    /// An earlier I/O failure left the writer in an unknown state.
    #[error("{path}: the writer failed earlier and accepts no more samples")]
    Poisoned {
        /// The cache directory.
        path: PathBuf,
    },
    /// manifest.json could not be published; the cache stays unpublished.
    #[error(transparent)]
    Publish(#[from] durable_fs::PublishError),
    /// manifest.json was renamed into place but the directory fsync failed: readers see the
    /// cache, a power loss may take it back.
    #[error("{path}: manifest.json published but its directory fsync failed, durability unknown: {source}")]
    DurabilityUnknown {
        /// The cache directory.
        path: PathBuf,
        /// The fsync error.
        #[source]
        source: std::io::Error,
    },
}
