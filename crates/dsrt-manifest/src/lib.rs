//! DatasetRT `manifest.json`: the publication marker of a cache.
//!
//! What it is for: the two manifest versions as separate types ([`ManifestV2`] has no cache
//! identity, [`ManifestV3`] stores a `cache_id`), strict parsing into them with errors that name
//! the field ([`Manifest::parse`]), serialization of new manifests, and the cache id of a
//! source name ([`cache_id_for_source`]). Top-level keys the format does not define are kept
//! ([`CacheDescription::extra`]) and written after the standard ones: how a layer above records
//! something about a whole cache (a token cache's `tokens`).
//!
//! What it is not for: reading files or checking a manifest against the files it describes (the
//! reader does that), and rewriting manifests on disk (migration lives above, in `dsrt-migrate`).
//!
//! Layering: above `dsrt-schema` and `dsrt-atlas-codec`; used by the writer, the reader and migration.
#![forbid(unsafe_code)]

mod cache_id;
mod error;
mod manifest;
mod shard_entry;
mod upgrade;

pub use cache_id::cache_id_for_source;
pub use error::ManifestError;
pub use manifest::{
    CacheDescription, ExtraKeys, Manifest, ManifestV2, ManifestV3, MANIFEST_FILE_NAME,
    MANIFEST_TEMP_PREFIX, STANDARD_KEYS,
};
pub use shard_entry::{shard_file_name, CompressionAlgo, ShardCompression, ShardEntry};
pub use upgrade::upgrade_v2_to_v3;
