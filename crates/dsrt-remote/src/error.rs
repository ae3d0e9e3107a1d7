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
}

/// Whether trying again later may help after `source`: anything but a refusal or a missing
/// object.
pub(crate) fn store_error_is_retryable(source: &object_store::Error) -> bool {
    !matches!(
        source,
        object_store::Error::NotFound { .. }
            | object_store::Error::Precondition { .. }
            | object_store::Error::AlreadyExists { .. }
            | object_store::Error::NotSupported { .. }
            | object_store::Error::NotImplemented { .. }
            | object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. }
            | object_store::Error::InvalidPath { .. }
    )
}

fn retry_hint(source: &object_store::Error) -> &'static str {
    if store_error_is_retryable(source) {
        " (may be transient: publish again with overwrite_partial to replace what was uploaded)"
    } else {
        " (not retryable)"
    }
}

impl RemoteError {
    /// Whether trying again later may succeed: a store failure that is not "not found",
    /// "precondition failed" or a refusal of the request.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Store { source, .. } | Self::Upload { source, .. } => {
                store_error_is_retryable(source)
            }
            Self::UploadedSize { .. } => true,
            _ => false,
        }
    }
}
