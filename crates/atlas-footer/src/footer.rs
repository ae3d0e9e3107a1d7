//! The footer structs, field for field in the source text's order.
//!
//! The wire form is rmp-serde's compact (positional) form: every struct is a msgpack array of
//! its fields in declaration order, so the order below is the format.

use crate::dtype::{Codec, DType};
use crate::inline_list::InlineList;
use serde::{Deserialize, Serialize};

pub use crate::datasets::DatasetMap;

/// A list of `(index, index)` pairs, inline up to four.
pub type IndexPairs = InlineList<(u32, u32), 4>;

/// Everything a reader needs to find a collection's data, decoded from the end of `data.atlas`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectionFooter {
    /// Always [`crate::FORMAT_VERSION`]; re-checked after decode.
    pub version: u32,
    /// The block codec the writer configured. For information only.
    pub codec: Codec,
    /// When the writer finished, in milliseconds since the Unix epoch (caller supplied).
    pub created_unix_ms: i64,
    /// Array names and attribute keys, each once.
    pub string_pool: Vec<String>,
    /// Element and attribute value types, each once.
    pub dtype_pool: Vec<DType>,
    /// Distinct dataset schemas, each once.
    pub schema_pool: Vec<InternedSchema>,
    /// One segment per array name, in first-seen order.
    pub variables: Vec<VariableEntry>,
    /// Dataset name to schema index. Position is the ordinal. On the wire a sequence of
    /// `[name, schema_index]` pairs; a repeated name fails the decode.
    pub datasets: DatasetMap,
}

/// What a dataset declares: arrays with their element types, attribute keys with value types.
///
/// Every field is a pool index, so the struct hashes and compares by content.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct InternedSchema {
    /// `(array name, element dtype)`: string pool and dtype pool indices.
    pub arrays: IndexPairs,
    /// Dataset-level `(attribute key, value dtype)`.
    pub attrs: IndexPairs,
    /// `(position in arrays, [(attribute key, value dtype)])` for arrays that carry attributes.
    pub array_attrs: InlineList<(u32, IndexPairs), 2>,
}

/// One segment: a complete array-format file inside the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VariableEntry {
    /// The array name, an index into the string pool.
    pub name: u32,
    /// Absolute offset of the segment in `data.atlas`.
    pub seg_offset: u64,
    /// Length of the segment in bytes.
    pub seg_len: u64,
}

impl VariableEntry {
    /// One past the segment's last byte; `None` on overflow.
    pub fn seg_end(&self) -> Option<u64> {
        self.seg_offset.checked_add(self.seg_len)
    }
}

impl CollectionFooter {
    /// The string at pool index `index`, if it exists.
    pub fn string(&self, index: u32) -> Option<&str> {
        self.string_pool
            .get(usize::try_from(index).ok()?)
            .map(String::as_str)
    }

    /// The dtype at pool index `index`, if it exists.
    pub fn dtype(&self, index: u32) -> Option<&DType> {
        self.dtype_pool.get(usize::try_from(index).ok()?)
    }

    /// The schema at pool index `index`, if it exists.
    pub fn schema(&self, index: u32) -> Option<&InternedSchema> {
        self.schema_pool.get(usize::try_from(index).ok()?)
    }

    /// Number of datasets, deleted ones included.
    pub fn dataset_count(&self) -> usize {
        self.datasets.len()
    }
}
