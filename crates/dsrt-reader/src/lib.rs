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
//! Layering: above every DatasetRT file crate; re-exported by the `datasetrt` facade.
// One `unsafe` block: mapping a shard for `Cache::read_mapped` (see its SAFETY comment).
#![deny(unsafe_code)]

mod cache;
mod error;
mod sample;
mod shared; // payloads as slices of a source's shared shard bytes
mod source;
mod validate;

pub use cache::{Cache, OpenOptions};
pub use error::{CacheError, CacheFile};
pub use sample::{MappedPayload, Sample, SampleBuf, SampleRef};
pub use shared::SharedPayload;
pub use source::{ShardSource, SharedShard};
