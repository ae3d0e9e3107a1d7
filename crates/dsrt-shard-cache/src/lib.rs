//! A bounded local directory of immutable, checksum-verified files (DatasetRT shards
//! downloaded from object storage) that many processes on one node share safely.
//!
//! What it is for: [`ShardCache::get_or_fetch`] returns a file present in full with the
//! declared length and SHA-256, downloading it through the caller's fetch closure when
//! absent, at most once across all processes sharing the directory, and keeps the directory
//! under [`CacheLimits::max_bytes`] by evicting the least recently used files no process has
//! open. It prevents the failures known from other shard caches: an index torn by a download
//! race (there is no index: the directory is the state), lock files that vanish under
//! concurrent eviction (there are no lock files: a download's partial file is its own lock),
//! stale local state after a crash (a dead downloader's partial file holds no lock and is
//! removed by the next claim or [`ShardCache::open`]; nothing is published unverified). And
//! it never touches what it did not write: it takes only a new or empty directory (which it
//! marks), serves, counts and evicts only files it sealed, follows no symbolic link, and
//! creates everything private to the user (or to a group, [`Access::Group`]).
//!
//! What it is not for: it knows nothing about object stores, HTTP, async runtimes or
//! DatasetRT formats (the caller's fetch writes the bytes through a [`FetchSink`]); it does
//! not retry fetches (errors say whether a retry may help); it needs Unix `flock` and a local
//! file system where `flock` works between processes (not every network file system).
//!
//! Layering: a bottom-layer crate beside `durable-fs` (whose [`durable_fs::Dir`] it works
//! through); it depends on no other crate of this workspace. Remote readers put it between an
//! object store and `dsrt-reader`.
//!
//! # On-disk protocol (version 2)
//!
//! Another implementation sharing the directory must follow these conventions
//! (`docs/format/shard-cache.md` in the workspace says the same with the reasons):
//!
//! - The root holds the marker `.shard-cache-root` (`dsrt-shard-cache\nprotocol 2\naccess
//!   private\n`, or `group`). A directory without it is made a cache only when empty.
//!   Names starting with `.shard-cache` are the cache's own; every other name is a user's,
//!   except a final file `rel` whose seal `<dir>/.shard-cache-seal.<name>` (`sha256
//!   <hex>\nlen <n>\nino <n>\n`) names its inode and length. Nothing else is ever read,
//!   counted, evicted or removed, and no symbolic link below the root is followed.
//! - The directory lock is an exclusive `flock` on the root directory itself (opened
//!   read-only). Every directory-level decision is made while holding it: whether there is
//!   room, which files to evict, creating a partial file and reserving its size, sealing and
//!   renaming a download into place. No network I/O happens under it.
//! - A download writes `<dir>/.shard-cache-partial.<name>` (beside the final name, so the
//!   rename is atomic). Its downloader holds an exclusive `flock` on it for the whole
//!   transfer: the partial file is the lock. It is created with `O_EXCL` and immediately
//!   `set_len(len)` under the directory lock, so its whole size is reserved and counted by
//!   every other process (with [`SEAL_ALLOWANCE`] for its seal-to-be).
//! - Claiming `rel` under the directory lock: a sealed final file with the expected SHA-256
//!   and length is used; a sealed other version is removed once no reader holds it; anything
//!   unsealed there is an error. A partial file on which a non-blocking exclusive `flock`
//!   fails belongs to a live downloader: release the directory lock and wait until a shared
//!   `flock` on it succeeds (published, failed or died), then look again. One on which it
//!   succeeds is stale: unlink it. Then make room: until `usage + len <= max_bytes`, unlink
//!   sealed final files (and their seals) in increasing mtime order, skipping any on which a
//!   non-blocking exclusive `flock` fails (a reader holds it), unlinking under that lock. If
//!   that cannot make room, release the directory lock, back off and try again until
//!   `wait_for_room`.
//! - The download runs outside the directory lock. Bytes go through `pwrite` into the
//!   partial file and must cover exactly `0..len`; then length and SHA-256 are checked, the
//!   file is fsynced, and, under the directory lock, its seal is written (temporary file,
//!   fsync, rename, directory fsync), the partial file renamed to the final name without
//!   replacing anything, and its lock turned shared; the directory is fsynced. On any
//!   mismatch or fetch error the partial file is unlinked: nothing is cached. A restart of
//!   the transfer truncates and re-reserves under the directory lock.
//! - Reading: open the final file (`O_NOFOLLOW`), take a shared `flock` (blocking; evictors
//!   hold exclusive ones only briefly), then `fstat`: `nlink == 0` means it was evicted in
//!   between, so look again; then read its seal. A reader sets the file's mtime to now when it
//!   first opens it (LRU order is mtime order). A reader's lock is released when its
//!   descriptor closes, also when it is killed.
//! - The limit: the apparent sizes of the cache's own files under the root never exceed
//!   `max_bytes` at any instant, since every growth (partial reservation, seals) is reserved
//!   under the directory lock and everything else only shrinks.
// One `unsafe` block: mapping a cached file (`CachedFile::map`, see its SAFETY comment).
#![deny(unsafe_code)]

#[cfg(not(unix))]
compile_error!("dsrt-shard-cache needs Unix flock semantics");

mod cache;
mod error;
mod lock;
mod rel;
mod seal;
mod sink;
mod unpublished; // checked downloads still being published, for this process's readers

pub use cache::{CacheLimits, CachedFile, Publication, ShardCache, SEAL_ALLOWANCE};
pub use durable_fs::set_wait_interrupt;
pub use error::{FetchError, ShardCacheError};
pub use seal::Access;
pub use sink::FetchSink;
