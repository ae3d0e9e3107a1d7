//! The files of a cache's location, as removing an unpublished cache and refusing a join's
//! target see them: one set of rules for a directory (here) and a store prefix (dsrt-remote).

use crate::writer::is_shard_file_name;
use dsrt_index::INDEX_FILE_NAME;
use dsrt_manifest::MANIFEST_FILE_NAME;
use dsrt_metadata::METADATA_FILE_NAME;
use dsrt_shard::SHARDS_DIR_NAME;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The cache files at one location (a directory or a store prefix), named relative to it
/// (`manifest.json`, `index.bin`, `shards/000000.bin`).
pub trait CacheFiles {
    /// Why a look or a removal failed.
    type Error;

    /// Whether the file `name` exists.
    fn exists(&self, name: &str) -> Result<bool, Self::Error>;

    /// The names of the files under `shards/`, relative to it; `None` when there is no
    /// `shards/` (a prefix has one only while objects are under it).
    fn shards(&self) -> Result<Option<Vec<String>>, Self::Error>;

    /// Removes the file `name`; one already gone is no error.
    fn remove(&self, name: &str) -> Result<(), Self::Error>;

    /// Removes the directories the cache's files were in once they are empty: `shards/`, and
    /// the location itself when `created` (the run made it). Best effort: a directory still
    /// holding another file stays. A prefix has no directories.
    fn remove_emptied_dirs(&self, created: bool);
}

/// Removes what an unfinished writer or join left at `files` (its shard files under
/// `shards/`, index.bin and metadata.arrow, then the emptied directories, the location itself
/// when `created`) and nothing else, so a failed run leaves no partial cache behind. A
/// published cache (one with a manifest.json) is never touched. Every removal is tried; the
/// first failure is returned, and what could not be removed stays. Not atomic against a
/// writer publishing at the same location at the same moment.
pub fn remove_unpublished<F: CacheFiles + ?Sized>(
    files: &F,
    created: bool,
) -> Result<(), F::Error> {
    if files.exists(MANIFEST_FILE_NAME)? {
        return Ok(());
    }
    let mut first_error = None;
    let shards = match files.shards() {
        Ok(shards) => shards.unwrap_or_default(),
        Err(error) => {
            first_error = Some(error);
            Vec::new()
        }
    };
    let names = shards
        .into_iter()
        .filter(|name| is_shard_file_name(name))
        .map(|name| format!("{SHARDS_DIR_NAME}/{name}"))
        .chain([INDEX_FILE_NAME.to_owned(), METADATA_FILE_NAME.to_owned()]);
    for name in names {
        if let Err(error) = files.remove(&name) {
            first_error.get_or_insert(error);
        }
    }
    files.remove_emptied_dirs(created);
    first_error.map_or(Ok(()), Err)
}

/// The first cache file at `files`, if any: manifest.json, index.bin, metadata.arrow, or
/// `shards/` and what is under it. A new cache is never written beside one (an earlier cache
/// or a half-finished one is never mixed in).
pub fn first_cache_file<F: CacheFiles + ?Sized>(files: &F) -> Result<Option<String>, F::Error> {
    for name in [MANIFEST_FILE_NAME, INDEX_FILE_NAME, METADATA_FILE_NAME] {
        if files.exists(name)? {
            return Ok(Some(name.to_owned()));
        }
    }
    Ok(files.shards()?.map(|names| match names.first() {
        Some(name) => format!("{SHARDS_DIR_NAME}/{name}"),
        None => SHARDS_DIR_NAME.to_owned(),
    }))
}

/// The cache files in a local directory.
#[derive(Debug, Clone, Copy)]
pub struct LocalCacheFiles<'a> {
    dir: &'a Path,
}

impl<'a> LocalCacheFiles<'a> {
    /// The cache files in `dir`.
    pub fn new(dir: &'a Path) -> Self {
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl CacheFiles for LocalCacheFiles<'_> {
    type Error = io::Error;

    fn exists(&self, name: &str) -> io::Result<bool> {
        self.path(name).try_exists()
    }

    fn shards(&self) -> io::Result<Option<Vec<String>>> {
        let entries = match fs::read_dir(self.path(SHARDS_DIR_NAME)) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        let mut names = Vec::new();
        for entry in entries {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        Ok(Some(names))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        match fs::remove_file(self.path(name)) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
            _ => Ok(()),
        }
    }

    fn remove_emptied_dirs(&self, created: bool) {
        let _ = fs::remove_dir(self.path(SHARDS_DIR_NAME));
        if created {
            let _ = fs::remove_dir(self.dir);
        }
    }
}
