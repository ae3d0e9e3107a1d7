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
    /// A read of an array by its declared type ([`DatasetView::read_data`](crate::DatasetView::read_data))
    /// whose type array-format 0.15.0 stores but cannot read as a typed array.
    #[error(
        "array '{array}' holds {dtype}, which array-format 0.15.0 cannot read as a typed array"
    )]
    UnsupportedDType {
        /// The array.
        array: String,
        /// Its element type.
        dtype: DType,
    },
    /// A read's start or shape does not fit the array.
    #[error("array '{array}': {reason}")]
    InvalidSelection {
        /// The array.
        array: String,
        /// What does not fit.
        reason: String,
    },
    /// A selection ([`Atlas::select`](crate::Atlas::select)) the collection cannot answer:
    /// an unknown statistic or comparison, a key or array no dataset declares, a value that
    /// cannot compare with what is stored; `condition` names which.
    #[error("select: {condition}: {reason}")]
    InvalidQuery {
        /// The condition at fault: `attrs["key"]` or `where[i] (...)`.
        condition: String,
        /// What is wrong.
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
    /// A growing collection (`docs/format/growing.md`) cannot do what was asked; `path` is its
    /// manifest.
    #[error("{path}: {problem}")]
    Growing {
        /// The manifest object.
        path: String,
        /// What was refused.
        problem: GrowingProblem,
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

/// What a growing collection refused ([`AtlasError::Growing`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrowingProblem {
    /// An open asked for a version the manifest does not have.
    NoSuchVersion {
        /// The version asked for.
        asked: u64,
        /// The latest committed version.
        latest: u64,
    },
    /// An operation that growing collections do not offer yet (it names the operation).
    Unsupported(&'static str),
    /// The manifest gained commits since an appender last checked it; the appender checks
    /// them and tries again (an append's callers never see this).
    ManifestMoved,
    /// An open asked for a tag the collection does not have.
    NoSuchTag(String),
    /// A tag name that is not 1 to 64 of `[0-9a-z_-]`.
    InvalidTagName(String),
    /// A tag of this name exists already (tags are written once).
    TagExists(String),
    /// An open asked for a version whose parts `gc` removed (after a compaction replaced
    /// them); the versions from `oldest_readable` on are readable.
    CollectedByGc {
        /// The version asked for.
        asked: u64,
        /// The oldest version still readable.
        oldest_readable: u64,
    },
}

impl std::fmt::Display for GrowingProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoSuchVersion { asked, latest } => {
                write!(f, "no version {asked}: versions run from 1 to {latest}")
            }
            Self::Unsupported(what) => {
                write!(f, "{what} is not supported on a growing collection yet")
            }
            Self::ManifestMoved => f.write_str("the manifest gained commits since it was read"),
            Self::NoSuchTag(name) => write!(f, "no tag '{name}'"),
            Self::InvalidTagName(name) => write!(
                f,
                "'{name}' is not a tag name: 1 to 64 of lowercase letters, digits, '-' and '_'"
            ),
            Self::TagExists(name) => {
                write!(f, "tag '{name}' exists already (a tag is written once)")
            }
            Self::CollectedByGc {
                asked,
                oldest_readable,
            } => write!(
                f,
                "version {asked} was collected by gc (its parts were compacted and removed); \
                 the oldest readable version is {oldest_readable}"
            ),
        }
    }
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
            Self::Growing { problem, .. } => *problem == GrowingProblem::ManifestMoved,
            Self::NotAnAtlasCollection { .. }
            | Self::UnsupportedVersion { .. }
            | Self::CorruptCollection { .. }
            | Self::DatasetNotFound(_)
            | Self::NoSuchArray(_)
            | Self::ArrayNotFound { .. }
            | Self::TypeMismatch { .. }
            | Self::UnsupportedDType { .. }
            | Self::InvalidSelection { .. }
            | Self::InvalidQuery { .. }
            | Self::Mask { .. } => false,
        }
    }

    /// A stable name of the variant, the same for every message wording: what the bindings
    /// call the error's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotAnAtlasCollection { .. } => "not_an_atlas_collection",
            Self::UnsupportedVersion { .. } => "unsupported_version",
            Self::CorruptCollection { .. } => "corrupt_collection",
            Self::DatasetNotFound(_) => "dataset_not_found",
            Self::NoSuchArray(_) => "no_such_array",
            Self::ArrayNotFound { .. } => "array_not_found",
            Self::TypeMismatch { .. } => "type_mismatch",
            Self::UnsupportedDType { .. } => "unsupported_dtype",
            Self::InvalidSelection { .. } => "invalid_selection",
            Self::InvalidQuery { .. } => "invalid_query",
            Self::Mask { .. } => "mask",
            Self::DeleteConflict { .. } => "delete_conflict",
            Self::Growing { .. } => "growing",
            Self::Segment { .. } => "segment",
            Self::Store(_) => "store",
            Self::Io { .. } => "io",
        }
    }

    /// What is wrong, without what [`path`](Self::path), [`field`](Self::field),
    /// [`dataset`](Self::dataset) and [`array`](Self::array) already name where the message
    /// leads with them: a caller that shows those beside it (an exception's attributes) does
    /// not repeat them. The variants whose message names nothing else keep it whole.
    pub fn reason(&self) -> String {
        match self {
            Self::NotAnAtlasCollection { reason, .. }
            | Self::CorruptCollection { reason, .. }
            | Self::InvalidSelection { reason, .. }
            | Self::InvalidQuery { reason, .. } => reason.clone(),
            Self::UnsupportedVersion {
                found, expected, ..
            } => format!("format version {found}, this reader knows {expected}"),
            Self::DatasetNotFound(_) => "no live dataset of this name".to_owned(),
            Self::ArrayNotFound { dataset, .. } => {
                format!("dataset '{dataset}' declares no such array")
            }
            Self::Mask { source, .. } => source.to_string(),
            Self::Io { source, .. } => source.to_string(),
            Self::Growing { problem, .. } => problem.to_string(),
            Self::NoSuchArray(_)
            | Self::TypeMismatch { .. }
            | Self::UnsupportedDType { .. }
            | Self::DeleteConflict { .. }
            | Self::Segment { .. }
            | Self::Store(_) => self.to_string(),
        }
    }

    /// The object or file the error is about, which its message starts with: an object of the
    /// store (`prefix/data.atlas`, `prefix/deleted.mask`) or, for [`AtlasError::Io`], a local
    /// file or directory.
    pub fn path(&self) -> Option<&str> {
        match self {
            Self::NotAnAtlasCollection { path, .. }
            | Self::UnsupportedVersion { path, .. }
            | Self::CorruptCollection { path, .. }
            | Self::Mask { path, .. }
            | Self::Growing { path, .. }
            | Self::Io { path, .. } => Some(path),
            Self::DatasetNotFound(_)
            | Self::NoSuchArray(_)
            | Self::ArrayNotFound { .. }
            | Self::TypeMismatch { .. }
            | Self::UnsupportedDType { .. }
            | Self::InvalidSelection { .. }
            | Self::InvalidQuery { .. }
            | Self::DeleteConflict { .. }
            | Self::Segment { .. }
            | Self::Store(_) => None,
        }
    }

    /// The same error with its store object named `name(object)` (the variants that name one:
    /// all that have a [`path`](Self::path) but [`AtlasError::Io`], whose path is a local
    /// file). The store knows an object only by its path inside the store; a caller that opened
    /// the collection at a URL or a directory shows it under that location instead.
    pub fn with_object_named(self, name: impl FnOnce(&str) -> String) -> Self {
        match self {
            Self::NotAnAtlasCollection { path, reason } => Self::NotAnAtlasCollection {
                path: name(&path),
                reason,
            },
            Self::UnsupportedVersion {
                path,
                found,
                expected,
            } => Self::UnsupportedVersion {
                path: name(&path),
                found,
                expected,
            },
            Self::CorruptCollection {
                path,
                field,
                reason,
            } => Self::CorruptCollection {
                path: name(&path),
                field,
                reason,
            },
            Self::Mask { path, source } => Self::Mask {
                path: name(&path),
                source,
            },
            Self::Growing { path, problem } => Self::Growing {
                path: name(&path),
                problem,
            },
            other @ (Self::Io { .. }
            | Self::DatasetNotFound(_)
            | Self::NoSuchArray(_)
            | Self::ArrayNotFound { .. }
            | Self::TypeMismatch { .. }
            | Self::UnsupportedDType { .. }
            | Self::InvalidSelection { .. }
            | Self::InvalidQuery { .. }
            | Self::DeleteConflict { .. }
            | Self::Segment { .. }
            | Self::Store(_)) => other,
        }
    }

    /// The same error with its store object named under `location`, the collection's
    /// location as a caller gave it (a URL or a directory): `prefix/data.atlas` becomes
    /// `<location>/data.atlas` ([`with_object_named`](Self::with_object_named)).
    pub fn named_under(self, location: &str) -> Self {
        self.with_object_named(|path| {
            let name = path.rsplit('/').next().unwrap_or(path);
            format!("{}/{name}", location.trim_end_matches('/'))
        })
    }

    /// The field or region of the collection at fault: the footer field or segment of a
    /// corrupt collection, or the mask object.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::CorruptCollection { field, .. } => Some(field),
            Self::Mask { .. } => Some(atlas_footer::MASK_OBJECT),
            Self::InvalidQuery { condition, .. } => Some(condition),
            Self::NotAnAtlasCollection { .. }
            | Self::UnsupportedVersion { .. }
            | Self::DatasetNotFound(_)
            | Self::NoSuchArray(_)
            | Self::ArrayNotFound { .. }
            | Self::TypeMismatch { .. }
            | Self::UnsupportedDType { .. }
            | Self::InvalidSelection { .. }
            | Self::DeleteConflict { .. }
            | Self::Growing { .. }
            | Self::Segment { .. }
            | Self::Store(_)
            | Self::Io { .. } => None,
        }
    }

    /// The dataset the error is about: one looked up and not found, or the one whose array
    /// was not found.
    pub fn dataset(&self) -> Option<&str> {
        match self {
            Self::DatasetNotFound(dataset) | Self::ArrayNotFound { dataset, .. } => Some(dataset),
            Self::NotAnAtlasCollection { .. }
            | Self::UnsupportedVersion { .. }
            | Self::CorruptCollection { .. }
            | Self::NoSuchArray(_)
            | Self::TypeMismatch { .. }
            | Self::UnsupportedDType { .. }
            | Self::InvalidSelection { .. }
            | Self::InvalidQuery { .. }
            | Self::Mask { .. }
            | Self::DeleteConflict { .. }
            | Self::Growing { .. }
            | Self::Segment { .. }
            | Self::Store(_)
            | Self::Io { .. } => None,
        }
    }

    /// The array the error is about: one looked up and not found, or one a read was refused.
    pub fn array(&self) -> Option<&str> {
        match self {
            Self::NoSuchArray(array)
            | Self::ArrayNotFound { array, .. }
            | Self::TypeMismatch { array, .. }
            | Self::UnsupportedDType { array, .. }
            | Self::InvalidSelection { array, .. } => Some(array),
            Self::InvalidQuery { .. }
            | Self::NotAnAtlasCollection { .. }
            | Self::UnsupportedVersion { .. }
            | Self::CorruptCollection { .. }
            | Self::DatasetNotFound(_)
            | Self::Mask { .. }
            | Self::DeleteConflict { .. }
            | Self::Growing { .. }
            | Self::Segment { .. }
            | Self::Store(_)
            | Self::Io { .. } => None,
        }
    }

    /// One error of every variant, for tests that check each is reported (the bindings'
    /// exception classes). Adding a variant fails to compile here until it is listed. `Store`,
    /// `Segment` and `Io` come twice, one whose retry may help and one whose retry cannot.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn examples() -> Vec<Self> {
        let container = || "runs/data.atlas".to_owned();
        let all = vec![
            Self::NotAnAtlasCollection {
                path: container(),
                reason: "no data.atlas".to_owned(),
            },
            Self::UnsupportedVersion {
                path: container(),
                found: 9,
                expected: 8,
            },
            Self::CorruptCollection {
                path: container(),
                field: "trailer.footer_size".to_owned(),
                reason: "0 is smaller than a footer".to_owned(),
            },
            Self::DatasetNotFound("jan".to_owned()),
            Self::NoSuchArray("t2m".to_owned()),
            Self::ArrayNotFound {
                dataset: "jan".to_owned(),
                array: "t2m".to_owned(),
            },
            Self::TypeMismatch {
                array: "t2m".to_owned(),
                declared: DType::Float32,
                requested: DType::Int64,
            },
            Self::UnsupportedDType {
                array: "mask".to_owned(),
                dtype: DType::Bool,
            },
            Self::InvalidSelection {
                array: "t2m".to_owned(),
                reason: "start 9 is past the end of axis 0 (length 4)".to_owned(),
            },
            Self::InvalidQuery {
                condition: "attrs[\"membr\"]".to_owned(),
                reason: "no dataset declares an attribute \"membr\"".to_owned(),
            },
            Self::Mask {
                path: "runs/deleted.mask".to_owned(),
                source: atlas_mask::MaskError::NotAMask("wrong magic".to_owned()),
            },
            Self::DeleteConflict { attempts: 8 },
            Self::Growing {
                path: "runs/collection.manifest".to_owned(),
                problem: GrowingProblem::NoSuchVersion {
                    asked: 9,
                    latest: 4,
                },
            },
            Self::Segment {
                variable: "t2m".to_owned(),
                source: array_format::Error::Storage("connection reset".to_owned()),
            },
            Self::Segment {
                variable: "t2m".to_owned(),
                source: array_format::Error::Io(std::io::ErrorKind::PermissionDenied.into()),
            },
            Self::Store(object_store::Error::Generic {
                store: "S3",
                source: "connection reset".into(),
            }),
            Self::Store(object_store::Error::NotFound {
                path: container(),
                source: "404".into(),
            }),
            Self::Io {
                path: "/data/runs".to_owned(),
                source: std::io::ErrorKind::TimedOut.into(),
            },
            Self::Io {
                path: "/data/runs".to_owned(),
                source: std::io::ErrorKind::PermissionDenied.into(),
            },
        ];
        for error in &all {
            match error {
                Self::NotAnAtlasCollection { .. }
                | Self::UnsupportedVersion { .. }
                | Self::CorruptCollection { .. }
                | Self::DatasetNotFound(_)
                | Self::NoSuchArray(_)
                | Self::ArrayNotFound { .. }
                | Self::TypeMismatch { .. }
                | Self::UnsupportedDType { .. }
                | Self::InvalidSelection { .. }
                | Self::InvalidQuery { .. }
                | Self::Mask { .. }
                | Self::DeleteConflict { .. }
                | Self::Growing { .. }
                | Self::Segment { .. }
                | Self::Store(_)
                | Self::Io { .. } => {}
            }
        }
        all
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_name_one_variant_each() {
        dsrt_atlas_test_runner::assert_one_kind_per_variant(
            &AtlasError::examples(),
            AtlasError::kind,
        );
    }

    #[test]
    fn a_message_with_a_path_is_the_path_then_the_rest_and_the_reason_leaves_the_path_out() {
        for error in AtlasError::examples() {
            let message = error.to_string();
            let reason = error.reason();
            assert!(!reason.is_empty(), "{error:?}");
            if let Some(path) = error.path() {
                assert!(message.starts_with(&format!("{path}: ")), "{message}");
                assert!(!reason.contains(path), "{reason}");
            }
        }
    }

    #[test]
    fn only_the_store_the_transport_and_lost_delete_races_are_retryable() {
        let retryable: Vec<String> = AtlasError::examples()
            .into_iter()
            .filter(AtlasError::is_retryable)
            .map(|e| format!("{}: {e}", e.kind()))
            .collect();
        assert_eq!(
            retryable,
            [
                "delete_conflict: delete gave up after 8 conflicting attempts",
                "segment: segment 't2m': storage error: connection reset",
                "store: store: Generic S3 error: connection reset",
                "io: /data/runs: timed out",
            ],
        );
    }

    #[test]
    fn an_object_is_named_under_the_location_as_given() {
        let corrupt = AtlasError::corrupt("runs/2024/data.atlas", "trailer", "short");
        let named = corrupt.named_under("s3://bucket/runs/2024/");
        assert_eq!(named.path(), Some("s3://bucket/runs/2024/data.atlas"));
        let io = AtlasError::Io {
            path: "/data/runs".to_owned(),
            source: std::io::ErrorKind::TimedOut.into(),
        };
        assert_eq!(io.named_under("elsewhere").path(), Some("/data/runs"));
    }

    #[test]
    fn a_store_object_is_renamed_and_a_local_file_is_not() {
        for error in AtlasError::examples() {
            let local = matches!(error, AtlasError::Io { .. });
            let before = error.path().map(str::to_owned);
            let renamed = error.with_object_named(|p| format!("s3://bucket/{p}"));
            match (before, renamed.path()) {
                (Some(before), Some(after)) if local => assert_eq!(before, after),
                (Some(before), Some(after)) => {
                    assert_eq!(after, format!("s3://bucket/{before}"));
                    assert!(renamed.to_string().starts_with(after));
                }
                (None, None) => {}
                other => panic!("{other:?}"),
            }
        }
    }
}
