//! The CLI's error type: every failure a subcommand can end with, each naming what it is about.

use datasetrt::{CacheError, WriteError};
use dsrt_remote::RemoteError;
use std::io;
use std::path::PathBuf;
use thiserror::Error;

/// Exit status of a runtime error or a failed verification (usage errors are clap's 2).
pub(crate) const EXIT_FAILURE: u8 = 1;

/// Exit status of a usage error clap cannot see, such as a `--schedule` file that is not one:
/// the status clap gives its own.
pub(crate) const EXIT_USAGE: u8 = 2;

/// Exit status of a failure that may pass if the command is run again later: a store request
/// that timed out, was throttled or got a server error (after the retries made), or a local
/// cache directory with no room yet. sysexits' `EX_TEMPFAIL`.
pub(crate) const EXIT_TEMPORARY: u8 = 75;

/// Exit status after Ctrl-C, as shells report a SIGINT death (128 + 2).
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// Why a subcommand failed.
#[derive(Debug, Error)]
pub(crate) enum CliError {
    /// Opening or reading a cache failed; the library's text names the cache and the sample,
    /// shard or column.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// Writing a cache failed; the library's text names the cache and the sample or column.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A file operation outside the cache failed.
    #[error("{path}: {action}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Writing to stdout failed (a closed pipe is told apart by [`CliError::is_broken_pipe`]).
    #[error("writing to stdout: {0}")]
    Stdout(#[source] io::Error),
    /// The `--schema` file is not a `metadata_schema` array.
    #[error("{path}: not a metadata schema (a JSON array of {{\"name\", \"type\", \"nullable\"}}): {reason}")]
    SchemaFile {
        /// The schema file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The `--schedule` file cannot be read, is not a schedule, or does not fit the caches.
    #[error("{path}: not a usable schedule (see docs/iteration.md, \"Schedules\"): {reason}")]
    ScheduleFile {
        /// The schedule file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Something about the command line that clap cannot check, such as a schema that names
    /// the payload field.
    #[error("{0}")]
    Invalid(String),
    /// The `--out` directory already holds files; refused before reading any input.
    #[error("{path}: output directory is not empty; dsrt pack writes a new cache into an empty or new directory")]
    OutputNotEmpty {
        /// The `--out` directory.
        path: PathBuf,
    },
    /// `migrate` stopped; the caches completed before were printed.
    #[error("{message}")]
    Migration {
        /// The library's text: the failing cache and the cause.
        message: String,
        /// Whether Ctrl-C stopped it (exit status 130).
        interrupted: bool,
        /// Whether a store failure stopped it that trying again later may not meet (75).
        retryable: bool,
    },
    /// A store URL, an upload or a remote migration failed; the text names the URL or file.
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// Reading a cache opened from a store URL failed; the reader's text names the local copy,
    /// this names the URL.
    #[error("{url}: {source}")]
    RemoteCache {
        /// The cache's URL.
        url: String,
        /// What the reader found.
        #[source]
        source: Box<CacheError>,
    },
    /// Opening a dataset or iterating it failed.
    #[error(transparent)]
    Dataset(#[from] datasetrt::DatasetError),
    /// A token cache's layout is malformed, or a document in it (or given to it) is refused;
    /// the library's text names the cache and the document.
    #[error(transparent)]
    Tokens(Box<datasetrt::tokens::TokenError>),
    /// Planning or reading a token stream failed; the text names the cache and document, or
    /// the setting.
    #[error(transparent)]
    TokenStream(#[from] datasetrt::token_stream::TokenStreamError),
    /// A conversion (`dsrt pack --from-dir`, `--from-imagefolder`, `--from-parquet`,
    /// `--from-webdataset`) failed.
    #[error(transparent)]
    Pack(#[from] datasetrt::pack::PackError),
    /// `verify` found invalid caches; each was reported as it was checked.
    #[error("{failed} of {total} caches failed verification")]
    VerificationFailed {
        /// Caches that failed.
        failed: usize,
        /// Caches checked.
        total: usize,
        /// Whether the failures were already printed (as JSON, or one line per cache).
        reported: bool,
        /// Whether every failure may pass on a later run (a store or network failure, not an
        /// invalid cache).
        retryable: bool,
    },
}

impl From<datasetrt::tokens::TokenError> for CliError {
    fn from(error: datasetrt::tokens::TokenError) -> Self {
        Self::Tokens(Box::new(error))
    }
}

impl From<dsrt_remote::LocationError> for CliError {
    fn from(error: dsrt_remote::LocationError) -> Self {
        Self::Remote(error.into())
    }
}

impl CliError {
    /// An I/O error about `path`.
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        action: &'static str,
    ) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io {
            path,
            action,
            source,
        }
    }

    /// Whether stdout's reader went away, which a pipeline such as `dsrt cat ... | head`
    /// does on purpose; such an exit is quiet and successful.
    pub(crate) fn is_broken_pipe(&self) -> bool {
        matches!(self, Self::Stdout(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }

    /// The exit status for this error.
    pub(crate) fn exit_status(&self) -> u8 {
        match self {
            Self::Migration {
                interrupted: true, ..
            } => EXIT_INTERRUPTED,
            Self::Migration {
                retryable: true, ..
            } => EXIT_TEMPORARY,
            Self::VerificationFailed {
                retryable: true, ..
            } => EXIT_TEMPORARY,
            Self::Pack(datasetrt::pack::PackError::Cancelled) => EXIT_INTERRUPTED,
            Self::ScheduleFile { .. } => EXIT_USAGE,
            _ if self.is_retryable() => EXIT_TEMPORARY,
            _ => EXIT_FAILURE,
        }
    }

    /// Whether running the command again later may succeed: a store failure `dsrt-remote`
    /// calls retryable, met opening a cache or reading one of its shards.
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            Self::Remote(error) => error.is_retryable(),
            Self::Cache(error) => chain_is_retryable(error),
            Self::RemoteCache { source, .. } => chain_is_retryable(source.as_ref()),
            Self::Dataset(error) => chain_is_retryable(error),
            _ => false,
        }
    }

    /// Whether the process ran out of descriptors or mappings (a runtime error, never a
    /// verdict on a cache).
    pub(crate) fn is_resource(&self) -> bool {
        let error: &(dyn std::error::Error + 'static) = match self {
            Self::Cache(e) => e,
            Self::RemoteCache { source, .. } => source.as_ref(),
            Self::Dataset(e) => e,
            Self::Remote(e) => e,
            Self::Io { source, .. } => source,
            _ => return false,
        };
        chain_is_resource(error)
    }

    /// Whether the details were printed already, so only the exit status is left to set.
    pub(crate) fn already_reported(&self) -> bool {
        matches!(self, Self::VerificationFailed { reported: true, .. })
    }
}

/// `error` and its causes. `io::Error::source` skips the error an `io::Error` wraps (its
/// `source` is the wrapped error's own source), so after an `io::Error` comes the error it
/// wraps.
fn causes<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(error), |error| {
        match error
            .downcast_ref::<io::Error>()
            .and_then(io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => error.source(),
        }
    })
}

/// Whether the first [`RemoteError`] among `error` and its causes is retryable.
fn chain_is_retryable(error: &(dyn std::error::Error + 'static)) -> bool {
    causes(error)
        .find_map(|e| e.downcast_ref::<RemoteError>())
        .is_some_and(RemoteError::is_retryable)
}

/// Whether `error` or one of its causes is a resource running out.
fn chain_is_resource(error: &(dyn std::error::Error + 'static)) -> bool {
    causes(error).any(|e| {
        matches!(
            e.downcast_ref::<CacheError>(),
            Some(CacheError::Resource { .. })
        ) || e
            .downcast_ref::<io::Error>()
            .is_some_and(|e| datasetrt::Exhausted::of(e).is_some())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short_range() -> RemoteError {
        RemoteError::ShortRange {
            url: "s3://b/c/shards/000000.bin".into(),
            offset: 0,
            expected: 8,
            found: 2,
        }
    }

    #[test]
    fn a_remote_error_inside_an_io_error_is_found() {
        let wrapped = io::Error::other(short_range());
        assert!(chain_is_retryable(&wrapped));
        let plain = io::Error::new(io::ErrorKind::NotFound, "gone");
        assert!(!chain_is_retryable(&plain));
    }

    #[test]
    fn retryable_store_failures_get_their_own_exit_status() {
        assert_eq!(
            CliError::Remote(short_range()).exit_status(),
            EXIT_TEMPORARY
        );
        let refused = RemoteError::Location {
            location: "x://".into(),
            reason: "no".into(),
        };
        assert_eq!(CliError::Remote(refused).exit_status(), EXIT_FAILURE);
        let invalid = CliError::VerificationFailed {
            failed: 1,
            total: 2,
            reported: true,
            retryable: false,
        };
        assert_eq!(invalid.exit_status(), EXIT_FAILURE);
    }
}
