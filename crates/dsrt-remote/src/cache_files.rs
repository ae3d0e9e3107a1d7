//! The cache files under a store prefix, for `dsrt_writer`'s `remove_unpublished` and
//! `first_cache_file`: the rules that say what a cache file is live there, once.

use crate::error::{block_on, RemoteError};
use crate::publish::store_error;
use crate::RemotePrefix;
use dsrt_shard::SHARDS_DIR_NAME;
use dsrt_writer::CacheFiles;
use futures::stream::TryStreamExt;
use object_store::ObjectStoreExt;

/// The cache files under a store prefix. A prefix has no directories: `shards/` is there
/// while objects are under it.
#[derive(Debug, Clone, Copy)]
pub struct RemoteCacheFiles<'a> {
    prefix: &'a RemotePrefix,
}

impl<'a> RemoteCacheFiles<'a> {
    /// The cache files under `prefix`.
    pub fn new(prefix: &'a RemotePrefix) -> Self {
        Self { prefix }
    }
}

impl CacheFiles for RemoteCacheFiles<'_> {
    type Error = RemoteError;

    fn exists(&self, name: &str) -> Result<bool, RemoteError> {
        let to = self.prefix;
        block_on(async {
            match to.store().head(&to.object(name)).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::NotFound { .. }) => Ok(false),
                Err(source) => Err(store_error(to, name, source)),
            }
        })
    }

    fn shards(&self) -> Result<Option<Vec<String>>, RemoteError> {
        let to = self.prefix;
        let under = to.object(SHARDS_DIR_NAME);
        let locations: Vec<object_store::path::Path> = block_on(async {
            to.store()
                .list(Some(&under))
                .map_ok(|meta| meta.location)
                .try_collect()
                .await
                .map_err(|source| store_error(to, SHARDS_DIR_NAME, source))
        })?;
        let names: Vec<String> = locations
            .iter()
            .filter_map(|location| location.prefix_match(&under))
            .map(|parts| {
                parts
                    .map(|part| part.as_ref().to_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .collect();
        Ok((!names.is_empty()).then_some(names))
    }

    fn remove(&self, name: &str) -> Result<(), RemoteError> {
        let to = self.prefix;
        block_on(async {
            match to.store().delete(&to.object(name)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(source) => Err(RemoteError::Store {
                    url: to.object_url(name),
                    source,
                }),
            }
        })
    }

    fn remove_emptied_dirs(&self, _created: bool) {}
}
