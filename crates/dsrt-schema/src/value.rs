use crate::ColumnType;
use std::fmt;

/// An owned metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// No value (only in nullable columns).
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed 64-bit integer.
    Int64(i64),
    /// A 64-bit float; must be finite to be written.
    Float64(f64),
    /// A UTF-8 string.
    Utf8(String),
}

/// A borrowed metadata value, as readers hand them out without copying.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    /// No value.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed 64-bit integer.
    Int64(i64),
    /// A 64-bit float.
    Float64(f64),
    /// A UTF-8 string.
    Utf8(&'a str),
}

impl Value {
    /// Borrows this value.
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Self::Null => ValueRef::Null,
            Self::Bool(v) => ValueRef::Bool(*v),
            Self::Int64(v) => ValueRef::Int64(*v),
            Self::Float64(v) => ValueRef::Float64(*v),
            Self::Utf8(v) => ValueRef::Utf8(v),
        }
    }
}

impl ValueRef<'_> {
    /// Copies this value into an owned one.
    pub fn to_owned(&self) -> Value {
        match *self {
            Self::Null => Value::Null,
            Self::Bool(v) => Value::Bool(v),
            Self::Int64(v) => Value::Int64(v),
            Self::Float64(v) => Value::Float64(v),
            Self::Utf8(v) => Value::Utf8(v.to_owned()),
        }
    }

    /// The column type this value belongs to, `None` for null.
    pub fn column_type(&self) -> Option<ColumnType> {
        match self {
            Self::Null => None,
            Self::Bool(_) => Some(ColumnType::Bool),
            Self::Int64(_) => Some(ColumnType::Int64),
            Self::Float64(_) => Some(ColumnType::Float64),
            Self::Utf8(_) => Some(ColumnType::Utf8),
        }
    }

    /// The format's equality: same variant and value, floats compared by bit pattern.
    ///
    /// Bit equality makes `-0.0` differ from `0.0` and a NaN equal to itself, which is what
    /// "the embedded copy is the same bytes of data" means.
    pub fn same_as(&self, other: &ValueRef<'_>) -> bool {
        match (self, other) {
            (Self::Float64(a), ValueRef::Float64(b)) => a.to_bits() == b.to_bits(),
            _ => self == other,
        }
    }
}

impl fmt::Display for ValueRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Null => f.write_str("null"),
            Self::Bool(v) => write!(f, "{v}"),
            Self::Int64(v) => write!(f, "{v}"),
            Self::Float64(v) => write!(f, "{v:?}"),
            Self::Utf8(v) => write!(f, "{v:?}"),
        }
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Self::Int64(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Self::Float64(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Self::Utf8(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Self::Utf8(v)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;

    #[test]
    fn floats_compare_by_bits() {
        assert!(!ValueRef::Float64(0.0).same_as(&ValueRef::Float64(-0.0)));
        assert!(ValueRef::Float64(f64::NAN).same_as(&ValueRef::Float64(f64::NAN)));
        assert!(!ValueRef::Int64(1).same_as(&ValueRef::Float64(1.0)));
        assert!(ValueRef::Utf8("é").same_as(&Value::from("é").as_ref()));
    }
}
