//! Shards that are not files of the cache directory: the hook for caches whose shards live
//! elsewhere (an object store, through a bounded local cache), so that such a cache is still a
//! [`Cache`](crate::Cache) and everything built on `Cache` works unchanged.

use std::io;
use std::sync::Arc;

/// The whole of one shard's bytes, shared: whoever holds a clone keeps them readable (for a
/// mapped local copy, the mapping).
pub type SharedShard = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Serves the bytes of a cache's shards in place of the files under `shards/`.
///
/// The source's contract, which the reader relies on instead of checking files at open: shard
/// `shard` is the one the manifest lists at that position, exactly `byte_len` bytes long, and
/// whatever the source serves of it has been checked against the manifest (its SHA-256, for a
/// whole shard) or is checked by the reader itself (every record's envelope is, always).
pub trait ShardSource: Send + Sync {
    /// Fills `buf` with the bytes of shard `shard` at `offset`: exactly `buf.len()` of them,
    /// or an error. Called concurrently from many threads.
    fn read_at(&self, shard: u64, offset: u64, buf: &mut [u8]) -> io::Result<()>;

    /// Tells the source which shards a reader will need next, in the order it will need
    /// them, so that it can fetch ahead. A hint: the source may ignore it, and nothing read
    /// depends on it.
    fn will_need(&self, shards: &[u64]) {
        let _ = shards;
    }

    /// The whole of shard `shard` as shared bytes, fetching it as [`ShardSource::read_at`]
    /// would, for readers that hand payloads out as slices of it
    /// ([`Cache::read_shared`](crate::Cache::read_shared)); `None` when the source does not
    /// share this shard's bytes, and the reader then uses `read_at`. The same contract as
    /// `read_at`: exactly the manifest's shard, checked as it says.
    fn shared(&self, shard: u64) -> Option<io::Result<SharedShard>> {
        let _ = shard;
        None
    }
}
