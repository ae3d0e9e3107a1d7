//! `datasetrt.Dataset`, `datasetrt.SampleTable` and the manifest-update report.

use crate::cache::{read_one, read_samples, CacheRef, PyCache, PySample};
use crate::errors::{enter, entry_dict, Error};
use crate::options::{Kwargs, RemoteArgs};
use crate::remote::Location;
use crate::values::row_dict;
use datasetrt::{Cache, CancelToken, Dataset, DatasetError, SampleKey, SampleTable};
use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use std::path::PathBuf;
use std::sync::Arc;

/// What `Dataset.__reduce__` returns: `_reopen_dataset` and its arguments (locations,
/// validate_cache, cache_dir, cache_limit, fetch, prefetch_shards, read_while_downloading,
/// attempts, first_backoff, wait_for_room, cache_access), the first five in the order older
/// versions pickled them.
type Reduced<'py> = (
    Bound<'py, PyAny>,
    (
        Vec<String>,
        bool,
        Option<String>,
        Option<u64>,
        &'static str,
        usize,
        bool,
        u32,
        f64,
        f64,
        &'static str,
    ),
);

/// An ordered list of caches (directories or object-store URLs, freely mixed) addressed as
/// `(cache_id, sample_id)`: a v3 manifest's stored id, a v2 cache's position in the list. The
/// options are `Cache`'s, shared by every cache, readable as attributes, and travel with a
/// pickled Dataset. `len()`, `dataset[key]`, `read_many(keys)`, `caches`, `select(...)`,
/// `update_manifests(version=3)`.
#[pyclass(module = "datasetrt", name = "Dataset", frozen)]
pub(crate) struct PyDataset {
    pub(crate) dataset: Arc<Dataset>,
    pub(crate) paths: Vec<Location>,
    pub(crate) args: RemoteArgs,
}

impl PyDataset {
    /// The position of the cache with id `cache_id`, and `sample_id` checked within it.
    fn locate(&self, (cache_id, sample_id): (u64, u64)) -> PyResult<(usize, u64)> {
        let key = SampleKey {
            cache_id,
            sample_id,
        };
        Ok((self.dataset.locate(key).map_err(Error::from)?, sample_id))
    }

    pub(crate) fn cache_ref(&self, position: usize) -> CacheRef {
        CacheRef::InDataset(Arc::clone(&self.dataset), position)
    }

    fn sample(&self, (position, sample_id): (usize, u64), payload: Bound<'_, PyAny>) -> PySample {
        let cache_id = Some(self.dataset.caches()[position].cache_id);
        PySample::new(self.cache_ref(position), cache_id, sample_id, payload)
    }

    fn cache_at(&self, position: usize) -> PyCache {
        PyCache {
            cache: self.cache_ref(position),
            cache_id: Some(self.dataset.caches()[position].cache_id),
            location: None,
        }
    }
}

/// Opens the caches at `paths` (directories and object-store URLs) as one dataset, remote ones
/// as `args` say: what `Dataset(paths, ...)` opens, for every binding that opens caches.
pub(crate) fn open_locations(
    py: Python<'_>,
    paths: &[Location],
    args: &RemoteArgs,
) -> PyResult<Dataset> {
    let paths: Vec<&PathBuf> = paths.iter().map(|location| &location.0).collect();
    let options = args.options();
    enter(py, || dsrt_remote::open_dataset(&paths, &options))
}

#[pymethods]
impl PyDataset {
    #[new]
    #[pyo3(
        signature = (paths, **options),
        text_signature = "(paths, *, validate_cache=False, cache_dir=None, cache_limit=None, fetch=\"whole\", prefetch_shards=8, read_while_downloading=True, attempts=5, first_backoff=0.1, wait_for_room=600.0, cache_access=\"private\")"
    )]
    fn new(
        py: Python<'_>,
        paths: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        if paths.is_instance_of::<PyString>() {
            let message = "Dataset takes a list of paths or URLs, not one string";
            return Err(PyTypeError::new_err(message));
        }
        let paths = (paths.try_iter()?)
            .map(|p| Location::extract(&p?))
            .collect::<PyResult<Vec<Location>>>()?;
        let mut kwargs = Kwargs::new("Dataset", options)?;
        let args = RemoteArgs::take(&mut kwargs)?;
        kwargs.finish()?;
        let dataset = open_locations(py, &paths, &args)?;
        Ok(Self {
            dataset: Arc::new(dataset),
            paths,
            args,
        })
    }

    fn __len__(&self) -> usize {
        usize::try_from(self.dataset.len()).unwrap_or(usize::MAX)
    }

    /// `dataset[(cache_id, sample_id)]`: one sample. An unknown cache id raises
    /// UnknownCacheError (a KeyError), a sample id past the cache's end SampleIndexError (an
    /// IndexError).
    fn __getitem__(&self, py: Python<'_>, key: (u64, u64)) -> PyResult<PySample> {
        let at = self.locate(key)?;
        let payload = read_one(py, &self.cache_ref(at.0), at.1)?;
        Ok(self.sample(at, payload))
    }

    /// Reads the samples at `keys` (`(cache_id, sample_id)` pairs) in one call with the GIL
    /// released; returns a list of Sample in the same order.
    fn read_many<'py>(
        &self,
        py: Python<'py>,
        keys: Vec<(u64, u64)>,
    ) -> PyResult<Bound<'py, PyList>> {
        let located = (keys.into_iter())
            .map(|key| self.locate(key))
            .collect::<PyResult<Vec<_>>>()?;
        let caches = self.dataset.caches();
        let items: Vec<(&Cache, u64)> = located
            .iter()
            .map(|&(p, s)| (&caches[p].cache, s))
            .collect();
        PyList::new(
            py,
            read_samples(py, &items, |i, payload| self.sample(located[i], payload))?,
        )
    }

    /// The caches in list order (each a Cache whose `cache_id` is set).
    #[getter]
    fn caches(&self) -> Vec<PyCache> {
        (0..self.dataset.caches().len())
            .map(|i| self.cache_at(i))
            .collect()
    }

    /// The resolved cache ids in list order.
    #[getter]
    fn cache_ids(&self) -> Vec<u64> {
        self.dataset.caches().iter().map(|c| c.cache_id).collect()
    }

    /// The cache paths and URLs as given, in list order.
    #[getter]
    fn paths(&self) -> Vec<String> {
        self.paths.iter().map(Location::display).collect()
    }

    /// The cache with id `cache_id` (UnknownCacheError if none).
    fn cache(&self, cache_id: u64) -> PyResult<PyCache> {
        let position = self
            .dataset
            .position(cache_id)
            .ok_or(Error::from(DatasetError::UnknownCache { cache_id }))?;
        Ok(self.cache_at(position))
    }

    /// Whether the caches were opened with validate_cache=True.
    #[getter]
    fn validate_cache(&self) -> bool {
        self.args.validate_cache
    }

    /// The local cache directory of remote caches as given (None: the default,
    /// `$DSRT_CACHE_DIR`, else `~/.cache/datasetrt/shard-cache`).
    #[getter]
    fn cache_dir(&self) -> Option<String> {
        self.args.cache_dir_str()
    }

    /// The local cache directory's byte limit as given, in bytes (None: the default).
    #[getter]
    fn cache_limit(&self) -> Option<u64> {
        self.args.cache_limit
    }

    /// How remote shards are read: "whole" or "range".
    #[getter]
    fn fetch(&self) -> &'static str {
        self.args.fetch.name()
    }

    /// Shard downloads kept in flight ahead of a Loader (0: none).
    #[getter]
    fn prefetch_shards(&self) -> usize {
        self.args.prefetch_shards
    }

    /// Whether a remote cache serves its first records by range while their shards download.
    #[getter]
    fn read_while_downloading(&self) -> bool {
        self.args.read_while_downloading
    }

    /// How many times a failed download is tried in all.
    #[getter]
    fn attempts(&self) -> u32 {
        self.args.attempts
    }

    /// The wait before a failed download's second attempt, in seconds (it doubles, up to 10).
    #[getter]
    fn first_backoff(&self) -> f64 {
        self.args.first_backoff
    }

    /// How long a download waits for room in the local cache directory, in seconds.
    #[getter]
    fn wait_for_room(&self) -> f64 {
        self.args.wait_for_room
    }

    /// Who may use the local cache directory: "private" (the user alone) or "group".
    #[getter]
    fn cache_access(&self) -> &'static str {
        self.args.cache_access.name()
    }

    /// Every sample whose metadata matches, in list then row order, as a SampleTable. Reads
    /// metadata.arrow only (no shard is opened).
    ///
    /// `select(predicate)` calls `predicate(metadata: dict, key: (cache_id, sample_id))` per
    /// row (a predicate of one argument gets only the dict); `select(label=3, split="val")`
    /// keeps rows whose columns equal the given values (a cache without such a column matches
    /// nothing). Both may be combined.
    #[pyo3(signature = (predicate = None, **equals))]
    fn select(
        &self,
        py: Python<'_>,
        predicate: Option<Bound<'_, PyAny>>,
        equals: Option<Bound<'_, PyDict>>,
    ) -> PyResult<PySampleTable> {
        let two_args = match &predicate {
            Some(p) => accepts_two_args(py, p)?,
            None => false,
        };
        let mut failure: Option<PyErr> = None;
        let table = self.dataset.select(|row| {
            if failure.is_some() {
                return false;
            }
            let result = (|| -> PyResult<bool> {
                let cache = self.dataset.cache(row.key.cache_id).map_err(Error::from)?;
                let schema = cache.schema();
                let values = (0..schema.len())
                    .map(|i| row.get_index(i).unwrap_or(datasetrt::ValueRef::Null));
                let dict = row_dict(py, schema, values)?;
                if let Some(equals) = &equals {
                    for (k, v) in equals.iter() {
                        match dict.get_item(&k)? {
                            Some(actual) if actual.eq(&v)? => {}
                            _ => return Ok(false),
                        }
                    }
                }
                match &predicate {
                    Some(p) if two_args => p
                        .call1((dict, (row.key.cache_id, row.key.sample_id)))?
                        .is_truthy(),
                    Some(p) => p.call1((dict,))?.is_truthy(),
                    None => Ok(true),
                }
            })();
            result.unwrap_or_else(|e| {
                failure = Some(e);
                false
            })
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(PySampleTable { table }),
        }
    }

    /// Migrates every cache's manifest (in list order) to `version` (only 3): every check
    /// passes before anything is written, then each manifest is rewritten crash-safely.
    /// Returns a ManifestUpdateReport; raises ManifestUpdateError. The open dataset keeps its
    /// ids, so every key made before still names the same sample.
    #[pyo3(signature = (version = 3))]
    fn update_manifests(&self, py: Python<'_>, version: u64) -> PyResult<PyUpdateReport> {
        let dataset = Arc::clone(&self.dataset);
        let report = enter(py, move || {
            dataset.update_manifests(version, &CancelToken::new())
        })?;
        PyUpdateReport::from_report(py, report)
    }

    /// Pickles as its paths or URLs and options: the caches are reopened in the receiving
    /// process (remote ones through its local cache directory).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        let (this, args) = (slf.get(), &slf.get().args);
        let rebuild = slf.py().import("datasetrt")?.getattr("_reopen_dataset")?;
        let options = (
            this.paths(),
            args.validate_cache,
            args.cache_dir_str(),
            args.cache_limit,
            args.fetch.name(),
            args.prefetch_shards,
            args.read_while_downloading,
            args.attempts,
            args.first_backoff,
            args.wait_for_room,
            args.cache_access.name(),
        );
        Ok((rebuild, options))
    }

    fn __repr__(&self) -> String {
        format!(
            "Dataset({:?}, samples={})",
            self.paths(),
            self.dataset.len()
        )
    }
}

fn accepts_two_args(py: Python<'_>, f: &Bound<'_, PyAny>) -> PyResult<bool> {
    let inspect = py.import("inspect")?;
    let Ok(signature) = inspect.call_method1("signature", (f,)) else {
        return Ok(false);
    };
    let parameters = signature.getattr("parameters")?;
    let mut positional = 0usize;
    for p in parameters.call_method0("values")?.try_iter()? {
        let kind = p?.getattr("kind")?.str()?.to_string();
        if kind.contains("VAR_POSITIONAL") {
            return Ok(true);
        }
        if kind.contains("POSITIONAL") {
            positional += 1;
        }
    }
    Ok(positional >= 2)
}

/// The result of `Dataset.update_manifests`: `entries` (one dict per cache, in list order:
/// `path`, `manifest`, `cache_id`, `outcome` of "updated", "unchanged" or
/// "durability_unknown", and `error`), with `updated`, `unchanged` and `durability_unknown`
/// listing the paths of each outcome.
#[pyclass(module = "datasetrt", name = "ManifestUpdateReport", frozen)]
pub(crate) struct PyUpdateReport {
    report: datasetrt::ManifestUpdateReport,
    entries: Py<PyList>,
}

impl PyUpdateReport {
    pub(crate) fn from_report(
        py: Python<'_>,
        report: datasetrt::ManifestUpdateReport,
    ) -> PyResult<Self> {
        let entries = PyList::empty(py);
        for entry in &report.entries {
            entries.append(entry_dict(py, entry)?)?;
        }
        let entries = entries.unbind();
        Ok(Self { report, entries })
    }

    fn paths_with(&self, outcome: &str) -> Vec<String> {
        (self.report.entries.iter())
            .filter(|entry| entry.outcome.name() == outcome)
            .map(|entry| entry.cache.clone())
            .collect()
    }
}

#[pymethods]
impl PyUpdateReport {
    /// One dict per cache, in list order.
    #[getter]
    fn entries(&self, py: Python<'_>) -> Py<PyList> {
        self.entries.clone_ref(py)
    }

    /// Paths whose manifest was rewritten from v2 to v3.
    #[getter]
    fn updated(&self) -> Vec<String> {
        self.paths_with("updated")
    }

    /// Paths already at v3 (left as they were, fsynced).
    #[getter]
    fn unchanged(&self) -> Vec<String> {
        self.paths_with("unchanged")
    }

    /// Paths whose manifest is in place but whose directory fsync failed (retry to sync).
    #[getter]
    fn durability_unknown(&self) -> Vec<String> {
        self.paths_with("durability_unknown")
    }

    fn __repr__(&self) -> String {
        format!(
            "ManifestUpdateReport(updated={:?}, unchanged={:?}, durability_unknown={:?})",
            self.updated(),
            self.unchanged(),
            self.durability_unknown()
        )
    }
}

/// An ordered list of `(cache_id, sample_id)` keys, as `Dataset.select` returns. Saved as an
/// Arrow IPC file with two UInt64 columns (`save(path)`, crash-safe) and loaded with
/// `SampleTable.load(path)`; `SampleTable(keys)` builds one from pairs. Iterable, indexable,
/// `len()`; `keys()` returns the list of pairs.
#[pyclass(module = "datasetrt", name = "SampleTable", frozen)]
pub(crate) struct PySampleTable {
    pub(crate) table: SampleTable,
}

#[pymethods]
impl PySampleTable {
    #[new]
    fn new(keys: Vec<(u64, u64)>) -> Self {
        Self {
            table: SampleTable::new(
                keys.into_iter()
                    .map(|(cache_id, sample_id)| SampleKey {
                        cache_id,
                        sample_id,
                    })
                    .collect(),
            ),
        }
    }

    /// Loads a table saved by `save` (any Arrow IPC file with UInt64 columns `cache_id` and
    /// `sample_id`).
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let table = enter(py, || SampleTable::load(&path))?;
        Ok(Self { table })
    }

    /// Saves the table crash-safely (temporary file, fsync, rename, directory fsync).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        enter(py, || self.table.save(&path))
    }

    /// The keys as a list of `(cache_id, sample_id)` pairs.
    fn keys(&self) -> Vec<(u64, u64)> {
        self.table
            .keys()
            .iter()
            .map(|k| (k.cache_id, k.sample_id))
            .collect()
    }

    fn __len__(&self) -> usize {
        self.table.len()
    }

    fn __getitem__(&self, index: i64) -> PyResult<(u64, u64)> {
        let len = self.table.len() as u64;
        let i = crate::cache::normalise(index, len)
            .map_err(|_| PyIndexError::new_err("sample table index out of range"))?;
        let key = self.table.keys()[usize::try_from(i).unwrap_or(usize::MAX)];
        Ok((key.cache_id, key.sample_id))
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyList::new(py, self.keys())?.call_method0("__iter__")
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PySampleTable>()
            .is_ok_and(|o| o.get().table == self.table)
    }

    fn __repr__(&self) -> String {
        format!("SampleTable(<{} keys>)", self.table.len())
    }
}
