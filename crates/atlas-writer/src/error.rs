//! Why a write was refused or failed.

use atlas_model::{NameError, NameKind};
use object_access::{is_retryable_io_error, is_retryable_store_error};
use thiserror::Error;

/// A write that was refused or failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A name broke the naming rule.
    #[error(transparent)]
    InvalidName(#[from] NameError),
    /// A dataset of this name was already written.
    #[error("dataset '{0}' was already written to this collection")]
    DuplicateDataset(String),
    /// Two arrays of one dataset share a name.
    #[error("dataset '{dataset}' declares array '{array}' twice")]
    DuplicateArray {
        /// The dataset.
        dataset: String,
        /// The repeated array name.
        array: String,
    },
    /// One attribute key set twice on the same dataset or array.
    #[error("attribute '{key}' is set twice on {owner}")]
    DuplicateAttribute {
        /// `dataset 'x'` or `array 'y' of dataset 'x'`.
        owner: String,
        /// The repeated key.
        key: String,
    },
    /// An array's layout does not fit its shape.
    #[error("array '{array}' of dataset '{dataset}': {reason}")]
    InvalidLayout {
        /// The dataset.
        dataset: String,
        /// The array.
        array: String,
        /// What does not fit.
        reason: String,
    },
    /// array-format refused or failed a segment operation.
    #[error("segment '{variable}': {source}")]
    Segment {
        /// The variable (segment) name.
        variable: String,
        /// array-format's error.
        #[source]
        source: array_format::Error,
    },
    /// The footer builder refused an addition.
    #[error(transparent)]
    Footer(#[from] atlas_footer::builder::BuildError),
    /// The store failed.
    #[error("store: {0}")]
    Store(#[from] object_store::Error),
    /// An earlier write failed half way, so the collection would be inconsistent.
    #[error("the writer stopped after an earlier failure: {0}")]
    Poisoned(String),
}

impl WriteError {
    /// A stable name of the variant, the same for every message wording: what the bindings
    /// call the error's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InvalidName(_) => "invalid_name",
            Self::DuplicateDataset(_) => "duplicate_dataset",
            Self::DuplicateArray { .. } => "duplicate_array",
            Self::DuplicateAttribute { .. } => "duplicate_attribute",
            Self::InvalidLayout { .. } => "invalid_layout",
            Self::Segment { .. } => "segment",
            Self::Footer(_) => "footer",
            Self::Store(_) => "store",
            Self::Poisoned(_) => "poisoned",
        }
    }

    /// What is wrong, without what [`name`](Self::name), [`dataset`](Self::dataset) and
    /// [`array`](Self::array) already name: a caller that shows those beside it (an
    /// exception's attributes) does not repeat them. The variants whose message names nothing
    /// else keep it whole; a store failure is the store's message.
    pub fn reason(&self) -> String {
        match self {
            Self::InvalidName(error) => error.reason.to_owned(),
            Self::DuplicateDataset(_) => "already written to this collection".to_owned(),
            Self::DuplicateArray { dataset, .. } => {
                format!("declared twice in dataset '{dataset}'")
            }
            Self::DuplicateAttribute { owner, .. } => format!("set twice on {owner}"),
            Self::InvalidLayout { reason, .. } => reason.clone(),
            Self::Store(error) => error.to_string(),
            Self::Segment { .. } | Self::Footer(_) | Self::Poisoned(_) => self.to_string(),
        }
    }

    /// The name a naming error is about, and what it names: one that broke the naming rule or
    /// was given twice.
    pub fn name(&self) -> Option<(NameKind, &str)> {
        match self {
            Self::InvalidName(error) => Some((error.kind, &error.name)),
            Self::DuplicateDataset(dataset) => Some((NameKind::Dataset, dataset)),
            Self::DuplicateArray { array, .. } => Some((NameKind::Array, array)),
            Self::DuplicateAttribute { key, .. } => Some((NameKind::AttributeKey, key)),
            Self::InvalidLayout { .. }
            | Self::Segment { .. }
            | Self::Footer(_)
            | Self::Store(_)
            | Self::Poisoned(_) => None,
        }
    }

    /// The dataset the error is about: one written twice, or the one an array belongs to.
    pub fn dataset(&self) -> Option<&str> {
        match self {
            Self::DuplicateDataset(dataset)
            | Self::DuplicateArray { dataset, .. }
            | Self::InvalidLayout { dataset, .. } => Some(dataset),
            Self::InvalidName(_)
            | Self::DuplicateAttribute { .. }
            | Self::Segment { .. }
            | Self::Footer(_)
            | Self::Store(_)
            | Self::Poisoned(_) => None,
        }
    }

    /// The array the error is about: one declared twice, or one whose layout does not fit.
    pub fn array(&self) -> Option<&str> {
        match self {
            Self::DuplicateArray { array, .. } | Self::InvalidLayout { array, .. } => Some(array),
            Self::InvalidName(_)
            | Self::DuplicateDataset(_)
            | Self::DuplicateAttribute { .. }
            | Self::Segment { .. }
            | Self::Footer(_)
            | Self::Store(_)
            | Self::Poisoned(_) => None,
        }
    }

    /// Whether writing the collection again may succeed: the store or the transport failed.
    /// A segment reports its store failure through array-format, which keeps only the message
    /// (`array_format::Error::Storage`), so every such failure counts as retryable, as the
    /// reader counts it. A writer that failed is stopped ([`WriteError::Poisoned`]): the retry
    /// is of the whole write, with a new writer.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Store(error) => is_retryable_store_error(error),
            Self::Segment { source, .. } => match source {
                array_format::Error::Storage(_) => true,
                array_format::Error::Io(error) => is_retryable_io_error(error),
                _ => false,
            },
            Self::InvalidName(_)
            | Self::DuplicateDataset(_)
            | Self::DuplicateArray { .. }
            | Self::DuplicateAttribute { .. }
            | Self::InvalidLayout { .. }
            | Self::Footer(_)
            | Self::Poisoned(_) => false,
        }
    }

    /// One error of every variant, for tests that check each is reported (the bindings'
    /// exception classes). Adding a variant fails to compile here until it is listed. `Store`
    /// and `Segment` come twice, one whose retry may help and one whose retry cannot.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn examples() -> Vec<Self> {
        let all = vec![
            Self::InvalidName(NameError {
                kind: NameKind::Array,
                name: "_datasets".to_owned(),
                reason: "a leading '_' is reserved",
            }),
            Self::DuplicateDataset("jan".to_owned()),
            Self::DuplicateArray {
                dataset: "jan".to_owned(),
                array: "t2m".to_owned(),
            },
            Self::DuplicateAttribute {
                owner: "dataset 'jan'".to_owned(),
                key: "units".to_owned(),
            },
            Self::InvalidLayout {
                dataset: "jan".to_owned(),
                array: "t2m".to_owned(),
                reason: "2 dimension names for a 3-dimensional shape".to_owned(),
            },
            Self::Segment {
                variable: "t2m".to_owned(),
                source: array_format::Error::Storage("connection reset".to_owned()),
            },
            Self::Segment {
                variable: "t2m".to_owned(),
                source: array_format::Error::Codec("zstd refused the block".to_owned()),
            },
            Self::Footer(atlas_footer::builder::BuildError::PoolFull("string")),
            Self::Store(object_store::Error::Generic {
                store: "S3",
                source: "connection reset".into(),
            }),
            Self::Store(object_store::Error::PermissionDenied {
                path: "runs/data.atlas".to_owned(),
                source: "403".into(),
            }),
            Self::Poisoned("segment 't2m': I/O error: no space left on device".to_owned()),
        ];
        for error in &all {
            match error {
                Self::InvalidName(_)
                | Self::DuplicateDataset(_)
                | Self::DuplicateArray { .. }
                | Self::DuplicateAttribute { .. }
                | Self::InvalidLayout { .. }
                | Self::Segment { .. }
                | Self::Footer(_)
                | Self::Store(_)
                | Self::Poisoned(_) => {}
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_name_one_variant_each() {
        dsrt_atlas_test_runner::assert_one_kind_per_variant(
            &WriteError::examples(),
            WriteError::kind,
        );
    }

    #[test]
    fn a_reason_leaves_out_the_name_it_is_about() {
        for error in WriteError::examples() {
            let reason = error.reason();
            assert!(!reason.is_empty(), "{error:?}");
            if let Some((_, name)) = error.name() {
                assert!(!reason.contains(&format!("'{name}'")), "{reason}");
            }
        }
    }

    #[test]
    fn only_the_store_and_the_transport_are_retryable() {
        let retryable: Vec<String> = WriteError::examples()
            .into_iter()
            .filter(WriteError::is_retryable)
            .map(|e| format!("{}: {e}", e.kind()))
            .collect();
        assert_eq!(
            retryable,
            [
                "segment: segment 't2m': storage error: connection reset",
                "store: store: Generic S3 error: connection reset",
            ],
        );
    }
}
