use thiserror::Error;

/// Why index.bin cannot be used. The reader adds the cache path.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The file could not be opened or mapped.
    #[error("index.bin: {0}")]
    Io(#[from] std::io::Error),
    /// The size is not a whole number of 24-byte rows.
    #[error("index.bin is {len} bytes, not a multiple of 24")]
    Size {
        /// File size.
        len: u64,
    },
    /// The row count differs from the manifest's sample count.
    #[error("index.bin has {found} rows, the manifest says {expected} samples")]
    RowCount {
        /// Manifest sample count.
        expected: u64,
        /// Rows in the file.
        found: u64,
    },
    /// A lookup past the last row.
    #[error("sample {sample} is out of range: the cache has {rows} samples")]
    SampleOutOfRange {
        /// Requested sample.
        sample: u64,
        /// Rows in the index.
        rows: u64,
    },
    /// A row names a shard the manifest does not list.
    #[error("index row {sample} names shard {shard_id}, the manifest lists {shard_count} shards")]
    UnknownShard {
        /// Sample (row) number.
        sample: u64,
        /// Stored shard id.
        shard_id: u64,
        /// Shards in the manifest.
        shard_count: usize,
    },
    /// A row's record is shorter than its 8-byte JSON length field.
    #[error("index row {sample} has length {length}, shorter than the 8-byte record header")]
    RecordTooShort {
        /// Sample (row) number.
        sample: u64,
        /// Stored length.
        length: u64,
    },
    /// A row's record runs past its shard's end (or its end overflows u64).
    #[error("index row {sample}: bytes {offset}+{length} run past the end of shard {shard_id} ({shard_len} bytes)")]
    OutOfBounds {
        /// Sample (row) number.
        sample: u64,
        /// Stored shard id.
        shard_id: u64,
        /// Stored offset.
        offset: u64,
        /// Stored length.
        length: u64,
        /// The shard's byte_len.
        shard_len: u64,
    },
}
