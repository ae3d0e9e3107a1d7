//! DatasetRT caches on object storage.
//!
//! What it is for: a cache that lives under an object-store prefix (`s3://`, `gs://`, `az://`,
//! `http(s)://`, `file://`) used like a local one. [`CacheLocation`] turns a path or URL into a
//! local directory or a store and prefix, configured from the environment.
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
mod location;
pub(crate) mod runtime;

pub use error::RemoteError;
pub use location::{CacheLocation, RemotePrefix};
pub use object_store;
