//! `datasetrt.Cache` and `datasetrt.Sample`.

use crate::arrow::ArrowBatch;
use crate::errors::{enter, Error};
use crate::remote::{Location, RawRemoteArgs, RemoteArgs};
use crate::values::{row_dict, schema_to_arrow};
use arrow_array::Array;
use datasetrt::{Cache, CacheError, Dataset, FileMap, MappedPayload, OpenOptions, SampleBuf};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::cell::RefCell;
use std::ops::Range;
use std::path::PathBuf;
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

/// Where one read put its payload: in place in a shard (zero-copy) or in the batch buffer.
pub(crate) enum Located {
    /// Stored uncompressed: `len` bytes at `offset` of shard `shard`, which `map` maps.
    InShard {
        shard: u64,
        offset: u64,
        len: usize,
        map: FileMap,
    },
    /// Decoded into the batch buffer at this range.
    Buffer(Range<usize>),
}

impl Located {
    /// Where `payload` is: in its shard, or appended (decoded) to `out`.
    fn appended(payload: MappedPayload<'_>, out: &mut Vec<u8>) -> Self {
        match payload {
            MappedPayload::InShard {
                shard,
                offset,
                len,
                map,
            } => Self::InShard {
                shard,
                offset,
                len,
                map,
            },
            MappedPayload::Decoded(payload) => {
                let at = out.len();
                out.extend_from_slice(payload);
                Self::Buffer(at..out.len())
            }
        }
    }
}

/// Many reads: each payload's location and the buffer holding the decoded ones.
pub(crate) type Batch = (Vec<u8>, Vec<Located>);

/// Checks many samples (mapped reads, the GIL released), decoding compressed payloads into
/// one buffer; uncompressed payloads are not touched.
pub(crate) fn read_batch(py: Python<'_>, items: &[(&Cache, u64)]) -> PyResult<Batch> {
    enter(py, || {
        let mut buf = SampleBuf::new();
        let mut out = Vec::new();
        let mut located = Vec::with_capacity(items.len());
        for &(cache, sample) in items {
            let payload = cache.read_mapped_location(sample, &mut buf)?;
            located.push(Located::appended(payload, &mut out));
        }
        Ok::<_, CacheError>((out, located))
    })
}

/// Payloads copied into one buffer, and each one's range in it.
pub(crate) type Copied = (Vec<u8>, Vec<Range<usize>>);

/// Reads many samples (mapped reads, the GIL released) into one contiguous buffer; returns it
/// and each payload's range.
pub(crate) fn read_copied(py: Python<'_>, items: &[(&Cache, u64)]) -> PyResult<Copied> {
    enter(py, || {
        let mut buf = SampleBuf::new();
        let mut out = Vec::new();
        let mut ranges = Vec::with_capacity(items.len());
        for &(cache, sample) in items {
            let payload = cache.read_mapped(sample, &mut buf)?.payload;
            let at = out.len();
            out.extend_from_slice(payload);
            ranges.push(at..out.len());
        }
        Ok::<_, CacheError>((out, ranges))
    })
}

/// The payload object of one located read: a memoryview of the mapped shard (uncompressed) or
/// `bytes` (decoded).
pub(crate) fn payload_object<'py>(
    py: Python<'py>,
    buffer: &[u8],
    located: &Located,
) -> PyResult<Bound<'py, PyAny>> {
    match located {
        Located::InShard {
            offset, len, map, ..
        } => crate::views::payload_view(py, map, *offset, *len),
        Located::Buffer(range) => Ok(PyBytes::new(py, &buffer[range.clone()]).into_any()),
    }
}

/// Reads one sample (see [`read_batch`]) and returns its payload object.
pub(crate) fn read_one<'py>(
    py: Python<'py>,
    cache: &CacheRef,
    sample: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let inner = cache.get();
    let located = enter(py, || {
        SCRATCH.with(|scratch| {
            let (buf, out) = &mut *scratch.borrow_mut();
            let payload = inner.read_mapped_location(sample, buf)?;
            out.clear();
            Ok::<_, CacheError>(Located::appended(payload, out))
        })
    })?;
    // The GIL is held again on the same thread: the scratch buffer still holds the payload.
    SCRATCH.with(|scratch| payload_object(py, &scratch.borrow().1, &located))
}

/// Normalises a Python index (negative counts from the end).
pub(crate) fn normalise(index: i64, len: u64) -> PyResult<u64> {
    let resolved = if index < 0 {
        i128::from(len) + i128::from(index)
    } else {
        i128::from(index)
    };
    match u64::try_from(resolved) {
        Ok(sample) if sample < len => Ok(sample),
        _ => Err(Error::SampleIndex(format!(
            "sample index {index} out of range for a cache of {len} samples"
        ))
        .into()),
    }
}

/// One sample: `sample_id`, `payload` (bytes) and `metadata` (a dict, built when first asked
/// for). Samples from a dataset or a loader also carry `cache_id` and `key`; samples from a
/// loader carry `step`, `global_position` and `padding`.
#[pyclass(module = "datasetrt", name = "Sample", frozen)]
pub(crate) struct PySample {
    pub(crate) cache: CacheRef,
    pub(crate) cache_id: Option<u64>,
    pub(crate) sample_id: u64,
    pub(crate) payload: Py<PyAny>,
    pub(crate) step: Option<u64>,
    pub(crate) global_position: Option<u64>,
    pub(crate) padding: bool,
}

#[pymethods]
impl PySample {
    /// The sample's id (its row) within its cache.
    #[getter]
    fn sample_id(&self) -> u64 {
        self.sample_id
    }

    /// The id of the sample's cache in its dataset (None for a sample read from a lone Cache).
    #[getter]
    fn cache_id(&self) -> Option<u64> {
        self.cache_id
    }

    /// `(cache_id, sample_id)`, the sample's address in its dataset (None from a lone Cache).
    #[getter]
    fn key(&self) -> Option<(u64, u64)> {
        self.cache_id.map(|c| (c, self.sample_id))
    }

    /// The payload, decompressed: a read-only `memoryview` of the mapped shard when it is
    /// stored uncompressed (zero-copy; it keeps the mapping alive), else `bytes`. Both are
    /// bytes-like (buffer protocol); `bytes(sample.payload)` copies it.
    #[getter]
    fn payload(&self, py: Python<'_>) -> Py<PyAny> {
        self.payload.clone_ref(py)
    }

    /// The metadata row as a dict of Python values (from metadata.arrow, checked equal to the
    /// record's embedded copy when the sample was read). Built on each access.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let cache = self.cache.get();
        let row = cache.metadata_row(self.sample_id).map_err(Error::from)?;
        row_dict(py, cache.schema(), row.values())
    }

    /// This loader step (within the rank's epoch), or None outside a loader.
    #[getter]
    fn step(&self) -> Option<u64> {
        self.step
    }

    /// Position in the epoch's global order, or None outside a loader.
    #[getter]
    fn global_position(&self) -> Option<u64> {
        self.global_position
    }

    /// Whether a loader repeated this sample to pad the last round (so every rank yields the
    /// same count).
    #[getter]
    fn padding(&self) -> bool {
        self.padding
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let len = self.payload.bind(py).len().unwrap_or(0);
        match self.cache_id {
            Some(c) => format!(
                "Sample(cache_id={c}, sample_id={}, payload=<{len} bytes>)",
                self.sample_id
            ),
            None => format!(
                "Sample(sample_id={}, payload=<{len} bytes>)",
                self.sample_id
            ),
        }
    }
}

/// Opens a cache (manifest.json, metadata.arrow, index.bin, shards/) and serves its samples in
/// O(1).
///
/// `Cache(path_or_url, *, validate_cache=False, cache_dir=None, cache_limit=None,
/// fetch="whole", prefetch_shards=8, read_while_downloading=True, attempts=5,
/// first_backoff=0.1, wait_for_room=600.0)`: `path_or_url` is a cache directory (str or os.PathLike, or a `file://`
/// URL) or an object-store URL (`s3://bucket/prefix`; the store is configured from the
/// environment, `AWS_*` for s3://). The cache is checked before the first sample is served
/// (manifest, row counts, index bounds, shard presence and lengths, the Arrow schema);
/// `validate_cache=True` also compares every file's SHA-256 with the manifest (for a remote
/// cache: index.bin and metadata.arrow; its shards are always checked when downloaded).
/// Raises a `CacheError` subclass naming the path and the reason.
///
/// Remote caches: manifest.json, index.bin and metadata.arrow are fetched at open into the
/// local cache directory `cache_dir` (default `$DSRT_CACHE_DIR`, else `~/.cache/datasetrt`;
/// shared by every process of the node that uses it), which holds at most `cache_limit` bytes
/// (an int, or a string such as "20GB" or "512MiB"; default 100 GiB; a limit smaller than the
/// cache's largest shard raises CacheLimitError at open). `fetch="whole"` downloads a shard
/// whole on its first read, checked against its SHA-256 before it becomes visible, and reads
/// it locally after; `fetch="range"` reads each record with one range request and caches no
/// shard (sparse random access). With `fetch="whole"`: `prefetch_shards` background
/// downloads are kept in flight ahead of a Loader (0: none); `read_while_downloading` (on by
/// default) serves the first records (those read before the first returns, at most 8) by
/// range requests while their shards download (checked against metadata.arrow, not against
/// the shard's SHA-256, as a local cache's records are without `validate_cache`; ignored with
/// `validate_cache=True`; the shards are still checked before they enter the local cache). A
/// failed download is tried `attempts` times in all (an int >= 1), waiting `first_backoff`
/// seconds (0 to 10) before the second attempt, doubling up to 10 s; a download waits up to
/// `wait_for_room` seconds for room in the local cache (or for another process's download of
/// the same shard). Payloads of a remote cache are `bytes`. Store failures raise
/// `RemoteError` (or `RemoteIntegrityError`, `ManifestChangedError`, `CacheLimitError`),
/// naming the URL and, for a read, the shard. The remote options are checked (a wrong type
/// raises TypeError, a value out of range ValueError, naming the option) and otherwise
/// ignored for a local cache.
///
/// `len(cache)`, `cache[i]` (negative indices count from the end; out of range raises
/// IndexError), `cache.read_many(indices)`, `cache.metadata()` (a pyarrow.Table),
/// `cache.manifest` (a dict) and `cache.schema` (a pyarrow.Schema). Safe to share between
/// threads; reads release the GIL.
#[pyclass(module = "datasetrt", name = "Cache", frozen)]
pub(crate) struct PyCache {
    pub(crate) cache: CacheRef,
    pub(crate) cache_id: Option<u64>,
    /// The location as given to `Cache(...)` (None: a dataset's cache, named by the dataset).
    pub(crate) location: Option<String>,
}

impl PyCache {
    /// The location as given: a path or a URL.
    fn location(&self) -> String {
        if let Some(location) = &self.location {
            return location.clone();
        }
        match &self.cache {
            CacheRef::InDataset(dataset, i) => {
                dataset.caches()[*i].path.to_string_lossy().into_owned()
            }
            CacheRef::Own(cache) => cache.path().to_string_lossy().into_owned(),
        }
    }
}

impl PyCache {
    fn sample(&self, sample_id: u64, payload: Bound<'_, PyAny>) -> PySample {
        PySample {
            cache: self.cache.clone(),
            cache_id: self.cache_id,
            sample_id,
            payload: payload.unbind(),
            step: None,
            global_position: None,
            padding: false,
        }
    }
}

#[pymethods]
impl PyCache {
    #[new]
    #[pyo3(
        signature = (path, *, validate_cache = false, cache_dir = None, cache_limit = None, fetch = "whole", prefetch_shards = None, read_while_downloading = None, attempts = None, first_backoff = None, wait_for_room = None),
        text_signature = "(path, *, validate_cache=False, cache_dir=None, cache_limit=None, fetch=\"whole\", prefetch_shards=8, read_while_downloading=True, attempts=5, first_backoff=0.1, wait_for_room=600.0)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
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
        let location = Location::extract(path)?;
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
        let cache = match &location {
            Location::Text(text) => {
                let options = args.options();
                enter(py, || dsrt_remote::open_cache(text, &options))?
            }
            Location::Path(dir) => {
                let options = OpenOptions { validate_cache };
                enter(py, || Cache::open(dir, options))?
            }
        };
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
        let cache = self.cache.get();
        let sample = normalise(index, cache.len())?;
        let payload = read_one(py, &self.cache, sample)?;
        Ok(self.sample(sample, payload))
    }

    /// Reads the samples at `indices` (ints, negative counting from the end) in one call with
    /// the GIL released; returns a list of Sample in the same order.
    fn read_many<'py>(&self, py: Python<'py>, indices: Vec<i64>) -> PyResult<Bound<'py, PyList>> {
        let cache = self.cache.get();
        let len = cache.len();
        let samples = indices
            .iter()
            .map(|&i| normalise(i, len))
            .collect::<PyResult<Vec<u64>>>()?;
        let items: Vec<(&Cache, u64)> = samples.iter().map(|&s| (cache, s)).collect();
        let (data, located) = read_batch(py, &items)?;
        let list = PyList::empty(py);
        for (&sample, at) in samples.iter().zip(&located) {
            let payload = payload_object(py, &data, at)?;
            list.append(self.sample(sample, payload))?;
        }
        Ok(list)
    }

    /// `[(shard, start, stop)]`: each run of consecutive samples whose records lie in one
    /// shard, in sample order (one run per shard for a cache a writer made). What splits a
    /// cache into pieces that each read one shard.
    fn shard_runs(&self, py: Python<'_>) -> PyResult<Vec<(u64, u64, u64)>> {
        let cache = self.cache.get();
        enter(py, || {
            Ok::<_, Error>(
                cache
                    .index()
                    .shard_runs()
                    .map(|run| (run.shard, run.samples.start, run.samples.end))
                    .collect(),
            )
        })
    }

    /// Samples `start` to `stop` (exclusive) as an `ArrowBatch`: `payload` (large_binary, the
    /// decoded payloads) and then the metadata columns with their declared types. A metadata
    /// column named `payload` would clash and raises ValueError.
    fn read_arrow(&self, py: Python<'_>, start: u64, stop: u64) -> PyResult<ArrowBatch> {
        let cache = self.cache.get();
        if start > stop || stop > cache.len() {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "samples {start}..{stop} are not within the cache's {}",
                cache.len()
            )));
        }
        let table = cache.metadata();
        let fields = table.arrow_schema().fields().clone();
        if fields.iter().any(|f| f.name() == "payload") {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{}: a metadata column named \"payload\" clashes with the payload column",
                cache.path().display()
            )));
        }
        let items: Vec<(&Cache, u64)> = (start..stop).map(|s| (cache, s)).collect();
        let (data, ranges) = read_copied(py, &items)?;
        let offsets = crate::arrow::offsets_of(ranges.iter().map(ExactSizeIterator::len))?;
        let payload =
            arrow_array::LargeBinaryArray::new(offsets, arrow_buffer::Buffer::from_vec(data), None);
        let mut columns: Vec<(arrow_schema::Field, arrow_array::ArrayRef)> = vec![(
            arrow_schema::Field::new("payload", arrow_schema::DataType::LargeBinary, false),
            std::sync::Arc::new(payload),
        )];
        let rows = usize::try_from(stop - start)
            .map_err(|_| pyo3::exceptions::PyValueError::new_err("too many samples"))?;
        let mut values = Vec::with_capacity(rows);
        for (column, field) in fields.iter().enumerate() {
            values.clear();
            values.extend(
                (start..stop).map(|s| table.value(s, column).unwrap_or(datasetrt::ValueRef::Null)),
            );
            let mut array = datasetrt::gather_column(&values);
            if array.data_type() != field.data_type() {
                // Every value null: the column keeps its declared type.
                array = arrow_array::new_null_array(field.data_type(), rows);
            }
            columns.push((field.as_ref().clone(), array));
        }
        crate::arrow::arrow_batch(columns)
    }

    /// The metadata of every sample as a pyarrow.Table (the contents of metadata.arrow):
    /// the columns are the mapped file's own buffers, not copies, and keep it mapped while held.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let table = self.cache.get().metadata();
        crate::arrow::table(
            py,
            std::sync::Arc::clone(table.arrow_schema()),
            table.record_batches(),
        )
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
        self.location()
    }

    /// Whether the cache lives on object storage (its shards are downloaded into the local
    /// cache directory, or read by range, instead of being mapped from a local directory).
    #[getter]
    fn is_remote(&self) -> bool {
        self.cache.get().has_shard_source()
    }

    /// The directory the cache's files are read from: the cache directory itself for a local
    /// cache; for a remote one, its directory in the local cache (`<cache_dir>/<cache
    /// id>-<manifest hash>`, holding manifest.json, index.bin, metadata.arrow and the shards
    /// downloaded so far).
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
        format!(
            "Cache({:?}, samples={}, format_version={})",
            self.location(),
            cache.len(),
            cache.manifest().format_version()
        )
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(PyTypeError::new_err(
            "a Cache holds open files and mappings and is not picklable; pickle its path and reopen it",
        ))
    }
}
