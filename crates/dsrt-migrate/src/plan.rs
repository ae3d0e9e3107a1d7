//! The check phase: every target is read, parsed and probed before any is replaced.

use crate::{ManifestStore, ReadManifest, UpdateCause};
use dsrt_manifest::Manifest;
use std::collections::HashMap;
use std::ffi::OsString;

/// One checked target.
pub(crate) struct Target<'a> {
    pub(crate) store: &'a dyn ManifestStore,
    /// The cache as the caller named it.
    pub(crate) cache: String,
    pub(crate) read: ReadManifest,
    pub(crate) parsed: Manifest,
    pub(crate) cache_id: u64,
}

/// Checks all caches; the first failure names its cache.
pub(crate) fn check_all<'a>(
    stores: &[&'a dyn ManifestStore],
) -> Result<Vec<Target<'a>>, (Option<String>, UpdateCause)> {
    let mut targets: Vec<Target<'a>> = Vec::with_capacity(stores.len());
    let mut ids: HashMap<u64, usize> = HashMap::new();
    let mut keys: HashMap<OsString, usize> = HashMap::new();
    for (position, &store) in stores.iter().enumerate() {
        let cache = store.cache();
        let fail = |cause| (Some(cache.clone()), cause);
        let target = check_one(store, cache.clone(), position).map_err(fail)?;
        if let Some(&earlier) = keys.get(&target.read.cache_key) {
            return Err(fail(UpdateCause::DuplicateCache {
                first: targets[earlier].cache.clone(),
                second: cache.clone(),
            }));
        }
        if let Some(&earlier) = ids.get(&target.cache_id) {
            let cause = UpdateCause::DuplicateId {
                id: target.cache_id,
                first: targets[earlier].cache.clone(),
                second: cache.clone(),
            };
            return Err(fail(cause));
        }
        keys.insert(target.read.cache_key.clone(), position);
        ids.insert(target.cache_id, position);
        targets.push(target);
    }
    Ok(targets)
}

fn check_one(
    store: &dyn ManifestStore,
    cache: String,
    position: usize,
) -> Result<Target<'_>, UpdateCause> {
    let read = store.read()?;
    let parsed = Manifest::parse(&read.bytes).map_err(|source| UpdateCause::Manifest {
        manifest: read.location.clone(),
        source,
    })?;
    store.check_writable(&read)?;
    let cache_id = parsed.resolved_cache_id(position);
    Ok(Target {
        store,
        cache,
        read,
        parsed,
        cache_id,
    })
}
