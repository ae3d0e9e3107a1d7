//! zstd frames with a bounded decoder.
//!
//! A frame's content size is untrusted, so decoding streams into a buffer that may grow only
//! up to a caller limit; a frame that would exceed it is an error, not an allocation. A frame
//! that declares a size within the limit and within [`MAX_TRUSTED_RATIO`] times its own length
//! is first decoded in one call into a buffer of exactly that size (no window buffer, no copy,
//! no regrowth); if that fails for any reason the stream decode runs, so the result (bytes or
//! error) is the stream decode's.

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

/// Largest declared size, as a multiple of the frame's length, reserved before decoding (at
/// least [`MIN_TRUSTED_SIZE`]): a hostile frame of `n` bytes can make [`decompress`] reserve at
/// most `1024 n` bytes (untouched unless the frame really decodes to them) before it fails.
pub const MAX_TRUSTED_RATIO: u64 = 1024;

/// Declared size reserved whatever the frame's length.
pub const MIN_TRUSTED_SIZE: u64 = 1 << 20;

/// Decodes one zstd frame into at most `limit` bytes.
pub fn decompress(frame: &[u8], limit: u64) -> Result<Vec<u8>, ZstdError> {
    let trusted = u64::try_from(frame.len())
        .unwrap_or(u64::MAX)
        .saturating_mul(MAX_TRUSTED_RATIO)
        .max(MIN_TRUSTED_SIZE)
        .min(limit);
    if let Ok(Some(declared)) = zstd::zstd_safe::get_frame_content_size(frame) {
        if let Some(size) = usize::try_from(declared)
            .ok()
            .filter(|_| declared <= trusted)
        {
            if let Ok(out) = zstd::bulk::decompress(frame, size) {
                return Ok(out);
            }
        }
    }
    stream_decompress(frame, limit)
}

fn stream_decompress(frame: &[u8], limit: u64) -> Result<Vec<u8>, ZstdError> {
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

    #[test]
    fn declared_sizes_are_trusted_only_within_bounds() {
        // A frame that declares its size decodes in one call; one that does not (the stream
        // encoder without a pledged size) streams; both give the same bytes.
        let input: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let framed = compress(&input, 3);
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&framed).unwrap(),
            Some(input.len() as u64)
        );
        let streamed = zstd::stream::encode_all(&input[..], 3).unwrap();
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&streamed).unwrap(),
            None
        );
        for frame in [&framed, &streamed] {
            assert_eq!(decompress(frame, input.len() as u64).unwrap(), input);
            assert!(matches!(
                decompress(frame, input.len() as u64 - 1),
                Err(ZstdError::TooLarge { .. })
            ));
        }
        // Two frames back to back: the stream decode reads both, and so does `decompress`.
        let mut two = framed.clone();
        two.extend_from_slice(&framed);
        let mut doubled = input.clone();
        doubled.extend_from_slice(&input);
        assert_eq!(decompress(&two, 1 << 30).unwrap(), doubled);
        // A frame that claims more than it holds, or garbage after it, is refused either way.
        let mut trailing = framed.clone();
        trailing.extend_from_slice(b"junk");
        assert!(decompress(&trailing, 1 << 30).is_err());
        assert!(decompress(&framed[..framed.len() - 1], 1 << 30).is_err());
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
