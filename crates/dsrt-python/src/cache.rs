//! `datasetrt.Cache` and `datasetrt.Sample`.

use crate::arrow::ArrowBatch;
use crate::errors::{enter, Error};
use crate::options::{Kwargs, RemoteArgs};
use crate::remote::Location;
use crate::values::{row_dict, schema_to_arrow};
use datasetrt::{Cache, CacheError, Dataset, PayloadAt, SampleBuf};
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::cell::RefCell;
use std::sync::Arc;

/// A cache, owned alone or as one of a dataset's caches.
#[derive(Clone)]
pub(crate) enum CacheRef {
    /// Opened by `datasetrt.Cache(...)`.
    Own(Arc<Cache>),
    /// The `usize`-th cache of a dataset.
    InDataset(Arc<Dataset>, usize),
}

impl CacheRef {
    pub(crate) fn get(&self) -> &Cache {
        match self {
            Self::Own(cache) => cache,
            Self::InDataset(dataset, i) => &dataset.caches()[*i].cache,
        }
    }
}

thread_local! {
    /// Per-thread read buffers: a single-sample read allocates nothing once they have grown.
    static SCRATCH: RefCell<(SampleBuf, Vec<u8>)> = RefCell::new((SampleBuf::new(), Vec::new()));
}

/// The payload object of one located read: a memoryview of the mapped shard (stored
/// uncompressed) or `bytes` (decoded into `decoded`).
pub(crate) fn payload_object<'py>(
    py: Python<'py>,
    decoded: &[u8],
    place: &PayloadAt,
) -> PyResult<Bound<'py, PyAny>> {
    match place {
        PayloadAt::InShard {
            offset, len, map, ..
        } => crate::views::payload_view(py, map, *offset, *len),
        PayloadAt::Decoded(range) => Ok(PyBytes::new(py, &decoded[range.clone()]).into_any()),
    }
}

/// Reads one sample (GIL released) and returns its payload object.
pub(crate) fn read_one<'py>(
    py: Python<'py>,
    cache: &CacheRef,
    sample: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let inner = cache.get();
    let place = enter(py, || {
        SCRATCH.with(|scratch| {
            let (buf, out) = &mut *scratch.borrow_mut();
            let payload = inner.read_mapped_location(sample, buf)?;
            out.clear();
            Ok::<_, CacheError>(PayloadAt::appended(payload, out))
        })
    })?;
    // The GIL is held again on the same thread: the scratch buffer still holds the payload.
    SCRATCH.with(|scratch| payload_object(py, &scratch.borrow().1, &place))
}

/// Reads `items` in one call (GIL released) and returns their samples, made by `sample`.
pub(crate) fn read_samples<'py, T>(
    py: Python<'py>,
    items: &[(&Cache, u64)],
    mut sample: impl FnMut(usize, Bound<'py, PyAny>) -> T,
) -> PyResult<Vec<T>> {
    let read = enter(py, || datasetrt::read_located(items))?;
    (read.places.iter().enumerate())
        .map(|(i, place)| Ok(sample(i, payload_object(py, &read.decoded, place)?)))
        .collect()
}

/// Normalises a Python index (negative counts from the end).
pub(crate) fn normalise(index: i64, len: u64) -> PyResult<u64> {
    let resolved = match index < 0 {
        true => i128::from(len) + i128::from(index),
        false => i128::from(index),
    };
    match u64::try_from(resolved) {
        Ok(sample) if sample < len => Ok(sample),
        _ => Err(Error::SampleIndex(format!(
            "sample index {index} out of range for a cache of {len} samples"
        ))
        .into()),
    }
}

/// One sample: `sample_id`, `payload` and `metadata` (a dict, built when asked for). Samples
/// of a dataset or a loader also carry `cache_id` and `key`; a loader's also `step`,
/// `global_position` and `padding`.
#[pyclass(module = "datasetrt", name = "Sample", frozen)]
pub(crate) struct PySample {
    pub(crate) cache: CacheRef,
    /// The id of the sample's cache in its dataset (None for a sample of a lone Cache).
    #[pyo3(get)]
    pub(crate) cache_id: Option<u64>,
    /// The sample's id (its row) within its cache.
    #[pyo3(get)]
    pub(crate) sample_id: u64,
    /// The payload, decompressed: a read-only `memoryview` of the mapped shard when it is
    /// stored uncompressed (zero-copy; it keeps the mapping alive), else `bytes`.
    #[pyo3(get)]
    pub(crate) payload: Py<PyAny>,
    /// The loader step (within the rank's epoch), or None outside a loader.
    #[pyo3(get)]
    pub(crate) step: Option<u64>,
    /// Position in the epoch's global order, or None outside a loader.
    #[pyo3(get)]
    pub(crate) global_position: Option<u64>,
    /// Whether a loader repeated this sample to pad the last round.
    #[pyo3(get)]
    pub(crate) padding: bool,
}

impl PySample {
    /// Sample `sample_id` of `cache`, outside a loader.
    pub(crate) fn new(
        cache: CacheRef,
        cache_id: Option<u64>,
        sample_id: u64,
        payload: Bound<'_, PyAny>,
    ) -> Self {
        Self {
            cache,
            cache_id,
            sample_id,
            payload: payload.unbind(),
            step: None,
            global_position: None,
            padding: false,
        }
    }
}

#[pymethods]
impl PySample {
    /// `(cache_id, sample_id)`, the sample's address in its dataset (None from a lone Cache).
    #[getter]
    fn key(&self) -> Option<(u64, u64)> {
        self.cache_id.map(|c| (c, self.sample_id))
    }

    /// The metadata row as a dict (from metadata.arrow, checked equal to the record's
    /// embedded copy when the sample was read). Built on each access.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let cache = self.cache.get();
        let row = cache.metadata_row(self.sample_id).map_err(Error::from)?;
        row_dict(py, cache.schema(), row.values())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let len = self.payload.bind(py).len().unwrap_or(0);
        let cache = self
            .cache_id
            .map(|c| format!("cache_id={c}, "))
            .unwrap_or_default();
        format!(
            "Sample({cache}sample_id={}, payload=<{len} bytes>)",
            self.sample_id
        )
    }
}

/// Opens a cache (a directory or an object-store URL) and serves its samples in O(1), checked
/// before the first is served; the options are those of `docs/python.md` ("Cache"). `len()`,
/// `cache[i]`, `read_many(indices)`, `metadata()` (a pyarrow.Table), `manifest`, `schema`.
/// Safe to share between threads; reads release the GIL.
#[pyclass(module = "datasetrt", name = "Cache", frozen)]
pub(crate) struct PyCache {
    pub(crate) cache: CacheRef,
    pub(crate) cache_id: Option<u64>,
    /// The location as given to `Cache(...)` (None: a dataset's cache, named by the dataset).
    pub(crate) location: Option<String>,
}

impl PyCache {
    fn sample(&self, sample_id: u64, payload: Bound<'_, PyAny>) -> PySample {
        PySample::new(self.cache.clone(), self.cache_id, sample_id, payload)
    }
}

#[pymethods]
impl PyCache {
    #[new]
    #[pyo3(
        signature = (path, **options),
        text_signature = "(path, *, validate_cache=False, cache_dir=None, cache_limit=None, fetch=\"whole\", prefetch_shards=8, read_while_downloading=True, attempts=5, first_backoff=0.1, wait_for_room=600.0, cache_access=\"private\")"
    )]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let location = Location::extract(path)?;
        let mut kwargs = Kwargs::new("Cache", options)?;
        let args = RemoteArgs::take(&mut kwargs)?;
        kwargs.finish()?;
        let options = args.options();
        let cache = enter(py, || dsrt_remote::open_cache(&location.0, &options))?;
        Ok(Self {
            cache: CacheRef::Own(Arc::new(cache)),
            cache_id: None,
            location: Some(location.display()),
        })
    }

    fn __len__(&self) -> usize {
        usize::try_from(self.cache.get().len()).unwrap_or(usize::MAX)
    }

    /// `cache[i]`: sample `i` (negative counts from the end).
    fn __getitem__(&self, py: Python<'_>, index: i64) -> PyResult<PySample> {
        let sample = normalise(index, self.cache.get().len())?;
        let payload = read_one(py, &self.cache, sample)?;
        Ok(self.sample(sample, payload))
    }

    /// Reads the samples at `indices` (negative counting from the end) in one call with the
    /// GIL released; returns a list of Sample in the same order.
    fn read_many<'py>(&self, py: Python<'py>, indices: Vec<i64>) -> PyResult<Bound<'py, PyList>> {
        let cache = self.cache.get();
        let samples = (indices.iter())
            .map(|&i| normalise(i, cache.len()))
            .collect::<PyResult<Vec<u64>>>()?;
        let items: Vec<(&Cache, u64)> = samples.iter().map(|&s| (cache, s)).collect();
        let read = read_samples(py, &items, |i, payload| self.sample(samples[i], payload))?;
        PyList::new(py, read)
    }

    /// `[(shard, start, stop)]`: each run of consecutive samples whose records lie in one
    /// shard, in sample order. What splits a cache into pieces that each read one shard.
    fn shard_runs(&self, py: Python<'_>) -> PyResult<Vec<(u64, u64, u64)>> {
        let index = self.cache.get().index();
        let runs = index
            .shard_runs()
            .map(|run| (run.shard, run.samples.start, run.samples.end));
        enter(py, || Ok::<_, Error>(runs.collect()))
    }

    /// Samples `start` to `stop` (exclusive) as an `ArrowBatch`: `payload` (large_binary) and
    /// the metadata columns with their declared types (`datasetrt::read_arrow`). A range not
    /// within the cache raises IndexError, a metadata column named `payload` ValueError.
    fn read_arrow(&self, py: Python<'_>, start: u64, stop: u64) -> PyResult<ArrowBatch> {
        let cache = self.cache.get();
        if start > stop || stop > cache.len() {
            let len = cache.len();
            let message = format!("samples {start}..{stop} are not within the cache's {len}");
            return Err(PyIndexError::new_err(message));
        }
        let fields = cache.metadata().arrow_schema().fields();
        if fields.iter().any(|f| f.name() == "payload") {
            return Err(PyValueError::new_err(format!(
                "{}: a metadata column named \"payload\" clashes with the payload column",
                cache.path().display()
            )));
        }
        let batch = enter(py, || datasetrt::read_arrow(cache, start..stop))?;
        Ok(ArrowBatch { batch })
    }

    /// The metadata of every sample as a pyarrow.Table (the mapped file's own buffers, not
    /// copies; they keep it mapped while held).
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let table = self.cache.get().metadata();
        crate::arrow::table(py, Arc::clone(table.arrow_schema()), table.record_batches())
    }

    /// The manifest as a dict (the parsed manifest.json).
    #[getter]
    fn manifest<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let bytes = match self.cache.get().manifest() {
            datasetrt::Manifest::V2(m) => m.to_json_bytes(),
            datasetrt::Manifest::V3(m) => m.to_json_bytes(),
        };
        py.import("json")?
            .call_method1("loads", (PyBytes::new(py, &bytes),))
    }

    /// The metadata schema as a pyarrow.Schema.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        schema_to_arrow(py, self.cache.get().schema())
    }

    /// The manifest's format_version (2 or 3).
    #[getter]
    fn format_version(&self) -> u64 {
        self.cache.get().manifest().format_version()
    }

    /// The cache directory or URL as given.
    #[getter]
    fn path(&self) -> String {
        match (&self.location, &self.cache) {
            (Some(location), _) => location.clone(),
            (None, CacheRef::InDataset(dataset, i)) => {
                dataset.caches()[*i].path.to_string_lossy().into_owned()
            }
            (None, CacheRef::Own(cache)) => cache.path().to_string_lossy().into_owned(),
        }
    }

    /// Whether the cache lives on object storage (its shards are downloaded into the local
    /// cache directory, or read by range).
    #[getter]
    fn is_remote(&self) -> bool {
        self.cache.get().has_shard_source()
    }

    /// The directory the cache's files are read from: the cache itself, or for a remote one its
    /// directory in the local cache (`<cache_dir>/<cache id>-<manifest hash>`).
    #[getter]
    fn local_path(&self) -> String {
        self.cache.get().path().to_string_lossy().into_owned()
    }

    /// This cache's id in its dataset (None for a lone Cache; use `manifest["cache_id"]` for
    /// the stored v3 id).
    #[getter]
    fn cache_id(&self) -> Option<u64> {
        self.cache_id
    }

    fn __repr__(&self) -> String {
        let cache = self.cache.get();
        let (path, samples) = (self.path(), cache.len());
        let version = cache.manifest().format_version();
        format!("Cache({path:?}, samples={samples}, format_version={version})")
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(PyTypeError::new_err(
            "a Cache holds open files and mappings and is not picklable; pickle its path and reopen it",
        ))
    }
}
