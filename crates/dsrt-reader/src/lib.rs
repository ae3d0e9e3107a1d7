//! Reads DatasetRT caches.
//!
//! What it is for: [`Cache::open`] validates a cache directory before any sample is served
//! (manifest, row counts, index bounds, shard presence and lengths, the Arrow schema, and with
//! [`OpenOptions::validate_cache`] every SHA-256), then serves sample `i` in O(1): one mapped
//! index row, one positional read of the record, the embedded metadata checked against
//! metadata.arrow, the payload decoded. Metadata is available without opening any shard.
//! [`Cache::open_with_source`] opens a cache whose shards come from a [`ShardSource`] instead
//! of its directory (the hook `dsrt-remote` uses for caches on object storage).
//!
//! What it is not for: joining caches into datasets, selections and iteration (`dsrt-dataset`,
//! with epoch plans from `dsrt-plan`), and writing (`dsrt-writer`).
//!
//! Shard files are opened (and mapped) when first read and closed again by the process's
//! [`HandlePool`] when they are the least recently used idle ones beyond its capacity, so a
//! process reading any number of shards of any number of caches holds a bounded number of
//! descriptors and mappings (index.bin and metadata.arrow are mapped at open and their files
//! closed). A descriptor or mapping running out anyway is [`CacheError::Resource`].
//!
//! Layering: above every DatasetRT file crate and `handle-pool`; re-exported by the `datasetrt` facade.
#![forbid(unsafe_code)]

mod cache;
mod error;
mod sample;
mod shared; // payloads as slices of a source's shared shard bytes
mod source;
mod validate;

pub use cache::{Cache, OpenOptions};
pub use error::{CacheError, CacheFile};
pub use handle_pool::{map_file, Exhausted, FileIdentity, FileMap, HandlePool, PooledTable};
pub use sample::{MappedPayload, Sample, SampleBuf, SampleRef};
pub use shared::SharedPayload;
pub use source::{
    fetch_counters, FetchCounters, FetchTotals, InFlight, ShardSource, SharedShard, SourceError,
};
