//! Payloads served as slices of shared shard bytes (a source's mapped local copy) instead of
//! copies: for loaders that hand each sample out as a reference-counted slice.

use crate::source::SharedShard;
use crate::{Cache, CacheError, CacheFile, SampleBuf};
use dsrt_manifest::CompressionAlgo;
use std::ops::Range;

/// Where [`Cache::read_shared`] put a sample's payload.
#[derive(Clone)]
pub enum SharedPayload {
    /// `bytes[range]`, the whole of shard `shard` shared by its source: nothing copied.
    InShard {
        /// Shard id.
        shard: u64,
        /// The shard's bytes; holding them keeps them readable.
        bytes: SharedShard,
        /// The payload within them.
        range: Range<usize>,
    },
    /// `out[range]`, read (and decoded if compressed) as [`Cache::read_at`] does.
    InOut(Range<usize>),
}

impl std::fmt::Debug for SharedPayload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InShard { shard, range, .. } => f
                .debug_struct("InShard")
                .field("shard", shard)
                .field("range", range)
                .finish_non_exhaustive(),
            Self::InOut(range) => f.debug_tuple("InOut").field(range).finish(),
        }
    }
}

impl Cache {
    /// Reads sample `sample` with the checks of [`Cache::read`]. A payload stored
    /// uncompressed in a shard whose [`ShardSource`](crate::ShardSource) shares its bytes
    /// ([`ShardSource::shared`](crate::ShardSource::shared)) is returned as a range of them,
    /// copied nowhere; anything else is read into `out` from offset `at` as
    /// [`Cache::read_at`] reads it. A local cache always reads into `out`.
    pub fn read_shared(
        &self,
        sample: u64,
        buf: &mut SampleBuf,
        out: &mut Vec<u8>,
        at: usize,
    ) -> Result<SharedPayload, CacheError> {
        if let Some(source) = &self.source {
            let (row, shard, len) = self.locate(sample)?;
            if shard.algo == CompressionAlgo::None {
                if let Some(shared) = source.shared(row.shard_id) {
                    let bytes =
                        shared.map_err(self.source_error(CacheFile::Shard(row.shard_id)))?;
                    let (start, record) = self.record_in(&row, len, (*bytes).as_ref())?;
                    let (stored_at, _) = self.check_record(sample, &row, record)?;
                    let range = start + stored_at..start + record.len();
                    return Ok(SharedPayload::InShard {
                        shard: row.shard_id,
                        bytes,
                        range,
                    });
                }
            }
        }
        self.read_at(sample, buf, out, at).map(SharedPayload::InOut)
    }
}
