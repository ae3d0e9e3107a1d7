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
    /// A key's sample id past the end of its cache.
    #[error("sample id {sample_id} out of range for cache {cache_id} of {len} samples")]
    SampleIndex {
        /// The cache's id.
        cache_id: u64,
        /// The sample id asked for.
        sample_id: u64,
        /// The cache's samples.
        len: u64,
    },
    /// A step past the end of a rank's share of an epoch.
    #[error("step {step} out of range for a rank share of {steps} steps")]
    StepIndex {
        /// The step asked for.
        step: u64,
        /// The steps of the share.
        steps: u64,
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
    /// The wait for a prefetch worker's sample was given up because the process's interrupt
    /// hook asked ([`durable_fs::set_wait_interrupt`]; Ctrl-C in Python). The step is not
    /// consumed: the next call waits for it again.
    #[error("waiting for step {step} was interrupted")]
    Interrupted {
        /// The step waited for.
        step: u64,
    },
    /// Saving a sample table failed; any previous file at the path is intact.
    #[error("saving sample table: {0}")]
    TableWrite(#[from] durable_fs::PublishError),
    /// A batch of samples cannot be made into an Arrow record batch (a range outside the
    /// cache, a metadata column that clashes with a batch column, a shard path that is not
    /// UTF-8).
    #[error("building a batch: {0}")]
    Batch(String),
}

impl DatasetError {
    /// A stable name of what is wrong, the same for every message wording: what the bindings
    /// call the error's `kind`. A cache's error has its own ([`dsrt_reader::CacheError::kind`]).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Cache(error) => error.kind(),
            Self::DuplicateCacheId { .. } => "duplicate_cache_id",
            Self::DuplicatePath { .. } => "duplicate_path",
            Self::UnknownCache { .. } => "unknown_cache",
            Self::SampleIndex { .. } => "sample_index",
            Self::StepIndex { .. } => "step_index",
            Self::Path { .. } => "path",
            Self::Table { .. } => "table",
            Self::Plan(_) => "plan",
            Self::SkippedAfterError { .. } => "skipped_after_error",
            Self::WorkerStopped => "worker_stopped",
            Self::Interrupted { .. } => "interrupted",
            Self::TableWrite(_) => "table_write",
            Self::Batch(_) => "batch",
        }
    }

    /// The path the error is about: the later of two duplicates, a path that did not resolve,
    /// a sample table, or the cache of a cache error.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Self::Cache(error) => Some(error.path()),
            Self::DuplicateCacheId { second, .. } | Self::DuplicatePath { second, .. } => {
                Some(second)
            }
            Self::Path { path, .. } | Self::Table { path, .. } => Some(path),
            Self::TableWrite(error) => Some(&error.target),
            Self::UnknownCache { .. }
            | Self::SampleIndex { .. }
            | Self::StepIndex { .. }
            | Self::Plan(_)
            | Self::SkippedAfterError { .. }
            | Self::WorkerStopped
            | Self::Interrupted { .. }
            | Self::Batch(_) => None,
        }
    }

    /// One error of every variant, for tests that check each is reported (the bindings'
    /// exception classes). Adding a variant fails to compile here until it is listed.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn examples() -> Vec<Self> {
        let all = vec![
            Self::Cache(dsrt_reader::CacheError::Incomplete {
                path: PathBuf::from("/caches/c"),
            }),
            Self::DuplicateCacheId {
                cache_id: 5,
                first: PathBuf::from("/caches/a"),
                second: PathBuf::from("/caches/b"),
            },
            Self::DuplicatePath {
                first: PathBuf::from("/caches/a"),
                second: PathBuf::from("/caches/a2"),
            },
            Self::UnknownCache { cache_id: 9 },
            Self::SampleIndex {
                cache_id: 9,
                sample_id: 5,
                len: 5,
            },
            Self::StepIndex { step: 7, steps: 7 },
            Self::Path {
                path: PathBuf::from("/caches/x"),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            },
            Self::Table {
                path: PathBuf::from("/tables/t.arrow"),
                reason: "not a sample table".to_owned(),
            },
            Self::Plan(dsrt_plan::PlanError::Weights("all zero".to_owned())),
            Self::SkippedAfterError {
                step: 4,
                failed_step: 3,
            },
            Self::WorkerStopped,
            Self::Interrupted { step: 12 },
            Self::TableWrite(durable_fs::PublishError {
                target: PathBuf::from("/tables/t.arrow"),
                step: durable_fs::PublishStep::Rename,
                source: std::io::Error::other("example"),
            }),
            Self::Batch("samples 4..9 are not within the cache's 5".to_owned()),
        ];
        for error in &all {
            match error {
                Self::Cache(_)
                | Self::DuplicateCacheId { .. }
                | Self::DuplicatePath { .. }
                | Self::UnknownCache { .. }
                | Self::SampleIndex { .. }
                | Self::StepIndex { .. }
                | Self::Path { .. }
                | Self::Table { .. }
                | Self::Plan(_)
                | Self::SkippedAfterError { .. }
                | Self::WorkerStopped
                | Self::Interrupted { .. }
                | Self::TableWrite(_)
                | Self::Batch(_) => {}
            }
        }
        all
    }
}
