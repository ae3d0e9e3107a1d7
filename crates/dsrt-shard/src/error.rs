use thiserror::Error;

/// Why a record's bytes cannot be used. The reader adds cache path and sample.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The JSON length runs past the record's end (including hostile lengths like 2^63).
    #[error("record of {record_len} bytes declares a {json_len}-byte metadata JSON, which runs past its end")]
    JsonLength {
        /// Declared JSON length.
        json_len: u64,
        /// Whole record length.
        record_len: u64,
    },
    /// The record is shorter than the 8-byte header.
    #[error("record of {record_len} bytes is shorter than the 8-byte header")]
    Short {
        /// Whole record length.
        record_len: u64,
    },
    /// The embedded metadata is malformed or differs from metadata.arrow.
    #[error(transparent)]
    Envelope(#[from] crate::EnvelopeError),
    /// The stored LZ4 payload is corrupt.
    #[error("payload: {0}")]
    Lz4(#[from] dsrt_atlas_codec::lz4::Lz4Error),
}
