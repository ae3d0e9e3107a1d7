//! Zero-copy payload views over the shard mappings the Rust reader holds.
//!
//! A payload stored uncompressed is handed to Python as a read-only `memoryview` slice of its
//! shard's mapping ([`FileMap`], from the process's handle pool): `pyarrow.foreign_buffer`
//! wraps the mapping's address with an owner object ([`PyShardMapping`]) that holds the
//! `FileMap`, so every view and slice keeps the mapping valid however long it is held, and no
//! descriptor stays open for it. The whole-shard views are kept for reuse in
//! [`PooledTable`]s counted by a pool of their own whose bound follows the process pool's
//! (`set_max_open_shards` sets both): the views keep at most `max_open_shards` mappings alive
//! beside the reader's, least recently used out by the pool's clock.

use crate::arrow::ArrowBatch;
use crate::errors::{enter, Error};
use datasetrt::{FileMap, HandlePool, LocatedColumns, PooledTable};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMemoryView, PySlice};
use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

/// Keeps a shard mapping alive for as long as Python references it (the `base` of its
/// pyarrow buffer). Not constructible from Python.
#[pyclass(module = "datasetrt._native", name = "ShardMapping", frozen)]
pub(crate) struct PyShardMapping {
    map: FileMap,
}

#[pymethods]
impl PyShardMapping {
    fn __len__(&self) -> usize {
        self.map.len()
    }
}

/// A read-only memoryview of `len` bytes at `address`, kept valid by `owner`.
fn foreign_view<'py>(
    py: Python<'py>,
    address: usize,
    len: usize,
    owner: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if len == 0 {
        return Ok(PyMemoryView::from(&PyBytes::new(py, b""))?.into_any());
    }
    let pa = py.import("pyarrow")?;
    let buffer = pa.call_method1("foreign_buffer", (address, len, owner))?;
    // pyarrow exports signed bytes ('b'); payloads are unsigned, as `bytes` are.
    PyMemoryView::from(&buffer)?.call_method1("cast", ("B",))
}

/// A memoryview of the whole of `map`. The address stays valid while the owner (the buffer's
/// base) lives: it holds the mapping.
fn whole_view<'py>(py: Python<'py>, map: &FileMap) -> PyResult<Bound<'py, PyAny>> {
    let owner = Bound::new(py, PyShardMapping { map: map.clone() })?;
    foreign_view(py, map.as_ptr() as usize, map.len(), owner.into_any())
}

/// A view in a table: the table's values are shared with whoever takes one.
type View = Arc<Py<PyAny>>;

/// The pool the view tables are counted in. A bound of its own, kept equal to the process
/// pool's: a view and the reader's file of the same shard are one mapping, which counted twice
/// in one pool would halve the shards kept mapped. Only this module (GIL held) touches it, so
/// the views it releases are dropped with the GIL.
static VIEW_POOL: LazyLock<HandlePool> =
    LazyLock::new(|| HandlePool::new(HandlePool::global().capacity()));

/// Views of the reader's mappings, by the mapping's address (unique while the table's view
/// keeps the mapping alive).
static BY_MAPPING: LazyLock<Arc<PooledTable<usize, View>>> =
    LazyLock::new(|| PooledTable::in_pool(&VIEW_POOL));

/// `len` bytes at `offset` of `map`, as a read-only memoryview slice (zero-copy).
pub(crate) fn payload_view<'py>(
    py: Python<'py>,
    map: &FileMap,
    offset: u64,
    len: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let key = map.as_ptr() as usize;
    let whole = match BY_MAPPING.get(&key) {
        Some(view) => view.bind(py).clone(),
        None => {
            let view = whole_view(py, map)?;
            BY_MAPPING.insert(key, Arc::new(view.clone().unbind()));
            view
        }
    };
    let range = isize::try_from(offset)
        .ok()
        .zip(isize::try_from(len).ok())
        .and_then(|(start, len)| Some((start, start.checked_add(len)?)));
    let (start, end) = range.ok_or_else(|| PyIndexError::new_err("payload out of range"))?;
    whole.get_item(PySlice::new(py, start, end, 1))
}

/// A file's identity as `os.stat` gives it: `(st_dev, st_ino, st_size, st_mtime_ns)`.
pub(crate) type Identity = (u64, u64, u64, i128);

/// Views of shard files mapped by path (the training-process side of `transfer="locations"`),
/// each with the identity of the file it maps.
static BY_PATH: LazyLock<Arc<PooledTable<PathBuf, (Identity, View)>>> =
    LazyLock::new(|| PooledTable::in_pool(&VIEW_POOL));

/// `_shard_view(path, identity=None)`: a read-only memoryview of the whole shard file at
/// `path`, mapped once (no descriptor kept) and reused while the handle pool keeps it.
/// `identity` is what a DataLoader worker saw of the file when it checked its records: a file
/// replaced since is mapped again, and one that is not that file raises CorruptCacheError.
#[pyfunction]
#[pyo3(signature = (path, identity = None))]
pub(crate) fn _shard_view<'py>(
    py: Python<'py>,
    path: PathBuf,
    identity: Option<Identity>,
) -> PyResult<Bound<'py, PyAny>> {
    let known = BY_PATH
        .get(&path)
        .filter(|(mapped, _)| identity.is_none_or(|id| id == *mapped));
    if let Some((_, view)) = known {
        return Ok(view.bind(py).clone());
    }
    let (found, map) = enter(py, || {
        datasetrt::map_file(&path).map_err(|source| Error::ShardFile {
            path: path.clone(),
            source,
        })
    })?;
    let found = (found.dev, found.ino, found.len, found.mtime_ns);
    if identity.is_some_and(|expected| expected != found) {
        let reason = "the shard file changed after a DataLoader worker checked it".to_owned();
        return Err(Error::ShardChanged { path, reason }.into());
    }
    let view = whole_view(py, &map)?;
    BY_PATH.insert(path, (found, Arc::new(view.clone().unbind())));
    Ok(view)
}

/// `_clear_shard_views()`: forgets every view `_shard_view` keeps, as a fresh process would
/// have none (tests).
#[pyfunction]
pub(crate) fn _clear_shard_views() {
    BY_PATH.clear();
}

/// `max_open_shards()`: how many idle shard files and mappings a process keeps open.
#[pyfunction]
pub(crate) fn max_open_shards() -> usize {
    HandlePool::global().capacity()
}

/// `set_max_open_shards(n)`: sets that bound for this process (n >= 1); a lower bound closes
/// files at once. `DSRT_MAX_OPEN_SHARDS` in the environment sets it when the process starts.
#[pyfunction]
pub(crate) fn set_max_open_shards(n: usize) -> PyResult<()> {
    if n == 0 {
        return Err(PyValueError::new_err("max_open_shards must be at least 1"));
    }
    HandlePool::global().set_capacity(n);
    VIEW_POOL.set_capacity(n);
    Ok(())
}

/// `open_shard_handles()`: how many shard files and mappings the process's handle pool holds
/// now (diagnostics and tests).
#[pyfunction]
pub(crate) fn open_shard_handles() -> usize {
    HandlePool::global().admitted()
}

/// The payloads of one `RankPlan.read_located` batch, as a sequence: `views[i]` is a
/// read-only memoryview slice of its source (a mapped shard file, or the batch's decoded
/// payloads), made when it is asked for (nothing is kept per sample but its place). Iterating
/// it is Python's sequence iteration over `__getitem__`.
#[pyclass(module = "datasetrt", name = "PayloadViews", frozen, sequence)]
pub(crate) struct PayloadViews {
    sources: Vec<Py<PyAny>>,
    /// (source, start, end), checked against the source's length.
    ranges: Vec<(usize, isize, isize)>,
}

impl PayloadViews {
    fn view<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        let (source, start, end) = self.ranges[i];
        self.sources[source]
            .bind(py)
            .get_item(PySlice::new(py, start, end, 1))
    }
}

#[pymethods]
impl PayloadViews {
    fn __len__(&self) -> usize {
        self.ranges.len()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        let len = isize::try_from(self.ranges.len()).unwrap_or(isize::MAX);
        let at = if index < 0 { index + len } else { index };
        if !(0..len).contains(&at) {
            let message = format!("payload index {index} out of range for a batch of {len}");
            return Err(PyIndexError::new_err(message));
        }
        self.view(py, at.unsigned_abs())
    }

    fn __repr__(&self) -> String {
        format!("PayloadViews(<{} payloads>)", self.ranges.len())
    }
}

/// `_located_payloads(batch, identities=None)`: the payloads a `RankPlan.read_located` batch
/// names, as a `PayloadViews` sequence: slices of the shard files its `shard` column names
/// (mapped with [`_shard_view`], `identities[i]` being what a DataLoader worker saw of the
/// `i`-th file) or of its decoded payloads. A shard file shorter than a record it held raises
/// `CorruptCacheError`.
#[pyfunction]
#[pyo3(signature = (batch, identities = None))]
pub(crate) fn _located_payloads<'py>(
    py: Python<'py>,
    batch: &Bound<'py, ArrowBatch>,
    identities: Option<Vec<Identity>>,
) -> PyResult<PayloadViews> {
    let located = LocatedColumns::of(&batch.get().batch).map_err(Error::from)?;
    let paths: Vec<&str> = located.shard_paths().collect();
    if let Some(ids) = identities.as_ref().filter(|ids| ids.len() != paths.len()) {
        let message = format!(
            "{} identities for the {} shard files of the batch",
            ids.len(),
            paths.len()
        );
        return Err(PyValueError::new_err(message));
    }
    let mut sources = Vec::with_capacity(paths.len() + 1);
    let mut lens = Vec::with_capacity(paths.len());
    for (i, path) in paths.iter().enumerate() {
        let identity = identities.as_ref().map(|ids| ids[i]);
        let view = _shard_view(py, PathBuf::from(path), identity)?;
        lens.push(view.len()?);
        sources.push(view.unbind());
    }
    let decoded = located.decoded();
    // The decoded payloads, viewed where the batch holds them (the batch is the owner).
    sources.push(
        foreign_view(
            py,
            decoded.as_ptr() as usize,
            decoded.len(),
            batch.clone().into_any(),
        )?
        .unbind(),
    );
    let ranges = located.ranges(&lens).map_err(|past| {
        let path = PathBuf::from(paths[past.file]);
        Error::ShardChanged {
            path,
            reason: past.to_string(),
        }
    })?;
    let to = |v: usize| isize::try_from(v).unwrap_or(isize::MAX);
    let ranges = (ranges.into_iter())
        .map(|(file, range)| (file.unwrap_or(paths.len()), to(range.start), to(range.end)))
        .collect();
    Ok(PayloadViews { sources, ranges })
}
