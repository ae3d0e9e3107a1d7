//! DatasetRT `metadata.arrow`: one row of primitive values per sample.
//!
//! What it is for: writing the metadata of a cache as an Arrow IPC *file* (magic `ARROW1`) with
//! `Boolean`, `Int64`, `Float64` and `Utf8` columns ([`MetadataWriter`]), and reading it back
//! from a read-only memory map without copying column data ([`MetadataTable`]), with typed
//! O(1) access to any row and a check against the manifest's schema. It is also the one place
//! the project parses Arrow IPC at all: a dataset's sample table (`UInt64` key columns,
//! [`encode_u64_columns`], [`decode_u64_columns`]) is read behind the same panic guard, and
//! the values of one column picked from rows of many tables become one Arrow array here
//! ([`gather_column`]).
//!
//! What it is not for: payloads, or deciding which rows to sample (the dataset layer filters
//! with the column views this crate hands out).
//!
//! Layering: above `dsrt-schema` and `dsrt-atlas-codec`; used by the writer, the reader and
//! datasets (sample tables).
#![deny(unsafe_code)]

mod arrow_types;
mod error;
mod gather;
mod table;
mod u64_columns;
mod writer;

pub use error::MetadataError;
pub use gather::gather_column;
pub use table::{ColumnView, MetadataTable, RowView};
pub use u64_columns::{decode_u64_columns, encode_u64_columns, U64ColumnsError};
pub use writer::{MetadataWriter, DEFAULT_BATCH_ROWS};

/// The metadata file's name inside a cache directory.
pub const METADATA_FILE_NAME: &str = "metadata.arrow";
