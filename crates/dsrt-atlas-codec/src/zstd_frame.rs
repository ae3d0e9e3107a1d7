//! zstd frames with a bounded decoder.
//!
//! A frame's content size is untrusted, so a frame whose size is not trusted is first decoded
//! into a fixed scratch buffer to learn its size (stopping past a caller limit, with a window no
//! larger than that limit), then into a buffer of exactly that size; a frame that would exceed
//! the limit is an error, not an allocation. A frame
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

/// Scratch space the measuring pass of a stream decode writes into.
const SCRATCH: usize = 128 * 1024;

/// Decodes a frame whose size is not declared (or not trusted) in two passes: the first
/// decodes into a fixed scratch buffer to learn the size, stopping past `limit`; the second
/// decodes into a buffer of exactly that size. A frame that decodes past the limit costs time
/// (at most `limit` bytes of decoding) but no memory; one within it costs one exact buffer,
/// never the doubling growth of a buffer of unknown final size.
fn stream_decompress(frame: &[u8], limit: u64) -> Result<Vec<u8>, ZstdError> {
    let size = stream_len(frame, limit)?;
    let mut out = vec![0u8; usize::try_from(size).map_err(|_| ZstdError::TooLarge { limit })?];
    let mut decoder = stream_decoder(frame, limit)?;
    decoder.read_exact(&mut out).map_err(ZstdError::Corrupt)?;
    Ok(out)
}

/// A stream decoder of `frame` whose window may not exceed what `limit` bytes need: a window
/// larger than everything the frame may decode to is never needed, and the decoder would
/// allocate it up front (zstd's own ceiling is 2^27).
fn stream_decoder(frame: &[u8], limit: u64) -> Result<impl Read + '_, ZstdError> {
    let mut decoder =
        zstd::stream::read::Decoder::with_buffer(frame).map_err(ZstdError::Corrupt)?;
    let window_log = (64 - limit.max(1 << 10).saturating_sub(1).leading_zeros()).min(27);
    decoder
        .window_log_max(window_log)
        .map_err(ZstdError::Corrupt)?;
    Ok(decoder)
}

/// How many bytes `frame` decodes to, or `TooLarge` once it passes `limit`.
fn stream_len(frame: &[u8], limit: u64) -> Result<u64, ZstdError> {
    let mut decoder = stream_decoder(frame, limit)?;
    let mut scratch = vec![0u8; SCRATCH];
    let mut total = 0u64;
    loop {
        match decoder.read(&mut scratch) {
            Ok(0) => return Ok(total),
            Ok(n) => {
                total += n as u64;
                if total > limit {
                    return Err(ZstdError::TooLarge { limit });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ZstdError::Corrupt(e)),
        }
    }
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
