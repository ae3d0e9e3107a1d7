//! The check phase: every target is read, parsed and probed before any is replaced.

use crate::UpdateCause;
use dsrt_manifest::{Manifest, MANIFEST_FILE_NAME, MANIFEST_TEMP_PREFIX};
use durable_fs::{unique_temp_name, FileSystem};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One checked target.
pub(crate) struct Target {
    pub(crate) cache: PathBuf,
    /// manifest.json with every symlink resolved: where the new file is written.
    pub(crate) manifest: PathBuf,
    pub(crate) bytes: Vec<u8>,
    pub(crate) parsed: Manifest,
    pub(crate) cache_id: u64,
}

/// Checks all caches; the first failure names its cache.
pub(crate) fn check_all(
    fs: &dyn FileSystem,
    caches: &[PathBuf],
) -> Result<Vec<Target>, (Option<PathBuf>, UpdateCause)> {
    let mut targets: Vec<Target> = Vec::with_capacity(caches.len());
    let mut ids: HashMap<u64, usize> = HashMap::new();
    let mut dirs: HashMap<PathBuf, usize> = HashMap::new();
    for (position, cache) in caches.iter().enumerate() {
        let fail = |cause| (Some(cache.clone()), cause);
        let target = check_one(fs, cache, position).map_err(fail)?;
        let dir = target
            .manifest
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        if let Some(&earlier) = dirs.get(&dir) {
            return Err(fail(UpdateCause::DuplicateCache {
                first: caches[earlier].clone(),
                second: cache.clone(),
            }));
        }
        if let Some(&earlier) = ids.get(&target.cache_id) {
            let cause = UpdateCause::DuplicateId {
                id: target.cache_id,
                first: caches[earlier].clone(),
                second: cache.clone(),
            };
            return Err(fail(cause));
        }
        dirs.insert(dir, position);
        ids.insert(target.cache_id, position);
        targets.push(target);
    }
    Ok(targets)
}

fn check_one(fs: &dyn FileSystem, cache: &Path, position: usize) -> Result<Target, UpdateCause> {
    let link = cache.join(MANIFEST_FILE_NAME);
    let read_error = |source| UpdateCause::Read {
        manifest: link.clone(),
        source,
    };
    let manifest = std::fs::canonicalize(&link).map_err(read_error)?;
    let bytes = std::fs::read(&manifest).map_err(read_error)?;
    let parsed = Manifest::parse(&bytes).map_err(|source| UpdateCause::Manifest {
        manifest: manifest.clone(),
        source,
    })?;
    let dir = manifest.parent().unwrap_or(Path::new("."));
    probe_writable(fs, dir)?;
    let cache_id = parsed.resolved_cache_id(position);
    Ok(Target {
        cache: cache.to_path_buf(),
        manifest,
        bytes,
        parsed,
        cache_id,
    })
}

/// Creates and removes a temporary file: the only check that covers permissions, read-only
/// mounts and full directories alike.
fn probe_writable(fs: &dyn FileSystem, dir: &Path) -> Result<(), UpdateCause> {
    let probe = dir.join(unique_temp_name(MANIFEST_TEMP_PREFIX));
    let not_writable = |source| UpdateCause::NotWritable {
        dir: dir.to_path_buf(),
        source,
    };
    drop(fs.create_new(&probe).map_err(not_writable)?);
    fs.remove_file(&probe).map_err(not_writable)
}
