//! Names Atlas accepts.

use std::fmt;
use thiserror::Error;

/// What a name names, so an error can say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// A dataset name.
    Dataset,
    /// An array (variable) name.
    Array,
    /// An attribute key.
    AttributeKey,
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameKind::Dataset => "dataset name",
            NameKind::Array => "array name",
            NameKind::AttributeKey => "attribute key",
        })
    }
}

/// A name refused by [`validate_name`].
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("invalid {kind} {name:?}: {reason}")]
pub struct NameError {
    /// What the name names.
    pub kind: NameKind,
    /// The name as given.
    pub name: String,
    /// Which rule it broke.
    pub reason: &'static str,
}

/// Checks a name: non-empty, and no leading `_`, which is reserved (`_datasets` is a segment
/// name, so no user array may take it). Any other UTF-8, `/` included, is the user's to choose:
/// array-format accepts every name.
pub fn validate_name(kind: NameKind, name: &str) -> Result<(), NameError> {
    let reason = if name.is_empty() {
        "must not be empty"
    } else if name.starts_with('_') {
        "a leading '_' is reserved"
    } else {
        return Ok(());
    };
    Err(NameError {
        kind,
        name: name.to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_non_empty_and_not_start_with_an_underscore() {
        assert!(validate_name(NameKind::Dataset, "jan_2024").is_ok());
        assert!(validate_name(NameKind::Array, "a/b é").is_ok());
        let err = validate_name(NameKind::Array, "_datasets").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid array name \"_datasets\": a leading '_' is reserved"
        );
        assert_eq!(
            validate_name(NameKind::AttributeKey, "")
                .unwrap_err()
                .reason,
            "must not be empty"
        );
    }
}
