//! Encoding and the lenient decoding of `deleted.mask`.

use crate::set::DeletedSet;
use dsrt_atlas_codec::le;
use thiserror::Error;

/// Mask magic.
pub const MASK_MAGIC: [u8; 4] = *b"ATLM";
/// Mask version this crate writes and reads.
pub const MASK_VERSION: u32 = 1;
/// Magic, version and count.
pub const MASK_HEADER_SIZE: usize = 12;

/// A mask that cannot be read at all.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MaskError {
    /// The object at the mask's path is not a mask: a foreign file deserves a report, not a
    /// silent "nothing deleted".
    #[error("deleted.mask is not an Atlas mask: {0}")]
    NotAMask(String),
    /// A mask of a version this reader does not know.
    #[error("deleted.mask has version {0}, this reader knows version 1")]
    UnsupportedVersion(u32),
}

/// The bytes of a mask holding `set`'s ordinals.
pub fn encode(set: &DeletedSet) -> Vec<u8> {
    let mut out = Vec::with_capacity(MASK_HEADER_SIZE + set.len() * 4);
    out.extend_from_slice(&MASK_MAGIC);
    out.extend_from_slice(&MASK_VERSION.to_le_bytes());
    // A set holds distinct u32 ordinals, so its length fits a u32.
    let count = u32::try_from(set.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&count.to_le_bytes());
    for ordinal in set.iter() {
        out.extend_from_slice(&ordinal.to_le_bytes());
    }
    out
}

/// Reads a mask for a container of `dataset_count` datasets, leniently.
///
/// Only a wrong magic (or an unknown version) is an error. An ordinal at or past
/// `dataset_count` is dropped with a warning, so a mask from another container cannot block an
/// open; a truncated body keeps its complete entries, with a warning; an entry not greater than
/// the one before it is dropped with a warning.
pub fn decode(bytes: &[u8], dataset_count: usize) -> Result<DeletedSet, MaskError> {
    let magic = bytes
        .get(..4)
        .ok_or_else(|| MaskError::NotAMask(format!("{} bytes, no magic", bytes.len())))?;
    if magic != MASK_MAGIC {
        return Err(MaskError::NotAMask(format!(
            "magic is {magic:02x?}, expected \"ATLM\""
        )));
    }
    let Some(version) = le::u32_at(bytes, 4) else {
        tracing::warn!(
            len = bytes.len(),
            "deleted.mask is truncated inside its header; nothing is deleted"
        );
        return Ok(DeletedSet::new(dataset_count));
    };
    if version != MASK_VERSION {
        return Err(MaskError::UnsupportedVersion(version));
    }
    let declared = le::u32_at(bytes, 8).unwrap_or(0);
    let body = bytes.get(MASK_HEADER_SIZE..).unwrap_or_default();
    let present = body.len() / 4;
    let count = usize::try_from(declared).map_or(present, |d| d.min(present));
    if count < usize::try_from(declared).unwrap_or(usize::MAX)
        || body.len() % 4 != 0
        || bytes.len() < MASK_HEADER_SIZE
    {
        tracing::warn!(
            declared,
            kept = count,
            "deleted.mask is truncated; keeping the complete entries"
        );
    } else if present > count {
        tracing::warn!(
            declared,
            present,
            "deleted.mask has bytes after its last entry; ignoring them"
        );
    }
    let mut set = DeletedSet::new(dataset_count);
    let mut previous: Option<u32> = None;
    for chunk in body.chunks_exact(4).take(count) {
        let ordinal = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        if previous.is_some_and(|p| ordinal <= p) {
            tracing::warn!(
                ordinal,
                previous,
                "deleted.mask entry is not increasing; dropped"
            );
            continue;
        }
        previous = Some(ordinal);
        if !set.insert(ordinal) {
            tracing::warn!(
                ordinal,
                dataset_count,
                "deleted.mask names an ordinal past the last dataset; dropped"
            );
        }
    }
    Ok(set)
}
