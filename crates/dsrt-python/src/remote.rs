//! Locations (paths or object-store URLs), `datasetrt.publish` and the object-store halves of
//! `datasetrt.ray`'s joins.

use crate::errors::{enter, Error};
use dsrt_remote::{PublishOptions, RemoteError, RemotePrefix, StoreLocation};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::path::PathBuf;

/// A cache location as given from Python: a `str` (a path or a URL) or an `os.PathLike`.
#[derive(Clone, Debug)]
pub(crate) enum Location {
    /// Valid UTF-8: opened through `dsrt_remote` (a path, a `file://` URL or a store URL).
    Text(String),
    /// A local path that is not valid UTF-8 (from `bytes` or an odd `os.PathLike`): opened as a
    /// local directory directly.
    Path(PathBuf),
}

impl Location {
    /// Extracts a location: `str`, `bytes` or `os.PathLike`.
    pub(crate) fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(Self::Text(s.to_cow()?.into_owned()));
        }
        let path: PathBuf = obj.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "a cache location must be a str (path or URL) or an os.PathLike, not {}",
                obj.get_type()
                    .name()
                    .map_or_else(|_| "?".to_owned(), |n| n.to_string())
            ))
        })?;
        Ok(match path.to_str() {
            Some(s) => Self::Text(s.to_owned()),
            None => Self::Path(path),
        })
    }

    /// The location as text, when it is.
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::Path(_) => None,
        }
    }

    /// The location as a local path.
    pub(crate) fn path(&self) -> PathBuf {
        match self {
            Self::Text(text) => PathBuf::from(text),
            Self::Path(path) => path.clone(),
        }
    }

    /// The location as a string, for `paths`, `repr` and pickling (lossy for a non-UTF-8 path).
    pub(crate) fn display(&self) -> String {
        match self {
            Self::Text(s) => s.clone(),
            Self::Path(p) => p.to_string_lossy().into_owned(),
        }
    }
}

/// `publish(local_dir, url, *, overwrite_partial=False)`: uploads the finished cache in
/// `local_dir` to the object-store prefix `url` (e.g. `s3://bucket/caches/train`): every
/// shard, index.bin and metadata.arrow first (each checked by size; large files as multipart
/// uploads), `manifest.json` last and only if the prefix has none, so no reader ever sees a
/// half-published cache. Caches are write-once: a prefix holding a manifest.json raises
/// RemoteError (kind "already_published"), and one holding other objects (what a failed
/// publish leaves) raises kind "prefix_not_empty" unless `overwrite_partial=True`. The store
/// is configured from the environment (`AWS_*` for s3://). Returns a dict: `url`, `files`,
/// `bytes`, `multipart_files`, `retries` and `manifest_atomic` (False when the store has no
/// conditional PUT). The GIL is released while uploading.
#[pyfunction]
#[pyo3(signature = (local_dir, url, *, overwrite_partial = false))]
pub(crate) fn publish<'py>(
    py: Python<'py>,
    local_dir: PathBuf,
    url: &str,
    overwrite_partial: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let remote = remote_prefix(url, "publish", "write a local cache with CacheWriter")?;
    let options = PublishOptions {
        overwrite_partial,
        ..PublishOptions::default()
    };
    let report = enter(py, || {
        dsrt_remote::publish_cache(&local_dir, &remote, &options)
    })?;
    let dict = PyDict::new(py);
    dict.set_item("url", &report.url)?;
    dict.set_item("files", report.files)?;
    dict.set_item("bytes", report.bytes)?;
    dict.set_item("multipart_files", report.multipart_files)?;
    dict.set_item("retries", report.retries)?;
    dict.set_item("manifest_atomic", report.manifest_atomic)?;
    Ok(dict)
}

/// `_parse_size(text)`: the bytes a byte size such as `"20GB"` means (`datasetrt::parse_byte_size`,
/// the grammar of `cache_limit` and of `dsrt --cache-limit`).
#[pyfunction]
pub(crate) fn _parse_size(text: &str) -> PyResult<u64> {
    datasetrt::parse_byte_size(text).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The store prefix `url` names, or ValueError if it is a local path: `function` needs a
/// store (`instead` says what to use for a local directory).
fn remote_prefix(url: &str, function: &str, instead: &str) -> PyResult<RemotePrefix> {
    let location = StoreLocation::parse(url).map_err(|e| Error::from(RemoteError::from(e)))?;
    match location {
        StoreLocation::Remote(remote) => Ok(remote),
        StoreLocation::Local(_) => Err(PyValueError::new_err(format!(
            "{function} needs an object-store URL (s3://bucket/prefix, ...), not the local path \
             {url:?}; {instead}"
        ))),
    }
}

/// `_check_publish_target(url)`: raises RemoteError unless the prefix `url` can receive a
/// cache: kind "already_published" when it holds a manifest.json, "prefix_not_empty" when it
/// holds any other object (`dsrt_remote::check_publish_target`). What `datasetrt.ray`'s
/// datasink checks before a job writes anything.
#[pyfunction]
pub(crate) fn _check_publish_target(py: Python<'_>, url: &str) -> PyResult<()> {
    let remote = remote_prefix(url, "_check_publish_target", "check the directory")?;
    enter(py, || {
        dsrt_remote::check_publish_target(&remote, &PublishOptions::default())
    })
}

/// `_merge_remote_parts(url, parts, *, source, schema, version=3)`: joins the caches published
/// under the prefixes `parts` (`[(url, payload_bytes)]`, in order) into a new cache under `url`,
/// copying their shards on the store (`dsrt_remote::merge_remote_parts`); returns the summary
/// dict `CacheWriter.finish` gives (`path` is `url`) plus `manifest_atomic`. What
/// `datasetrt.ray`'s datasink commits a job on a store with.
#[pyfunction]
#[pyo3(signature = (url, parts, *, source, schema, version = 3))]
pub(crate) fn _merge_remote_parts<'py>(
    py: Python<'py>,
    url: &str,
    parts: Vec<(String, u64)>,
    source: String,
    schema: &Bound<'_, PyAny>,
    version: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let schema = crate::values::schema_from_py(schema)?;
    let options = datasetrt::WriterOptions::new(source, schema)
        .manifest_version(crate::writer::manifest_version(version)?);
    let to = remote_prefix(
        url,
        "_merge_remote_parts",
        "join local parts with _merge_parts",
    )?;
    let parts = parts
        .iter()
        .map(|(part, payload_bytes)| {
            Ok(dsrt_remote::RemotePart {
                prefix: remote_prefix(part, "_merge_remote_parts", "publish the part first")?,
                payload_bytes: *payload_bytes,
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let joined = enter(py, || {
        dsrt_remote::merge_remote_parts(&to, &parts, &options, &PublishOptions::default())
    })?;
    let dict = crate::writer::summary_dict(py, &joined.cache)?;
    dict.set_item("path", to.url())?;
    dict.set_item("manifest_atomic", joined.manifest_atomic)?;
    Ok(dict)
}

/// `_remove_remote_prefix(url)`: deletes every object under the prefix `url`
/// (`dsrt_remote::remove_prefix`): a job's staging prefix.
#[pyfunction]
pub(crate) fn _remove_remote_prefix(py: Python<'_>, url: &str) -> PyResult<()> {
    let remote = remote_prefix(url, "_remove_remote_prefix", "remove the directory")?;
    enter(py, || dsrt_remote::remove_prefix(&remote))
}

/// `_remove_unpublished_remote(url)`: deletes the shards, index.bin and metadata.arrow an
/// unfinished join left under `url`, unless a manifest.json is there
/// (`datasetrt::remove_unpublished` over `dsrt_remote::RemoteCacheFiles`).
#[pyfunction]
pub(crate) fn _remove_unpublished_remote(py: Python<'_>, url: &str) -> PyResult<()> {
    let remote = remote_prefix(url, "_remove_unpublished_remote", "use _remove_unpublished")?;
    enter(py, || {
        datasetrt::remove_unpublished(&dsrt_remote::RemoteCacheFiles::new(&remote), false)
    })
}
