//! Token streams for Python (`datasetrt::token_stream`): one rank's plan of training rows over
//! token caches (`_TokenPlan`), its batches read ahead by Rust threads (`_TokenBatches`), and
//! `TokenBatch`, whose columns cross into Python as Arrow buffers (no copy) and which pickles
//! in its compact form (tokens and pieces) to be expanded where it is unpickled.

use crate::arrow::ArrowBatch;
use crate::dataset::open_locations;
use crate::errors::{enter, Error};
use crate::options::{Kwargs, RemoteArgs};
use crate::remote::Location;
use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_buffer::Buffer;
use datasetrt::token_stream::{
    weights_by_source, BatchPool, BatchReader, CacheSource, DocumentSource, LoaderOptions,
    LoaderStats, LongDocs, PackMode, RunConfig, SourceWeightsError, TokenBatch, TokenConfig,
    TokenLoader, TokenPhase, TokenPlan, TokenReport, TokenSchedule, TokenState,
    TokenStreamError as StreamError,
};
use datasetrt::{RemainderPolicy, Sampling, Shuffle};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyDict;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Runs `work` as `errors::enter` does; a setting the stream refuses is the caller's
/// `ValueError`, any other error raised by its class (`TokenStreamError`, or the plan's, the
/// cache's or the token cache's own).
fn enter_stream<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, StreamError> + Send,
) -> PyResult<T> {
    match enter(py, || Ok::<_, Error>(work()))? {
        Ok(value) => Ok(value),
        Err(StreamError::Config(message)) => Err(PyValueError::new_err(message)),
        Err(error) => Err(Error::from(error).into()),
    }
}

/// A token state as a dict: the sample state's keys (`seed`, `epoch`, `position`,
/// `epoch_len`, `cuts`, `remaining`) plus `seq_len` and `mode`.
fn token_state_to_dict<'py>(py: Python<'py>, state: &TokenState) -> PyResult<Bound<'py, PyAny>> {
    let listed = TokenState {
        rows: state.rows.listed(),
        ..state.clone()
    };
    py_support::to_python(py, &listed)
}

/// Columns and pieces of batches unpickled in this process come from this pool.
fn process_pool() -> &'static Arc<BatchPool> {
    static POOL: OnceLock<Arc<BatchPool>> = OnceLock::new();
    POOL.get_or_init(BatchPool::new)
}

/// One rank's plan of an epoch of token rows over token caches (see `datasetrt.TokenDataset`,
/// which builds it): `len(plan)` rows for this rank, `plan.read(start, stop)` reads steps
/// `start..stop` as one `TokenBatch` (GIL released), `plan.batches(...)` reads every batch
/// ahead on threads, `plan.state_after(steps)` is the state once every rank has read `steps`.
#[pyclass(module = "datasetrt._native", name = "_TokenPlan", frozen)]
pub(crate) struct PyTokenPlan {
    plan: Arc<TokenPlan>,
    source: Arc<CacheSource>,
    reader: Mutex<Option<BatchReader<CacheSource>>>,
    /// What `read` has done in this process (a `DataLoader` worker's reads: see `stats`).
    stats: Arc<LoaderStats>,
}

fn mode_of(name: &str) -> PyResult<PackMode> {
    PackMode::from_name(name).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// What `TokenBatch.__reduce__` returns: the rebuilding function and its arguments (the compact
/// batch, `seq_len`, `pad_id`).
type Reduced<'py> = (Bound<'py, PyAny>, (Bound<'py, PyAny>, usize, u32));

/// `weights` as given: one per cache in order, or a share per source name (a mapping).
enum Weights {
    PerCache(Vec<f64>),
    PerSource(Vec<(String, f64)>),
}

impl Weights {
    fn extract(weights: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(mapping) = weights.cast::<pyo3::types::PyMapping>() {
            let items = mapping.items()?;
            let mut shares = Vec::with_capacity(items.len());
            for item in items.iter() {
                shares.push(item.extract::<(String, f64)>()?);
            }
            Ok(Self::PerSource(shares))
        } else {
            Ok(Self::PerCache(weights.extract()?))
        }
    }
}

/// Each cache's weight from shares per source name; a share or source that does not match is
/// a `KeyError`, a source two caches hold a `ValueError`.
fn per_cache(
    shares: &[(String, f64)],
    names: &[String],
    source: &CacheSource,
) -> PyResult<Vec<f64>> {
    weights_by_source(shares, names, |c| source.name(c)).map_err(|e| match e {
        SourceWeightsError::SharedSource { .. } => PyValueError::new_err(e.to_string()),
        _ => PyKeyError::new_err(e.to_string()),
    })
}

#[pymethods]
impl PyTokenPlan {
    #[new]
    #[pyo3(
        signature = (paths, *, seq_len, mode = "concat", bos_id = None, eos_id = None, pad_id = 0, long_docs = "split", weights = None, tokens_per_epoch = None, schedule = None, replacement = false, seed = 0, epoch = 0, shuffle = "local", window_shards = 4, window_block = 256, packing_bins = 256, rank = 0, world_size = 1, ranks_per_node = 1, policy = "pad", state = None, **options),
        text_signature = "(paths, *, seq_len, mode=\"concat\", bos_id=None, eos_id=None, pad_id=0, long_docs=\"split\", weights=None, tokens_per_epoch=None, schedule=None, replacement=False, seed=0, epoch=0, shuffle=\"local\", window_shards=4, window_block=256, packing_bins=256, rank=0, world_size=1, ranks_per_node=1, policy=\"pad\", state=None, validate_cache=False, cache_dir=None, cache_limit=None, fetch=\"whole\", prefetch_shards=None, read_while_downloading=None, attempts=None, first_backoff=None, wait_for_room=None, cache_access=None)"
    )]
    // The plan's own settings, each a keyword of `datasetrt.TokenDataset`; the remote options
    // are `Cache`'s (`**options`).
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        paths: &Bound<'_, PyAny>,
        seq_len: u64,
        mode: &str,
        bos_id: Option<u32>,
        eos_id: Option<u32>,
        pad_id: u32,
        long_docs: &str,
        weights: Option<&Bound<'_, PyAny>>,
        tokens_per_epoch: Option<u64>,
        schedule: Option<Vec<(u64, Vec<f64>)>>,
        replacement: bool,
        seed: u64,
        epoch: u64,
        shuffle: &str,
        window_shards: usize,
        window_block: u64,
        packing_bins: usize,
        rank: u64,
        world_size: u64,
        ranks_per_node: u64,
        policy: &str,
        state: Option<&Bound<'_, PyDict>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let weights = weights.map(Weights::extract).transpose()?;
        let mut config = TokenConfig {
            seq_len,
            mode: mode_of(mode)?,
            bos_id,
            eos_id,
            pad_id,
            long_docs: LongDocs::from_name(long_docs)
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
            weights: None,
            tokens_per_epoch,
            sampling: if replacement {
                Sampling::RunsWithReplacement
            } else {
                Sampling::WithoutReplacement
            },
            seed,
            shuffle: Shuffle::from_name(shuffle, window_shards)
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
            window_block,
            packing_bins,
            // `(tokens, weights)` pairs: `datasetrt.Phase` is a named tuple of them.
            schedule: schedule.map(|phases| TokenSchedule {
                phases: phases
                    .into_iter()
                    .map(|(tokens, weights)| TokenPhase { tokens, weights })
                    .collect(),
            }),
        };
        let policy = (policy.parse::<RemainderPolicy>())
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let run = RunConfig {
            epoch,
            rank,
            world_size,
            ranks_per_node,
            policy,
            resume: (state.map(|s| py_support::from_python(s, "a token state"))).transpose()?,
        };
        if paths.is_instance_of::<pyo3::types::PyString>() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "a token stream takes a list of paths or URLs, not one string",
            ));
        }
        let paths = paths
            .try_iter()?
            .map(|p| Location::extract(&p?))
            .collect::<PyResult<Vec<Location>>>()?;
        let mut kwargs = Kwargs::new("_TokenPlan", options)?;
        let args = RemoteArgs::take(&mut kwargs)?;
        kwargs.finish()?;
        let dataset = open_locations(py, &paths, &args)?;
        // Each cache's source name, for weights given per source.
        let names: Vec<String> = dataset
            .caches()
            .iter()
            .map(|entry| entry.cache.manifest().description().source.clone())
            .collect();
        let source = enter_stream(py, move || CacheSource::new(dataset))?;
        config.weights = match weights {
            None => None,
            Some(Weights::PerCache(weights)) => Some(weights),
            Some(Weights::PerSource(shares)) => Some(per_cache(&shares, &names, &source)?),
        };
        let plan = enter_stream(py, || TokenPlan::new(&source, &config, &run))?;
        Ok(Self {
            stats: Arc::new(LoaderStats::new(source.sources())),
            plan: Arc::new(plan),
            source: Arc::new(source),
            reader: Mutex::new(None),
        })
    }

    /// Rows this rank reads (the same on every rank).
    fn __len__(&self) -> usize {
        usize::try_from(self.plan.len()).unwrap_or(usize::MAX)
    }

    /// Rows (windows or bins) of the whole epoch.
    #[getter]
    fn rows(&self) -> u64 {
        self.plan.rows()
    }

    /// Tokens of the epoch's documents, boundary tokens included.
    #[getter]
    fn epoch_tokens(&self) -> u64 {
        self.plan.total_tokens()
    }

    /// Tokens of padding in the epoch's rows, over all their input tokens.
    #[getter]
    fn padding_fraction(&self) -> f64 {
        let inputs = self.plan.rows() * self.plan.config().seq_len;
        #[allow(clippy::cast_precision_loss)] // a ratio
        let fraction = self.plan.padded_tokens() as f64 / inputs.max(1) as f64;
        fraction
    }

    /// Each cache's tokens in the epoch.
    #[getter]
    fn source_tokens(&self) -> Vec<u64> {
        self.plan.source_tokens()
    }

    /// The BOS and EOS added to each cache's documents (None where not added).
    #[getter]
    fn boundary_tokens(&self) -> Vec<(Option<u32>, Option<u32>)> {
        self.plan.boundary_tokens()
    }

    /// What the epoch does on this topology (`dsrt plan --seq-len --json`'s report), as a
    /// dict; nothing is read but lengths.
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (plan, source) = (Arc::clone(&self.plan), Arc::clone(&self.source));
        let report = enter_stream(py, move || TokenReport::compute(&plan, source.as_ref(), 16))?;
        py_support::to_python(py, &report)
    }

    /// The state once every rank has read `steps` rows of this plan, as a dict.
    fn state_after<'py>(&self, py: Python<'py>, steps: u64) -> PyResult<Bound<'py, PyAny>> {
        token_state_to_dict(py, &self.plan.state_after(steps))
    }

    /// Reads this rank's steps `start..stop` as one batch (GIL released); `expand` derives
    /// the training columns now (else where they are first asked for).
    #[pyo3(signature = (start, stop, expand = true))]
    fn read(&self, py: Python<'_>, start: u64, stop: u64, expand: bool) -> PyResult<PyTokenBatch> {
        let asked = Instant::now();
        let mut guard = self
            .reader
            .lock_py_attached(py)
            .map_err(|_| PyValueError::new_err("the plan failed in another thread"))?;
        let (plan, source, stats) = (&self.plan, &self.source, &self.stats);
        let slot = &mut *guard;
        let batch = enter_stream(py, || {
            let reader = slot.get_or_insert_with(|| BatchReader::new(plan, source.as_ref()));
            let pool = process_pool();
            reader.read(plan, source.as_ref(), start..stop, pool, expand, stats)
        })?;
        let rows = batch.rows() as u64;
        (self.stats).delivered(asked, rows, rows * batch.seq_len() as u64);
        Ok(PyTokenBatch::new(batch))
    }

    /// Every batch of this rank's steps from `first_batch` on, read ahead by `workers` threads
    /// (the batches are the same for any number), `batch_size` rows each.
    #[pyo3(signature = (batch_size, *, workers = 2, prefetch = 2, expand = true, first_batch = 0))]
    fn batches(
        &self,
        batch_size: usize,
        workers: usize,
        prefetch: usize,
        expand: bool,
        first_batch: u64,
    ) -> PyTokenBatches {
        let options = LoaderOptions {
            batch_size,
            workers,
            prefetch,
            expand,
            first_batch,
        };
        let loader = TokenLoader::new(Arc::clone(&self.plan), Arc::clone(&self.source), options);
        PyTokenBatches {
            stats: loader.stats_handle(),
            loader: Mutex::new(loader),
        }
    }

    /// What `read` has done in this process since the plan was made, as a dict
    /// (docs/python.md, "Loader stats"): a `DataLoader` worker's share of the epoch.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py_support::to_python(py, &self.stats.snapshot().report())
    }
}

/// Batches of a `_TokenPlan` read ahead by Rust threads: an iterator of `TokenBatch` (GIL
/// released while waiting).
#[pyclass(module = "datasetrt._native", name = "_TokenBatches", frozen)]
pub(crate) struct PyTokenBatches {
    loader: Mutex<TokenLoader<CacheSource>>,
    /// The loader's counters, read without waiting for a thread iterating it.
    stats: Arc<LoaderStats>,
}

#[pymethods]
impl PyTokenBatches {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyTokenBatch>> {
        let mut guard = self
            .loader
            .lock_py_attached(py)
            .map_err(|_| PyValueError::new_err("the batches failed in another thread"))?;
        let loader = &mut *guard;
        let batch = enter_stream(py, || loader.next().transpose())?;
        Ok(batch.map(PyTokenBatch::new))
    }

    /// What the loader has done so far, as a dict (docs/python.md, "Loader stats").
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py_support::to_python(py, &self.stats.snapshot().report())
    }

    /// Batches left.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let guard = self
            .loader
            .lock_py_attached(py)
            .map_err(|_| PyValueError::new_err("the batches failed in another thread"))?;
        Ok(guard.size_hint().0)
    }
}

/// A batch of token rows (`datasetrt.TokenBatch`): `len(batch)` rows of `seq_len` inputs.
/// `batch.arrow()` is a record batch (read it with `pyarrow.record_batch`, no copy) of
/// `input_ids`, `labels`, `position_ids` (int64 `[seq_len]` lists), `segment_ids` (int32),
/// `loss_mask` (uint8), `cu_seqlens` (row `r`'s sequence starts in the flattened batch; the
/// list child also holds the final `len * seq_len`), `documents` (each row's pieces:
/// `cache_id`, `sample_id`, `start`, `length`), `padding` and `step`; the columns are derived
/// on first use (GIL released). `batch.max_seqlen` is the longest sequence. A batch pickles in
/// its compact form (the rows' `seq_len + 1` token ids and their pieces), a quarter of the
/// columns' bytes or less, and derives its columns again where it is unpickled.
#[pyclass(module = "datasetrt", name = "TokenBatch", frozen)]
pub(crate) struct PyTokenBatch {
    seq_len: usize,
    pad_id: u32,
    rows: usize,
    state: Mutex<BatchState>,
}

/// A batch before and after its columns become Arrow arrays.
struct BatchState {
    batch: TokenBatch,
    compact: Option<ArrowBatch>,
    expanded: Option<(ArrowBatch, u32)>,
}

impl PyTokenBatch {
    fn new(batch: TokenBatch) -> Self {
        Self {
            seq_len: batch.seq_len(),
            pad_id: batch.pad_id(),
            rows: batch.rows(),
            state: Mutex::new(BatchState {
                batch,
                compact: None,
                expanded: None,
            }),
        }
    }
}

impl BatchState {
    /// The expanded record batch (made once; the columns' buffers move into it).
    fn expanded(&mut self) -> Result<(ArrowBatch, u32), StreamError> {
        let (batch, max) = match &self.expanded {
            Some((batch, max)) => (batch.batch.clone(), *max),
            None => {
                let (batch, max) = self.batch.expanded_record(process_pool())?;
                let kept = ArrowBatch {
                    batch: batch.clone(),
                };
                self.expanded = Some((kept, max));
                (batch, max)
            }
        };
        Ok((ArrowBatch { batch }, max))
    }

    /// The compact record batch: `tokens` (`seq_len + 1` uint32 per row) and the row columns.
    fn compact(&mut self) -> Result<ArrowBatch, StreamError> {
        let batch = match &self.compact {
            Some(batch) => batch.batch.clone(),
            None => {
                let batch = self.batch.compact_record()?;
                self.compact = Some(ArrowBatch {
                    batch: batch.clone(),
                });
                batch
            }
        };
        Ok(ArrowBatch { batch })
    }
}

#[pymethods]
impl PyTokenBatch {
    fn __len__(&self) -> usize {
        self.rows
    }

    /// Input tokens per row.
    #[getter]
    fn seq_len(&self) -> usize {
        self.seq_len
    }

    /// The padding token.
    #[getter]
    fn pad_id(&self) -> u32 {
        self.pad_id
    }

    /// The longest sequence of `cu_seqlens` (derives the columns if not yet).
    #[getter]
    fn max_seqlen(&self, py: Python<'_>) -> PyResult<u32> {
        Ok(self.arrow_and_max(py)?.1)
    }

    /// The batch's columns as one Arrow record batch (see the class).
    fn arrow(&self, py: Python<'_>) -> PyResult<ArrowBatch> {
        Ok(self.arrow_and_max(py)?.0)
    }

    /// The compact form: `tokens` (the rows' `seq_len + 1` ids, uint32) and the row columns.
    fn compact(&self, py: Python<'_>) -> PyResult<ArrowBatch> {
        let mut guard = self
            .state
            .lock_py_attached(py)
            .map_err(|_| PyValueError::new_err("a token batch failed in another thread"))?;
        let state = &mut *guard;
        enter_stream(py, || state.compact())
    }

    /// `(views, max_seqlen)`: the tensor columns of [`TENSOR_COLUMNS`], in that order, as
    /// read-only `_ColumnView`s over their Arrow buffers (NumPy's array interface), so that
    /// `datasetrt.torch` makes its tensors with one call instead of walking the record batch.
    #[pyo3(name = "_tensor_columns")]
    fn tensor_columns(&self, py: Python<'_>) -> PyResult<(Vec<PyColumnView>, u32)> {
        let (record, max) = self.arrow_and_max(py)?;
        let rows = self.rows;
        let views = TENSOR_COLUMNS
            .iter()
            .map(|&(name, typestr)| {
                let column = record.batch.column_by_name(name).ok_or_else(|| {
                    PyValueError::new_err(format!("a token batch has no column {name}"))
                })?;
                let (values, shape) = if name == "cu_seqlens" {
                    let list = column.as_list::<i32>();
                    (list.values().to_data(), vec![list.values().len()])
                } else {
                    let list = column.as_fixed_size_list();
                    (list.values().to_data(), vec![rows, self.seq_len])
                };
                let buffer = values
                    .buffers()
                    .first()
                    .cloned()
                    .unwrap_or_else(|| Buffer::from_vec(Vec::<u8>::new()));
                Ok(PyColumnView {
                    buffer,
                    offset: values.offset() * values.data_type().primitive_width().unwrap_or(1),
                    shape,
                    typestr,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok((views, max))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        let py = slf.py();
        let this = slf.get();
        let compact = this.compact(py)?;
        let rebuild = py
            .import("datasetrt._native")?
            .getattr("_token_batch_from_arrow")?;
        Ok((
            rebuild,
            (
                Bound::new(py, compact)?.into_any(),
                this.seq_len,
                this.pad_id,
            ),
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "TokenBatch(<{} rows of {} tokens>)",
            self.rows, self.seq_len
        )
    }
}

/// The tensor columns of a token batch and their NumPy type strings, in the order
/// `TokenBatch._tensor_columns` returns them.
const TENSOR_COLUMNS: [(&str, &str); 6] = [
    ("input_ids", "<i8"),
    ("labels", "<i8"),
    ("position_ids", "<i8"),
    ("segment_ids", "<i4"),
    ("loss_mask", "|u1"),
    ("cu_seqlens", "<i4"),
];

/// One column of a token batch seen through NumPy's array interface, read-only: it keeps the
/// Arrow buffer (and so the batch's memory) alive for as long as an array made from it.
#[pyclass(module = "datasetrt._native", name = "_ColumnView", frozen)]
pub(crate) struct PyColumnView {
    buffer: Buffer,
    /// Where the values begin in `buffer`, in bytes.
    offset: usize,
    shape: Vec<usize>,
    typestr: &'static str,
}

#[pymethods]
impl PyColumnView {
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let interface = PyDict::new(py);
        interface.set_item("version", 3)?;
        interface.set_item("shape", pyo3::types::PyTuple::new(py, &self.shape)?)?;
        interface.set_item("typestr", self.typestr)?;
        // Arrow buffers are immutable: NumPy gets a read-only array.
        let address = self.buffer.as_ptr() as usize + self.offset;
        interface.set_item("data", (address, true))?;
        Ok(interface)
    }
}

impl PyTokenBatch {
    fn arrow_and_max(&self, py: Python<'_>) -> PyResult<(ArrowBatch, u32)> {
        let mut guard = self
            .state
            .lock_py_attached(py)
            .map_err(|_| PyValueError::new_err("a token batch failed in another thread"))?;
        let state = &mut *guard;
        enter_stream(py, || state.expanded())
    }
}

/// `_token_batch_from_arrow(compact, seq_len, pad_id)`: the `TokenBatch` a compact record batch
/// holds (how a pickled batch is rebuilt; its columns are derived on first use).
#[pyfunction]
pub(crate) fn _token_batch_from_arrow(
    py: Python<'_>,
    compact: &Bound<'_, ArrowBatch>,
    seq_len: usize,
    pad_id: u32,
) -> PyResult<PyTokenBatch> {
    let record = &compact.get().batch;
    let batch = enter_stream(py, || {
        TokenBatch::from_compact_record(record, seq_len, pad_id, process_pool())
    })?;
    Ok(PyTokenBatch::new(batch))
}
