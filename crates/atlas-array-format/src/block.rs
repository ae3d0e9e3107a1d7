//! Block metadata stored in the footer.
//!
//! Each block in the data region has an internal `BlockMeta` entry that records
//! its physical location in the file and compression information. The publicly
//! relevant type here is [`CodecId`], which names the codec used per block.

use std::ops::Range;

use rkyv::{Archive, Deserialize, Serialize};

use crate::address::BlockId;
use crate::error::{Error, Result};

/// LZ4's largest possible compression ratio is just under 255:1; a block that
/// claims more cannot be an LZ4 block.
const LZ4_MAX_RATIO: u64 = 255;

/// Identifies which compression codec was used for a block.
///
/// `None` means the block is stored uncompressed.
/// [`Named`](CodecId::Named) allows registering custom codecs by string
/// identifier without modifying this enum.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub enum CodecId {
    /// No compression applied.
    None,
    /// A named compression codec (e.g. `"zstd"`, `"lz4"`).
    Named(String),
}

/// Metadata for a single block in the data region.
///
/// Stored in the footer's block table. Describes where to find the
/// block in the file and how to decompress it.
#[derive(Debug, Clone, PartialEq, Archive, Serialize, Deserialize)]
pub(crate) struct BlockMeta {
    /// Block identifier.
    pub id: BlockId,
    /// Byte offset of the compressed block within the file.
    pub file_offset: u64,
    /// Size of the block as stored on disk (compressed).
    pub compressed_size: u64,
    /// Size of the block after decompression.
    pub uncompressed_size: u64,
    /// Compression codec used for this block.
    pub codec: CodecId,
}

impl BlockMeta {
    /// Returns the byte range within the file that contains this block.
    pub(crate) fn file_range(&self) -> Range<u64> {
        self.file_offset..self.file_offset + self.compressed_size
    }

    /// Checks what a reader trusts about block `index` before reading it
    /// (patched in; 0.15.0 trusted the block table): its id is its position,
    /// its bytes lie inside the data region `0..data_end`, and its sizes are
    /// possible for its codec. After this, [`file_range`](Self::file_range)
    /// cannot overflow and no read is sized past the file.
    pub(crate) fn validate(&self, index: usize, data_end: u64) -> Result<()> {
        let bad = |what: String| Error::InvalidFooter(format!("block {index}: {what}"));
        if self.id.0 as usize != index {
            return Err(bad(format!("id {} is not its position", self.id.0)));
        }
        let end = self.file_offset.checked_add(self.compressed_size);
        if end.is_none_or(|end| end > data_end) {
            return Err(bad(format!(
                "bytes {}+{} lie outside the data region of {data_end} bytes",
                self.file_offset, self.compressed_size
            )));
        }
        let possible = match &self.codec {
            CodecId::None => self.uncompressed_size == self.compressed_size,
            CodecId::Named(name) if name == "lz4" => {
                self.uncompressed_size <= self.compressed_size.saturating_mul(LZ4_MAX_RATIO)
            }
            // zstd has no useful ratio bound; its decoder is bounded instead.
            CodecId::Named(_) => true,
        };
        if !possible {
            return Err(bad(format!(
                "{} stored bytes cannot decode to {} bytes with codec {:?}",
                self.compressed_size, self.uncompressed_size, self.codec
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_range_computation() {
        let meta = BlockMeta {
            id: BlockId(0),
            file_offset: 100,
            compressed_size: 50,
            uncompressed_size: 200,
            codec: CodecId::None,
        };
        assert_eq!(meta.file_range(), 100..150);
    }

    #[test]
    fn named_codec_id() {
        let codec = CodecId::Named("zstd".into());
        assert_eq!(codec, CodecId::Named("zstd".into()));
        assert_ne!(codec, CodecId::None);
    }
}
