use std::path::PathBuf;
use thiserror::Error;

/// Why a dataset, a sample or a sample table is unusable.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// A cache failed to open or to serve a sample.
    #[error(transparent)]
    Cache(#[from] dsrt_reader::CacheError),
    /// Two caches resolve to the same cache id.
    #[error("cache id {cache_id} belongs to both {first} and {second}")]
    DuplicateCacheId {
        /// The shared id.
        cache_id: u64,
        /// The earlier cache in the list.
        first: PathBuf,
        /// The later one.
        second: PathBuf,
    },
    /// One directory is listed twice (after resolving symlinks).
    #[error("{first} and {second} are the same cache directory")]
    DuplicatePath {
        /// The earlier listing.
        first: PathBuf,
        /// The later listing.
        second: PathBuf,
    },
    /// A key names a cache id that is not in the dataset.
    #[error("no cache with id {cache_id} in this dataset")]
    UnknownCache {
        /// The id.
        cache_id: u64,
    },
    /// Resolving a cache path failed.
    #[error("{path}: {source}")]
    Path {
        /// The path as given.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A sample table file is unreadable or not a sample table.
    #[error("sample table {path}: {reason}")]
    Table {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The epoch cannot be planned or the state does not fit the plan.
    #[error(transparent)]
    Plan(#[from] dsrt_plan::PlanError),
    /// Not read because an earlier step of the same loader chunk failed: a chunk stops at its
    /// first error, so a dead store costs one step's retries, not a chunk's.
    #[error("step {step} not read: step {failed_step} of the same chunk failed before it")]
    SkippedAfterError {
        /// The step not read.
        step: u64,
        /// The step whose error stopped the chunk.
        failed_step: u64,
    },
    /// A prefetch worker stopped before delivering its sample (it panicked).
    #[error("a prefetch worker stopped unexpectedly")]
    WorkerStopped,
    /// Saving a sample table failed; any previous file at the path is intact.
    #[error("saving sample table: {0}")]
    TableWrite(#[from] durable_fs::PublishError),
}
