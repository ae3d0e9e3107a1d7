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
    /// A cache given to [`crate::merge_parts`] cannot be joined: not a whole cache, or written
    /// with another source, schema or manifest version. Nothing was moved.
    #[error("{path}: cannot join this part: {reason}")]
    Part {
        /// The part's directory.
        path: PathBuf,
        /// What does not fit.
        reason: String,
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

impl WriteError {
    /// A stable name of what failed, the same for every message wording: what the bindings
    /// call the error's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::TargetNotEmpty { .. } => "target_not_empty",
            Self::InvalidOption { .. } => "invalid_option",
            Self::Row { .. } => "row",
            Self::PayloadTooLarge { .. } => "payload_too_large",
            Self::Io { .. } => "io",
            Self::Metadata { .. } => "metadata",
            Self::Part { .. } => "part",
            Self::Poisoned { .. } => "poisoned",
            Self::Publish(_) => "publish",
            Self::DurabilityUnknown { .. } => "durability_unknown",
        }
    }

    /// The cache directory (or, for [`WriteError::Io`], the file) the error is about;
    /// `None` for a failed publication, whose error names the manifest itself.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Self::TargetNotEmpty { path }
            | Self::InvalidOption { path, .. }
            | Self::Row { path, .. }
            | Self::PayloadTooLarge { path, .. }
            | Self::Io { path, .. }
            | Self::Metadata { path, .. }
            | Self::Part { path, .. }
            | Self::Poisoned { path }
            | Self::DurabilityUnknown { path, .. } => Some(path),
            Self::Publish(_) => None,
        }
    }

    /// What is wrong, without the directory the message starts with.
    pub fn reason(&self) -> String {
        match self {
            Self::TargetNotEmpty { .. } => {
                "target directory is not empty; a cache is written into an empty or new directory"
                    .to_owned()
            }
            Self::InvalidOption { option, reason, .. } => format!("invalid {option}: {reason}"),
            Self::Row { source, .. } => source.to_string(),
            Self::PayloadTooLarge { sample, len, .. } => format!(
                "sample {sample}: payload of {len} bytes exceeds the 4 GiB an LZ4 size prefix can hold"
            ),
            Self::Io { source, .. } | Self::DurabilityUnknown { source, .. } => source.to_string(),
            Self::Metadata { source, .. } => source.to_string(),
            Self::Part { reason, .. } => format!("cannot join this part: {reason}"),
            Self::Poisoned { .. } => "the writer failed earlier and accepts no more samples".to_owned(),
            Self::Publish(error) => error.source.to_string(),
        }
    }

    /// One error of every variant, for tests that check each is reported (the bindings'
    /// exception classes). Adding a variant fails to compile here until it is listed.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn examples() -> Vec<Self> {
        let path = || PathBuf::from("/caches/w");
        let all = vec![
            Self::TargetNotEmpty { path: path() },
            Self::InvalidOption {
                path: path(),
                option: "max_shard_bytes",
                reason: "must be positive".to_owned(),
            },
            Self::Row {
                path: path(),
                sample: 3,
                source: RowError {
                    column: "label".to_owned(),
                    problem: dsrt_schema::RowProblem::Missing,
                },
            },
            Self::PayloadTooLarge {
                path: path(),
                sample: 4,
                len: 1 << 33,
            },
            Self::Io {
                path: path(),
                action: "write shard",
                source: std::io::Error::other("example"),
            },
            Self::Metadata {
                path: path(),
                source: dsrt_metadata::MetadataError::Arrow("example".to_owned()),
            },
            Self::Part {
                path: path(),
                reason: "its metadata schema differs from the joined cache's".to_owned(),
            },
            Self::Poisoned { path: path() },
            Self::Publish(durable_fs::PublishError {
                target: path().join("manifest.json"),
                step: durable_fs::PublishStep::Rename,
                source: std::io::Error::other("example"),
            }),
            Self::DurabilityUnknown {
                path: path(),
                source: std::io::Error::other("example"),
            },
        ];
        for error in &all {
            match error {
                Self::TargetNotEmpty { .. }
                | Self::InvalidOption { .. }
                | Self::Row { .. }
                | Self::PayloadTooLarge { .. }
                | Self::Io { .. }
                | Self::Metadata { .. }
                | Self::Part { .. }
                | Self::Poisoned { .. }
                | Self::Publish(_)
                | Self::DurabilityUnknown { .. } => {}
            }
        }
        all
    }
}
