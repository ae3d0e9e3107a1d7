//! Why a container's framing or footer was refused.

use thiserror::Error;

/// A container or footer that cannot be used.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FooterError {
    /// The object does not carry the Atlas magic where it must.
    #[error("not an Atlas collection: {reason}")]
    NotAnAtlasCollection {
        /// What was found instead.
        reason: String,
    },
    /// The magic matches, the version is one this reader does not know.
    #[error("unsupported Atlas format version {found} (this reader knows {expected})")]
    UnsupportedVersion {
        /// Version found in the container.
        found: u32,
        /// Version this reader supports.
        expected: u32,
    },
    /// The framing or the footer is damaged; `field` names where.
    #[error("corrupt Atlas collection: {field}: {reason}")]
    CorruptCollection {
        /// The field or region at fault, e.g. `schema_pool[2].arrays[0].dtype`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl FooterError {
    /// A [`FooterError::CorruptCollection`] naming `field`.
    pub fn corrupt(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::CorruptCollection {
            field: field.into(),
            reason: reason.into(),
        }
    }
}
