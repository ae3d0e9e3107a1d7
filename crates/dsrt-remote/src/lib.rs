//! DatasetRT caches on object storage.
//!
//! What it is for: a cache that lives under an object-store prefix (`s3://`, `gs://`, `az://`,
//! `http(s)://`, `file://`) used like a local one. [`CacheLocation`] turns a path or URL into a
//! local directory or a store and prefix, configured from the environment.
//!
//! Writing: [`publish_cache`] uploads a finished local cache to a prefix, every data file
//! first and `manifest.json` last, create-if-absent; [`RemoteCacheWriter`] (or
//! [`create_writer`] for a local-or-remote [`CacheLocation`]) packs into a local staging
//! directory and publishes it on `finish`; [`update_remote_manifests`] migrates manifests
//! v2 -> v3 under prefixes with a conditional PUT where the store has one.
//!
//! What it is not for: the cache format itself (`dsrt-manifest`, `dsrt-index`, `dsrt-shard`,
//! ...), reading local caches (`dsrt-reader`, which stays free of tokio and object_store), or
//! the bounded local directory of downloaded files (`dsrt-shard-cache`, which knows no store).
//!
//! Layering: above `dsrt-reader` and `dsrt-writer`; re-exported by the `datasetrt` facade and
//! used by the `dsrt` CLI and the Python package. It owns the tokio runtime its requests run on,
//! so its callers stay synchronous.
#![forbid(unsafe_code)]

mod error;
mod local_files; // the files of a local cache, as its manifest names them
mod location;
mod migrate; // remote v2 -> v3 manifest migration, conditional PUT
mod migrate_report; // its report and errors
mod publish; // a local cache -> a prefix, manifest last
pub(crate) mod runtime;
mod upload; // one file -> one object: single or multipart, retried, size-checked
mod writer; // RemoteCacheWriter: stage locally, publish on finish

pub use error::RemoteError;
pub use location::{CacheLocation, RemotePrefix};
pub use migrate::update_remote_manifests;
pub use migrate_report::{
    RemoteUpdateCause, RemoteUpdateEntry, RemoteUpdateError, RemoteUpdateOutcome,
    RemoteUpdateReport,
};
pub use object_store;
pub use publish::{
    check_publish_target, publish_cache, PublishEvent, PublishOptions, PublishProgress,
    PublishReport,
};
pub use writer::{
    create_writer, AnyCacheWriter, FinishedCache, RemoteCacheSummary, RemoteCacheWriter,
    RemoteWriterOptions,
};
