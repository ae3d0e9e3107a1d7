//! Everything a read or a delete can fail with.

use atlas_footer::{DType, FooterError};
use object_access::{is_retryable_io_error, is_retryable_store_error};
use thiserror::Error;

/// A read or delete that failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AtlasError {
    /// The object at the prefix is not an Atlas container (or there is none).
    #[error("{path}: not an Atlas collection: {reason}")]
    NotAnAtlasCollection {
        /// The container path.
        path: String,
        /// What was found.
        reason: String,
    },
    /// An Atlas container of a version this reader does not know.
    #[error("{path}: unsupported Atlas format version {found} (this reader knows {expected})")]
    UnsupportedVersion {
        /// The container path.
        path: String,
        /// The version found.
        found: u32,
        /// The version supported.
        expected: u32,
    },
    /// The container, a segment or the mask is damaged; `field` names where.
    #[error("{path}: corrupt Atlas collection: {field}: {reason}")]
    CorruptCollection {
        /// The object at fault.
        path: String,
        /// The field or region at fault.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// No live dataset has this name.
    #[error("no dataset named '{0}'")]
    DatasetNotFound(String),
    /// No dataset of the collection declares an array of this name.
    #[error("no dataset declares an array named '{0}'")]
    NoSuchArray(String),
    /// The dataset declares no array of this name.
    #[error("dataset '{dataset}' has no array '{array}'")]
    ArrayNotFound {
        /// The dataset.
        dataset: String,
        /// The array asked for.
        array: String,
    },
    /// A read asked for another element type than the array holds.
    #[error("array '{array}' holds {declared}, the read asked for {requested}")]
    TypeMismatch {
        /// The array.
        array: String,
        /// Its element type.
        declared: DType,
        /// The type asked for.
        requested: DType,
    },
    /// A read's start or shape does not fit the array.
    #[error("array '{array}': {reason}")]
    InvalidSelection {
        /// The array.
        array: String,
        /// What does not fit.
        reason: String,
    },
    /// `deleted.mask` holds something other than a mask.
    #[error("{path}: {source}")]
    Mask {
        /// The mask path.
        path: String,
        /// Why it was refused.
        #[source]
        source: atlas_mask::MaskError,
    },
    /// A delete kept conflicting with other deleters.
    #[error("delete gave up after {attempts} conflicting attempts")]
    DeleteConflict {
        /// Attempts made.
        attempts: u32,
    },
    /// A segment read failed in array-format.
    #[error("segment '{variable}': {source}")]
    Segment {
        /// The variable (segment) name.
        variable: String,
        /// array-format's error.
        #[source]
        source: array_format::Error,
    },
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] object_store::Error),
    /// A local file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
}

impl AtlasError {
    /// Whether the same call may succeed if made again: the store or the transport failed
    /// (a connection refused or cut, a timeout, a server error), or a delete kept losing races.
    ///
    /// Not retryable: everything the bytes or the request decide, so a retry would only repeat
    /// it (`NotAnAtlasCollection`, `UnsupportedVersion`, `CorruptCollection`, `Mask`, lookups,
    /// type and selection errors), and store answers that are final (not found, refused
    /// precondition, permission, configuration, unsupported operation).
    ///
    /// A segment read reports its store failure through array-format, which keeps only the
    /// message (`array_format::Error::Storage`), so every such failure counts as retryable.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Store(e) => is_retryable_store_error(e),
            Self::Segment { source, .. } => match source {
                array_format::Error::Storage(_) => true,
                array_format::Error::Io(e) => is_retryable_io_error(e),
                _ => false,
            },
            Self::Io { source, .. } => is_retryable_io_error(source),
            Self::DeleteConflict { .. } => true,
            Self::NotAnAtlasCollection { .. }
            | Self::UnsupportedVersion { .. }
            | Self::CorruptCollection { .. }
            | Self::DatasetNotFound(_)
            | Self::NoSuchArray(_)
            | Self::ArrayNotFound { .. }
            | Self::TypeMismatch { .. }
            | Self::InvalidSelection { .. }
            | Self::Mask { .. } => false,
        }
    }

    pub(crate) fn from_footer(path: &str, error: FooterError) -> Self {
        let path = path.to_owned();
        match error {
            FooterError::NotAnAtlasCollection { reason } => {
                Self::NotAnAtlasCollection { path, reason }
            }
            FooterError::UnsupportedVersion { found, expected } => Self::UnsupportedVersion {
                path,
                found,
                expected,
            },
            FooterError::CorruptCollection { field, reason } => Self::CorruptCollection {
                path,
                field,
                reason,
            },
            // A refusal this reader does not know by name is still a refusal of the bytes.
            other => Self::CorruptCollection {
                path,
                field: "container".into(),
                reason: other.to_string(),
            },
        }
    }

    pub(crate) fn corrupt(
        path: impl Into<String>,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::CorruptCollection {
            path: path.into(),
            field: field.into(),
            reason: reason.into(),
        }
    }
}
