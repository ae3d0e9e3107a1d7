//! The CLI's error type and the exit status of each failure, the same statuses `dsrt` uses.

use atlas::{AppendError, AtlasError, GcError, TargetError, WriteError};
use std::io;
use thiserror::Error;

/// Exit status of a runtime error (store, I/O, a damaged collection) or of a collection that
/// failed verification.
pub(crate) const EXIT_FAILURE: u8 = 1;

/// Exit status of a usage error: what clap refuses itself, and what only the command can check
/// (a selection that does not fit the array, a read past `--max-elements`).
pub(crate) const EXIT_USAGE: u8 = 2;

/// Exit status of a failure that trying again later may cure (`EX_TEMPFAIL`): a store error
/// object-access calls retryable, a dropped connection, a lost delete race.
pub(crate) const EXIT_TEMPORARY: u8 = 75;

/// Exit status after Ctrl-C, as shells report a SIGINT death (128 + 2).
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

/// Why a subcommand failed.
#[derive(Debug, Error)]
pub(crate) enum CliError {
    /// Opening, reading or deleting from a collection failed; the library's text names the
    /// collection and what is wrong.
    #[error(transparent)]
    Atlas(#[from] AtlasError),
    /// Appending to a growing collection failed; nothing of it is visible.
    #[error(transparent)]
    Append(#[from] AppendError),
    /// `gc` failed; what it removed was unreferenced, and running it again finishes it.
    #[error(transparent)]
    Gc(#[from] GcError),
    /// Writing a collection (`demo`) failed.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// `demo`'s location cannot take a new collection (`OutputNotEmpty` when it holds
    /// something).
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The store named by a URL cannot be set up.
    #[error("{collection}: {source}")]
    Store {
        /// The collection argument.
        collection: String,
        /// What object_store said.
        #[source]
        source: atlas::object_store::Error,
    },
    /// `demo` was pointed at a directory or prefix that already holds something.
    #[error(
        "{path}: not empty (it holds {found}); atlas demo writes a new collection into an empty \
         or new directory or prefix, and a collection is write-once"
    )]
    OutputNotEmpty {
        /// The output argument.
        path: String,
        /// One entry found there.
        found: String,
    },
    /// Publishing an output file (`read --npy`) failed; the text names the file and the step.
    #[error(transparent)]
    Publish(#[from] durable_fs::PublishError),
    /// Writing to stdout failed (a closed pipe is told apart by [`CliError::is_broken_pipe`]).
    #[error("writing to stdout: {0}")]
    Stdout(#[source] io::Error),
    /// Something about the command line that clap cannot check.
    #[error("{0}")]
    Usage(String),
    /// `verify` found problems; the report was printed already.
    #[error("{problems} problem(s) found")]
    VerificationFailed {
        /// Problems found.
        problems: usize,
    },
    /// Ctrl-C stopped the command.
    #[error("interrupted")]
    Interrupted,
}

impl CliError {
    /// Whether stdout's reader went away (`atlas ls | head`): a quiet, successful exit.
    pub(crate) fn is_broken_pipe(&self) -> bool {
        matches!(self, Self::Stdout(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }

    /// Whether the details were printed already, so only the exit status is left to set.
    pub(crate) fn already_reported(&self) -> bool {
        matches!(self, Self::VerificationFailed { .. })
    }

    /// The exit status for this error.
    pub(crate) fn exit_status(&self) -> u8 {
        match self {
            Self::Interrupted => EXIT_INTERRUPTED,
            Self::Usage(_)
            | Self::Atlas(AtlasError::InvalidSelection { .. } | AtlasError::TypeMismatch { .. }) => {
                EXIT_USAGE
            }
            _ if self.is_retryable() => EXIT_TEMPORARY,
            _ => EXIT_FAILURE,
        }
    }

    /// Whether running the command again later may succeed.
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            Self::Atlas(error) => error.is_retryable(),
            Self::Append(error) => error.is_retryable(),
            Self::Gc(error) => error.is_retryable(),
            Self::Target(error) => error.is_retryable(),
            Self::Write(WriteError::Store(source)) => {
                object_access::is_retryable_store_error(source)
            }
            Self::Store { source, .. } => object_access::is_retryable_store_error(source),
            _ => false,
        }
    }
}
