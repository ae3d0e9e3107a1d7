use dsrt_writer::{EncodeError, WriteError};
use std::path::PathBuf;

/// Why a conversion stopped. Each names the input it is about.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// An input could not be read.
    #[error("{}: {action}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The failure.
        source: std::io::Error,
    },
    /// An input holds something the cache cannot take (named, with why).
    #[error("{input}: {reason}")]
    Input {
        /// The input (a file, a line, a member of an archive).
        input: String,
        /// What is wrong.
        reason: String,
    },
    /// A column of a table input (Parquet, a Hugging Face dataset) the cache cannot take: a
    /// type with no cache column type, a payload column that is not bytes or text, a column
    /// missing from a file, or typed differently from the same column in an earlier file.
    #[error("{input}: column {column:?}: {reason}")]
    Column {
        /// The file.
        input: String,
        /// The column.
        column: String,
        /// What is wrong.
        reason: String,
    },
    /// A sample of an archive (a WebDataset key) that cannot become a sample: no payload
    /// member, a member that cannot be read as its extension says, or a field typed
    /// differently from earlier samples.
    #[error("{input}: sample {key:?}: {reason}")]
    BadSample {
        /// The archive.
        input: String,
        /// The sample's key.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A Parquet file could not be read (not Parquet, corrupt, or an unsupported encoding).
    #[error("{}: reading Parquet: {source}", path.display())]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The reader's refusal.
        source: parquet::errors::ParquetError,
    },
    /// An Arrow IPC file (a Hugging Face dataset's data file) could not be read.
    #[error("{}: reading Arrow IPC: {source}", path.display())]
    Arrow {
        /// The file.
        path: PathBuf,
        /// The reader's refusal.
        source: arrow_schema::ArrowError,
    },
    /// A sample of an input does not fit the schema, or its payload the compression.
    #[error("{input}: {source}")]
    Encode {
        /// The input the sample came from.
        input: String,
        /// The refusal.
        source: EncodeError,
    },
    /// A document of a token input holds an id that is negative or beyond the cache's width
    /// or vocabulary (or a null id); nothing of it was written.
    #[error("{input}: token {position} is {id}, outside 0..={max_id} ({limit})")]
    TokenOutOfRange {
        /// The document (a file and row, a line, a Megatron document).
        input: String,
        /// The id's position in the document.
        position: usize,
        /// The id (`null` for a null).
        id: String,
        /// The largest id allowed.
        max_id: u32,
        /// What sets that bound ("dtype uint16", "vocab_size 50257").
        limit: String,
    },
    /// A tokenizer could not be loaded, or refused a text.
    #[error("{input}: tokenizer: {reason}")]
    Tokenizer {
        /// The tokenizer file, or the text's input.
        input: String,
        /// What is wrong.
        reason: String,
    },
    /// The cache could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The run was cancelled (its token fired, or the process's wait-interrupt hook asked).
    #[error("packing was cancelled")]
    Cancelled,
    /// A worker thread panicked (a bug); nothing after its unit was written.
    #[error("a packing worker stopped unexpectedly: {0}")]
    WorkerPanicked(String),
}

impl PackError {
    /// A document's refused id ([`dsrt_tokens::BadTokenId`]) as the error naming `input`.
    pub fn token_out_of_range(
        input: String,
        bad: dsrt_tokens::BadTokenId,
        info: &dsrt_tokens::TokenInfo,
    ) -> Self {
        Self::TokenOutOfRange {
            input,
            position: bad.position,
            id: bad.id.to_string(),
            max_id: bad.max_id,
            limit: info.limit(),
        }
    }

    /// A stable name of what is wrong, as the bindings and the CLI report it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Io { .. } => "io",
            Self::Input { .. } => "input",
            Self::Column { .. } => "column",
            Self::BadSample { .. } => "bad_sample",
            Self::Parquet { .. } => "parquet",
            Self::Arrow { .. } => "arrow",
            Self::Encode { .. } => "encode",
            Self::TokenOutOfRange { .. } => "token_out_of_range",
            Self::Tokenizer { .. } => "tokenizer",
            Self::Write(error) => error.kind(),
            Self::Cancelled => "cancelled",
            Self::WorkerPanicked(_) => "worker_panicked",
        }
    }

    /// What is wrong, without the input or file it is about (which the message leads with).
    pub fn reason(&self) -> String {
        match self {
            Self::Io { action, source, .. } => format!("{action}: {source}"),
            Self::Input { reason, .. } => reason.clone(),
            Self::Column { column, reason, .. } => format!("column {column:?}: {reason}"),
            Self::BadSample { key, reason, .. } => format!("sample {key:?}: {reason}"),
            Self::Parquet { source, .. } => format!("reading Parquet: {source}"),
            Self::Arrow { source, .. } => format!("reading Arrow IPC: {source}"),
            Self::Encode { source, .. } => source.to_string(),
            Self::TokenOutOfRange {
                position,
                id,
                max_id,
                limit,
                ..
            } => format!("token {position} is {id}, outside 0..={max_id} ({limit})"),
            Self::Tokenizer { reason, .. } => format!("tokenizer: {reason}"),
            Self::Write(error) => error.reason(),
            Self::Cancelled | Self::WorkerPanicked(_) => self.to_string(),
        }
    }

    /// The input the error is about (a file, or a member of an archive), when it names one.
    pub fn input(&self) -> Option<&str> {
        match self {
            Self::Input { input, .. }
            | Self::Column { input, .. }
            | Self::BadSample { input, .. }
            | Self::Encode { input, .. }
            | Self::TokenOutOfRange { input, .. }
            | Self::Tokenizer { input, .. } => Some(input),
            Self::Io { .. }
            | Self::Parquet { .. }
            | Self::Arrow { .. }
            | Self::Write(_)
            | Self::Cancelled
            | Self::WorkerPanicked(_) => None,
        }
    }

    /// The column a [`PackError::Column`] is about.
    pub fn column(&self) -> Option<&str> {
        match self {
            Self::Column { column, .. } => Some(column),
            _ => None,
        }
    }

    /// The key of the sample a [`PackError::BadSample`] is about.
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::BadSample { key, .. } => Some(key),
            _ => None,
        }
    }

    /// The path the error is about, when it names a file.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Self::Io { path, .. } | Self::Parquet { path, .. } | Self::Arrow { path, .. } => {
                Some(path)
            }
            Self::Write(error) => error.path(),
            Self::Input { .. }
            | Self::Column { .. }
            | Self::BadSample { .. }
            | Self::Encode { .. }
            | Self::TokenOutOfRange { .. }
            | Self::Tokenizer { .. }
            | Self::Cancelled
            | Self::WorkerPanicked(_) => None,
        }
    }

    /// One error of every variant, for tests that check each is reported (the bindings'
    /// exception classes). Adding a variant fails to compile here until it is listed.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn examples() -> Vec<Self> {
        let all = vec![
            Self::Io {
                path: PathBuf::from("/data/images/cat/1.jpg"),
                action: "read",
                source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            },
            Self::Input {
                input: "/data/images/stray.jpg".into(),
                reason: "a file directly in an ImageFolder root belongs to no class".into(),
            },
            Self::Column {
                input: "/data/train.parquet".into(),
                column: "tags".into(),
                reason: "type List(Utf8) has no cache column type".into(),
            },
            Self::BadSample {
                input: "/data/shard-000.tar".into(),
                key: "000017".into(),
                reason: "no member with extension jpg".into(),
            },
            Self::Parquet {
                path: PathBuf::from("/data/train.parquet"),
                source: parquet::errors::ParquetError::EOF("truncated footer".into()),
            },
            Self::Arrow {
                path: PathBuf::from("/data/hf/data-00000-of-00001.arrow"),
                source: arrow_schema::ArrowError::IpcError("truncated message".into()),
            },
            Self::Encode {
                input: "/data/train.parquet row 7".into(),
                source: EncodeError::PayloadTooLarge { len: 1 << 33 },
            },
            Self::TokenOutOfRange {
                input: "/data/train.parquet row 7".into(),
                position: 3,
                id: "-1".into(),
                max_id: 50_256,
                limit: "vocab_size 50257".into(),
            },
            Self::Tokenizer {
                input: "/models/tokenizer.json".into(),
                reason: "expected value at line 1 column 1".into(),
            },
            Self::Write(WriteError::Poisoned {
                path: PathBuf::from("/caches/c"),
            }),
            Self::Cancelled,
            Self::WorkerPanicked("example".into()),
        ];
        for error in &all {
            match error {
                Self::Io { .. }
                | Self::Input { .. }
                | Self::Column { .. }
                | Self::BadSample { .. }
                | Self::Parquet { .. }
                | Self::Arrow { .. }
                | Self::Encode { .. }
                | Self::TokenOutOfRange { .. }
                | Self::Tokenizer { .. }
                | Self::Write(_)
                | Self::Cancelled
                | Self::WorkerPanicked(_) => {}
            }
        }
        all
    }

    /// A Parquet reader's error about `path`, for `map_err`.
    pub(crate) fn parquet(
        path: &std::path::Path,
    ) -> impl FnOnce(parquet::errors::ParquetError) -> Self + '_ {
        move |source| Self::Parquet {
            path: path.to_path_buf(),
            source,
        }
    }

    /// An Arrow reader's error about `path`, for `map_err`.
    pub(crate) fn arrow(
        path: &std::path::Path,
    ) -> impl FnOnce(arrow_schema::ArrowError) -> Self + '_ {
        move |source| Self::Arrow {
            path: path.to_path_buf(),
            source,
        }
    }

    /// An I/O error about `path`, for `map_err`.
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        action: &'static str,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io {
            path,
            action,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_name_one_variant_each() {
        dsrt_atlas_test_runner::assert_one_kind_per_variant(
            &PackError::examples(),
            PackError::kind,
        );
    }
}
