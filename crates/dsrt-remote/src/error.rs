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
    /// A stable name of what failed, the same for every message wording: what the bindings
    /// call the error's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Location { .. } => "location",
            Self::Store {
                source: object_store::Error::NotFound { .. },
                ..
            } => "not_found",
            Self::Store { .. } => "store",
            Self::Runtime { .. } => "runtime",
            Self::LocalFile { .. } => "local_file",
            Self::LocalManifest { .. } => "local_manifest",
            Self::LocalSize { .. } => "local_size",
            Self::Write(_) => "write",
            Self::AlreadyPublished { .. } => "already_published",
            Self::PrefixNotEmpty { .. } => "prefix_not_empty",
            Self::Upload { .. } => "upload",
            Self::UploadedSize { .. } => "uploaded_size",
            Self::TooLarge { .. } => "too_large",
            Self::ShortRange { .. } => "short_range",
            Self::LocalIo { .. } => "local_io",
            Self::Manifest { .. } => "manifest",
            Self::Integrity { .. } => "integrity",
            Self::ManifestChanged { .. } => "manifest_changed",
            Self::CacheLimit { .. } => "cache_limit",
            Self::LocalCache { .. } => "local_cache",
            Self::Cache(_) | Self::Opened { .. } => "cache",
            Self::Dataset(_) => "dataset",
        }
    }

    /// The URL the error names: an object, a prefix, the location as given, or the local
    /// shard-cache file of [`RemoteError::LocalIo`].
    pub fn url(&self) -> Option<&str> {
        match self {
            Self::Store { url, .. }
            | Self::Upload { url, .. }
            | Self::UploadedSize { url, .. }
            | Self::TooLarge { url, .. }
            | Self::ShortRange { url, .. }
            | Self::Manifest { url, .. }
            | Self::Integrity { url, .. }
            | Self::ManifestChanged { url }
            | Self::CacheLimit { url, .. }
            | Self::LocalCache { url, .. }
            | Self::AlreadyPublished { url }
            | Self::PrefixNotEmpty { url, .. }
            | Self::Opened { url, .. } => Some(url),
            Self::Location { location, .. } => Some(location),
            Self::LocalIo { path, .. } => Some(path),
            Self::Runtime { .. }
            | Self::LocalFile { .. }
            | Self::LocalManifest { .. }
            | Self::LocalSize { .. }
            | Self::Write(_)
            | Self::Cache(_)
            | Self::Dataset(_) => None,
        }
    }

    /// What is wrong, without the URL the message starts with (the whole message when it does
    /// not start with one). The test `every_message_is_its_url_then_its_reason` holds each
    /// variant's wording to this.
    pub fn reason(&self) -> String {
        let message = self.to_string();
        match self.url() {
            Some(url) => message
                .strip_prefix(url)
                .and_then(|rest| rest.strip_prefix(": "))
                .map_or_else(|| message.clone(), str::to_owned),
            None => message,
        }
    }

    /// One error of every variant, for tests that check each is reported (the bindings'
    /// exception classes). Adding a variant fails to compile here until it is listed.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn examples() -> Vec<Self> {
        let url = || "s3://bucket/caches/c".to_owned();
        let object = || "s3://bucket/caches/c/shards/000001.bin".to_owned();
        let generic = || object_store::Error::Generic {
            store: "S3",
            source: "connection reset".into(),
        };
        let all = vec![
            Self::Location {
                location: "nosuch://x".to_owned(),
                reason: "unknown scheme".to_owned(),
            },
            Self::Store {
                url: object(),
                source: object_store::Error::NotFound {
                    path: "caches/c/shards/000001.bin".to_owned(),
                    source: "404".into(),
                },
            },
            Self::Store {
                url: object(),
                source: generic(),
            },
            Self::Runtime {
                reason: "no threads".to_owned(),
            },
            Self::LocalFile {
                path: PathBuf::from("/local/c/index.bin"),
                action: "reading",
                source: std::io::Error::other("example"),
            },
            Self::LocalManifest {
                path: PathBuf::from("/local/c/manifest.json"),
                source: dsrt_manifest::ManifestError::CacheIdInV2,
            },
            Self::LocalSize {
                path: PathBuf::from("/local/c/shards/000000.bin"),
                expected: 10,
                actual: 9,
            },
            Self::Write(dsrt_writer::WriteError::Poisoned {
                path: PathBuf::from("/staging/c"),
            }),
            Self::AlreadyPublished { url: url() },
            Self::PrefixNotEmpty {
                url: url(),
                object: "shards/000000.bin".to_owned(),
            },
            Self::Upload {
                url: object(),
                attempts: 3,
                source: generic(),
            },
            Self::UploadedSize {
                url: object(),
                expected: 10,
                actual: 9,
            },
            Self::TooLarge {
                url: object(),
                size: 1 << 40,
                limit: 1 << 30,
            },
            Self::ShortRange {
                url: object(),
                offset: 0,
                expected: 10,
                found: 9,
            },
            Self::LocalIo {
                path: "/shard-cache/c/shards/000001.bin".to_owned(),
                source: std::io::Error::other("example"),
            },
            Self::Manifest {
                url: url(),
                source: dsrt_manifest::ManifestError::CacheIdInV2,
            },
            Self::Integrity {
                url: object(),
                reason: "SHA-256 differs".to_owned(),
            },
            Self::ManifestChanged { url: url() },
            Self::CacheLimit {
                url: url(),
                shard: "shards/000001.bin".to_owned(),
                needed: 100,
                limit: 10,
            },
            Self::LocalCache {
                url: object(),
                source: dsrt_shard_cache::ShardCacheError::InvalidPath {
                    path: PathBuf::from("../x"),
                    reason: "a relative path without ..",
                },
            },
            Self::Cache(Box::new(dsrt_reader::CacheError::Incomplete {
                path: PathBuf::from("/local/c"),
            })),
            Self::Opened {
                url: url(),
                source: Box::new(dsrt_reader::CacheError::Incomplete {
                    path: PathBuf::from("/shard-cache/c"),
                }),
            },
            Self::Dataset(Box::new(dsrt_dataset::DatasetError::UnknownCache {
                cache_id: 9,
            })),
        ];
        for error in &all {
            match error {
                Self::Location { .. }
                | Self::Store { .. }
                | Self::Runtime { .. }
                | Self::LocalFile { .. }
                | Self::LocalManifest { .. }
                | Self::LocalSize { .. }
                | Self::Write(_)
                | Self::AlreadyPublished { .. }
                | Self::PrefixNotEmpty { .. }
                | Self::Upload { .. }
                | Self::UploadedSize { .. }
                | Self::TooLarge { .. }
                | Self::ShortRange { .. }
                | Self::LocalIo { .. }
                | Self::Manifest { .. }
                | Self::Integrity { .. }
                | Self::ManifestChanged { .. }
                | Self::CacheLimit { .. }
                | Self::LocalCache { .. }
                | Self::Cache(_)
                | Self::Opened { .. }
                | Self::Dataset(_) => {}
            }
        }
        all
    }

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

/// A remote cache's failure to serve a shard read, as its reader reports it
/// (`CacheError::Source`): the error whole, retryable as [`RemoteError::is_retryable`] says.
impl From<RemoteError> for dsrt_reader::SourceError {
    fn from(error: RemoteError) -> Self {
        let retryable = error.is_retryable();
        Self::new(error, retryable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_is_its_url_then_its_reason() {
        for error in RemoteError::examples() {
            let message = error.to_string();
            match error.url() {
                Some(url) if !matches!(error, RemoteError::Upload { .. }) => {
                    assert_eq!(message, format!("{url}: {}", error.reason()), "{error:?}");
                }
                _ => assert_eq!(message, error.reason(), "{error:?}"),
            }
        }
    }

    #[test]
    fn kinds_name_one_variant_each() {
        let kinds: Vec<&str> = RemoteError::examples()
            .iter()
            .map(RemoteError::kind)
            .collect();
        let mut unique = kinds.clone();
        unique.sort_unstable();
        unique.dedup();
        // Two `Store` examples (not found and another failure), and `Cache`/`Opened` share
        // `cache`: every other variant has a kind of its own.
        assert_eq!(unique.len(), kinds.len() - 1, "{kinds:?}");
    }
}
