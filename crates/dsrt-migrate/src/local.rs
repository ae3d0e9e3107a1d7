//! A cache directory's manifest: replaced crash-safely (temp file beside the resolved target,
//! fsync, rename, directory fsync) through a `FileSystem`, so tests inject faults.

use crate::{
    update_manifests, ManifestStore, ManifestUpdateError, ManifestUpdateReport, ReadManifest,
    Stored, UpdateCause, VersionToken,
};
use dsrt_manifest::{MANIFEST_FILE_NAME, MANIFEST_TEMP_PREFIX};
use durable_fs::{
    publish_cancellable, unique_temp_name, CancelToken, FileSystem, PublishStep, Published,
};
use std::path::{Path, PathBuf};

/// The manifest of a cache in a local directory.
///
/// The caller owns the manifest exclusively while a migration runs, so the version read is
/// not compared again: a local replacement is a rename, atomic for every reader.
pub struct LocalManifest<'a> {
    dir: PathBuf,
    fs: &'a dyn FileSystem,
}

impl<'a> LocalManifest<'a> {
    /// The manifest of the cache directory `dir`, written through `fs`.
    pub fn new(dir: impl Into<PathBuf>, fs: &'a dyn FileSystem) -> Self {
        Self {
            dir: dir.into(),
            fs,
        }
    }

    /// The manifests of `dirs`, in order.
    pub fn all(dirs: &[PathBuf], fs: &'a dyn FileSystem) -> Vec<Self> {
        dirs.iter().map(|dir| Self::new(dir.clone(), fs)).collect()
    }

    /// The cache directory as given.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// manifest.json with every symlink resolved: where the new file is written, so a link
    /// stays a link.
    fn resolved(&self) -> Result<PathBuf, UpdateCause> {
        let link = self.dir.join(MANIFEST_FILE_NAME);
        std::fs::canonicalize(&link).map_err(|source| UpdateCause::Read {
            manifest: link,
            source,
        })
    }
}

impl ManifestStore for LocalManifest<'_> {
    fn cache(&self) -> String {
        self.dir.display().to_string()
    }

    fn read(&self) -> Result<ReadManifest, UpdateCause> {
        let manifest = self.resolved()?;
        let bytes = std::fs::read(&manifest).map_err(|source| UpdateCause::Read {
            manifest: self.dir.join(MANIFEST_FILE_NAME),
            source,
        })?;
        Ok(ReadManifest {
            bytes,
            token: VersionToken::default(),
            location: manifest.display().to_string(),
            cache_key: parent(&manifest).as_os_str().to_owned(),
        })
    }

    /// Creates and removes a temporary file: the only check that covers permissions,
    /// read-only mounts and full directories alike.
    fn check_writable(&self, _read: &ReadManifest) -> Result<(), UpdateCause> {
        let manifest = self.resolved()?;
        let dir = parent(&manifest);
        let probe = dir.join(unique_temp_name(MANIFEST_TEMP_PREFIX));
        let not_writable = |source| UpdateCause::NotWritable {
            dir: dir.to_path_buf(),
            source,
        };
        drop(self.fs.create_new(&probe).map_err(not_writable)?);
        self.fs.remove_file(&probe).map_err(not_writable)
    }

    fn replace(
        &self,
        _read: &ReadManifest,
        bytes: Vec<u8>,
        cancel: &CancelToken,
    ) -> Result<Stored, UpdateCause> {
        let manifest = self.resolved()?;
        match publish_cancellable(self.fs, &manifest, MANIFEST_TEMP_PREFIX, &bytes, cancel) {
            Ok(published) => Ok(stored(published)),
            Err(e) if e.step == PublishStep::Cancelled => Err(UpdateCause::Interrupted),
            Err(e) => Err(UpdateCause::Publish(e)),
        }
    }

    /// Fsyncs the manifest and its directory: a v3 manifest another tool just wrote may not
    /// be durable yet.
    fn keep(&self, _read: &ReadManifest) -> Result<Stored, UpdateCause> {
        let manifest = self.resolved()?;
        self.fs
            .sync_existing(&manifest)
            .map_err(|source| UpdateCause::Sync {
                manifest: manifest.clone(),
                source,
            })?;
        Ok(stored(match self.fs.sync_dir(parent(&manifest)) {
            Ok(()) => Published::Durable,
            Err(e) => Published::DurabilityUnknown(e),
        }))
    }
}

fn parent(manifest: &Path) -> &Path {
    manifest.parent().unwrap_or(Path::new("."))
}

fn stored(published: Published) -> Stored {
    match published {
        Published::Durable => Stored::DURABLE,
        Published::DurabilityUnknown(e) => Stored {
            atomic: true,
            durability_unknown: Some(e.to_string()),
        },
    }
}

/// [`update_manifests`] of the cache directories `dirs` (in a dataset's order) through `fs`:
/// the whole migration of a list of local caches.
pub fn update_local_manifests(
    dirs: &[PathBuf],
    version: u64,
    fs: &dyn FileSystem,
    cancel: &CancelToken,
) -> Result<ManifestUpdateReport, ManifestUpdateError> {
    let stores = LocalManifest::all(dirs, fs);
    let stores: Vec<&dyn ManifestStore> = stores.iter().map(|s| s as &dyn ManifestStore).collect();
    update_manifests(&stores, version, cancel)
}
