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

impl NameKind {
    /// What the name names, as messages say it (and the bindings' `kind` of a name error).
    pub fn as_str(self) -> &'static str {
        match self {
            NameKind::Dataset => "dataset name",
            NameKind::Array => "array name",
            NameKind::AttributeKey => "attribute key",
        }
    }
}

/// From the word a caller names the kind by: `dataset`, `array` or `attribute` (the Python
/// package's `check_name(kind, name)`).
impl std::str::FromStr for NameKind {
    type Err = UnknownNameKind;

    fn from_str(word: &str) -> Result<Self, UnknownNameKind> {
        match word {
            "dataset" => Ok(NameKind::Dataset),
            "array" => Ok(NameKind::Array),
            "attribute" => Ok(NameKind::AttributeKey),
            other => Err(UnknownNameKind(other.to_owned())),
        }
    }
}

/// A kind of name that is not `dataset`, `array` or `attribute`.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("kind must be 'dataset', 'array' or 'attribute', not {0:?}")]
pub struct UnknownNameKind(pub String);

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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

impl NameError {
    /// One error for every kind of name, for tests that check each is reported (the bindings'
    /// exception classes). Adding a [`NameKind`] fails to compile here until it is listed.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn examples() -> Vec<Self> {
        let all = vec![
            Self {
                kind: NameKind::Dataset,
                name: String::new(),
                reason: "must not be empty",
            },
            Self {
                kind: NameKind::Array,
                name: "_datasets".to_owned(),
                reason: "a leading '_' is reserved",
            },
            Self {
                kind: NameKind::AttributeKey,
                name: String::new(),
                reason: "must not be empty",
            },
        ];
        for error in &all {
            match error.kind {
                NameKind::Dataset | NameKind::Array | NameKind::AttributeKey => {}
            }
        }
        all
    }
}

/// Checks a name: non-empty, and, for a dataset or array name, no leading `_`, which is reserved
/// (`_datasets` is a segment name, so no user array may take it). An attribute key may start
/// with `_`: the format reserves the prefix for names only, and NetCDF's conventions give it to
/// attributes (`_FillValue`, `_CoordinateAxisType`, `_ChunkSizes`), which must keep their
/// names. Any other UTF-8, `/` included, is the user's to choose: array-format accepts every
/// name.
pub fn validate_name(kind: NameKind, name: &str) -> Result<(), NameError> {
    let reason = if name.is_empty() {
        "must not be empty"
    } else if name.starts_with('_') && kind != NameKind::AttributeKey {
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

    #[test]
    fn a_kind_parses_from_its_word() {
        assert_eq!("attribute".parse(), Ok(NameKind::AttributeKey));
        assert_eq!("array".parse(), Ok(NameKind::Array));
        assert_eq!("dataset".parse(), Ok(NameKind::Dataset));
        let unknown = "key".parse::<NameKind>().unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "kind must be 'dataset', 'array' or 'attribute', not \"key\""
        );
    }

    #[test]
    fn attribute_keys_may_start_with_an_underscore_names_may_not() {
        for key in [
            "_FillValue",
            "_CoordinateAxisType",
            "_ChunkSizes",
            "_",
            "__x",
        ] {
            assert_eq!(validate_name(NameKind::AttributeKey, key), Ok(()), "{key}");
            for kind in [NameKind::Dataset, NameKind::Array] {
                let err = validate_name(kind, key).unwrap_err();
                assert_eq!(err.reason, "a leading '_' is reserved", "{kind} {key}");
            }
        }
    }

    #[test]
    fn the_examples_name_each_kind_once() {
        let kinds: Vec<&str> = NameError::examples()
            .iter()
            .map(|e| e.kind.as_str())
            .collect();
        let mut unique = kinds.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), kinds.len(), "{kinds:?}");
        for error in NameError::examples() {
            assert_eq!(validate_name(error.kind, &error.name), Err(error));
        }
    }
}
