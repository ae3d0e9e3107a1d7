//! The CLI's error type: every failure a subcommand can end with, each naming what it is about.

use crate::pack::InputError;
use datasetrt::{CacheError, WriteError};
use std::io;
use std::path::PathBuf;
use thiserror::Error;

/// Exit status of a runtime error or a failed verification (usage errors are clap's 2).
pub(crate) const EXIT_FAILURE: u8 = 1;

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
    /// A line of the JSONL input cannot become a sample.
    #[error(transparent)]
    Input(#[from] InputError),
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
    },
    /// A store URL, an upload or a remote migration failed; the text names the URL or file.
    #[error(transparent)]
    Remote(#[from] dsrt_remote::RemoteError),
    /// Opening a dataset or iterating it failed.
    #[error(transparent)]
    Dataset(#[from] datasetrt::DatasetError),
    /// `verify` found invalid caches; each was reported as it was checked.
    #[error("{failed} of {total} caches failed verification")]
    VerificationFailed {
        /// Caches that failed.
        failed: usize,
        /// Caches checked.
        total: usize,
        /// Whether the failures were already printed (as JSON, or one line per cache).
        reported: bool,
    },
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
            _ => EXIT_FAILURE,
        }
    }

    /// Whether the details were printed already, so only the exit status is left to set.
    pub(crate) fn already_reported(&self) -> bool {
        matches!(self, Self::VerificationFailed { reported: true, .. })
    }
}
