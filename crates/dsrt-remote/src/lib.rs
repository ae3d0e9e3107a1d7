//! DatasetRT caches on object storage.
//!
//! What it is for: a cache that lives under an object-store prefix (`s3://`, `gs://`, `az://`,
//! `http(s)://`, `file://`) used like a local one. [`StoreLocation`] turns a path or URL into a
//! local directory or a store and prefix, configured from the environment.
//!
//! Reading: [`open_cache`] and [`open_dataset`] take paths and URLs through one code path. A
//! remote cache is a plain `dsrt_reader::Cache` whose shards come from a `ShardSource`: its
//! manifest, index and metadata are fetched at open into the local cache directory under
//! `<cache id>-<manifest hash>/`, checked against the manifest, and its shards are downloaded
//! whole on first read (checked against their SHA-256 before they become visible) or, with
//! [`ShardFetch::Range`], read record by record. The local directory is bounded and shared by
//! every process of a node (`dsrt-shard-cache`); a `Loader` tells the cache which shards come
//! next, and they are downloaded ahead.
//!
//! Writing: [`publish_cache`] uploads a finished local cache to a prefix, every data file
//! first and `manifest.json` last, create-if-absent; [`LocationWriter`] writes a new cache
//! at a [`StoreLocation`] (a local directory in place; a prefix through a local staging
//! directory published on `finish`), and [`write_cache_at`] is its whole run, leaving nothing
//! if it fails; [`RemoteManifest`] is a prefix's manifest as `dsrt_migrate::update_manifests`
//! migrates it v2 -> v3 (beside local directories, in one list), with a conditional PUT where
//! the store has one.
//! [`join_parts`] joins caches written side by side (a distributed job's parts) into one, at a
//! directory (`dsrt_writer::merge_parts`, shards renamed) or under a prefix
//! ([`merge_remote_parts`], shards copied on the store, the manifest published
//! create-if-absent), with the same checks and bytes either way; [`remove_unpublished_at`]
//! removes what an unfinished one left at either.
//!
//! What it is not for: the cache format itself (`dsrt-manifest`, `dsrt-index`, `dsrt-shard`,
//! ...), reading local caches (`dsrt-reader`, which stays free of tokio and object_store), or
//! the bounded local directory of downloaded files (`dsrt-shard-cache`, which knows no store).
//!
//! Layering: above `dsrt-reader` and `dsrt-writer`; re-exported by the `datasetrt` facade and
//! used by the `dsrt` CLI and the Python package. Its requests run on object-access's process
//! runtime, so its callers stay synchronous.
#![forbid(unsafe_code)]

mod background; // threads beside the readers, which closing a cache waits for
mod cache_files; // a prefix's cache files, for dsrt-writer's remove_unpublished and first_cache_file
mod error;
mod fetch;
mod join; // parts published side by side -> one cache, shards copied on the store
mod local_files; // the files of a local cache, as its manifest names them
mod mapped; // mapped shards kept for zero-copy payloads
mod migrate; // a prefix's manifest for dsrt-migrate: read with its version, conditional PUT
mod open;
mod options;
mod prefetch; // downloads ahead of the readers, in the order of their hints
mod publish; // a local cache -> a prefix, manifest last
mod source;
mod upload; // one file -> one object: single or multipart, retried, size-checked
mod writer; // LocationWriter: in place, or staged locally and published on finish

pub use cache_files::RemoteCacheFiles;
pub use dsrt_shard_cache::{set_wait_interrupt, Access};
pub use error::RemoteError;
pub use join::{
    join_parts, merge_remote_parts, remove_prefix, remove_unpublished_at, JoinPart,
    RemoteJoinSummary, RemotePart,
};
pub use migrate::RemoteManifest;
pub use object_access::{LocationError, RemotePrefix, StoreLocation};
pub use object_store;
pub use open::{open_cache, open_dataset, open_remote};
pub use options::{default_cache_dir, RemoteOptions, ShardFetch, DEFAULT_CACHE_LIMIT};
pub use publish::{
    check_publish_target, publish_cache, PublishEvent, PublishOptions, PublishProgress,
    PublishReport,
};
pub use writer::{write_cache_at, FinishedCache, LocationWriter, RemoteWriterOptions};
