//! A process-wide bound on the idle open files and memory mappings of immutable files.
//!
//! What it is for: readers of many immutable files (a DatasetRT cache of thousands of shards,
//! a dataset of thousands of caches) open each file when it is first needed and keep it for
//! reuse, while the process as a whole keeps at most [`HandlePool::capacity`] handles that
//! nothing is using. The least recently used idle handle is closed first (a CLOCK sweep: a hit
//! takes only its own file's lock and marks it used, never the pool's lock). A mapping something still references (a
//! zero-copy payload) stays valid after the pool releases it, and is reused if its file is
//! needed again. [`LazyFiles`] is the ready-made holder (files by path, opened and mapped on
//! demand); anything else that keeps handles implements [`Holder`] and admits them itself.
//! [`PooledTable`] counts values that keep handles alive (views of mappings a binding holds) in
//! the same bound. [`Exhausted`] tells a resource running out (descriptors, mappings) from any other I/O
//! error, with a message that names the limit and the bound.
//!
//! What it is not for: files that are written (`durable-fs`), locks, caching bytes.
//!
//! Layering: bottom layer, no workspace dependency; used by `dsrt-reader` (shard files of
//! local caches), `dsrt-remote` (local copies of remote shards) and the Python binding (its
//! views of shard mappings).
// One `unsafe` block: mapping an immutable file (see its SAFETY comment in `files.rs`).
#![deny(unsafe_code)]

mod exhausted;
mod files;
mod pool;
mod table;

pub use exhausted::Exhausted;
pub use files::{map_file, FileIdentity, FileMap, LazyFiles};
pub use pool::{
    default_capacity, raise_open_file_limit, HandlePool, Holder, CAPACITY_ENV,
    MAX_DEFAULT_CAPACITY, MIN_DEFAULT_CAPACITY,
};
pub use table::PooledTable;
