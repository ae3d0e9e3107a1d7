//! Writes DatasetRT caches.
//!
//! What it is for: [`CacheWriter`] takes samples one at a time (payload bytes plus one
//! metadata row), streams records into rotating shards, rows into index.bin and metadata into
//! metadata.arrow, hashing every file in the same pass, and publishes `manifest.json` last,
//! crash-safely. Until that rename, the directory is an incomplete cache no reader opens.
//! [`write_new_cache`] is the whole run of a new cache (create, fill, publish) that removes
//! what it wrote if it fails, whoever fills it (the converters, the CLI, the Python package).
//! A [`SampleEncoder`] does a sample's per-sample work (checking, envelope, compression) on any
//! thread, so parallel packers append in order on one ([`CacheWriter::add_encoded`]).
//! [`merge_parts`] joins caches written side by side (the tasks of a distributed job) into one
//! by moving their shards, rewriting only the index and the metadata; its pieces
//! ([`CheckedPart`], [`joined_shards`], [`write_joined_tables`], [`manifest_bytes`]) make
//! dsrt-remote's join of parts on an object store, so both joins check and write alike.
//! [`remove_unpublished`] (what a failed run leaves) and [`first_cache_file`] (what a new
//! cache is never written beside) work over [`CacheFiles`], a location's cache files:
//! [`LocalCacheFiles`] for a directory, dsrt-remote's `RemoteCacheFiles` for a prefix, so the
//! rules of what is a cache file live here once.
//!
//! What it is not for: reading caches (`dsrt-reader`) or joining them into datasets.
//!
//! Layering: above every DatasetRT file crate (`dsrt-schema`, `dsrt-manifest`, `dsrt-index`,
//! `dsrt-metadata`, `dsrt-shard`) and `durable-fs`; re-exported by the `datasetrt` facade.
#![forbid(unsafe_code)]

mod byte_size; // the grammar of sizes users type: "20GB", "512MiB"
mod cache_files; // a location's cache files: removing an unpublished cache, refusing a target
mod encoded;
mod error;
mod merge;
mod options;
mod planned;
mod writer;

pub use byte_size::{parse_byte_size, ByteSizeError};
pub use cache_files::{first_cache_file, remove_unpublished, CacheFiles, LocalCacheFiles};
pub use dsrt_shard::FinishedShard;
pub use encoded::{EncodeError, EncodedSample, SampleEncoder};
pub use error::WriteError;
pub use merge::{
    joined_shards, merge_parts, write_joined_tables, CheckedPart, JoinedShard, JoinedTables,
    PartCache,
};
pub use options::{ManifestVersion, WriterOptions, DEFAULT_MAX_SHARD_BYTES};
pub use planned::{PlannedSample, PlannedShardWriter};
pub use writer::{is_shard_file_name, manifest_bytes, write_new_cache, CacheSummary, CacheWriter};
