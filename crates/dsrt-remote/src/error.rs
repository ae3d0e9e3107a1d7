//! Errors of remote caches: each names the URL or file and says whether a retry may help.

use std::path::PathBuf;
use thiserror::Error;

/// Why a remote cache could not be opened, read or published.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The location is not a path or a URL this build can open.
    #[error("{location}: {reason}")]
    Location {
        /// The location as given.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A request to the store failed (after retries, where it was retried).
    #[error("{url}: {source}")]
    Store {
        /// The object's URL.
        url: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
    /// The crate's tokio runtime could not be built or a request thread failed.
    #[error("dsrt-remote runtime: {reason}")]
    Runtime {
        /// What went wrong.
        reason: String,
    },
    /// A local file (of a cache being published, or a staging directory) failed.
    #[error("{path}: {action}: {source}")]
    LocalFile {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The local cache's manifest is not a valid manifest.
    #[error("{path}: {source}")]
    LocalManifest {
        /// The manifest file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: dsrt_manifest::ManifestError,
    },
    /// A local file's size is not the one its manifest (or the start of the upload) gave.
    #[error("{path}: {actual} bytes, expected {expected}; the local cache changed or is damaged")]
    LocalSize {
        /// The file.
        path: PathBuf,
        /// The size expected.
        expected: u64,
        /// The size found.
        actual: u64,
    },
    /// Writing the cache into its staging directory failed.
    #[error(transparent)]
    Write(#[from] dsrt_writer::WriteError),
    /// The prefix already holds a published cache; caches are write-once.
    #[error("{url}: a cache is already published here (manifest.json exists); caches are write-once, publish to a new prefix")]
    AlreadyPublished {
        /// The prefix.
        url: String,
    },
    /// The prefix holds objects but no manifest: the leftovers of a failed publish, or
    /// something else. Publishing again with `overwrite_partial` replaces them.
    #[error("{url}: the prefix is not empty ({object} exists) but holds no manifest.json; if it is what a failed publish left, publish again with overwrite_partial (dsrt pack --overwrite-partial)")]
    PrefixNotEmpty {
        /// The prefix.
        url: String,
        /// One object found under it.
        object: String,
    },
    /// Uploading a file failed (after the retries allowed); no manifest was written.
    #[error(
        "uploading {url} failed after {attempts} attempt(s): {source}{}",
        retry_hint(source)
    )]
    Upload {
        /// The object's URL.
        url: String,
        /// Attempts made.
        attempts: u32,
        /// The store's last error.
        #[source]
        source: object_store::Error,
    },
    /// An uploaded object's size is not the local file's; no manifest was written.
    #[error("{url}: the store holds {actual} bytes after the upload, expected {expected}")]
    UploadedSize {
        /// The object's URL.
        url: String,
        /// The local file's size.
        expected: u64,
        /// The size the store reports.
        actual: u64,
    },
    /// An object is larger than this reader accepts for it (a manifest over 256 MiB, say).
    #[error("{url}: {size} bytes, more than the {limit} this reader accepts")]
    TooLarge {
        /// The object's URL.
        url: String,
        /// Its size.
        size: u64,
        /// What is accepted.
        limit: u64,
    },
    /// A range request returned fewer or more bytes than asked for.
    #[error("{url}: asked for {expected} bytes at offset {offset}, got {found}")]
    ShortRange {
        /// The object's URL.
        url: String,
        /// Where the range starts.
        offset: u64,
        /// Bytes asked for.
        expected: u64,
        /// Bytes returned.
        found: u64,
    },
    /// Writing a downloaded file into the local cache failed.
    #[error("{path}: local cache: {source}")]
    LocalIo {
        /// The file (URL of what was being downloaded, or local path).
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The remote manifest.json is not a valid manifest.
    #[error("{url}: {source}")]
    Manifest {
        /// The manifest's URL.
        url: String,
        /// What is wrong.
        #[source]
        source: dsrt_manifest::ManifestError,
    },
    /// A file of the cache does not match its manifest entry (size or SHA-256); nothing of it
    /// was kept in the local cache.
    #[error("{url}: {reason}; nothing of it was cached")]
    Integrity {
        /// The file's URL.
        url: String,
        /// What does not match.
        reason: String,
    },
    /// The remote manifest.json changed since this cache was opened: the cache was replaced
    /// while in use. Its files are not mixed with the ones already read; reopen it.
    #[error("{url}: manifest.json changed since the cache was opened (it was replaced while in use); reopen it")]
    ManifestChanged {
        /// The manifest's URL.
        url: String,
    },
    /// The local cache's limit cannot hold this cache's largest shard.
    #[error("{url}: shard {shard} needs {needed} bytes, more than the local cache limit of {limit} bytes")]
    CacheLimit {
        /// The cache's URL.
        url: String,
        /// The largest shard's name.
        shard: String,
        /// Its size.
        needed: u64,
        /// The limit.
        limit: u64,
    },
    /// The local cache directory refused an operation.
    #[error("{url}: {source}")]
    LocalCache {
        /// The URL of the file concerned.
        url: String,
        /// The local cache's error.
        #[source]
        source: dsrt_shard_cache::ShardCacheError,
    },
    /// A local cache failed to open or validate.
    #[error(transparent)]
    Cache(Box<dsrt_reader::CacheError>),
    /// A remote cache's files, once local, failed to open or validate.
    #[error("{url}: {source}")]
    Opened {
        /// The cache's URL.
        url: String,
        /// What the reader found.
        #[source]
        source: Box<dsrt_reader::CacheError>,
    },
    /// The caches do not form a dataset (duplicate ids or locations).
    #[error(transparent)]
    Dataset(Box<dsrt_dataset::DatasetError>),
}

fn retry_hint(source: &object_store::Error) -> &'static str {
    if object_access::is_retryable_store_error(source) {
        " (may be transient: publish again with overwrite_partial to replace what was uploaded)"
    } else {
        " (not retryable)"
    }
}

impl From<object_access::LocationError> for RemoteError {
    fn from(error: object_access::LocationError) -> Self {
        Self::Location {
            location: error.location().to_owned(),
            reason: error.reason(),
        }
    }
}

impl From<object_access::RuntimeUnavailable> for RemoteError {
    fn from(error: object_access::RuntimeUnavailable) -> Self {
        Self::Runtime {
            reason: error.0.to_string(),
        }
    }
}

/// Runs `future` to completion on the process's runtime (object-access's), blocking the
/// calling thread. Not for callers inside a tokio runtime (the crate's API is synchronous).
pub(crate) fn block_on<T, E: From<RemoteError>>(
    future: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, E> {
    object_access::block_on(future).map_err(|e| E::from(e.into()))?
}

impl From<dsrt_reader::CacheError> for RemoteError {
    fn from(error: dsrt_reader::CacheError) -> Self {
        Self::Cache(Box::new(error))
    }
}

impl From<dsrt_dataset::DatasetError> for RemoteError {
    fn from(error: dsrt_dataset::DatasetError) -> Self {
        Self::Dataset(Box::new(error))
    }
}

impl RemoteError {
    /// Whether trying again later may succeed: a store failure object-access calls retryable
    /// (the transport, or a server error that outlasted the client's retries), a short or
    /// mis-sized transfer, or a retryable local shard-cache failure.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Store { source, .. } | Self::Upload { source, .. } => {
                object_access::is_retryable_store_error(source)
            }
            Self::UploadedSize { .. } | Self::ShortRange { .. } => true,
            Self::LocalCache { source, .. } => source.is_retryable(),
            _ => false,
        }
    }
}
