//! LZ4 *block* format with a `u32` LE uncompressed-size prefix.
//!
//! These are the bytes `lz4_flex::block::compress_prepend_size` and Python's
//! `lz4.block.compress(data, store_size=True)` write. Decoding is bounded: the prefix is an
//! untrusted length, so it is checked against the largest size LZ4 can expand the given input
//! to, and against a caller limit, before any buffer grows.

use thiserror::Error;

/// LZ4 cannot expand one input byte to more than 255 output bytes (a literal-free match run).
const MAX_EXPANSION: u64 = 255;

/// Why an LZ4 payload could not be encoded or decoded.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lz4Error {
    /// The input is longer than the `u32` size prefix can say (4 GiB - 1 bytes).
    #[error(
        "LZ4 payload of {len} bytes is larger than the {max} bytes its u32 size prefix can hold"
    )]
    TooLarge {
        /// The input's length.
        len: usize,
        /// The largest length the prefix holds.
        max: u32,
    },
    /// Fewer than the four prefix bytes.
    #[error("LZ4 payload of {len} bytes is shorter than its 4-byte size prefix")]
    MissingPrefix {
        /// Bytes available.
        len: usize,
    },
    /// The prefix claims more than the block could decode to, or more than the caller allows.
    #[error("LZ4 size prefix {declared} is impossible for {compressed} compressed bytes (limit {limit})")]
    ImplausibleSize {
        /// Size the prefix declares.
        declared: u64,
        /// Compressed bytes after the prefix.
        compressed: usize,
        /// Largest size the caller accepts.
        limit: u64,
    },
    /// The buffer for the `needed` decoded bytes could not be allocated: the process's memory
    /// ran out, not a property of the payload.
    #[error("LZ4 payload needs {needed} bytes decoded, which could not be allocated")]
    OutOfMemory {
        /// Bytes the decoded payload needs.
        needed: usize,
    },
    /// The block itself is malformed, or decodes to another length than the prefix says (or,
    /// compressing, the encoder failed).
    #[error("LZ4 block is corrupt: {0}")]
    Corrupt(String),
}

/// The size prefix of an input of `len` bytes; `TooLarge` past `u32::MAX`.
pub fn size_prefix(len: usize) -> Result<[u8; 4], Lz4Error> {
    u32::try_from(len)
        .map(u32::to_le_bytes)
        .map_err(|_| Lz4Error::TooLarge { len, max: u32::MAX })
}

/// Compresses `input` into a prefixed LZ4 block appended to `out`. An input the prefix cannot
/// describe (over `u32::MAX` bytes) is `TooLarge`, and `out` is left as it was.
pub fn compress_into(input: &[u8], out: &mut Vec<u8>) -> Result<(), Lz4Error> {
    let prefix = size_prefix(input.len())?;
    let before = out.len();
    out.extend_from_slice(&prefix);
    let start = out.len();
    out.resize(
        start + lz4_flex::block::get_maximum_output_size(input.len()),
        0,
    );
    match lz4_flex::block::compress_into(input, &mut out[start..]) {
        Ok(written) => {
            out.truncate(start + written);
            Ok(())
        }
        Err(e) => {
            out.truncate(before);
            Err(Lz4Error::Corrupt(format!("compressing: {e}")))
        }
    }
}

/// Returns the uncompressed length a prefixed block declares, after plausibility checks.
pub fn declared_len(stored: &[u8], limit: u64) -> Result<usize, Lz4Error> {
    let prefix = stored
        .get(..4)
        .ok_or(Lz4Error::MissingPrefix { len: stored.len() })?;
    let declared = u64::from(u32::from_le_bytes([
        prefix[0], prefix[1], prefix[2], prefix[3],
    ]));
    let compressed = stored.len() - 4;
    let possible = (compressed as u64).saturating_mul(MAX_EXPANSION);
    if declared > possible || declared > limit {
        return Err(Lz4Error::ImplausibleSize {
            declared,
            compressed,
            limit,
        });
    }
    usize::try_from(declared).map_err(|_| Lz4Error::ImplausibleSize {
        declared,
        compressed,
        limit,
    })
}

/// Decodes a prefixed block into `out`, replacing its contents and reusing its capacity.
pub fn decompress_into(stored: &[u8], limit: u64, out: &mut Vec<u8>) -> Result<(), Lz4Error> {
    let len = declared_len(stored, limit)?;
    out.clear();
    // An allocation that cannot be satisfied is an error, never an abort: a payload may
    // honestly decode to 255 times its stored size.
    out.try_reserve_exact(len)
        .map_err(|_| Lz4Error::OutOfMemory { needed: len })?;
    out.resize(len, 0);
    let written = lz4_flex::block::decompress_into(&stored[4..], out)
        .map_err(|e| Lz4Error::Corrupt(e.to_string()))?;
    if written != len {
        return Err(Lz4Error::Corrupt(format!(
            "block decoded to {written} bytes, its prefix says {len}"
        )));
    }
    Ok(())
}

/// Decodes a prefixed block into a new vector.
pub fn decompress(stored: &[u8], limit: u64) -> Result<Vec<u8>, Lz4Error> {
    let mut out = Vec::new();
    decompress_into(stored, limit, &mut out)?;
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn matches_lz4_flex_prepend_size_bytes() {
        let input = b"abcabcabcabcabcabcabcabcabc hello hello hello".repeat(10);
        let mut ours = Vec::new();
        compress_into(&input, &mut ours).unwrap();
        assert_eq!(ours, lz4_flex::block::compress_prepend_size(&input));
    }

    #[test]
    fn a_length_past_the_u32_prefix_is_an_error() {
        assert_eq!(
            size_prefix(u32::MAX as usize).unwrap(),
            u32::MAX.to_le_bytes()
        );
        assert_eq!(
            size_prefix(u32::MAX as usize + 1),
            Err(Lz4Error::TooLarge {
                len: u32::MAX as usize + 1,
                max: u32::MAX
            })
        );
    }

    /// The 4 GiB input is zeroed memory the allocator maps lazily (`calloc`): refused before
    /// anything reads it, it costs address space, not RAM.
    #[cfg(target_pointer_width = "64")]
    #[test]
    fn compressing_more_than_4_gib_is_an_error_not_a_panic() {
        let input = vec![0u8; u32::MAX as usize + 1];
        let mut out = b"kept".to_vec();
        assert!(matches!(
            compress_into(&input, &mut out),
            Err(Lz4Error::TooLarge { .. })
        ));
        assert_eq!(out, b"kept", "nothing is appended on error");
    }

    #[test]
    fn refuses_hostile_prefix_without_allocating_it() {
        let stored = [0xff, 0xff, 0xff, 0xff, 0x00];
        assert!(matches!(
            decompress(&stored, u64::MAX),
            Err(Lz4Error::ImplausibleSize {
                declared: 0xffff_ffff,
                ..
            })
        ));
        assert!(matches!(
            decompress(&[1, 0], 10),
            Err(Lz4Error::MissingPrefix { len: 2 })
        ));
    }

    #[test]
    fn refuses_length_mismatch_and_garbage() {
        let mut stored = Vec::new();
        compress_into(b"hello world", &mut stored).unwrap();
        stored[0] += 1;
        assert!(matches!(
            decompress(&stored, 1 << 20),
            Err(Lz4Error::Corrupt(_))
        ));
        let garbage = [8, 0, 0, 0, 0xff, 0xff, 0xff];
        assert!(decompress(&garbage, 1 << 20).is_err());
    }

    #[test]
    fn caller_limit_is_enforced() {
        let mut stored = Vec::new();
        compress_into(&[7u8; 1000], &mut stored).unwrap();
        assert!(matches!(
            decompress(&stored, 999),
            Err(Lz4Error::ImplausibleSize { .. })
        ));
        assert_eq!(decompress(&stored, 1000).unwrap(), vec![7u8; 1000]);
    }

    proptest! {
        #[test]
        fn round_trips(input in proptest::collection::vec(any::<u8>(), 0..4096), repeat in 1usize..8) {
            let input: Vec<u8> = input.repeat(repeat);
            let mut stored = Vec::new();
            compress_into(&input, &mut stored).unwrap();
            prop_assert_eq!(decompress(&stored, u64::MAX).unwrap(), input);
        }

        #[test]
        fn arbitrary_bytes_never_panic(stored in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decompress(&stored, 1 << 16);
        }
    }
}
