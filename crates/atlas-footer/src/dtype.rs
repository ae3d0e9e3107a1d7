//! Element and attribute types as the footer's dtype pool stores them.
//!
//! [`DType`] mirrors array-format 0.15.0's `DType` variant for variant, so a segment's dtype and
//! the footer's compare one to one. Wire form (rmp-serde's default enum encoding): a unit
//! variant is the msgpack string of its name (`"Float32"` is `a7 46 6c 6f 61 74 33 32`); a
//! struct variant is a one-entry map from its name to the array of its fields
//! (`{"List": [child]}`, `{"FixedSizeList": [child, size]}`). Names, not indices, so reordering
//! the Rust enum cannot change the bytes.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The type of an array's elements, or of an attribute's value.
///
/// An attribute list (e.g. `Int32List`) is recorded as `List { child: Int32 }`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DType {
    /// 1-byte boolean.
    Bool,
    /// Signed 8-bit integer.
    Int8,
    /// Signed 16-bit integer.
    Int16,
    /// Signed 32-bit integer.
    Int32,
    /// Signed 64-bit integer.
    Int64,
    /// Unsigned 8-bit integer.
    UInt8,
    /// Unsigned 16-bit integer.
    UInt16,
    /// Unsigned 32-bit integer.
    UInt32,
    /// Unsigned 64-bit integer.
    UInt64,
    /// IEEE 754 single precision.
    Float32,
    /// IEEE 754 double precision.
    Float64,
    /// Variable-length UTF-8.
    String,
    /// Variable-length bytes.
    Binary,
    /// A list of exactly `size` children per element.
    FixedSizeList {
        /// Type of each child.
        child: Box<DType>,
        /// Children per element.
        size: u32,
    },
    /// A list of any length per element.
    List {
        /// Type of each child.
        child: Box<DType>,
    },
    /// Nanoseconds since the Unix epoch, stored as `i64`.
    TimestampNs,
}

impl DType {
    /// Whether min and max statistics exist for this type (lists have no order).
    pub fn is_ordered(&self) -> bool {
        !matches!(self, DType::FixedSizeList { .. } | DType::List { .. })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DType::FixedSizeList { child, size } => write!(f, "FixedSizeList<{child}; {size}>"),
            DType::List { child } => write!(f, "List<{child}>"),
            other => fmt::Debug::fmt(other, f),
        }
    }
}

/// The codec the writer configured for data blocks. Informational only: every block of every
/// segment records its own codec, so a reader never needs this to decode.
///
/// Wire form: the msgpack string of the variant name (`"None"`, `"Lz4"`, `"Zstd"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Codec {
    /// Blocks stored as they are.
    None,
    /// LZ4 blocks.
    Lz4,
    /// zstd blocks.
    #[default]
    Zstd,
}

impl fmt::Display for Codec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl DType {
    /// The lowercase name of an element type (`int8`, `uint16`, `float32`, `timestamp_ns`,
    /// `string`, `binary`, `bool`), as NumPy-facing callers spell dtypes (the Python
    /// package); a list type's is its [`Display`](fmt::Display) form.
    pub fn name(&self) -> String {
        let scalar = match self {
            DType::Bool => "bool",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::UInt8 => "uint8",
            DType::UInt16 => "uint16",
            DType::UInt32 => "uint32",
            DType::UInt64 => "uint64",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::String => "string",
            DType::Binary => "binary",
            DType::TimestampNs => "timestamp_ns",
            DType::FixedSizeList { .. } | DType::List { .. } => return self.to_string(),
        };
        scalar.to_owned()
    }
}

/// A codec name that is not one of `zstd`, `lz4` and `none`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCodec(pub String);

impl fmt::Display for UnknownCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "codec must be 'zstd', 'lz4' or 'none', not {:?}", self.0)
    }
}

impl std::error::Error for UnknownCodec {}

/// From the lowercase names users type: `zstd`, `lz4`, `none`.
impl std::str::FromStr for Codec {
    type Err = UnknownCodec;

    fn from_str(name: &str) -> Result<Self, UnknownCodec> {
        match name {
            "zstd" => Ok(Codec::Zstd),
            "lz4" => Ok(Codec::Lz4),
            "none" => Ok(Codec::None),
            other => Err(UnknownCodec(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_element_type_is_named_in_lowercase_and_a_list_by_its_display() {
        assert_eq!(DType::TimestampNs.name(), "timestamp_ns");
        assert_eq!(DType::UInt16.name(), "uint16");
        let list = DType::List {
            child: Box::new(DType::Int32),
        };
        assert_eq!(list.name(), "List<Int32>");
    }

    #[test]
    fn a_codec_parses_from_its_lowercase_name_only() {
        assert_eq!("lz4".parse(), Ok(Codec::Lz4));
        assert_eq!("none".parse(), Ok(Codec::None));
        assert_eq!("zstd".parse(), Ok(Codec::Zstd));
        let unknown = "Zstd".parse::<Codec>().unwrap_err();
        assert_eq!(
            unknown.to_string(),
            "codec must be 'zstd', 'lz4' or 'none', not \"Zstd\""
        );
    }
}
