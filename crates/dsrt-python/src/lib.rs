//! The native module of the `datasetrt` Python package (`datasetrt._native`).
//!
//! What it is for: exposing the `datasetrt` facade to Python: [`Cache`](datasetrt::Cache),
//! [`Dataset`](datasetrt::Dataset), [`CacheWriter`](datasetrt::CacheWriter),
//! [`Loader`](datasetrt::Loader) and manifest migration, with caches named by paths or
//! object-store URLs (opened through `dsrt_remote`, which also publishes caches), with a Python exception hierarchy
//! that mirrors the Rust error types. Every read, validating open, write and loader wait runs
//! with the GIL released, and a Rust panic surfaces as `datasetrt.InternalError`.
//!
//! What it is not for: logic. Types are converted here; everything else is the facade's.
//! The pure-Python half of the package (`python/datasetrt/src/datasetrt/`) adds the PyTorch
//! `StreamingDataset`.
//!
//! Layering: on top of the `datasetrt` facade and `dsrt-remote`; built by maturin (see
//! `python/datasetrt/pyproject.toml`), tested by pytest through `cargo xtask test`.
#![forbid(unsafe_code)]

mod cache;
mod dataset;
mod errors;
mod interrupt;
mod loader;
mod logging;
mod remote;
#[cfg(feature = "test-hooks")]
mod testing;
mod values;
mod views;
mod writer;

use pyo3::prelude::*;
use std::path::PathBuf;

/// Migrates the manifests of `paths` (a dataset's ordered list of cache directories) to
/// `version` (only 3), with the same semantics as `Dataset.update_manifests`, without opening
/// the caches. Returns a ManifestUpdateReport or raises ManifestUpdateError.
#[pyfunction]
#[pyo3(signature = (paths, version = 3))]
fn update_manifests(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    version: u64,
) -> PyResult<dataset::PyUpdateReport> {
    let result = errors::detach(py, || {
        datasetrt::update_manifests(
            &paths,
            version,
            &datasetrt::StdFileSystem,
            &datasetrt::CancelToken::new(),
        )
    })?;
    match result {
        Ok(report) => dataset::PyUpdateReport::from_report(py, &report),
        Err(e) => Err(errors::manifest_update_error(py, &e)),
    }
}

/// The v3 cache id a writer derives from `source` (the same function as the Rust writer's).
#[pyfunction]
fn cache_id_for_source(source: &str) -> u64 {
    datasetrt::cache_id_for_source(source)
}

/// The payloads of one `RankPlan.read_located` batch, as a sequence: `views[i]` is a
/// read-only memoryview slice of its source (a mapped shard file, or the batch's buffer of
/// decoded payloads), made when it is asked for (zero-copy; nothing is kept per sample but
/// its location). Built by `_payload_views`.
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

/// `_payload_views(sources, locations)`: the payloads a `RankPlan.read_located` batch names,
/// as a `PayloadViews` sequence of slices of `sources` (bytes-like objects, e.g. memoryviews
/// of mapped shard files, the batch's decoded buffer last): `locations` holds little-endian
/// i64 triples `(source, offset, length)`, source -1 meaning the last one. Each range is
/// checked here to lie within its source (a shard file shorter than its record raises
/// `CorruptCacheError`).
#[pyfunction]
fn _payload_views(
    py: Python<'_>,
    sources: Vec<Bound<'_, PyAny>>,
    locations: &[u8],
) -> PyResult<PayloadViews> {
    let lens = sources
        .iter()
        .map(|s| s.len())
        .collect::<PyResult<Vec<usize>>>()?;
    if locations.len() % 24 != 0 || sources.is_empty() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "locations must be i64 triples, with at least one source",
        ));
    }
    let last = sources.len() - 1;
    let mut ranges = Vec::with_capacity(locations.len() / 24);
    for triple in locations.chunks_exact(24) {
        let word = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&triple[i * 8..i * 8 + 8]);
            i64::from_le_bytes(b)
        };
        let (source, offset, len) = (word(0), word(1), word(2));
        let at = if source == -1 {
            last
        } else {
            usize::try_from(source)
                .ok()
                .filter(|&s| s < last)
                .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err("no such source"))?
        };
        let range = isize::try_from(offset)
            .ok()
            .zip(isize::try_from(len).ok())
            .filter(|&(o, n)| o >= 0 && n >= 0)
            .and_then(|(o, n)| Some((o, o.checked_add(n)?)))
            .filter(|&(_, end)| end.unsigned_abs() <= lens[at]);
        let Some((start, end)) = range else {
            let reason = format!(
                "a payload at {offset} (+{len}) lies past the end of its mapped shard \
                 ({} bytes): the shard file changed after it was checked",
                lens[at]
            );
            return Err(errors::with_attrs::<errors::CorruptCacheError>(
                py,
                reason.clone(),
                &[
                    ("path", py.None()),
                    ("reason", reason.into_pyobject(py)?.into_any().unbind()),
                ],
            ));
        };
        ranges.push((at, start, end));
    }
    Ok(PayloadViews {
        sources: sources.into_iter().map(Bound::unbind).collect(),
        ranges,
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    logging::forward_to_python(m.py())?;
    interrupt::install();
    errors::register(m)?;
    #[cfg(feature = "test-hooks")]
    testing::register(m)?;
    m.add_class::<cache::PyCache>()?;
    m.add_class::<cache::PySample>()?;
    m.add_class::<dataset::PyDataset>()?;
    m.add_class::<dataset::PySampleTable>()?;
    m.add_class::<dataset::PyUpdateReport>()?;
    m.add_class::<writer::PyCacheWriter>()?;
    m.add_class::<loader::PyLoader>()?;
    m.add_class::<loader::PyRankPlan>()?;
    m.add_function(wrap_pyfunction!(update_manifests, m)?)?;
    m.add_function(wrap_pyfunction!(cache_id_for_source, m)?)?;
    m.add_function(wrap_pyfunction!(remote::publish, m)?)?;
    m.add_function(wrap_pyfunction!(remote::_parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(_payload_views, m)?)?;
    m.add_class::<PayloadViews>()?;
    m.add_class::<views::PyShardMapping>()?;
    m.add_function(wrap_pyfunction!(views::_shard_view, m)?)?;
    m.add_function(wrap_pyfunction!(views::_clear_shard_views, m)?)?;
    m.add_function(wrap_pyfunction!(views::max_open_shards, m)?)?;
    m.add_function(wrap_pyfunction!(views::set_max_open_shards, m)?)?;
    m.add_function(wrap_pyfunction!(views::open_shard_handles, m)?)?;
    m.add("REMOTE_DEFAULTS", remote_defaults(m.py())?)?;
    m.add(
        "DEFAULT_MAX_SHARD_BYTES",
        datasetrt::DEFAULT_MAX_SHARD_BYTES,
    )?;
    Ok(())
}

/// The defaults of the remote options `Cache` and `Dataset` take, from `RemoteOptions`
/// itself: the one definition the text signatures, the stubs, `datasetrt.torch` and the docs
/// are checked against (tests/test_defaults.py).
fn remote_defaults(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let defaults = dsrt_remote::RemoteOptions::new(PathBuf::new());
    let dict = pyo3::types::PyDict::new(py);
    dict.set_item("prefetch_shards", defaults.prefetch_shards)?;
    dict.set_item("read_while_downloading", defaults.read_while_downloading)?;
    dict.set_item("attempts", defaults.attempts)?;
    dict.set_item("first_backoff", defaults.first_backoff.as_secs_f64())?;
    dict.set_item("wait_for_room", defaults.wait_for_room.as_secs_f64())?;
    Ok(dict)
}
