//! Zero-copy payload views over the shard mappings the Rust reader holds.
//!
//! A payload stored uncompressed is handed to Python as a read-only `memoryview` slice of its
//! shard's mapping ([`FileMap`], from the process's handle pool): `pyarrow.foreign_buffer`
//! wraps the mapping's address with an owner object ([`PyShardMapping`]) that holds the
//! `FileMap`, so every view and slice keeps the mapping valid however long it is held,
//! whatever the pool releases meanwhile, and no descriptor stays open for it. The whole-shard
//! views are kept for reuse in a bounded least-recently-used table
//! ([`HandlePool::capacity`](datasetrt::HandlePool::capacity) entries per table), so the
//! mappings this module keeps alive are bounded as the pool's are.

use crate::arrow::ArrowBatch;
use crate::errors::{enter, Error};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, DictionaryArray, Int64Array, LargeBinaryArray, RecordBatch};
use datasetrt::{FileMap, HandlePool};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyMemoryView, PySlice};
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

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

/// A memoryview of the whole of `map`.
fn whole_view<'py>(py: Python<'py>, map: &FileMap) -> PyResult<Bound<'py, PyAny>> {
    if map.is_empty() {
        return Ok(PyMemoryView::from(&pyo3::types::PyBytes::new(py, b""))?.into_any());
    }
    let owner = Bound::new(py, PyShardMapping { map: map.clone() })?;
    // The address stays valid while `owner` (the buffer's base) lives: it holds the mapping.
    let address = map.as_ptr() as usize;
    let buffer = py
        .import("pyarrow")?
        .call_method1("foreign_buffer", (address, map.len(), owner))?;
    // pyarrow exports signed bytes ('b'); payloads are unsigned, as `bytes` are.
    PyMemoryView::from(&buffer)?.call_method1("cast", ("B",))
}

/// A bounded table of whole-shard views (with whatever `V` holds beside them), least recently
/// used out in O(log n): the table may be as large as the handle pool, thousands of entries.
struct Views<K, V> {
    entries: HashMap<K, (V, u64)>,
    /// Each entry's last use, oldest first.
    order: BTreeMap<u64, K>,
    tick: u64,
}

impl<K: Hash + Eq + Clone, V> Views<K, V> {
    fn new() -> Self {
        Self {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
        }
    }

    /// Marks `key` used and returns `take` of its value; also drops what exceeds the pool's
    /// capacity, which may have been lowered since (returned, to be dropped by the caller once
    /// the table's lock is released: dropping a view can unmap).
    fn get<R>(&mut self, key: &K, take: impl FnOnce(&V) -> R) -> (Option<R>, Vec<V>) {
        self.tick += 1;
        let found = self.entries.get_mut(key).map(|(value, used)| {
            if let Some(key) = self.order.remove(used) {
                self.order.insert(self.tick, key);
            }
            *used = self.tick;
            take(value)
        });
        (found, self.trim())
    }

    /// Inserts `view`, returning what was dropped to stay within the pool's capacity (to be
    /// dropped by the caller once the table's lock is released).
    fn insert(&mut self, key: K, view: V) -> Vec<V> {
        self.tick += 1;
        let replaced = self.entries.insert(key.clone(), (view, self.tick));
        let replaced = replaced.map(|(old, used)| {
            self.order.remove(&used);
            old
        });
        self.order.insert(self.tick, key);
        let mut dropped = self.trim();
        dropped.extend(replaced);
        dropped
    }

    /// Drops the least recently used entries beyond the pool's capacity.
    fn trim(&mut self) -> Vec<V> {
        let capacity = HandlePool::global().capacity();
        let mut dropped = Vec::new();
        while self.entries.len() > capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            dropped.extend(self.entries.remove(&oldest).map(|(view, _)| view));
        }
        dropped
    }
}

/// Views of the reader's mappings, by the mapping's address (unique while the table's view
/// keeps the mapping alive).
static BY_MAPPING: Mutex<Option<Views<usize, Py<PyAny>>>> = Mutex::new(None);

/// `len` bytes at `offset` of `map`, as a read-only memoryview slice (zero-copy).
pub(crate) fn payload_view<'py>(
    py: Python<'py>,
    map: &FileMap,
    offset: u64,
    len: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let key = map.as_ptr() as usize;
    // No Python code runs under the table's lock (it could wait for the GIL held elsewhere).
    let (cached, dropped) = lock(&BY_MAPPING)
        .get_or_insert_with(Views::new)
        .get(&key, |view| view.clone_ref(py));
    drop(dropped);
    let whole = match cached {
        Some(view) => view.into_bound(py),
        None => {
            let view = whole_view(py, map)?;
            let dropped = lock(&BY_MAPPING)
                .get_or_insert_with(Views::new)
                .insert(key, view.clone().unbind());
            drop(dropped);
            view
        }
    };
    slice(py, &whole, offset, len)
}

fn slice<'py>(
    py: Python<'py>,
    whole: &Bound<'py, PyAny>,
    offset: u64,
    len: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let range = isize::try_from(offset)
        .ok()
        .zip(isize::try_from(len).ok())
        .and_then(|(start, len)| Some((start, start.checked_add(len)?)));
    let (start, end) =
        range.ok_or_else(|| pyo3::exceptions::PyIndexError::new_err("payload out of range"))?;
    whole.get_item(PySlice::new(py, start, end, 1))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A file's identity as `os.stat` gives it: `(st_dev, st_ino, st_size, st_mtime_ns)`.
pub(crate) type Identity = (u64, u64, u64, i128);

fn identity_of(id: &datasetrt::FileIdentity) -> Identity {
    (id.dev, id.ino, id.len, id.mtime_ns)
}

/// Views of shard files mapped by path (the training-process side of
/// `transfer="locations"`), each with the identity of the file it maps.
static BY_PATH: Mutex<Option<PathViews>> = Mutex::new(None);

/// Whole-file views by path, with the identity of the file each maps.
type PathViews = Views<PathBuf, (Identity, Py<PyAny>)>;

/// `_shard_view(path, identity=None)`: a read-only memoryview of the whole shard file at
/// `path`, mapped once (no descriptor kept) and reused while it is among the most recently
/// used (as many as the handle pool's capacity). `identity` is what a DataLoader worker saw of
/// the file when it checked its records (`(st_dev, st_ino, st_size, st_mtime_ns)`): a file
/// replaced since is mapped again, and one that is not that file raises CorruptCacheError.
#[pyfunction]
#[pyo3(signature = (path, identity = None))]
pub(crate) fn _shard_view<'py>(
    py: Python<'py>,
    path: PathBuf,
    identity: Option<Identity>,
) -> PyResult<Bound<'py, PyAny>> {
    let (known, dropped) =
        lock(&BY_PATH)
            .get_or_insert_with(Views::new)
            .get(&path, |(mapped, view)| {
                identity
                    .is_none_or(|expected| expected == *mapped)
                    .then(|| view.clone_ref(py))
            });
    drop(dropped);
    if let Some(view) = known.flatten() {
        return Ok(view.into_bound(py));
    }
    let (found, map) = enter(py, || {
        datasetrt::map_file(&path).map_err(|source| Error::ShardFile {
            path: path.clone(),
            source,
        })
    })?;
    let found = identity_of(&found);
    if identity.is_some_and(|expected| expected != found) {
        let reason = "the shard file changed after a DataLoader worker checked it".to_owned();
        return Err(changed(&path, reason));
    }
    let view = whole_view(py, &map)?;
    let dropped = lock(&BY_PATH)
        .get_or_insert_with(Views::new)
        .insert(path, (found, view.clone().unbind()));
    drop(dropped);
    Ok(view)
}

fn changed(path: &Path, reason: String) -> PyErr {
    let path = path.to_path_buf();
    Error::ShardChanged { path, reason }.into()
}

/// `_clear_shard_views()`: forgets every view `_shard_view` keeps, as a fresh process would
/// have none (tests).
#[pyfunction]
pub(crate) fn _clear_shard_views() {
    let dropped = lock(&BY_PATH).take();
    drop(dropped);
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
        return Err(pyo3::exceptions::PyValueError::new_err(
            "max_open_shards must be at least 1",
        ));
    }
    HandlePool::global().set_capacity(n);
    Ok(())
}

/// `open_shard_handles()`: how many shard files and mappings the process's handle pool holds
/// now (diagnostics and tests).
#[pyfunction]
pub(crate) fn open_shard_handles() -> usize {
    HandlePool::global().admitted()
}
/// The payloads of one `RankPlan.read_located` batch, as a sequence: `views[i]` is a
/// read-only memoryview slice of its source (a mapped shard file, or the batch's buffer of
/// decoded payloads), made when it is asked for (zero-copy; nothing is kept per sample but
/// its location). Built by `_located_payloads`.
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
            .get_item(pyo3::types::PySlice::new(py, start, end, 1))
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
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "payload index {index} out of range for a batch of {len}"
            )));
        }
        self.view(py, at.unsigned_abs())
    }

    fn __iter__(slf: Py<Self>) -> PayloadViewsIter {
        PayloadViewsIter {
            views: slf,
            next: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn __repr__(&self) -> String {
        format!("PayloadViews(<{} payloads>)", self.ranges.len())
    }
}

/// Iterates a `PayloadViews`.
#[pyclass(module = "datasetrt", name = "PayloadViewsIter", frozen)]
pub(crate) struct PayloadViewsIter {
    views: Py<PayloadViews>,
    next: std::sync::atomic::AtomicUsize,
}

#[pymethods]
impl PayloadViewsIter {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let views = self.views.get();
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if i >= views.ranges.len() {
            self.next
                .store(views.ranges.len(), std::sync::atomic::Ordering::Relaxed);
            return Ok(None);
        }
        views.view(py, i).map(Some)
    }
}

/// `_located_payloads(batch, identities=None)`: the payloads a `RankPlan.read_located` batch
/// names, as a `PayloadViews` sequence: slices of the shard files its `shard` column names
/// (mapped with [`_shard_view`], `identities[i]` being what a DataLoader worker saw of the
/// `i`-th file of that column's dictionary) or of its `decoded` payloads. Each range is checked
/// here to lie within its file (a shard file shorter than its record raises
/// `CorruptCacheError`).
#[pyfunction]
#[pyo3(signature = (batch, identities = None))]
pub(crate) fn _located_payloads<'py>(
    py: Python<'py>,
    batch: &Bound<'py, ArrowBatch>,
    identities: Option<Vec<Identity>>,
) -> PyResult<PayloadViews> {
    let located = LocatedColumns::of(&batch.get().batch)?;
    let paths = located.shards.values().as_string::<i32>();
    if identities
        .as_ref()
        .is_some_and(|ids| ids.len() != paths.len())
    {
        return Err(PyValueError::new_err(format!(
            "{} identities for the {} shard files of the batch",
            identities.map_or(0, |ids| ids.len()),
            paths.len()
        )));
    }
    let mut sources = Vec::with_capacity(paths.len() + 1);
    let mut lens = Vec::with_capacity(paths.len() + 1);
    for (i, path) in paths.iter().enumerate() {
        let path = PathBuf::from(path.unwrap_or_default());
        let identity = identities.as_ref().map(|ids| ids[i]);
        let view = _shard_view(py, path, identity)?;
        lens.push(view.len()?);
        sources.push(view.unbind());
    }
    // The decoded payloads, viewed where the batch holds them (the batch is the owner).
    let (address, len) = crate::arrow::values_address(located.decoded);
    let decoded = if len == 0 {
        PyMemoryView::from(&pyo3::types::PyBytes::new(py, b""))?.into_any()
    } else {
        let buffer = py
            .import("pyarrow")?
            .call_method1("foreign_buffer", (address, len, batch))?;
        PyMemoryView::from(&buffer)?.call_method1("cast", ("B",))?
    };
    let last = sources.len();
    sources.push(decoded.unbind());
    lens.push(len);
    let mut ranges = Vec::with_capacity(located.offsets.len());
    for row in 0..located.offsets.len() {
        let (at, start, end) = if located.shards.is_valid(row) {
            let key = located.shards.keys().value(row);
            let at = usize::try_from(key).unwrap_or(usize::MAX);
            let (offset, length) = (located.offsets.value(row), located.lengths.value(row));
            let range = isize::try_from(offset)
                .ok()
                .zip(isize::try_from(length).ok())
                .filter(|&(o, n)| o >= 0 && n >= 0)
                .and_then(|(o, n)| Some((o, o.checked_add(n)?)));
            match range {
                Some((start, end)) if lens.get(at).is_some_and(|&l| end.unsigned_abs() <= l) => {
                    (at, start, end)
                }
                _ => {
                    let reason = format!(
                        "a payload at {offset} (+{length}) lies past the end of its mapped shard \
                         ({} bytes): the shard file changed after it was checked",
                        lens.get(at).copied().unwrap_or(0)
                    );
                    let path = PathBuf::from(paths.value(at.min(paths.len().saturating_sub(1))));
                    return Err(changed(&path, reason));
                }
            }
        } else {
            let bounds = located.decoded.value_offsets();
            let to = |v: i64| isize::try_from(v).unwrap_or(isize::MAX);
            (last, to(bounds[row]), to(bounds[row + 1]))
        };
        ranges.push((at, start, end));
    }
    Ok(PayloadViews { sources, ranges })
}

/// The location columns of a `read_located` batch, checked for their types.
struct LocatedColumns<'a> {
    shards: &'a DictionaryArray<Int32Type>,
    offsets: &'a Int64Array,
    lengths: &'a Int64Array,
    decoded: &'a LargeBinaryArray,
}

impl<'a> LocatedColumns<'a> {
    fn of(batch: &'a RecordBatch) -> PyResult<Self> {
        let column = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| {
                PyValueError::new_err(format!("not a located batch: no `{name}` column"))
            })
        };
        let wrong = |name: &str| {
            PyValueError::new_err(format!(
                "a located batch's `{name}` column has another type"
            ))
        };
        let shards = column("shard")?
            .as_dictionary_opt::<Int32Type>()
            .filter(|d| d.values().as_string_opt::<i32>().is_some())
            .ok_or_else(|| wrong("shard"))?;
        let offsets = column("offset")?
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| wrong("offset"))?;
        let lengths = column("length")?
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| wrong("length"))?;
        let decoded = column("decoded")?
            .as_binary_opt::<i64>()
            .ok_or_else(|| wrong("decoded"))?;
        Ok(Self {
            shards,
            offsets,
            lengths,
            decoded,
        })
    }
}
