use crate::buffers::BufferPool;
use crate::{DatasetError, SampleKey, SampleTable};
use dsrt_metadata::RowView;
use dsrt_migrate::{ManifestUpdateError, ManifestUpdateReport};
use dsrt_reader::{Cache, OpenOptions, Sample, SampleBuf, SampleRef};
use dsrt_schema::ValueRef;
use durable_fs::{CancelToken, StdFileSystem};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One cache of a dataset with its resolved id.
#[derive(Debug)]
pub struct DatasetCache {
    /// The resolved cache id.
    pub cache_id: u64,
    /// The path as given to [`Dataset::open`] (or the name given to [`Dataset::from_caches`]).
    pub path: PathBuf,
    /// The open cache.
    pub cache: Cache,
}

/// An ordered list of open caches. `Send + Sync`: share it between loader threads.
#[derive(Debug)]
pub struct Dataset {
    caches: Vec<DatasetCache>,
    by_id: HashMap<u64, usize>,
    chunk_buffers: Arc<BufferPool>,
}

/// One metadata row seen by a [`Dataset::select`] predicate.
#[derive(Debug, Clone, Copy)]
pub struct SelectRow<'a> {
    /// The row's address.
    pub key: SampleKey,
    cache: &'a Cache,
    row: RowView<'a>,
}

impl<'a> SelectRow<'a> {
    /// The value of column `name`, or `None` if this cache has no such column.
    pub fn get(&self, name: &str) -> Option<ValueRef<'a>> {
        self.row.get(self.cache.schema().position(name)?)
    }

    /// The value of column `index` in this cache's schema order.
    pub fn get_index(&self, index: usize) -> Option<ValueRef<'a>> {
        self.row.get(index)
    }
}

impl Dataset {
    /// Opens every cache of `paths`, in order, and resolves their ids.
    pub fn open<P: AsRef<Path>>(paths: &[P], options: OpenOptions) -> Result<Self, DatasetError> {
        let mut by_dir: HashMap<PathBuf, PathBuf> = HashMap::with_capacity(paths.len());
        let mut caches = Vec::with_capacity(paths.len());
        for path in paths {
            let path = path.as_ref().to_path_buf();
            let resolved = std::fs::canonicalize(&path).map_err(|source| DatasetError::Path {
                path: path.clone(),
                source,
            })?;
            if let Some(first) = by_dir.get(&resolved) {
                return Err(DatasetError::DuplicatePath {
                    first: first.clone(),
                    second: path,
                });
            }
            by_dir.insert(resolved, path.clone());
            let cache = Cache::open(&path, options)?;
            caches.push((path, cache));
        }
        Self::from_caches(caches)
    }

    /// Joins caches opened elsewhere (such as caches on object storage, opened by
    /// `dsrt-remote`), in order, each with the path or URL that names it, and resolves their
    /// ids as [`Dataset::open`] does. Two entries with the same name are refused.
    pub fn from_caches(opened: Vec<(PathBuf, Cache)>) -> Result<Self, DatasetError> {
        let mut caches: Vec<DatasetCache> = Vec::with_capacity(opened.len());
        let mut by_id = HashMap::with_capacity(opened.len());
        for (position, (path, cache)) in opened.into_iter().enumerate() {
            if let Some(first) = caches.iter().find(|c| c.path == path) {
                return Err(DatasetError::DuplicatePath {
                    first: first.path.clone(),
                    second: path,
                });
            }
            let cache_id = cache.manifest().resolved_cache_id(position);
            if let Some(&earlier) = by_id.get(&cache_id) {
                let first: &DatasetCache = &caches[earlier];
                return Err(DatasetError::DuplicateCacheId {
                    cache_id,
                    first: first.path.clone(),
                    second: path,
                });
            }
            by_id.insert(cache_id, position);
            caches.push(DatasetCache {
                cache_id,
                path,
                cache,
            });
        }
        Ok(Self {
            caches,
            by_id,
            chunk_buffers: Arc::default(),
        })
    }

    /// The caches, in order, each with its resolved id and name (for a layer that reads them
    /// through a view of its own, such as token caches).
    pub fn into_caches(self) -> Vec<DatasetCache> {
        self.caches
    }

    /// Tells each cache whose shards come from a `ShardSource` (object storage) which of its
    /// shards the `(cache position, sample)` reads of `planned` need, in the order they first
    /// need them, at most `per_cache` of them; `scratch` is reused between calls. A hint: does
    /// nothing for local caches.
    pub fn will_need(
        &self,
        planned: impl IntoIterator<Item = (usize, u64)>,
        per_cache: usize,
        scratch: &mut Vec<Vec<u64>>,
    ) {
        scratch.resize_with(self.caches.len(), Vec::new);
        scratch.iter_mut().for_each(Vec::clear);
        for (cache, sample) in planned {
            let (Some(entry), Some(list)) = (self.caches.get(cache), scratch.get_mut(cache)) else {
                continue;
            };
            let Ok(row) = entry.cache.index().row(sample) else {
                continue;
            };
            if list.len() < per_cache && !list.contains(&row.shard_id) {
                list.push(row.shard_id);
            }
        }
        for (entry, list) in self.caches.iter().zip(scratch.iter()) {
            if !list.is_empty() {
                entry.cache.will_need(list);
            }
        }
    }

    /// Whether any cache's shards come from a `ShardSource` (object storage): only then do
    /// hints ([`Dataset::will_need`], `ShardHints`) do anything.
    pub fn has_shard_sources(&self) -> bool {
        self.caches.iter().any(|c| c.cache.has_shard_source())
    }

    /// The loaders' recycled chunk buffers.
    pub(crate) fn chunk_buffers(&self) -> &Arc<BufferPool> {
        &self.chunk_buffers
    }

    /// The caches in list order.
    pub fn caches(&self) -> &[DatasetCache] {
        &self.caches
    }

    /// The cache with id `cache_id`.
    pub fn cache(&self, cache_id: u64) -> Result<&Cache, DatasetError> {
        self.by_id
            .get(&cache_id)
            .map(|&i| &self.caches[i].cache)
            .ok_or(DatasetError::UnknownCache { cache_id })
    }

    /// Position in the list of the cache `key` names, its sample id checked against the
    /// cache's length.
    pub fn locate(&self, key: SampleKey) -> Result<usize, DatasetError> {
        let SampleKey {
            cache_id,
            sample_id,
        } = key;
        let position = (self.position(cache_id)).ok_or(DatasetError::UnknownCache { cache_id })?;
        let len = self.caches[position].cache.len();
        if sample_id >= len {
            return Err(DatasetError::SampleIndex {
                cache_id,
                sample_id,
                len,
            });
        }
        Ok(position)
    }

    /// Position in the list of the cache with id `cache_id`.
    pub fn position(&self, cache_id: u64) -> Option<usize> {
        self.by_id.get(&cache_id).copied()
    }

    /// Total samples over all caches.
    pub fn len(&self) -> u64 {
        self.caches.iter().map(|c| c.cache.len()).sum()
    }

    /// Whether the dataset holds no sample.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads the sample at `key` into `buf`.
    pub fn read<'a>(
        &'a self,
        key: SampleKey,
        buf: &'a mut SampleBuf,
    ) -> Result<SampleRef<'a>, DatasetError> {
        Ok(self.cache(key.cache_id)?.read(key.sample_id, buf)?)
    }

    /// Reads the sample `(cache_id, sample_id)` into a new [`Sample`].
    pub fn sample(&self, cache_id: u64, sample_id: u64) -> Result<Sample, DatasetError> {
        Ok(self.cache(cache_id)?.sample(sample_id)?)
    }

    /// Every sample whose metadata satisfies `predicate`, in list then row order. Reads
    /// metadata.arrow only; no shard is opened.
    pub fn select(&self, mut predicate: impl FnMut(&SelectRow<'_>) -> bool) -> SampleTable {
        let mut keys = Vec::new();
        for entry in &self.caches {
            let metadata = entry.cache.metadata();
            for sample_id in 0..entry.cache.len() {
                let Some(row) = metadata.row(sample_id) else {
                    break;
                };
                let key = SampleKey {
                    cache_id: entry.cache_id,
                    sample_id,
                };
                if predicate(&SelectRow {
                    key,
                    cache: &entry.cache,
                    row,
                }) {
                    keys.push(key);
                }
            }
        }
        SampleTable::new(keys)
    }

    /// Migrates this dataset's manifests (in its original list order) to `version`; see
    /// `dsrt_migrate::update_manifests`. The open dataset is not changed: ids stay the same,
    /// so every `(cache_id, sample_id)` made before still names the same sample.
    ///
    /// Local directories only: a list with caches on object storage migrates through
    /// `dsrt_migrate::update_manifests` with `dsrt-remote`'s `RemoteManifest`.
    pub fn update_manifests(
        &self,
        version: u64,
        cancel: &CancelToken,
    ) -> Result<ManifestUpdateReport, ManifestUpdateError> {
        self.update_manifests_through(version, &StdFileSystem, cancel)
    }

    /// [`Dataset::update_manifests`] through a given file system (fault injection in tests).
    /// Only with the `test-hooks` feature, for tests.
    #[cfg(feature = "test-hooks")]
    pub fn update_manifests_with(
        &self,
        version: u64,
        fs: &dyn durable_fs::FileSystem,
        cancel: &CancelToken,
    ) -> Result<ManifestUpdateReport, ManifestUpdateError> {
        self.update_manifests_through(version, fs, cancel)
    }

    /// The caches' directories as local manifest stores, migrated through `fs`.
    fn update_manifests_through(
        &self,
        version: u64,
        fs: &dyn durable_fs::FileSystem,
        cancel: &CancelToken,
    ) -> Result<ManifestUpdateReport, ManifestUpdateError> {
        let dirs: Vec<PathBuf> = self.caches.iter().map(|c| c.path.clone()).collect();
        dsrt_migrate::update_local_manifests(&dirs, version, fs, cancel)
    }
}
