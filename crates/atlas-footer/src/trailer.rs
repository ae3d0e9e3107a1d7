//! The container's framing: the 8-byte header, the 16-byte trailer, and the tail probe.
//!
//! ```text
//! 0        b"ATLS"
//! 4        u32 LE format_version = 8
//! 8        segments, back to back
//! ...      footer bytes
//! end-16   u64 LE footer_size
//! end-8    u32 LE format_version = 8
//! end-4    b"ATLS"
//! ```

use crate::consts::{FORMAT_VERSION, HEADER_SIZE, MAGIC, MAX_FOOTER_SIZE, TRAILER_SIZE};
use crate::error::FooterError;
use dsrt_atlas_codec::le;
use std::ops::Range;

/// The trailer's one piece of information once magic and version have checked out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trailer {
    /// Length of the zstd footer frame just before the trailer.
    pub footer_size: u64,
}

/// Where the footer sits in a container of a known size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FooterLocation {
    /// Absolute byte range of the footer frame.
    pub footer: Range<u64>,
    /// Where segments must end: the footer's first byte.
    pub segments_end: u64,
}

/// The 8 header bytes every container starts with.
pub fn encode_header() -> [u8; 8] {
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&MAGIC);
    out[4..].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    out
}

/// The 16 trailer bytes for a footer frame of `footer_size` bytes.
pub fn encode_trailer(footer_size: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&footer_size.to_le_bytes());
    out[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    out[12..].copy_from_slice(&MAGIC);
    out
}

/// Checks magic, then version, of the trailer at the end of `tail` (the tail probe).
///
/// The magic comes first: a foreign object is "not an Atlas collection", whatever its last
/// eight bytes happen to hold.
pub fn parse_trailer(tail: &[u8]) -> Result<Trailer, FooterError> {
    let trailer_len = 16usize; // TRAILER_SIZE, as a slice length
    let Some(start) = tail.len().checked_sub(trailer_len) else {
        return Err(FooterError::NotAnAtlasCollection {
            reason: format!(
                "object is {} bytes, shorter than the 16-byte trailer",
                tail.len()
            ),
        });
    };
    let trailer = &tail[start..];
    check_magic_and_version(&trailer[12..16], &trailer[8..12], "trailer")?;
    let footer_size = le::u64_at(trailer, 0)
        .ok_or_else(|| FooterError::corrupt("trailer.footer_size", "missing"))?;
    Ok(Trailer { footer_size })
}

/// Checks the leading magic and version. Only worth calling when the tail probe covered them.
pub fn check_header(head: &[u8]) -> Result<(), FooterError> {
    match (head.get(0..4), head.get(4..8)) {
        (Some(magic), Some(version)) => check_magic_and_version(magic, version, "header"),
        _ => Err(FooterError::NotAnAtlasCollection {
            reason: format!(
                "object is {} bytes, shorter than the 8-byte header",
                head.len()
            ),
        }),
    }
}

fn check_magic_and_version(magic: &[u8], version: &[u8], at: &str) -> Result<(), FooterError> {
    if magic != MAGIC {
        return Err(FooterError::NotAnAtlasCollection {
            reason: format!("{at} magic is {magic:02x?}, expected \"ATLS\""),
        });
    }
    let found = le::u32_at(version, 0).unwrap_or(0);
    if found != FORMAT_VERSION {
        return Err(FooterError::UnsupportedVersion {
            found,
            expected: FORMAT_VERSION,
        });
    }
    Ok(())
}

/// Finds the footer in a container of `container_size` bytes.
pub fn locate_footer(container_size: u64, trailer: Trailer) -> Result<FooterLocation, FooterError> {
    let overhead = HEADER_SIZE + TRAILER_SIZE;
    let fits = trailer
        .footer_size
        .checked_add(overhead)
        .is_some_and(|needed| needed <= container_size);
    if trailer.footer_size > MAX_FOOTER_SIZE {
        return Err(FooterError::corrupt(
            "trailer.footer_size",
            format!(
                "{} is larger than any footer frame ({MAX_FOOTER_SIZE} bytes holds the most a \
                 footer may decode to)",
                trailer.footer_size
            ),
        ));
    }
    if !fits || trailer.footer_size == 0 {
        return Err(FooterError::corrupt(
            "trailer.footer_size",
            format!(
                "{} does not fit a container of {container_size} bytes after header and trailer",
                trailer.footer_size
            ),
        ));
    }
    let end = container_size - TRAILER_SIZE;
    let start = end - trailer.footer_size;
    Ok(FooterLocation {
        footer: start..end,
        segments_end: start,
    })
}

/// The bytes of absolute `range` if the tail probe (the last `probe.len()` bytes of a container
/// of `container_size` bytes) holds all of them.
pub fn slice_of_probe<'a>(
    probe: &'a [u8],
    container_size: u64,
    range: &Range<u64>,
) -> Option<&'a [u8]> {
    let probe_start = container_size.checked_sub(probe.len() as u64)?;
    let start = usize::try_from(range.start.checked_sub(probe_start)?).ok()?;
    let end = usize::try_from(range.end.checked_sub(probe_start)?).ok()?;
    probe.get(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailer_round_trips_and_checks_magic_before_version() {
        let bytes = encode_trailer(42);
        assert_eq!(parse_trailer(&bytes), Ok(Trailer { footer_size: 42 }));
        let mut foreign = bytes;
        foreign[12..].copy_from_slice(b"ARRF");
        foreign[8..12].copy_from_slice(&9u32.to_le_bytes());
        assert!(matches!(
            parse_trailer(&foreign),
            Err(FooterError::NotAnAtlasCollection { .. })
        ));
        let mut newer = bytes;
        newer[8..12].copy_from_slice(&9u32.to_le_bytes());
        assert_eq!(
            parse_trailer(&newer),
            Err(FooterError::UnsupportedVersion {
                found: 9,
                expected: 8
            })
        );
        assert!(matches!(
            parse_trailer(&[1, 2, 3]),
            Err(FooterError::NotAnAtlasCollection { .. })
        ));
    }

    #[test]
    fn header_is_magic_then_version() {
        assert_eq!(&encode_header(), b"ATLS\x08\0\0\0");
        assert_eq!(check_header(&encode_header()), Ok(()));
        assert!(matches!(
            check_header(b"PK\x03\x04\x08\0\0\0"),
            Err(FooterError::NotAnAtlasCollection { .. })
        ));
        assert!(matches!(
            check_header(b"ATLS\x07\0\0\0"),
            Err(FooterError::UnsupportedVersion { found: 7, .. })
        ));
    }

    #[test]
    fn footer_location_refuses_sizes_that_do_not_fit() {
        let located = locate_footer(100, Trailer { footer_size: 10 }).unwrap();
        assert_eq!(located.footer, 74..84);
        assert_eq!(located.segments_end, 74);
        assert!(locate_footer(100, Trailer { footer_size: 77 }).is_err());
        assert!(locate_footer(
            100,
            Trailer {
                footer_size: u64::MAX
            }
        )
        .is_err());
        assert!(locate_footer(100, Trailer { footer_size: 0 }).is_err());
        assert!(locate_footer(100, Trailer { footer_size: 76 }).is_ok());
        // A frame larger than any footer can need is refused before its range is fetched,
        // whatever the container's size.
        let huge = crate::consts::MAX_FOOTER_SIZE + 1;
        let error = locate_footer(u64::MAX, Trailer { footer_size: huge }).unwrap_err();
        assert!(
            error.to_string().contains("larger than any footer frame"),
            "{error}"
        );
        assert!(locate_footer(
            u64::MAX,
            Trailer {
                footer_size: huge - 1
            }
        )
        .is_ok());
    }

    #[test]
    fn probe_slicing_is_absolute() {
        let probe = [5u8, 6, 7, 8];
        assert_eq!(slice_of_probe(&probe, 10, &(7..9)), Some(&[6u8, 7][..]));
        assert_eq!(slice_of_probe(&probe, 10, &(5..9)), None);
        assert_eq!(slice_of_probe(&probe, 10, &(8..11)), None);
    }
}
