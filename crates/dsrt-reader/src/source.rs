//! Shards that are not files of the cache directory: the hook for caches whose shards live
//! elsewhere (an object store, through a bounded local cache), so that such a cache is still a
//! [`Cache`](crate::Cache) and everything built on `Cache` works unchanged.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The whole of one shard's bytes, shared: whoever holds a clone keeps them readable (for a
/// mapped local copy, the mapping).
pub type SharedShard = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Serves the bytes of a cache's shards in place of the files under `shards/`.
///
/// The source's contract, which the reader relies on instead of checking files at open: shard
/// `shard` is the one the manifest lists at that position, exactly `byte_len` bytes long, and
/// whatever the source serves of it has been checked against the manifest (its SHA-256, for a
/// whole shard) or is checked by the reader itself (every record's envelope is, always).
pub trait ShardSource: Send + Sync {
    /// Fills `buf` with the bytes of shard `shard` at `offset`: exactly `buf.len()` of them,
    /// or an error. Called concurrently from many threads.
    fn read_at(&self, shard: u64, offset: u64, buf: &mut [u8]) -> Result<(), SourceError>;

    /// Tells the source which shards a reader will need next, in the order it will need
    /// them, so that it can fetch ahead. A hint: the source may ignore it, and nothing read
    /// depends on it.
    fn will_need(&self, shards: &[u64]) {
        let _ = shards;
    }

    /// The whole of shard `shard` as shared bytes, fetching it as [`ShardSource::read_at`]
    /// would, for readers that hand payloads out as slices of it
    /// ([`Cache::read_shared`](crate::Cache::read_shared)); `None` when the source does not
    /// share this shard's bytes, and the reader then uses `read_at`. The same contract as
    /// `read_at`: exactly the manifest's shard, checked as it says.
    fn shared(&self, shard: u64) -> Option<Result<SharedShard, SourceError>> {
        let _ = shard;
        None
    }
}

/// Why a [`ShardSource`] could not serve a read: its own error, kept whole and typed (a
/// remote cache's store or local-cache failure, which a caller can take back with
/// [`SourceError::downcast`]), and whether trying again may succeed. The reader reports it as
/// [`CacheError::Source`](crate::CacheError::Source), naming the cache and the shard.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct SourceError {
    retryable: bool,
    #[source]
    error: Box<dyn std::error::Error + Send + Sync>,
}

impl SourceError {
    /// The source's `error`, and whether the same read may succeed later (a store that did not
    /// answer, a throttled request) or never will (a missing object, a local disk failure).
    pub fn new(error: impl std::error::Error + Send + Sync + 'static, retryable: bool) -> Self {
        Self {
            retryable,
            error: Box::new(error),
        }
    }

    /// Whether the same read may succeed if tried again later.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }

    /// The source's error.
    pub fn get_ref(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.error
    }

    /// The source's error as `E`, or `self` back if it is another type.
    pub fn downcast<E: std::error::Error + Send + Sync + 'static>(self) -> Result<E, Self> {
        match self.error.downcast::<E>() {
            Ok(error) => Ok(*error),
            Err(error) => Err(Self {
                retryable: self.retryable,
                error,
            }),
        }
    }
}

/// A source's own file (a local copy of a shard) failing to read: never worth retrying as is.
impl From<io::Error> for SourceError {
    fn from(error: io::Error) -> Self {
        Self::new(error, false)
    }
}

/// What the process's [`ShardSource`]s fetched, counted as they go: one set per process,
/// which every source bumps and every loader reads (as the difference between two
/// [`FetchTotals`]). Process-wide because a source serves every loader and thread of the
/// process that opened its cache; a loader cannot tell its own downloads from another's.
/// Counters only: a source adds to them per download or range request, never per sample.
#[derive(Debug, Default)]
pub struct FetchCounters {
    fetched_bytes: AtomicU64,
    downloads: AtomicU64,
    hits: AtomicU64,
    in_flight: AtomicU64,
    wait_ns: AtomicU64,
}

/// A reading of [`FetchCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchTotals {
    /// Bytes received from stores (whole shards and range requests).
    pub fetched_bytes: u64,
    /// Shard downloads completed.
    pub downloads: u64,
    /// Shards a reader needed that were already local (the node's shard cache held them).
    pub hits: u64,
    /// Downloads under way when read (a gauge: not a difference of two readings).
    pub in_flight: u64,
    /// Nanoseconds reading threads spent waiting on stores (for a shard to download, or for a
    /// range request), summed over threads.
    pub wait_ns: u64,
}

impl FetchTotals {
    /// What was counted since `earlier` (the gauge `in_flight` is this reading's).
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            fetched_bytes: self.fetched_bytes.saturating_sub(earlier.fetched_bytes),
            downloads: self.downloads.saturating_sub(earlier.downloads),
            hits: self.hits.saturating_sub(earlier.hits),
            in_flight: self.in_flight,
            wait_ns: self.wait_ns.saturating_sub(earlier.wait_ns),
        }
    }
}

impl FetchCounters {
    /// `bytes` arrived from a store.
    pub fn add_fetched(&self, bytes: u64) {
        self.fetched_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A reader found a shard local instead of downloading it.
    pub fn add_hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    /// A download starts; it counts as in flight until the guard drops.
    pub fn download(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self)
    }

    /// A reading thread waited `wait` on a store (a download or a range request).
    pub fn add_wait(&self, wait: std::time::Duration) {
        let ns = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
        self.wait_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The counts so far.
    pub fn totals(&self) -> FetchTotals {
        FetchTotals {
            fetched_bytes: self.fetched_bytes.load(Ordering::Relaxed),
            downloads: self.downloads.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            in_flight: self.in_flight.load(Ordering::Relaxed),
            wait_ns: self.wait_ns.load(Ordering::Relaxed),
        }
    }
}

/// A download in flight (see [`FetchCounters::download`]): counted done when dropped.
#[derive(Debug)]
#[must_use]
pub struct InFlight<'a>(&'a FetchCounters);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.downloads.fetch_add(1, Ordering::Relaxed);
    }
}

/// The process's [`FetchCounters`].
pub fn fetch_counters() -> &'static FetchCounters {
    static COUNTERS: FetchCounters = FetchCounters {
        fetched_bytes: AtomicU64::new(0),
        downloads: AtomicU64::new(0),
        hits: AtomicU64::new(0),
        in_flight: AtomicU64::new(0),
        wait_ns: AtomicU64::new(0),
    };
    &COUNTERS
}
