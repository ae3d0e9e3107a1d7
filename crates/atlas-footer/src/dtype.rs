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
