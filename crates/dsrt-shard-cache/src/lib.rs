//! A bounded local directory of immutable, checksum-verified files (DatasetRT shards
//! downloaded from object storage) that many processes on one node share safely.
//!
//! What it is for: [`ShardCache::get_or_fetch`] returns a file present in full with the
//! declared length and SHA-256, downloading it through the caller's fetch closure when
//! absent, at most once across all processes sharing the directory, and keeps the directory
//! under [`CacheLimits::max_bytes`] by evicting the least recently used files no process has
//! open. [`ShardCache::put_bytes`] places small files (manifest, index, metadata) under the same
//! limit, pinned. It prevents the failures known from other shard caches: an index torn by a
//! download race (there is no index: the directory is the state), lock files that vanish
//! under concurrent eviction (there are no lock files: a download's partial file is its own
//! lock), stale local state after a crash (a dead downloader's partial file holds no lock and
//! is removed by the next claim or [`ShardCache::open`]; nothing is published unverified).
//!
//! What it is not for: it knows nothing about object stores, HTTP, async runtimes or
//! DatasetRT formats (the caller's fetch writes the bytes through a [`FetchSink`]); it does
//! not retry fetches (errors say whether a retry may help); it needs Unix `flock` and a local
//! file system where `flock` works between processes (not every network file system).
//!
//! Layering: a bottom-layer crate beside `durable-fs`; it depends on no crate of this
//! workspace. Remote readers put it between an object store and `dsrt-reader`.
//!
//! # On-disk protocol
//!
//! Another implementation sharing the directory must follow these conventions
//! (`docs/format/shard-cache.md` in the workspace says the same with the reasons):
//!
//! - A file `rel` (relative, `/`-separated UTF-8, no `.`/`..`) lives at `root/rel`. Names
//!   starting with `.shard-cache` are the cache's own; a final name never ends in `.partial`.
//! - The directory lock is an exclusive `flock` on the root directory itself (opened
//!   read-only). Every directory-level decision is made while holding it: whether there is
//!   room, which files to evict, creating a partial file and reserving its size, renaming a
//!   download into place, writing pinned files. No network I/O happens under it.
//! - A download writes `root/<rel>.partial` (beside the final name, so the rename is atomic).
//!   Its downloader holds an exclusive `flock` on it for the whole transfer: the partial file
//!   is the lock. It is created with `O_EXCL` and immediately `set_len(len)` under the
//!   directory lock, so its whole size is reserved and counted by every other process.
//! - Claiming `rel` under the directory lock: a final file of the right length is used. A
//!   partial file on which a non-blocking exclusive `flock` fails belongs to a live
//!   downloader: release the directory lock and wait until a shared `flock` on it succeeds
//!   (published, failed or died), then look again. One on which it succeeds is stale: unlink
//!   it. Then make room: until `usage + len <= max_bytes`, unlink final files in increasing
//!   mtime order, skipping pinned ones and any on which a non-blocking exclusive `flock`
//!   fails (a reader holds it), unlinking under that lock. If that cannot make room, release
//!   the directory lock, back off and try again until `wait_for_room`.
//! - The download runs outside the directory lock. Bytes go through `pwrite` into the
//!   partial file and must cover exactly `0..len`; then length and SHA-256 are checked, the
//!   file is fsynced, and, under the directory lock, renamed to the final name and its lock
//!   turned shared; the parent directory is fsynced. On any mismatch or fetch error the
//!   partial file is unlinked: nothing is cached. A restart of the transfer truncates and
//!   re-reserves under the directory lock.
//! - Reading: open the final file, take a shared `flock` (blocking; evictors hold exclusive
//!   ones only briefly), then `fstat`: `nlink == 0` means it was evicted in between, so look
//!   again. A reader sets the file's mtime to now when it first opens it (LRU order is mtime
//!   order). A reader's lock is released when its descriptor closes, also when it is killed.
//! - Pinned files: `root/.shard-cache-pinned` lists, one per line, the relative paths placed
//!   by `put_bytes`; they are never evicted. It and pinned files are replaced atomically
//!   (temporary file `.shard-cache-tmp.<name>` beside the target, fsync, rename, directory
//!   fsync) under the directory lock; a temporary file seen by a holder of the directory lock
//!   is stale and is unlinked.
//! - The limit: the apparent sizes of all regular files under the root never exceed
//!   `max_bytes` at any instant, since every growth (partial reservation, temporary files)
//!   is reserved under the directory lock and everything else only shrinks.
// One `unsafe` block: mapping a cached file (`CachedFile::map`, see its SAFETY comment).
#![deny(unsafe_code)]

#[cfg(not(unix))]
compile_error!("dsrt-shard-cache needs Unix flock semantics");

mod cache;
mod error;
mod lock;
mod rel;
mod sink;
mod unpublished; // checked downloads still being published, for this process's readers

pub use cache::{CacheLimits, CachedFile, Publication, ShardCache};
pub use durable_fs::set_wait_interrupt;
pub use error::{FetchError, ShardCacheError};
pub use sink::FetchSink;
