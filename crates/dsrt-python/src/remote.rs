//! Locations (paths or object-store URLs), `datasetrt.publish` and the joins of
//! `datasetrt.convert` and `datasetrt.ray`, at a directory or a prefix.

use crate::errors::{enter, Error};
use dsrt_remote::{JoinPart, PublishOptions, RemoteError, RemotePrefix, StoreLocation};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

/// A cache location as given from Python (`str`, `bytes` or `os.PathLike`): a directory or an
/// object-store URL, as `dsrt_remote` opens it (a path that is not UTF-8 is a directory).
#[derive(Clone, Debug)]
pub(crate) struct Location(pub(crate) PathBuf);

impl Location {
    /// Extracts a location, or TypeError naming what was given instead.
    pub(crate) fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        let path = obj.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "a cache location must be a str (path or URL) or an os.PathLike, not {}",
                obj.get_type()
                    .name()
                    .map_or_else(|_| "?".to_owned(), |n| n.to_string())
            ))
        })?;
        Ok(Self(path))
    }

    /// The location as a string, for `paths`, `repr` and pickling (lossy for a non-UTF-8 path).
    pub(crate) fn display(&self) -> String {
        self.0.to_string_lossy().into_owned()
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

/// The directory or store prefix a location from Python names.
fn store_location(obj: &Bound<'_, PyAny>) -> PyResult<StoreLocation> {
    let Location(path) = Location::extract(obj)?;
    StoreLocation::from_path(&path).map_err(|e| Error::from(RemoteError::from(e)).into())
}

/// `_merge_parts(out, parts, *, source, schema, version=3)`: joins the finished caches `parts`
/// (`[(location, payload_bytes)]`, in order) into a new cache at `out`, a directory (their
/// shards moved) or an object-store prefix (their shards copied on the store), by
/// `dsrt_remote::join_parts`. Returns the summary dict `CacheWriter.finish` gives, plus
/// `manifest_atomic` for a prefix. What `datasetrt.convert` and `datasetrt.ray`'s datasink
/// commit with.
#[pyfunction]
#[pyo3(signature = (out, parts, *, source, schema, version = 3))]
pub(crate) fn _merge_parts<'py>(
    py: Python<'py>,
    out: &Bound<'py, PyAny>,
    parts: Vec<(Bound<'py, PyAny>, u64)>,
    source: String,
    schema: &Bound<'_, PyAny>,
    version: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let schema = crate::values::schema_from_py(schema)?;
    let options = datasetrt::WriterOptions::new(source, schema)
        .manifest_version(crate::writer::manifest_version(version)?);
    let to = store_location(out)?;
    let parts = (parts.iter())
        .map(|(part, payload_bytes)| {
            let location = store_location(part)?;
            let payload_bytes = *payload_bytes;
            Ok(JoinPart {
                location,
                payload_bytes,
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let joined = enter(py, || {
        dsrt_remote::join_parts(&to, &parts, &options, &PublishOptions::default())
    })?;
    let dict = crate::writer::summary_dict(py, &joined.cache)?;
    if to.as_remote().is_some() {
        dict.set_item("manifest_atomic", joined.manifest_atomic)?;
    }
    Ok(dict)
}

/// `_remove_remote_prefix(url)`: deletes every object under the prefix `url`
/// (`dsrt_remote::remove_prefix`): a job's staging prefix.
#[pyfunction]
pub(crate) fn _remove_remote_prefix(py: Python<'_>, url: &str) -> PyResult<()> {
    let remote = remote_prefix(url, "_remove_remote_prefix", "remove the directory")?;
    enter(py, || dsrt_remote::remove_prefix(&remote))
}

/// `_remove_unpublished(location, created)`: removes what an unfinished writer or join left at
/// `location`, a directory or a prefix (`dsrt_remote::remove_unpublished_at`: cache files only,
/// and the directory itself when `created`); a published cache is never touched. Best effort:
/// what cannot be removed is logged and left.
#[pyfunction]
pub(crate) fn _remove_unpublished(
    py: Python<'_>,
    location: &Bound<'_, PyAny>,
    created: bool,
) -> PyResult<()> {
    let at = store_location(location)?;
    enter(py, move || {
        if let Err(error) = dsrt_remote::remove_unpublished_at(&at, created) {
            tracing::warn!(%error, "could not remove what an unfinished writer left");
        }
        Ok::<_, Error>(())
    })
}
