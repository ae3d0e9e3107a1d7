//! DatasetRT `index.bin`: where each sample's record lives.
//!
//! What it is for: the 24-byte row ([`IndexRow`]: shard id, offset, length, each `u64` LE),
//! writing rows while hashing them ([`IndexWriter`]), and reading them from a read-only memory
//! map ([`IndexView`]) with an O(1), bounds-checked lookup and an O(samples) startup scan that
//! checks every row against the shards and keeps no decoded row.
//!
//! What it is not for: reading records (`dsrt-shard`) or knowing the manifest; the scan takes
//! the shard lengths as plain numbers.
//!
//! Layering: above `dsrt-atlas-codec`; used by the writer and the reader.
#![deny(unsafe_code)]

mod error;
mod row;
mod view;
mod writer;

pub use error::IndexError;
pub use row::{IndexRow, MIN_RECORD_LEN, ROW_BYTES};
pub use view::{IndexView, ShardRun};
pub use writer::IndexWriter;

/// The index's file name inside a cache directory.
pub const INDEX_FILE_NAME: &str = "index.bin";
