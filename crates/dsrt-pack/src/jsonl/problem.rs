//! What is wrong with one line of JSONL input, naming the input, the line and the field.

use dsrt_schema::ColumnType;
use std::path::PathBuf;
use thiserror::Error;

/// What is wrong with one JSONL line (a [`PackError::Input`](crate::PackError::Input) names the
/// input and the line).
#[derive(Debug, Error)]
pub(crate) enum InputProblem {
    /// The input could not be read at this line.
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
    /// Not a JSON object (or invalid UTF-8, or a repeated key).
    #[error("not a JSON object: {0}")]
    Json(String),
    /// The payload field is absent.
    #[error("payload field {field:?} is missing")]
    PayloadMissing {
        /// The payload field.
        field: String,
    },
    /// The payload field is not a string.
    #[error("payload field {field:?} is {found}, expected a string")]
    PayloadNotString {
        /// The payload field.
        field: String,
        /// What it is, e.g. "null" or "a number".
        found: &'static str,
    },
    /// The token field of a token cache is not an array of integers.
    #[error("token field {field:?} {reason}")]
    Tokens {
        /// The token field.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// Inline base64 does not decode.
    #[error("payload field {field:?} is not valid base64: {reason}")]
    PayloadBase64 {
        /// The payload field.
        field: String,
        /// The decoder's message.
        reason: String,
    },
    /// The file a payload path names cannot be read.
    #[error("payload field {field:?}: cannot read {}: {source}", path.display())]
    PayloadFile {
        /// The payload field.
        field: String,
        /// The resolved path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A metadata value is an array or an object.
    #[error("field {field:?} is {found}; metadata values are booleans, numbers, strings or null")]
    Nested {
        /// The field.
        field: String,
        /// "an array" or "an object".
        found: &'static str,
    },
    /// An integer beyond the int64 range.
    #[error("field {field:?} holds {value}, outside the int64 range")]
    IntOutOfRange {
        /// The field.
        field: String,
        /// The number as written.
        value: String,
    },
    /// A value whose type differs from the one earlier lines gave the column.
    #[error("field {field:?} is {found}, but from line {first_line} on it held {established} values; a column holds one type")]
    TypeConflict {
        /// The field.
        field: String,
        /// What this line holds.
        found: &'static str,
        /// The type inferred so far.
        established: ColumnType,
        /// The line that established it.
        first_line: u64,
    },
    /// A field the schema given does not list.
    #[error("field {field:?} is not a column of the schema")]
    NotInSchema {
        /// The field.
        field: String,
    },
    /// A value that does not fit its column type in the schema given.
    #[error("field {field:?} is {found}, the schema says {expected}")]
    WrongType {
        /// The field.
        field: String,
        /// The column's type.
        expected: ColumnType,
        /// What this line holds.
        found: &'static str,
    },
    /// Null or missing in a column the schema given declares non-nullable.
    #[error("field {field:?} is {found}, but the schema's column is not nullable")]
    NullNotAllowed {
        /// The field.
        field: String,
        /// "null" or "missing".
        found: &'static str,
    },
}

/// How messages name a JSON value's kind.
pub(crate) fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(n) if n.is_f64() => "a float",
        serde_json::Value::Number(_) => "an integer",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
