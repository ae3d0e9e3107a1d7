//! The Python exception hierarchy, mapped from the Rust error types, and the GIL-free runner
//! that turns a Rust panic into a Python exception.

use datasetrt::{
    CacheError as RsCacheError, CacheFile, DatasetError as RsDatasetError, ManifestUpdateEntry,
    ManifestUpdateError as RsManifestUpdateError, UpdateCause, UpdateOutcome,
    WriteError as RsWriteError,
};
use dsrt_remote::RemoteError as RsRemoteError;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

pyo3::create_exception!(
    datasetrt,
    Error,
    PyException,
    "Base class of every DatasetRT error. Attributes: `path` (the file or directory concerned, or None) and `reason` (what is wrong)."
);
pyo3::create_exception!(
    datasetrt,
    CacheError,
    Error,
    "A cache cannot be opened or a sample cannot be served. `kind` names the check that failed: not_a_directory, incomplete, manifest, index, metadata, missing_shard, shard_length, checksum, record or io."
);
pyo3::create_exception!(
    datasetrt,
    ResourceError,
    CacheError,
    "The process ran out of file descriptors or memory mappings opening or mapping a cache file: a resource limit, not a fault of the cache. `resource` is \"descriptors\" or \"mappings\", `max_open_shards` the bound on idle shard files kept open (datasetrt.set_max_open_shards, DSRT_MAX_OPEN_SHARDS); raise the limit (ulimit -n, vm.max_map_count) or lower the bound."
);
pyo3::create_exception!(
    datasetrt,
    IncompleteCacheError,
    CacheError,
    "The directory has no manifest.json: the cache was never published (or its writer was interrupted)."
);
pyo3::create_exception!(
    datasetrt,
    ChecksumError,
    CacheError,
    "A file's SHA-256 differs from the manifest's (checked with validate_cache=True). `file` names it."
);
pyo3::create_exception!(
    datasetrt,
    CorruptCacheError,
    CacheError,
    "A cache file is malformed or disagrees with another: manifest, index, metadata, shard or record."
);
pyo3::create_exception!(
    datasetrt,
    DatasetError,
    Error,
    "A dataset, key, sample table or iteration plan is unusable (duplicate cache ids or paths, unknown cache id, bad sample table, invalid plan or resume state)."
);
pyo3::create_exception!(
    datasetrt,
    ManifestUpdateError,
    Error,
    "update_manifests stopped. `done` lists the caches completed before (dicts like the report's entries), `failed` is the cache being processed (None when the whole request was refused before writing anything), `kind` and `reason` give the cause, and `causes` maps every cache path named by the cause to the reason."
);
pyo3::create_exception!(
    datasetrt,
    WriteError,
    Error,
    "A cache could not be written. `kind` names what failed: target_not_empty, invalid_option, row, payload_too_large, io, metadata, poisoned, publish or durability_unknown."
);
pyo3::create_exception!(
    datasetrt,
    RemoteError,
    Error,
    "A cache on object storage (an s3://, gs://, az://, http(s):// URL) could not be opened, read or published, for a reason on the store's side or in the local cache directory. `url` names the object or prefix concerned, `kind` the failure (location, not_found, store, integrity, manifest_changed, cache_limit, local_cache, manifest, too_large, short_range, already_published, prefix_not_empty, upload, ...), `retryable` says whether trying again later may help; a failed read also sets `file` (the shard, e.g. shards/000001.bin) and `cache` (the cache's URL)."
);
pyo3::create_exception!(
    datasetrt,
    RemoteIntegrityError,
    RemoteError,
    "A file downloaded from object storage does not match its manifest entry (size or SHA-256); nothing of it was kept in the local cache."
);
pyo3::create_exception!(
    datasetrt,
    ManifestChangedError,
    RemoteError,
    "The remote manifest.json changed since the cache was opened (the cache was replaced while in use); reopen it."
);
pyo3::create_exception!(
    datasetrt,
    CacheLimitError,
    RemoteError,
    "The local cache directory's byte limit (cache_limit) cannot hold the cache's largest shard. `needed` and `limit` give the bytes."
);
pyo3::create_exception!(
    datasetrt,
    InternalError,
    Error,
    "A bug: the Rust code panicked. The message carries the panic's text."
);

/// The lookup errors: each is the package's error and the built-in one a caller of a mapping
/// or sequence expects (`except KeyError`, `except IndexError`), as `atlas_collections`'s
/// lookup errors are. PyO3's exception macro takes one base, so these are made with `type`.
static UNKNOWN_CACHE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static SAMPLE_INDEX_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn two_base_class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
    doc: &str,
    bases: (Bound<'py, PyType>, Bound<'py, PyType>),
) -> PyResult<&'static Py<PyType>> {
    cell.get_or_try_init(py, || {
        let namespace = PyDict::new(py);
        namespace.set_item("__doc__", doc)?;
        namespace.set_item("__module__", "datasetrt")?;
        let made = py.get_type::<PyType>().call1((
            name,
            PyTuple::new(py, [bases.0, bases.1])?,
            namespace,
        ))?;
        Ok(made.cast_into::<PyType>()?.unbind())
    })
}

/// `datasetrt.UnknownCacheError`, a `DatasetError` and a `KeyError`.
pub(crate) fn unknown_cache_error_type(py: Python<'_>) -> PyResult<&'static Py<PyType>> {
    two_base_class(
        py,
        &UNKNOWN_CACHE_ERROR,
        "UnknownCacheError",
        "A key names a cache id that is not in the dataset. Also a KeyError. `kind` is \"unknown_cache\", `cache_id` the id.",
        (py.get_type::<DatasetError>(), py.get_type::<pyo3::exceptions::PyKeyError>()),
    )
}

/// `datasetrt.SampleIndexError`, a `DatasetError` and an `IndexError`.
pub(crate) fn sample_index_error_type(py: Python<'_>) -> PyResult<&'static Py<PyType>> {
    two_base_class(
        py,
        &SAMPLE_INDEX_ERROR,
        "SampleIndexError",
        "A sample index or id past a cache's end. Also an IndexError. `kind` is \"sample_index\".",
        (
            py.get_type::<DatasetError>(),
            py.get_type::<pyo3::exceptions::PyIndexError>(),
        ),
    )
}

/// An instance of one of the lookup errors with `message` and `attrs` (an `Err` of building it
/// is itself the error to raise).
fn lookup_error(
    py: Python<'_>,
    class: PyResult<&'static Py<PyType>>,
    message: String,
    attrs: &[(&str, Py<PyAny>)],
) -> PyErr {
    let class = match class {
        Ok(class) => class.bind(py),
        Err(error) => return error,
    };
    match class.call1((message,)) {
        Ok(value) => {
            for (name, v) in attrs {
                let _ = value.setattr(*name, v.bind(py));
            }
            PyErr::from_value(value)
        }
        Err(error) => error,
    }
}

/// A key naming a cache id the dataset does not have.
pub(crate) fn unknown_cache(py: Python<'_>, cache_id: u64) -> PyErr {
    let reason = format!("no cache with id {cache_id} in this dataset");
    let attrs = [
        ("path", py.None()),
        ("reason", obj(py, reason.clone())),
        ("kind", obj(py, "unknown_cache")),
        ("cache_id", obj(py, cache_id)),
    ];
    lookup_error(py, unknown_cache_error_type(py), reason, &attrs)
}

/// A sample index or id past a cache's end; `message` says which and how many there are.
pub(crate) fn sample_index(py: Python<'_>, message: String) -> PyErr {
    let attrs = [
        ("path", py.None()),
        ("reason", obj(py, message.clone())),
        ("kind", obj(py, "sample_index")),
    ];
    lookup_error(py, sample_index_error_type(py), message, &attrs)
}

/// Runs `f` without the GIL; a panic inside becomes an [`InternalError`].
pub(crate) fn detach<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .map_err(|panic| {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            InternalError::new_err(format!("internal error (Rust panic): {text}"))
        })
}

/// Builds an exception of type `T` with message `message` and the given attributes.
pub(crate) fn with_attrs<T: pyo3::PyTypeInfo>(
    py: Python<'_>,
    message: String,
    attrs: &[(&str, Py<PyAny>)],
) -> PyErr {
    let err = PyErr::new::<T, _>(message);
    let value = err.value(py);
    for (name, v) in attrs {
        // Setting an attribute on a fresh exception instance cannot fail in practice; if it
        // does, the message still carries everything.
        let _ = value.setattr(*name, v.bind(py));
    }
    err
}

pub(crate) fn path_obj(py: Python<'_>, path: &Path) -> Py<PyAny> {
    path.to_string_lossy()
        .into_owned()
        .into_pyobject(py)
        .map_or_else(|_| py.None(), |s| s.into_any().unbind())
}

pub(crate) fn obj<'py, T: pyo3::IntoPyObject<'py>>(py: Python<'py>, v: T) -> Py<PyAny> {
    use pyo3::IntoPyObjectExt;
    v.into_py_any(py).unwrap_or_else(|_| py.None())
}

/// A cache error as the matching Python exception.
pub(crate) fn cache_error(py: Python<'_>, err: &RsCacheError) -> PyErr {
    if let Some(raised) = crate::interrupt::pending(py) {
        return raised;
    }
    if let RsCacheError::Io { file, source, .. } = err {
        // A read through a remote cache's shard source: the cause is the store's (or the
        // local download cache's), which the RemoteError classes describe.
        if let Some(remote) = source
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<RsRemoteError>())
        {
            return remote_read_error(py, remote, file);
        }
    }
    let attrs = [
        ("path", path_obj(py, err.path())),
        ("reason", obj(py, err.reason())),
        ("kind", obj(py, err.kind())),
        ("file", obj(py, err.file().map(|file| file.to_string()))),
        ("sample", obj(py, err.sample())),
    ];
    let message = err.to_string();
    match err {
        RsCacheError::Resource {
            resource, source, ..
        } => {
            let extra = resource_attrs(py, *resource, source);
            with_attrs::<ResourceError>(
                py,
                message,
                &attrs.into_iter().chain(extra).collect::<Vec<_>>(),
            )
        }
        RsCacheError::Incomplete { .. } => with_attrs::<IncompleteCacheError>(py, message, &attrs),
        RsCacheError::Checksum { .. } => with_attrs::<ChecksumError>(py, message, &attrs),
        RsCacheError::NotADirectory { .. } | RsCacheError::Io { .. } => {
            with_attrs::<CacheError>(py, message, &attrs)
        }
        _ => with_attrs::<CorruptCacheError>(py, message, &attrs),
    }
}

/// The attributes a `ResourceError` carries beside `CacheError`'s: `resource`,
/// `max_open_shards` and `errno`.
fn resource_attrs(
    py: Python<'_>,
    resource: datasetrt::Exhausted,
    source: &std::io::Error,
) -> [(&'static str, Py<PyAny>); 3] {
    let name = match resource {
        datasetrt::Exhausted::Descriptors => "descriptors",
        datasetrt::Exhausted::Mappings => "mappings",
    };
    [
        ("resource", obj(py, name)),
        (
            "max_open_shards",
            obj(py, datasetrt::HandlePool::global().capacity()),
        ),
        ("errno", obj(py, source.raw_os_error())),
    ]
}

/// An I/O error opening or mapping the shard file at `path` outside any `Cache` (a
/// `transfer="locations"` receiver): `ResourceError` when a resource ran out, else
/// `CacheError` (kind `io`).
pub(crate) fn io_file_error(py: Python<'_>, path: &Path, error: &std::io::Error) -> PyErr {
    let reason = error.to_string();
    let common = [
        ("path", path_obj(py, path)),
        ("file", path_obj(py, path)),
        ("sample", py.None()),
        ("reason", obj(py, &reason)),
    ];
    match datasetrt::Exhausted::of(error) {
        Some(resource) => {
            let message = format!(
                "{}: {resource}: {reason}; {}",
                path.display(),
                resource.advice()
            );
            let attrs = common
                .into_iter()
                .chain([("kind", obj(py, "resource"))])
                .chain(resource_attrs(py, resource, error));
            with_attrs::<ResourceError>(py, message, &attrs.collect::<Vec<_>>())
        }
        None => {
            let message = format!("{}: {reason}", path.display());
            let attrs = common.into_iter().chain([
                ("kind", obj(py, "io")),
                ("errno", obj(py, error.raw_os_error())),
            ]);
            with_attrs::<CacheError>(py, message, &attrs.collect::<Vec<_>>())
        }
    }
}

/// A dataset error as a Python exception (cache errors keep their own classes).
pub(crate) fn dataset_error(py: Python<'_>, err: &RsDatasetError) -> PyErr {
    if let Some(raised) = crate::interrupt::pending(py) {
        return raised;
    }
    if let RsDatasetError::Cache(inner) = err {
        return cache_error(py, inner);
    }
    let (path, kind) = (err.path(), err.kind());
    let attrs = [
        ("path", path.map_or_else(|| py.None(), |p| path_obj(py, p))),
        ("reason", obj(py, err.to_string())),
        ("kind", obj(py, kind)),
    ];
    with_attrs::<DatasetError>(py, err.to_string(), &attrs)
}

/// A write error as a [`WriteError`].
pub(crate) fn write_error(py: Python<'_>, err: &RsWriteError) -> PyErr {
    let (path, kind, reason) = (err.path(), err.kind(), err.reason());
    // `input`, `column` and `key` name what a conversion refused; the writer's own errors
    // have them as None, so every WriteError carries the same attributes.
    let attrs = [
        ("path", path.map_or_else(|| py.None(), |p| path_obj(py, p))),
        ("input", py.None()),
        ("column", py.None()),
        ("key", py.None()),
        ("reason", obj(py, reason)),
        ("kind", obj(py, kind)),
    ];
    with_attrs::<WriteError>(py, err.to_string(), &attrs)
}

/// A conversion's error: the writer's own as a [`WriteError`] (through [`write_error`]), a
/// signal handler's exception when the run was interrupted, a worker's panic as an
/// [`InternalError`], and an input that could not be read or converted as a [`WriteError`]
/// naming it (with `column` for a refused table column, `key` for a refused WebDataset
/// sample).
pub(crate) fn pack_error(py: Python<'_>, err: &datasetrt::pack::PackError) -> PyErr {
    use datasetrt::pack::PackError;
    if let Some(raised) = crate::interrupt::pending(py) {
        return raised;
    }
    if let PackError::Write(inner) = err {
        return write_error(py, inner);
    }
    let attrs = [
        (
            "path",
            err.path().map_or_else(|| py.None(), |p| path_obj(py, p)),
        ),
        (
            "input",
            err.input().map_or_else(|| py.None(), |i| obj(py, i)),
        ),
        (
            "column",
            err.column().map_or_else(|| py.None(), |c| obj(py, c)),
        ),
        ("key", err.key().map_or_else(|| py.None(), |k| obj(py, k))),
        ("reason", obj(py, err.reason())),
        ("kind", obj(py, err.kind())),
    ];
    match err {
        PackError::WorkerPanicked(_) => with_attrs::<InternalError>(py, err.to_string(), &attrs),
        PackError::Io { .. }
        | PackError::Input { .. }
        | PackError::Column { .. }
        | PackError::BadSample { .. }
        | PackError::Parquet { .. }
        | PackError::Arrow { .. }
        | PackError::Encode { .. }
        | PackError::TokenOutOfRange { .. }
        | PackError::Tokenizer { .. }
        | PackError::Cancelled
        | PackError::Write(_) => with_attrs::<WriteError>(py, err.to_string(), &attrs),
    }
}

/// One report entry as a dict: `path`, `manifest`, `cache_id`, `outcome` and `error`.
pub(crate) fn entry_dict<'py>(
    py: Python<'py>,
    entry: &ManifestUpdateEntry,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("path", entry.cache.to_string_lossy().into_owned())?;
    dict.set_item("manifest", entry.manifest.to_string_lossy().into_owned())?;
    dict.set_item("cache_id", entry.cache_id)?;
    let (outcome, error) = match &entry.outcome {
        UpdateOutcome::Updated => ("updated", None),
        UpdateOutcome::Unchanged => ("unchanged", None),
        UpdateOutcome::DurabilityUnknown { error } => ("durability_unknown", Some(error.clone())),
    };
    dict.set_item("outcome", outcome)?;
    dict.set_item("error", error)?;
    Ok(dict)
}

/// A stopped migration as a [`ManifestUpdateError`].
pub(crate) fn manifest_update_error(py: Python<'_>, err: &RsManifestUpdateError) -> PyErr {
    let cause = err.cause.as_ref();
    let kind = cause.kind();
    let reason = cause.to_string();
    // Every cache the cause names, each with the reason.
    let causes = PyDict::new(py);
    let name = |p: &Path| {
        let _ = causes.set_item(p.to_string_lossy().into_owned(), &reason);
    };
    match cause {
        UpdateCause::DuplicateId { first, second, .. }
        | UpdateCause::DuplicateCache { first, second } => {
            name(first);
            name(second);
        }
        _ => {
            if let Some(failed) = &err.failed {
                name(failed);
            }
        }
    }
    let done = PyList::empty(py);
    for entry in &err.done {
        if let Ok(d) = entry_dict(py, entry) {
            let _ = done.append(d);
        }
    }
    let attrs = [
        (
            "path",
            err.failed
                .as_deref()
                .map_or_else(|| py.None(), |p| path_obj(py, p)),
        ),
        (
            "failed",
            err.failed
                .as_deref()
                .map_or_else(|| py.None(), |p| path_obj(py, p)),
        ),
        ("reason", obj(py, reason.clone())),
        ("kind", obj(py, kind)),
        ("done", done.into_any().unbind()),
        ("causes", causes.into_any().unbind()),
    ];
    with_attrs::<ManifestUpdateError>(py, err.to_string(), &attrs)
}

/// A remote error as a [`RemoteError`] (or subclass) with `message`, plus `extra` attributes.
fn remote_exception(
    py: Python<'_>,
    err: &RsRemoteError,
    message: String,
    extra: Vec<(&str, Py<PyAny>)>,
) -> PyErr {
    let url = err.url();
    let mut attrs = vec![
        ("path", obj(py, url)),
        ("url", obj(py, url)),
        ("reason", obj(py, err.reason())),
        ("kind", obj(py, err.kind())),
        ("retryable", obj(py, err.is_retryable())),
    ];
    if let RsRemoteError::CacheLimit {
        shard,
        needed,
        limit,
        ..
    } = err
    {
        attrs.push(("shard", obj(py, shard.clone())));
        attrs.push(("needed", obj(py, *needed)));
        attrs.push(("limit", obj(py, *limit)));
    }
    attrs.extend(extra);
    match err {
        RsRemoteError::Integrity { .. } => with_attrs::<RemoteIntegrityError>(py, message, &attrs),
        RsRemoteError::ManifestChanged { .. } => {
            with_attrs::<ManifestChangedError>(py, message, &attrs)
        }
        RsRemoteError::CacheLimit { .. } => with_attrs::<CacheLimitError>(py, message, &attrs),
        _ => with_attrs::<RemoteError>(py, message, &attrs),
    }
}

/// An error of opening (or publishing) through `dsrt_remote` as a Python exception: the
/// local cache and dataset errors keep their own classes (a remote cache's files that fail
/// their checks once local raise the `CacheError` subclass, with `url` set); everything else
/// is a [`RemoteError`].
pub(crate) fn remote_error(py: Python<'_>, err: &RsRemoteError) -> PyErr {
    if let Some(raised) = crate::interrupt::pending(py) {
        return raised;
    }
    match err {
        RsRemoteError::Cache(inner) => cache_error(py, inner),
        RsRemoteError::Dataset(inner) => dataset_error(py, inner),
        RsRemoteError::Write(inner) => write_error(py, inner),
        RsRemoteError::Opened { url, source } => {
            let exc = cache_error(py, source);
            let value = exc.value(py);
            let _ = value.setattr("url", url);
            // Name the remote cache first, then what its local copy failed.
            let _ = value.setattr("args", (format!("{url}: {source}"),));
            exc
        }
        other => remote_exception(py, other, other.to_string(), Vec::new()),
    }
}

/// A read that failed because its shard source (a remote cache) failed: names the shard and
/// the URL.
fn remote_read_error(py: Python<'_>, err: &RsRemoteError, file: &CacheFile) -> PyErr {
    let shard = file.to_string();
    let message = format!("reading {shard} of a remote cache: {err}");
    let cache_url = err.url().map(|u| {
        u.strip_suffix(&format!("/{shard}"))
            .or_else(|| u.strip_suffix("/manifest.json"))
            .unwrap_or(u)
            .to_owned()
    });
    let extra = vec![("file", obj(py, shard)), ("cache", obj(py, cache_url))];
    remote_exception(py, err, message, extra)
}

/// Registers every exception class on the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("CacheError", py.get_type::<CacheError>())?;
    m.add("ResourceError", py.get_type::<ResourceError>())?;
    m.add(
        "IncompleteCacheError",
        py.get_type::<IncompleteCacheError>(),
    )?;
    m.add("ChecksumError", py.get_type::<ChecksumError>())?;
    m.add("CorruptCacheError", py.get_type::<CorruptCacheError>())?;
    m.add("DatasetError", py.get_type::<DatasetError>())?;
    m.add("ManifestUpdateError", py.get_type::<ManifestUpdateError>())?;
    m.add("WriteError", py.get_type::<WriteError>())?;
    m.add("RemoteError", py.get_type::<RemoteError>())?;
    m.add(
        "RemoteIntegrityError",
        py.get_type::<RemoteIntegrityError>(),
    )?;
    m.add(
        "ManifestChangedError",
        py.get_type::<ManifestChangedError>(),
    )?;
    m.add("CacheLimitError", py.get_type::<CacheLimitError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add("UnknownCacheError", unknown_cache_error_type(py)?.bind(py))?;
    m.add("SampleIndexError", sample_index_error_type(py)?.bind(py))?;
    Ok(())
}
