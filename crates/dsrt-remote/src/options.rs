//! How a remote cache is opened: where its local copy lives, how big that may grow, how shards
//! are fetched.

use dsrt_shard_cache::Access;
use std::path::PathBuf;
use std::time::Duration;

/// The default byte limit of the local cache directory: 100 GiB.
pub const DEFAULT_CACHE_LIMIT: u64 = 100 << 30;

/// How a sample whose shard is not local is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShardFetch {
    /// Download the whole shard into the local cache, checked against the manifest's SHA-256
    /// before it becomes visible, and read from there (the default: what epochs want).
    #[default]
    Whole,
    /// Fetch just the sample's record with one range request and cache nothing: for sparse
    /// random access to a few samples of large shards. Every record's envelope is still
    /// checked against metadata.arrow; a shard's SHA-256 cannot be, as it is never whole.
    Range,
}

impl ShardFetch {
    /// The fetch's name: `"whole"` or `"range"` (what Python's `fetch` and `dsrt --fetch`
    /// take).
    pub fn name(self) -> &'static str {
        match self {
            Self::Whole => "whole",
            Self::Range => "range",
        }
    }

    /// The fetch a name means; `None` for any but `"whole"` and `"range"`.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Whole, Self::Range]
            .into_iter()
            .find(|fetch| fetch.name() == name)
    }
}

/// Options of [`open_cache`](crate::open_cache) and [`open_dataset`](crate::open_dataset).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteOptions {
    /// The local cache directory, shared by every process of the node that uses the same one.
    pub cache_dir: PathBuf,
    /// The most bytes the local cache directory may hold; a limit smaller than a cache's
    /// largest shard is an error at open.
    pub cache_limit: u64,
    /// How shards are fetched.
    pub fetch: ShardFetch,
    /// Hash index.bin and metadata.arrow against the manifest at open, and hash again every
    /// shard found in the shard cache before this process first reads it (a shard is always
    /// checked when it is downloaded): every byte read was checked in this process or as it
    /// arrived. A damaged local copy fails the read (and is removed, so the next read
    /// downloads it).
    pub validate_cache: bool,
    /// How many shards ahead of a reader's hint are downloaded in the background.
    pub prefetch_shards: usize,
    /// Attempts per download before a retryable error is returned.
    pub attempts: u32,
    /// The wait before the second attempt; it doubles each time, up to 10 s.
    pub first_backoff: Duration,
    /// How long a download waits for room in the local cache (every other file being read)
    /// or for another process downloading the same shard, before it fails (retryable).
    pub wait_for_room: Duration,
    /// With [`ShardFetch::Whole`], the records read before the cache's first read returns (at
    /// most 8) are read by range requests while their shards download, instead of waiting
    /// for the whole shards (so the first sample of an epoch does not wait for a 16 MiB
    /// download); later reads wait for their shards. Such a record is checked as every record
    /// is, against metadata.arrow, but not against its shard's SHA-256, which is the trust a
    /// local cache opened without `validate_cache` gives; its shard is still checked before
    /// it enters the local cache. With `validate_cache` every byte served comes from a shard
    /// whose SHA-256 matched, and this option is ignored. Default: on.
    pub read_while_downloading: bool,
    /// Who may use the local cache directory: the user alone (the default; directories
    /// `0700`, files `0600`), or the members of its group ([`Access::Group`]). A directory made
    /// with one is refused under the other.
    pub cache_access: Access,
}

impl RemoteOptions {
    /// Options with the local cache at `cache_dir` and every other option at its default.
    pub fn new(cache_dir: impl Into<PathBuf>) -> Self {
        Self {
            cache_dir: cache_dir.into(),
            cache_limit: DEFAULT_CACHE_LIMIT,
            fetch: ShardFetch::Whole,
            validate_cache: false,
            prefetch_shards: dsrt_plan::DEFAULT_PREFETCH_SHARDS,
            attempts: 5,
            first_backoff: Duration::from_millis(100),
            wait_for_room: Duration::from_secs(600),
            read_while_downloading: true,
            cache_access: Access::Private,
        }
    }

    /// Sets the byte limit of the local cache directory.
    pub fn cache_limit(mut self, bytes: u64) -> Self {
        self.cache_limit = bytes;
        self
    }

    /// Sets how shards are fetched.
    pub fn fetch(mut self, fetch: ShardFetch) -> Self {
        self.fetch = fetch;
        self
    }

    /// Hashes index.bin and metadata.arrow at open and local copies of shards before their
    /// first read (see the field).
    pub fn validate_cache(mut self, validate: bool) -> Self {
        self.validate_cache = validate;
        self
    }

    /// Sets how many shards are downloaded ahead of a reader (0: none).
    pub fn prefetch_shards(mut self, shards: usize) -> Self {
        self.prefetch_shards = shards;
        self
    }

    /// Sets how long a download waits for room or for another process's download.
    pub fn wait_for_room(mut self, wait: Duration) -> Self {
        self.wait_for_room = wait;
        self
    }

    /// Whether the first records are served by range requests while their shards download
    /// (see the field; on by default).
    pub fn read_while_downloading(mut self, on: bool) -> Self {
        self.read_while_downloading = on;
        self
    }

    /// Sets who may use the local cache directory (see the field).
    pub fn cache_access(mut self, access: Access) -> Self {
        self.cache_access = access;
        self
    }

    /// Sets the attempts per download and the first backoff.
    pub fn retries(mut self, attempts: u32, first_backoff: Duration) -> Self {
        self.attempts = attempts.max(1);
        self.first_backoff = first_backoff;
        self
    }
}

impl Default for RemoteOptions {
    /// The local cache at `$DSRT_CACHE_DIR`, else `$XDG_CACHE_HOME/datasetrt/shard-cache`, else
    /// `~/.cache/datasetrt/shard-cache`, else `datasetrt-<uid>/shard-cache` under the temp
    /// directory.
    fn default() -> Self {
        Self::new(default_cache_dir())
    }
}

/// See [`RemoteOptions::default`]. (`shard-cache` is a directory of its own because a shard
/// cache takes only a new or empty directory; before its marker existed the cache lived in
/// `datasetrt/` itself, which is left alone.)
pub fn default_cache_dir() -> PathBuf {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("DSRT_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    let base = if let Some(dir) = var("XDG_CACHE_HOME") {
        PathBuf::from(dir).join("datasetrt")
    } else if let Some(home) = var("HOME") {
        PathBuf::from(home).join(".cache").join("datasetrt")
    } else {
        // The temp directory is every user's: one directory per user, so that nobody else
        // can make (and so own) another's cache.
        let uid = rustix::process::geteuid().as_raw();
        std::env::temp_dir().join(format!("datasetrt-{uid}"))
    };
    base.join("shard-cache")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fetch_is_named_by_its_word() {
        for fetch in [ShardFetch::Whole, ShardFetch::Range] {
            assert_eq!(ShardFetch::from_name(fetch.name()), Some(fetch));
        }
        assert_eq!(ShardFetch::from_name("partial"), None);
    }
}
