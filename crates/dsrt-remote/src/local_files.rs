//! The files of a finished local cache, as its manifest names them, in upload order.

use crate::error::RemoteError;
use dsrt_index::INDEX_FILE_NAME;
use dsrt_manifest::{Manifest, MANIFEST_FILE_NAME};
use dsrt_metadata::METADATA_FILE_NAME;
use dsrt_shard::SHARDS_DIR_NAME;
use std::path::{Path, PathBuf};

/// One file to upload.
#[derive(Debug, Clone)]
pub(crate) struct LocalFile {
    /// Its path relative to the cache (and so its name under the prefix), `/`-separated.
    pub(crate) relative: String,
    /// Its path on disk.
    pub(crate) path: PathBuf,
    /// Its size when the publish started.
    pub(crate) len: u64,
}

/// A local cache ready to publish: its data files (shards first) and its manifest bytes.
#[derive(Debug)]
pub(crate) struct LocalCache {
    pub(crate) files: Vec<LocalFile>,
    pub(crate) manifest: Vec<u8>,
}

/// Reads and parses `dir/manifest.json` and sizes every file it names; a shard whose size is
/// not the manifest's `byte_len` is refused before anything is uploaded.
pub(crate) fn read_local_cache(dir: &Path) -> Result<LocalCache, RemoteError> {
    let manifest_path = dir.join(MANIFEST_FILE_NAME);
    let manifest = std::fs::read(&manifest_path).map_err(|source| RemoteError::LocalFile {
        path: manifest_path.clone(),
        action: "read manifest",
        source,
    })?;
    let parsed = Manifest::parse(&manifest).map_err(|source| RemoteError::LocalManifest {
        path: manifest_path,
        source,
    })?;
    let mut files = Vec::new();
    for shard in &parsed.description().shards {
        let relative = format!("{SHARDS_DIR_NAME}/{}", shard.name);
        files.push(sized(dir, relative, Some(shard.byte_len))?);
    }
    for name in [INDEX_FILE_NAME, METADATA_FILE_NAME] {
        files.push(sized(dir, name.to_owned(), None)?);
    }
    Ok(LocalCache { files, manifest })
}

/// `dir/relative` as a file to upload, sized; refused if it is not `expected` bytes.
pub(crate) fn sized(
    dir: &Path,
    relative: String,
    expected: Option<u64>,
) -> Result<LocalFile, RemoteError> {
    let path = relative
        .split('/')
        .fold(dir.to_path_buf(), |p, part| p.join(part));
    let len = std::fs::metadata(&path)
        .map_err(|source| RemoteError::LocalFile {
            path: path.clone(),
            action: "stat",
            source,
        })?
        .len();
    if let Some(expected) = expected.filter(|&e| e != len) {
        return Err(RemoteError::LocalSize {
            path,
            expected,
            actual: len,
        });
    }
    Ok(LocalFile {
        relative,
        path,
        len,
    })
}
