//! Opening a cache (or a dataset of caches) named by a path or URL.

use crate::error::RemoteError;
use crate::fetch::{get_bytes, open_stream, Retry};
use crate::options::RemoteOptions;
use crate::source::{RemoteShards, ShardsSpec};
use crate::{RemotePrefix, StoreLocation};
use dsrt_dataset::Dataset;
use dsrt_index::INDEX_FILE_NAME;
use dsrt_manifest::{Manifest, ShardEntry, MANIFEST_FILE_NAME};
use dsrt_metadata::METADATA_FILE_NAME;
use dsrt_reader::{Cache, OpenOptions};
use dsrt_shard_cache::{
    CacheLimits, CachedFile, FetchError, FetchSink, ShardCache, SEAL_ALLOWANCE,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest manifest.json accepted, as for a local cache.
pub(crate) const MAX_MANIFEST_BYTES: u64 = 256 << 20;

/// Opens the cache at `location`: a local directory (a path, one that is not UTF-8 included,
/// or a `file://` URL), opened as `Cache::open` does, or an object-store URL, opened through the local cache
/// `options.cache_dir`.
///
/// A remote open fetches manifest.json, then index.bin and metadata.arrow (checked against the
/// manifest's sizes and SHA-256 before they become visible locally), and keeps them under
/// `<cache_dir>/<cache id>-<hash of the manifest bytes>/`, so a changed remote cache never
/// mixes with stale local files. Shards are downloaded when first read (see
/// [`ShardFetch`](crate::ShardFetch)).
pub fn open_cache(
    location: impl AsRef<Path>,
    options: &RemoteOptions,
) -> Result<Cache, RemoteError> {
    match StoreLocation::from_path(location.as_ref())? {
        StoreLocation::Local(dir) => Ok(Cache::open(dir, open_options(options))?),
        StoreLocation::Remote(remote) => open_remote(&remote, options),
    }
}

/// Opens the caches at `locations`, in order, as one dataset; each is a path or a URL, as for
/// [`open_cache`]. Remote caches share one local cache directory.
pub fn open_dataset<P: AsRef<Path>>(
    locations: &[P],
    options: &RemoteOptions,
) -> Result<Dataset, RemoteError> {
    let parsed: Vec<StoreLocation> = locations
        .iter()
        .map(|l| StoreLocation::from_path(l.as_ref()))
        .collect::<Result<_, _>>()?;
    let local_dirs: Option<Vec<PathBuf>> = parsed
        .iter()
        .map(|l| match l {
            StoreLocation::Local(dir) => Some(dir.clone()),
            StoreLocation::Remote(_) => None,
        })
        .collect();
    if let Some(dirs) = local_dirs {
        return Ok(Dataset::open(&dirs, open_options(options))?);
    }
    let mut caches = Vec::with_capacity(parsed.len());
    for (given, location) in locations.iter().zip(parsed) {
        let cache = match location {
            StoreLocation::Local(dir) => Cache::open(dir, open_options(options))?,
            StoreLocation::Remote(remote) => open_remote(&remote, options)?,
        };
        caches.push((PathBuf::from(given.as_ref()), cache));
    }
    Ok(Dataset::from_caches(caches)?)
}

/// Opens the cache under `remote` through the local cache of `options`.
pub fn open_remote(remote: &RemotePrefix, options: &RemoteOptions) -> Result<Cache, RemoteError> {
    let retry = Retry {
        attempts: options.attempts,
        first_backoff: options.first_backoff,
    };
    let store = remote.store();
    let store = store.as_ref();
    let manifest_url = remote.object_url(MANIFEST_FILE_NAME);
    let manifest_object = remote.object(MANIFEST_FILE_NAME);
    let (manifest_bytes, _) =
        retry.run(|| get_bytes(store, &manifest_object, &manifest_url, MAX_MANIFEST_BYTES))?;
    let manifest = Manifest::parse(&manifest_bytes).map_err(|source| RemoteError::Manifest {
        url: manifest_url.clone(),
        source,
    })?;
    let description = manifest.description();
    tracing::debug!(
        url = remote.url(),
        shards = description.shards.len(),
        "opening a remote cache"
    );
    let largest = description.shards.iter().max_by_key(|s| s.byte_len);
    let needs = |shard: &ShardEntry| shard.byte_len.saturating_add(SEAL_ALLOWANCE);
    if let Some(largest) = largest.filter(|s| needs(s) > options.cache_limit) {
        return Err(RemoteError::CacheLimit {
            url: remote.url().to_owned(),
            shard: largest.name.clone(),
            needed: needs(largest),
            limit: options.cache_limit,
        });
    }
    let manifest_sha = dsrt_atlas_codec::sha::sha256(&manifest_bytes);
    let key = local_key(&manifest, &manifest_sha);
    let local = Arc::new(
        ShardCache::open_with_access(
            &options.cache_dir,
            CacheLimits::new(options.cache_limit).with_wait_for_room(options.wait_for_room),
            options.cache_access,
        )
        .map_err(|source| RemoteError::LocalCache {
            url: remote.url().to_owned(),
            source,
        })?,
    );
    let fetcher = SmallFiles {
        remote,
        local: &local,
        key: &key,
        retry,
    };
    // The three small files are independent: placed side by side, the open costs the
    // slowest of their requests and fsyncs, not their sum.
    let held = std::thread::scope(|scope| {
        // index.bin's size follows from the manifest: anything else is refused before a byte
        // of it is downloaded.
        let index_len = description
            .sample_count
            .checked_mul(dsrt_index::ROW_BYTES as u64);
        let fetcher = &fetcher;
        let index = scope.spawn(move || {
            fetcher.place_hex(INDEX_FILE_NAME, &description.index_sha256, index_len)
        });
        let metadata = scope
            .spawn(|| fetcher.place_hex(METADATA_FILE_NAME, &description.metadata_sha256, None));
        let manifest = fetcher.place(
            MANIFEST_FILE_NAME,
            &manifest_sha,
            Some(&manifest_bytes),
            None,
        );
        let joined = |handle: std::thread::ScopedJoinHandle<'_, _>| {
            handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        };
        let index = joined(index);
        let metadata = joined(metadata);
        Ok::<_, RemoteError>(vec![manifest?, index?, metadata?])
    })?;
    let spec = ShardsSpec {
        remote: remote.clone(),
        key: key.clone(),
        entries: description.shards.clone(),
        local: Arc::clone(&local),
        fetch: options.fetch,
        retry,
        manifest_sha,
        read_while_downloading: options.read_while_downloading && !options.validate_cache,
        recheck: options.validate_cache,
    };
    let shards = RemoteShards::new(spec, options.prefetch_shards);
    let dir = options.cache_dir.join(&key);
    let opened = Cache::open_with_source(dir, open_options(options), Arc::new(shards));
    // The small files stay read-locked (no process evicts them) until the cache has mapped
    // index.bin and metadata.arrow; then their descriptors close, so an open remote cache
    // holds none. Evicted later, a mapped file is unlinked, never truncated: its mapping
    // stays valid (docs/remote.md, "Open files").
    drop(held);
    opened.map_err(|e| {
        // Name the remote cache, not only its local copy.
        RemoteError::Opened {
            url: remote.url().to_owned(),
            source: Box::new(e),
        }
    })
}

fn open_options(options: &RemoteOptions) -> OpenOptions {
    OpenOptions {
        validate_cache: options.validate_cache,
    }
}

/// `<cache id or source>-<first 16 hex digits of the manifest's SHA-256>`: a replaced remote
/// cache gets a new directory.
fn local_key(manifest: &Manifest, manifest_sha: &[u8; 32]) -> String {
    let id = match manifest {
        Manifest::V3(m) => format!("{:016x}", m.cache_id),
        Manifest::V2(m) => format!(
            "v2-{:016x}",
            dsrt_manifest::cache_id_for_source(&m.description.source)
        ),
    };
    format!("{id}-{}", &dsrt_atlas_codec::to_hex(manifest_sha)[..16])
}

/// Fetches a cache's small files into its local directory.
struct SmallFiles<'a> {
    remote: &'a RemotePrefix,
    local: &'a ShardCache,
    key: &'a str,
    retry: Retry,
}

impl SmallFiles<'_> {
    fn place_hex(
        &self,
        name: &str,
        sha_hex: &str,
        expected_len: Option<u64>,
    ) -> Result<CachedFile, RemoteError> {
        let sha =
            dsrt_atlas_codec::parse_sha256_hex(sha_hex).ok_or_else(|| RemoteError::Integrity {
                url: self.remote.object_url(MANIFEST_FILE_NAME),
                reason: format!("the sha256 of {name} '{sha_hex}' is not 64 hex digits"),
            })?;
        self.place(name, &sha, None, expected_len)
    }

    /// The local copy of `name`, fetched (or written from `bytes`) if absent, checked against
    /// `sha`. Its length is what the store says (the manifest lists no length for index.bin
    /// and metadata.arrow; the SHA-256 pins it), and must be `expected_len` when given.
    fn place(
        &self,
        name: &str,
        sha: &[u8; 32],
        bytes: Option<&[u8]>,
        expected_len: Option<u64>,
    ) -> Result<CachedFile, RemoteError> {
        let url = self.remote.object_url(name);
        let object = self.remote.object(name);
        let rel = Path::new(self.key).join(name);
        let local_error = |source| RemoteError::LocalCache {
            url: url.clone(),
            source,
        };
        if let Some(file) = self.local.get(&rel, sha).map_err(local_error)? {
            return Ok(file);
        }
        let store = self.remote.store();
        let store = store.as_ref();
        // The length to reserve is the GET's: its headers come before any byte is written (a
        // HEAD first would cost a round trip per file).
        let (len, mut response) = match bytes {
            Some(bytes) => (bytes.len() as u64, None),
            None => {
                let response = self.retry.run(|| open_stream(store, &object, &url))?;
                if let Some(expected) = expected_len.filter(|&e| e != response.size) {
                    return Err(RemoteError::Integrity {
                        url: url.clone(),
                        reason: format!(
                            "{} bytes, where the manifest's sample count implies {expected}",
                            response.size
                        ),
                    });
                }
                (response.size, Some(response))
            }
        };
        let mut fetch = |sink: &mut dyn FetchSink| -> Result<(), FetchError> {
            if let Some(bytes) = bytes {
                return sink.write_at(0, bytes).map_err(FetchError::permanent);
            }
            self.retry
                .run(|| {
                    sink.restart().map_err(|source| RemoteError::LocalIo {
                        path: url.clone(),
                        source,
                    })?;
                    let stream = match response.take() {
                        Some(stream) => stream,
                        None => open_stream(store, &object, &url)?,
                    };
                    // A retry that finds another size writes past the reservation or short
                    // of it; the cache refuses both (a length error), as for any download.
                    stream
                        .drain(&url, &mut |at, b| sink.write_owned(at, b))
                        .map(|_| ())
                })
                .map_err(|e| {
                    if e.is_retryable() {
                        FetchError::retryable(e)
                    } else {
                        FetchError::permanent(e)
                    }
                })
        };
        self.local
            .get_or_fetch(&rel, len, sha, &mut fetch)
            .map_err(|source| match source {
                dsrt_shard_cache::ShardCacheError::Integrity {
                    expected, found, ..
                } => RemoteError::Integrity {
                    url: url.clone(),
                    reason: format!("SHA-256 {found}, the manifest says {expected}"),
                },
                other => local_error(other),
            })
    }
}
