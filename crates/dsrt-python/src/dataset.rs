//! `datasetrt.Dataset`, `datasetrt.SampleTable` and the manifest-update report.

use crate::cache::{payload_object, read_batch, read_one, CacheRef, PyCache, PySample};
use crate::errors::{enter, entry_dict, Error};
use crate::remote::{Location, RawRemoteArgs, RemoteArgs};
use crate::values::row_dict;
use datasetrt::{Cache, CancelToken, Dataset, OpenOptions, SampleKey, SampleTable};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::PathBuf;
use std::sync::Arc;

/// What `Dataset.__reduce__` returns: the rebuilding function and its arguments (locations,
/// validate_cache, cache_dir, cache_limit, fetch, prefetch_shards, read_while_downloading,
/// attempts, first_backoff, wait_for_room). The first five come first, in the order older
/// versions pickled them, so that `_reopen_dataset` still reads their pickles.
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
    ),
);

/// An ordered list of caches addressed as `(cache_id, sample_id)`.
///
/// `Dataset(paths_or_urls, *, validate_cache=False, cache_dir=None, cache_limit=None,
/// fetch="whole", prefetch_shards=8, read_while_downloading=True, attempts=5,
/// first_backoff=0.1, wait_for_room=600.0)` opens every cache in order and resolves its id (a
/// v3 manifest's stored id, a v2 cache's position in the list); duplicate ids or directories
/// raise DatasetError. Each entry is a cache directory (str, os.PathLike or `file://` URL) or
/// an object-store URL (`s3://bucket/prefix`, ...), freely mixed; remote caches share the
/// local cache directory `cache_dir`, bounded by `cache_limit` (an int or a string like
/// "20GB"), and `fetch` ("whole" or "range"), `prefetch_shards`, `read_while_downloading`,
/// `attempts`, `first_backoff` and `wait_for_room` say how their shards are read: see
/// `Cache`. The remote options are checked whatever the entries, and ignored for local
/// caches. Every option is readable as an attribute and travels with a pickled Dataset.
/// `len(dataset)` counts every sample;
/// `dataset[(cache_id, sample_id)]` reads one, `dataset.read_many(keys)` many (GIL
/// released); `dataset.caches` lists the Cache objects; `dataset.select(...)` builds a
/// SampleTable from metadata; `dataset.update_manifests(version=3)` migrates the manifests.
#[pyclass(module = "datasetrt", name = "Dataset", frozen)]
pub(crate) struct PyDataset {
    pub(crate) dataset: Arc<Dataset>,
    pub(crate) paths: Vec<Location>,
    pub(crate) args: RemoteArgs,
}

impl PyDataset {
    fn locate(&self, cache_id: u64) -> PyResult<usize> {
        let position = self.dataset.position(cache_id);
        Ok(position.ok_or(Error::UnknownCache(cache_id))?)
    }

    pub(crate) fn cache_ref(&self, position: usize) -> CacheRef {
        CacheRef::InDataset(Arc::clone(&self.dataset), position)
    }

    fn sample(&self, position: usize, sample_id: u64, payload: Bound<'_, PyAny>) -> PySample {
        PySample {
            cache: self.cache_ref(position),
            cache_id: Some(self.dataset.caches()[position].cache_id),
            sample_id,
            payload: payload.unbind(),
            step: None,
            global_position: None,
            padding: false,
        }
    }

    fn check_sample(&self, position: usize, sample_id: u64) -> PyResult<()> {
        let len = self.dataset.caches()[position].cache.len();
        if sample_id >= len {
            let message = format!(
                "sample id {sample_id} out of range for cache {} of {len} samples",
                self.dataset.caches()[position].cache_id
            );
            return Err(Error::SampleIndex(message).into());
        }
        Ok(())
    }
}

#[pymethods]
impl PyDataset {
    #[new]
    #[pyo3(
        signature = (paths, *, validate_cache = false, cache_dir = None, cache_limit = None, fetch = "whole", prefetch_shards = None, read_while_downloading = None, attempts = None, first_backoff = None, wait_for_room = None),
        text_signature = "(paths, *, validate_cache=False, cache_dir=None, cache_limit=None, fetch=\"whole\", prefetch_shards=8, read_while_downloading=True, attempts=5, first_backoff=0.1, wait_for_room=600.0)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        paths: &Bound<'_, PyAny>,
        validate_cache: bool,
        cache_dir: Option<PathBuf>,
        cache_limit: Option<&Bound<'_, PyAny>>,
        fetch: &str,
        prefetch_shards: Option<&Bound<'_, PyAny>>,
        read_while_downloading: Option<&Bound<'_, PyAny>>,
        attempts: Option<&Bound<'_, PyAny>>,
        first_backoff: Option<&Bound<'_, PyAny>>,
        wait_for_room: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        if paths.is_instance_of::<pyo3::types::PyString>() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "Dataset takes a list of paths or URLs, not one string",
            ));
        }
        let paths = paths
            .try_iter()?
            .map(|p| Location::extract(&p?))
            .collect::<PyResult<Vec<Location>>>()?;
        let args = RemoteArgs::new(RawRemoteArgs {
            validate_cache,
            cache_dir,
            cache_limit,
            fetch,
            prefetch_shards,
            read_while_downloading,
            attempts,
            first_backoff,
            wait_for_room,
        })?;
        let texts: Option<Vec<&str>> = paths
            .iter()
            .map(|l| match l {
                Location::Text(t) => Some(t.as_str()),
                Location::Path(_) => None,
            })
            .collect();
        let dataset = match texts {
            Some(texts) => {
                let options = args.options();
                enter(py, || dsrt_remote::open_dataset(&texts, &options))?
            }
            // A path that is not UTF-8 can only be a local directory: all of them are opened
            // as local directories, as before URLs were accepted.
            None => {
                let dirs: Vec<PathBuf> = paths
                    .iter()
                    .map(|l| match l {
                        Location::Text(t) => PathBuf::from(t),
                        Location::Path(p) => p.clone(),
                    })
                    .collect();
                let options = OpenOptions { validate_cache };
                enter(py, || Dataset::open(&dirs, options))?
            }
        };
        Ok(Self {
            dataset: Arc::new(dataset),
            paths,
            args,
        })
    }

    fn __len__(&self) -> usize {
        usize::try_from(self.dataset.len()).unwrap_or(usize::MAX)
    }

    /// `dataset[(cache_id, sample_id)]`: one sample. An unknown cache id raises KeyError, a
    /// sample id past the cache's end IndexError.
    fn __getitem__(&self, py: Python<'_>, key: (u64, u64)) -> PyResult<PySample> {
        let (cache_id, sample_id) = key;
        let position = self.locate(cache_id)?;
        self.check_sample(position, sample_id)?;
        let payload = read_one(py, &self.cache_ref(position), sample_id)?;
        Ok(self.sample(position, sample_id, payload))
    }

    /// Reads the samples at `keys` (`(cache_id, sample_id)` pairs) in one call with the GIL
    /// released; returns a list of Sample in the same order.
    fn read_many<'py>(
        &self,
        py: Python<'py>,
        keys: Vec<(u64, u64)>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut located = Vec::with_capacity(keys.len());
        for &(cache_id, sample_id) in &keys {
            let position = self.locate(cache_id)?;
            self.check_sample(position, sample_id)?;
            located.push((position, sample_id));
        }
        let items: Vec<(&Cache, u64)> = located
            .iter()
            .map(|&(p, s)| (&self.dataset.caches()[p].cache, s))
            .collect();
        let (data, at) = read_batch(py, &items)?;
        let list = PyList::empty(py);
        for (&(position, sample_id), at) in located.iter().zip(&at) {
            let payload = payload_object(py, &data, at)?;
            list.append(self.sample(position, sample_id, payload))?;
        }
        Ok(list)
    }

    /// The caches in list order (each a Cache whose `cache_id` is set).
    #[getter]
    fn caches(&self) -> Vec<PyCache> {
        self.dataset
            .caches()
            .iter()
            .enumerate()
            .map(|(i, c)| PyCache {
                cache: self.cache_ref(i),
                cache_id: Some(c.cache_id),
                location: None,
            })
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

    /// Whether the caches were opened with validate_cache=True.
    #[getter]
    fn validate_cache(&self) -> bool {
        self.args.validate_cache
    }

    /// The local cache directory of remote caches as given (None: the default,
    /// `$DSRT_CACHE_DIR`, else `~/.cache/datasetrt`).
    #[getter]
    fn cache_dir(&self) -> Option<String> {
        self.args.cache_dir_str()
    }

    /// The byte limit of the local cache directory as given, in bytes (None: the default).
    #[getter]
    fn cache_limit(&self) -> Option<u64> {
        self.args.cache_limit
    }

    /// How remote shards are read: "whole" or "range".
    #[getter]
    fn fetch(&self) -> &'static str {
        self.args.fetch_name()
    }

    /// How many shard downloads of a remote cache are kept in flight ahead of a Loader (0:
    /// no prefetching).
    #[getter]
    fn prefetch_shards(&self) -> usize {
        self.args.prefetch_shards
    }

    /// Whether a remote cache serves its first records by range requests while their shards
    /// download.
    #[getter]
    fn read_while_downloading(&self) -> bool {
        self.args.read_while_downloading
    }

    /// How many times a failed download of a remote cache is tried in all.
    #[getter]
    fn attempts(&self) -> u32 {
        self.args.attempts
    }

    /// The wait before a failed download's second attempt, in seconds (it doubles, up to 10).
    #[getter]
    fn first_backoff(&self) -> f64 {
        self.args.first_backoff
    }

    /// How long a download waits for room in the local cache directory (or for another
    /// process's download of the same shard), in seconds.
    #[getter]
    fn wait_for_room(&self) -> f64 {
        self.args.wait_for_room
    }

    /// The cache with id `cache_id` (KeyError if none).
    fn cache(&self, cache_id: u64) -> PyResult<PyCache> {
        let position = self.locate(cache_id)?;
        Ok(PyCache {
            cache: self.cache_ref(position),
            cache_id: Some(cache_id),
            location: None,
        })
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

    /// Migrates every cache's manifest (in list order) to `version` (only 3 is a target)
    /// with the Rust semantics: all checks (readable, writable, no id collision) pass before
    /// anything is written, then each manifest is rewritten crash-safely. Returns a
    /// ManifestUpdateReport; raises ManifestUpdateError (nothing written when a check
    /// failed). The open dataset keeps its ids, so every key made before still names the same
    /// sample.
    #[pyo3(signature = (version = 3))]
    fn update_manifests(&self, py: Python<'_>, version: u64) -> PyResult<PyUpdateReport> {
        let dataset = Arc::clone(&self.dataset);
        let report = enter(py, move || {
            dataset.update_manifests(version, &CancelToken::new())
        })?;
        PyUpdateReport::from_report(py, &report)
    }

    /// Pickles as its paths or URLs and options: the caches are reopened in the receiving
    /// process (remote ones through its local cache directory).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        let this = slf.get();
        let rebuild = slf.py().import("datasetrt")?.getattr("_reopen_dataset")?;
        Ok((
            rebuild,
            (
                this.paths(),
                this.args.validate_cache,
                this.args.cache_dir_str(),
                this.args.cache_limit,
                this.args.fetch_name(),
                this.args.prefetch_shards,
                this.args.read_while_downloading,
                this.args.attempts,
                this.args.first_backoff,
                this.args.wait_for_room,
            ),
        ))
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
    entries: Py<PyList>,
}

impl PyUpdateReport {
    pub(crate) fn from_report(
        py: Python<'_>,
        report: &datasetrt::ManifestUpdateReport,
    ) -> PyResult<Self> {
        let entries = PyList::empty(py);
        for entry in &report.entries {
            entries.append(entry_dict(py, entry)?)?;
        }
        Ok(Self {
            entries: entries.unbind(),
        })
    }

    fn paths_with(&self, py: Python<'_>, outcome: &str) -> PyResult<Vec<String>> {
        let mut paths = Vec::new();
        for entry in self.entries.bind(py).iter() {
            if entry.get_item("outcome")?.eq(outcome)? {
                paths.push(entry.get_item("path")?.extract()?);
            }
        }
        Ok(paths)
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
    fn updated(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.paths_with(py, "updated")
    }

    /// Paths already at v3 (left as they were, fsynced).
    #[getter]
    fn unchanged(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.paths_with(py, "unchanged")
    }

    /// Paths whose manifest is in place but whose directory fsync failed (retry to sync).
    #[getter]
    fn durability_unknown(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.paths_with(py, "durability_unknown")
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "ManifestUpdateReport(updated={:?}, unchanged={:?}, durability_unknown={:?})",
            self.updated(py)?,
            self.unchanged(py)?,
            self.durability_unknown(py)?
        ))
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
        let key =
            self.table.keys()[usize::try_from(i).map_err(|_| PyValueError::new_err("index"))?];
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
