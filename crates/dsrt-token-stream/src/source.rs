//! What a token stream needs of its documents: how many there are, how they lie in shards,
//! how long each is, and their tokens. A cache-backed source reads lengths from the mapped
//! `n_tokens` column and tokens from the shards; [`crate::SyntheticSource`] computes both.

use crate::TokenStreamError;
use dsrt_plan::CacheShape;
use std::ops::Range;

/// Which end of a document a boundary token sits at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The first token (BOS).
    Start,
    /// The last token (EOS).
    End,
}

/// How many documents of a source carry a token at one end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Every document (an empty source counts as every).
    All,
    /// No document.
    None,
    /// Some documents and not others.
    Some {
        /// Documents that carry it.
        count: u64,
        /// Documents in the source.
        of: u64,
    },
    /// The source does not record it.
    Unknown,
}

/// The tokens of one document as stored: little-endian `u16` or `u32`.
#[derive(Debug, Clone, Copy)]
pub enum StoredTokens<'a> {
    /// Two bytes per token.
    U16(&'a [u8]),
    /// Four bytes per token.
    U32(&'a [u8]),
}

impl StoredTokens<'_> {
    /// Number of tokens.
    pub fn len(&self) -> u64 {
        match self {
            Self::U16(bytes) => bytes.len() as u64 / 2,
            Self::U32(bytes) => bytes.len() as u64 / 4,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes tokens `from..from + out.len()` into `out` (the range lies within the document).
    #[inline]
    pub fn copy_to(&self, from: usize, out: &mut [u32]) {
        match self {
            Self::U16(bytes) => {
                let bytes = &bytes[from * 2..(from + out.len()) * 2];
                for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                    *slot = u32::from(u16::from_le_bytes([pair[0], pair[1]]));
                }
            }
            Self::U32(bytes) => {
                let bytes = &bytes[from * 4..(from + out.len()) * 4];
                for (slot, quad) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                    *slot = u32::from_le_bytes([quad[0], quad[1], quad[2], quad[3]]);
                }
            }
        }
    }
}

/// The documents a token stream reads: one or more sources (caches), each a list of documents
/// `0..len` grouped in shard runs. `Send + Sync`: loading threads share one.
pub trait DocumentSource: Send + Sync {
    /// What one reading thread reuses from document to document.
    type Buf: Default + Send;

    /// Number of sources.
    fn sources(&self) -> usize;

    /// A source's name for messages (its path or URL).
    fn name(&self, source: usize) -> String;

    /// A source's documents and their runs of consecutive documents sharing a shard, with
    /// its cache id (which states record, so a resume with another cache is refused).
    fn shape(&self, source: usize) -> CacheShape;

    /// Tokens document `doc` holds as stored (below the shape's length). Checked when the
    /// source was opened, so it cannot fail here; called once per document a walk passes.
    fn n_tokens(&self, source: usize, doc: u64) -> u64;

    /// Tokens documents `docs` hold together.
    fn tokens_in(&self, source: usize, docs: Range<u64>) -> u64 {
        docs.map(|doc| self.n_tokens(source, doc)).sum()
    }

    /// How many of a source's documents have `token` at `end` (a source that counts them by
    /// reading its documents may fail to).
    fn coverage(&self, source: usize, end: End, token: u32) -> Result<Coverage, TokenStreamError>;

    /// The `(cache_id, sample_id)` of a document.
    fn key(&self, source: usize, doc: u64) -> (u64, u64);

    /// Whether every source stores its ids in 16 bits, so that none is past any id type's
    /// range (a batch's ids then need no check); `false` where that is not known.
    fn ids_in_16_bits(&self) -> bool {
        false
    }

    /// The bytes of a shard (for reports of what nodes read; 0 when unknown).
    fn shard_bytes(&self, source: usize, shard: u64) -> u64 {
        let _ = (source, shard);
        0
    }

    /// The tokens of document `doc`, as stored; a length that disagrees with
    /// [`DocumentSource::n_tokens`] is an error naming the cache and sample.
    fn read<'a>(
        &'a self,
        source: usize,
        doc: u64,
        buf: &'a mut Self::Buf,
    ) -> Result<StoredTokens<'a>, TokenStreamError>;

    /// Tells the source which documents the rows ahead will read, in order (so shards on
    /// object storage download before they are read). A hint: nothing read depends on it.
    fn will_need(&self, docs: &mut dyn Iterator<Item = (usize, u64)>) {
        let _ = docs;
    }
}
