//! `datasetrt.CacheWriter`.

use crate::errors::{enter, Error};
use crate::values::{row_from_args, schema_from_py};
use datasetrt::{CacheSummary, CacheWriter, CompressionAlgo, ManifestVersion, WriterOptions};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyBytes, PyDict};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// Writes a new cache into an empty or new directory.
///
/// `CacheWriter(path, *, source, schema, compression="none", max_shard_bytes=256 MiB,
/// version=3, io_threads=True)`: `source` names the data (a v3 cache id is derived from it),
/// `schema` is a dict of column types (`{"label": "int64", "caption": "utf8?"}`: int64,
/// float64, bool, utf8, a trailing `?` for nullable; Python types and pyarrow types work too)
/// or a pyarrow.Schema; `compression` is "none" or "lz4"; `version` 2 writes a legacy
/// manifest. `io_threads=False` hashes and writes each shard in the thread that calls `add`
/// instead of on two background threads: less work in all, the better choice where every
/// core already runs a writer (a pool of worker processes each writing a cache); the bytes
/// are the same.
///
/// A context manager: `with CacheWriter(...) as w: w.add(payload, label=3)`. Leaving the
/// block normally publishes manifest.json (the cache becomes visible); leaving it by an
/// exception publishes nothing. Outside a `with`, call `finish()`. Raises WriteError.
#[pyclass(module = "datasetrt", name = "CacheWriter", frozen)]
pub(crate) struct PyCacheWriter {
    slot: WriterSlot<CacheWriter>,
    schema: datasetrt::Schema,
}

/// A Python writer's Rust writer until `finish` or `abort` takes it, and what `abort` and
/// `__exit__` do with it: what `CacheWriter` and `TokenWriter` share.
pub(crate) struct WriterSlot<W> {
    writer: Mutex<Option<W>>,
    path: PathBuf,
    /// Whether this writer made `path` (it did not exist before), so removing what it wrote
    /// removes the directory too.
    created: bool,
    /// The Python class, named in its errors.
    class: &'static str,
}

impl<W: Send> WriterSlot<W> {
    /// Creates the writer at `path` (GIL released).
    pub(crate) fn create<E: Into<Error> + Send>(
        py: Python<'_>,
        class: &'static str,
        path: PathBuf,
        create: impl FnOnce(&Path) -> Result<W, E> + Send,
    ) -> PyResult<Self> {
        let created = !path.exists();
        let writer = enter(py, || create(&path))?;
        Ok(Self {
            writer: Mutex::new(Some(writer)),
            path,
            created,
            class,
        })
    }

    fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, Option<W>>> {
        (self.writer.lock_py_attached(py)).map_err(|_| {
            PyValueError::new_err(format!("the {} failed in another thread", self.class))
        })
    }

    fn closed(&self) -> PyErr {
        PyValueError::new_err(format!("this {} is finished or aborted", self.class))
    }

    /// Runs `f` on the open writer.
    pub(crate) fn with<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut W) -> PyResult<T>,
    ) -> PyResult<T> {
        let mut guard = self.lock(py)?;
        f(guard.as_mut().ok_or_else(|| self.closed())?)
    }

    /// Takes the open writer, to finish it.
    pub(crate) fn take(&self, py: Python<'_>) -> PyResult<W> {
        self.lock(py)?.take().ok_or_else(|| self.closed())
    }

    /// Drops the writer unpublished (if still open); with `remove`, what it wrote goes too.
    pub(crate) fn abort(&self, py: Python<'_>, remove: bool) -> PyResult<()> {
        let writer = self.lock(py)?.take();
        enter(py, move || {
            drop(writer);
            if remove {
                // Best effort, as documented: what cannot be removed stays.
                let _ = datasetrt::remove_unpublished(
                    &datasetrt::LocalCacheFiles::new(&self.path),
                    self.created,
                );
            }
            Ok::<_, Error>(())
        })
    }

    /// What `__exit__` does: abandons the cache when the block raised (keeping what it wrote,
    /// as `abort(remove=False)`), else publishes it with `finish` if still open; never
    /// swallows the block's exception.
    pub(crate) fn exit(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        finish: impl FnOnce() -> PyResult<()>,
    ) -> PyResult<bool> {
        if exc_type.is_some_and(|t| !t.is_none()) {
            self.abort(py, false)?;
        } else if self.lock(py)?.is_some() {
            finish()?;
        }
        Ok(false)
    }

    /// The cache directory.
    pub(crate) fn path(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }
}

/// The `compression` argument of the writing functions.
pub(crate) fn compression_arg(compression: &str) -> PyResult<CompressionAlgo> {
    CompressionAlgo::from_name(compression).ok_or_else(|| {
        let given = compression.to_ascii_lowercase();
        PyValueError::new_err(format!(
            "compression must be \"none\" or \"lz4\", not {given:?}"
        ))
    })
}

#[pymethods]
impl PyCacheWriter {
    #[new]
    #[pyo3(signature = (path, *, source, schema, compression = "none", max_shard_bytes = datasetrt::DEFAULT_MAX_SHARD_BYTES, version = 3, io_threads = true))]
    #[allow(clippy::too_many_arguments)] // the Python signature's keywords
    fn new(
        py: Python<'_>,
        path: PathBuf,
        source: String,
        schema: &Bound<'_, PyAny>,
        compression: &str,
        max_shard_bytes: u64,
        version: u64,
        io_threads: bool,
    ) -> PyResult<Self> {
        let schema = schema_from_py(schema)?;
        let compression = compression_arg(compression)?;
        let manifest_version = manifest_version(version)?;
        let options = WriterOptions::new(source, schema.clone())
            .compression(compression)
            .max_shard_bytes(max_shard_bytes)
            .manifest_version(manifest_version)
            .io_threads(io_threads);
        let slot = WriterSlot::create(py, "CacheWriter", path, |path| {
            CacheWriter::create(path, options)
        })?;
        Ok(Self { slot, schema })
    }

    /// Adds one sample and returns its sample id. `payload` is bytes-like; the metadata is a
    /// dict (`add(payload, {"label": 3})`) and/or keyword arguments (`add(payload, label=3)`)
    /// with exactly the schema's columns. A row that does not fit raises WriteError and
    /// writes nothing; the writer stays usable.
    #[pyo3(signature = (payload, metadata = None, **fields))]
    fn add(
        &self,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        metadata: Option<&Bound<'_, PyDict>>,
        fields: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        let row = row_from_args(py, &self.schema, metadata, fields)?;
        let owned;
        let bytes: &[u8] = if let Ok(b) = payload.cast::<PyBytes>() {
            b.as_bytes()
        } else if payload.hasattr("__buffer__")?
            || payload.hasattr("tobytes")?
            || payload.hasattr("__len__")?
        {
            owned = py
                .get_type::<PyBytes>()
                .call1((payload,))
                .map_err(|_| PyTypeError::new_err("payload must be bytes-like"))?;
            owned
                .cast::<PyBytes>()
                .map_err(|_| PyTypeError::new_err("payload must be bytes-like"))?
                .as_bytes()
        } else {
            return Err(PyTypeError::new_err("payload must be bytes-like"));
        };
        self.slot
            .with(py, |writer| enter(py, || writer.add(bytes, &row)))
    }

    /// Makes every file durable and publishes manifest.json. Returns a summary dict
    /// (`path`, `samples`, `shards`, `payload_bytes`, `shard_bytes`, `cache_id`).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let writer = self.slot.take(py)?;
        let summary = enter(py, move || writer.finish())?;
        summary_dict(py, &summary)
    }

    /// Stops without publishing: no manifest.json is written, so no reader will take the
    /// directory for a cache. With `remove=True` the files the writer wrote go too (and the
    /// directory, if the writer created it); otherwise they stay for inspection. A published
    /// cache is never removed.
    #[pyo3(signature = (*, remove = false))]
    fn abort(&self, py: Python<'_>, remove: bool) -> PyResult<()> {
        self.slot.abort(py, remove)
    }

    /// Samples added so far.
    #[getter]
    fn samples(&self, py: Python<'_>) -> PyResult<u64> {
        self.slot.with(py, |w| Ok(w.samples()))
    }

    /// The cache directory.
    #[getter]
    fn path(&self) -> String {
        self.slot.path()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.slot.exit(py, exc_type, || self.finish(py).map(drop))
    }
}

/// What a finished cache holds, as the writing functions return it.
pub(crate) fn summary_dict<'py>(
    py: Python<'py>,
    summary: &CacheSummary,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("path", summary.path.to_string_lossy().into_owned())?;
    dict.set_item("cache_id", summary.cache_id)?;
    dict.set_item("samples", summary.samples)?;
    dict.set_item("payload_bytes", summary.payload_bytes)?;
    dict.set_item("shards", summary.shards.len())?;
    dict.set_item("shard_bytes", summary.shard_bytes())?;
    Ok(dict)
}

pub(crate) fn manifest_version(version: u64) -> PyResult<ManifestVersion> {
    (ManifestVersion::from_number(version))
        .ok_or_else(|| PyValueError::new_err(format!("version must be 2 or 3, not {version}")))
}

/// `_cache_schema(schema, payload_column, metadata_columns=None)`: the cache columns a table of
/// Arrow schema `schema` (an IPC-serialized schema, `pyarrow.Schema.serialize()`) packs into,
/// as a schema dict (`{"label": "int64?", ...}`), by the rule `pack_parquet` applies
/// (`datasetrt::pack::table_schema`): what `datasetrt.ray` types a dataset's columns with.
#[pyfunction]
#[pyo3(signature = (schema, payload_column, metadata_columns = None))]
pub(crate) fn _cache_schema(
    schema: &[u8],
    payload_column: String,
    metadata_columns: Option<Vec<String>>,
) -> PyResult<Vec<(String, String)>> {
    let schema = arrow_ipc::convert::try_schema_from_ipc_buffer(schema)
        .map_err(|e| PyValueError::new_err(format!("not an Arrow schema: {e}")))?;
    let mut options = datasetrt::pack::TableOptions::new(payload_column);
    if let Some(columns) = metadata_columns {
        options = options.metadata_columns(columns);
    }
    let cache =
        datasetrt::pack::table_schema(&schema, &options, "the dataset").map_err(Error::from)?;
    Ok(cache
        .columns()
        .iter()
        .map(|c| (c.name.clone(), c.spec()))
        .collect())
}
