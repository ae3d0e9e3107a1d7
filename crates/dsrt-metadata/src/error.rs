use dsrt_schema::ColumnType;
use thiserror::Error;

/// Why metadata.arrow cannot be written or used. The reader adds the cache path.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// Reading or mapping the file failed.
    #[error("metadata.arrow: {0}")]
    Io(#[from] std::io::Error),
    /// Not an Arrow IPC file, or a malformed one.
    #[error("metadata.arrow is not a valid Arrow IPC file: {0}")]
    Arrow(String),
    /// A column's Arrow type is none of the four the format allows.
    #[error("metadata.arrow column {column:?} has Arrow type {arrow_type}, which the format does not allow")]
    UnsupportedType {
        /// Column name.
        column: String,
        /// The Arrow type found.
        arrow_type: String,
    },
    /// The Arrow schema differs from the manifest's `metadata_schema`.
    #[error("metadata.arrow schema differs from the manifest at column {position}: {detail}")]
    SchemaMismatch {
        /// Zero-based column position.
        position: usize,
        /// What differs.
        detail: String,
    },
    /// A value handed to the writer does not match its column type.
    #[error("metadata column {column:?} expects {expected}, got {found}")]
    ValueType {
        /// Column name.
        column: String,
        /// The column's type.
        expected: ColumnType,
        /// What was given.
        found: String,
    },
    /// The row count differs from the manifest's sample count.
    #[error("metadata.arrow has {found} rows, the manifest says {expected} samples")]
    RowCount {
        /// Manifest sample count.
        expected: u64,
        /// Rows in the file.
        found: u64,
    },
}

impl From<arrow_schema::ArrowError> for MetadataError {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Self::Arrow(e.to_string())
    }
}
