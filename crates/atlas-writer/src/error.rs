//! Why a write was refused or failed.

use atlas_model::NameError;
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
