//! Errors of remote caches: each names the URL or file and says whether a retry may help.

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
}

impl RemoteError {
    /// Whether trying again later may succeed: a store failure that is not "not found",
    /// "precondition failed" or a refusal of the request.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Store { source, .. } => !matches!(
                source,
                object_store::Error::NotFound { .. }
                    | object_store::Error::Precondition { .. }
                    | object_store::Error::AlreadyExists { .. }
                    | object_store::Error::NotSupported { .. }
                    | object_store::Error::NotImplemented { .. }
                    | object_store::Error::PermissionDenied { .. }
                    | object_store::Error::Unauthenticated { .. }
                    | object_store::Error::InvalidPath { .. }
            ),
            Self::Location { .. } => false,
        }
    }
}
