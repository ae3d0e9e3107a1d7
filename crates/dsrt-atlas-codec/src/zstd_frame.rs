//! zstd frames with a bounded decoder.
//!
//! A frame's content size is untrusted, so decoding streams into a buffer that may grow only
//! up to a caller limit; a frame that would exceed it is an error, not an allocation.

use std::io::Read;
use thiserror::Error;

/// Why a zstd frame could not be decoded.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ZstdError {
    /// The frame decodes to more than the caller allows.
    #[error("zstd frame decodes to more than the limit of {limit} bytes")]
    TooLarge {
        /// Largest size the caller accepts.
        limit: u64,
    },
    /// The frame is malformed.
    #[error("zstd frame is corrupt: {0}")]
    Corrupt(#[source] std::io::Error),
}

/// Compresses `input` into one zstd frame.
pub fn compress(input: &[u8], level: i32) -> Vec<u8> {
    zstd::bulk::compress(input, level).expect("in-memory zstd compression does not fail")
}

/// Decodes one zstd frame into at most `limit` bytes.
pub fn decompress(frame: &[u8], limit: u64) -> Result<Vec<u8>, ZstdError> {
    let decoder = zstd::stream::read::Decoder::new(frame).map_err(ZstdError::Corrupt)?;
    let mut out = Vec::new();
    decoder
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(ZstdError::Corrupt)?;
    if out.len() as u64 > limit {
        return Err(ZstdError::TooLarge { limit });
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn limit_is_enforced_and_garbage_refused() {
        let frame = compress(&[0u8; 10_000], 3);
        assert!(matches!(
            decompress(&frame, 9_999),
            Err(ZstdError::TooLarge { .. })
        ));
        assert_eq!(decompress(&frame, 10_000).unwrap().len(), 10_000);
        assert!(matches!(
            decompress(b"not a frame", 100),
            Err(ZstdError::Corrupt(_))
        ));
    }

    proptest! {
        #[test]
        fn round_trips(input in proptest::collection::vec(any::<u8>(), 0..4096), level in 1i32..6) {
            let frame = compress(&input, level);
            prop_assert_eq!(decompress(&frame, input.len() as u64).unwrap(), input);
        }

        #[test]
        fn arbitrary_bytes_never_panic(frame in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decompress(&frame, 1 << 16);
        }
    }
}
