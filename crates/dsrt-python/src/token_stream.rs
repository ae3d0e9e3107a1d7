//! Token streams for Python (`datasetrt::token_stream`): one rank's plan of training rows over
//! token caches (`_TokenPlan`), its batches read ahead by Rust threads (`_TokenBatches`), and
//! `TokenBatch`, whose columns cross into Python as Arrow buffers (no copy) and which pickles
//! in its compact form (tokens and pieces) to be expanded where it is unpickled.

use crate::arrow::ArrowBatch;
use crate::dataset::open_locations;
use crate::errors::{enter, Error};
use crate::options::{Kwargs, RemoteArgs};
use crate::remote::Location;
use datasetrt::token_stream::{
    enable_sending, BatchPool, CacheSource, LoaderOptions, RunConfig, SettingNames, SharedLoader,
    SharedPlan, SharedTokenBatch, SlotTicket, TensorColumn, TokenBatch, TokenConfig,
    TokenStreamError as StreamError, TokenWeights,
};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyString, PyTuple};
use std::sync::{Arc, OnceLock};

/// Runs `work` as `errors::enter` does; a setting the stream refuses is the caller's
/// `ValueError` (a share or source of weights that does not match a `KeyError`), any other
/// error raised by its class (`TokenStreamError`, or the plan's, the cache's or the token
/// cache's own).
fn enter_stream<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, StreamError> + Send,
) -> PyResult<T> {
    match enter(py, || Ok::<_, Error>(work()))? {
        Ok(value) => Ok(value),
        Err(StreamError::Config(message)) => Err(PyValueError::new_err(message)),
        Err(StreamError::Weights(e)) if e.is_lookup() => Err(PyKeyError::new_err(e.to_string())),
        Err(e @ (StreamError::Name(_) | StreamError::Weights(_) | StreamError::Poisoned(_))) => {
            Err(PyValueError::new_err(e.to_string()))
        }
        Err(error) => Err(Error::from(error).into()),
    }
}

/// Columns and pieces of batches read or unpickled in this process come from this pool.
fn process_pool() -> &'static Arc<BatchPool> {
    static POOL: OnceLock<Arc<BatchPool>> = OnceLock::new();
    POOL.get_or_init(BatchPool::new)
}

/// `weights` as given: one per cache in order, or a share per source name (a mapping).
fn weights_arg(weights: &Bound<'_, PyAny>) -> PyResult<TokenWeights> {
    let Ok(mapping) = weights.cast::<PyMapping>() else {
        return Ok(TokenWeights::PerCache(weights.extract()?));
    };
    let items = mapping.items()?;
    let shares = items.iter().map(|item| item.extract::<(String, f64)>());
    Ok(TokenWeights::PerSource(shares.collect::<PyResult<_>>()?))
}

/// One rank's plan of an epoch of token rows over token caches (see `datasetrt.TokenDataset`,
/// which builds it): `len(plan)` rows for this rank, `plan.read(start, stop)` reads steps
/// `start..stop` as one `TokenBatch` (GIL released), `plan.batches(...)` reads every batch
/// ahead on threads, `plan.state_after(steps)` is the state once every rank has read `steps`.
#[pyclass(module = "datasetrt._native", name = "_TokenPlan", frozen)]
pub(crate) struct PyTokenPlan(SharedPlan<CacheSource>);

/// What `TokenBatch.__reduce__` returns: the rebuilding function and its arguments.
type Reduced<'py> = (Bound<'py, PyAny>, Bound<'py, PyTuple>);

#[pymethods]
impl PyTokenPlan {
    #[new]
    #[pyo3(
        signature = (paths, *, seq_len, mode = "concat", bos_id = None, eos_id = None, pad_id = 0, long_docs = "split", weights = None, tokens_per_epoch = None, schedule = None, replacement = false, seed = 0, epoch = 0, shuffle = "local", window_shards = 4, window_block = 256, packing_bins = 256, rank = 0, world_size = 1, ranks_per_node = 1, policy = "pad", ids_dtype = "int64", state = None, **options),
        text_signature = "(paths, *, seq_len, mode=\"concat\", bos_id=None, eos_id=None, pad_id=0, long_docs=\"split\", weights=None, tokens_per_epoch=None, schedule=None, replacement=False, seed=0, epoch=0, shuffle=\"local\", window_shards=4, window_block=256, packing_bins=256, rank=0, world_size=1, ranks_per_node=1, policy=\"pad\", ids_dtype=\"int64\", state=None, validate_cache=False, cache_dir=None, cache_limit=None, fetch=\"whole\", prefetch_shards=None, read_while_downloading=None, attempts=None, first_backoff=None, wait_for_room=None, cache_access=None)"
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
        ids_dtype: &str,
        state: Option<&Bound<'_, PyDict>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let weights = weights.map(weights_arg).transpose()?;
        let config = TokenConfig {
            seq_len,
            bos_id,
            eos_id,
            pad_id,
            tokens_per_epoch,
            seed,
            window_block,
            packing_bins,
            // `(tokens, weights)` pairs: `datasetrt.Phase` is a named tuple of them.
            schedule: schedule.map(|phases| phases.into_iter().collect()),
            ..TokenConfig::default()
        };
        let run = RunConfig {
            epoch,
            rank,
            world_size,
            ranks_per_node,
            ..RunConfig::default()
        };
        let names = SettingNames {
            mode,
            long_docs,
            shuffle,
            window_shards,
            replacement,
            policy,
            ids_dtype,
        };
        let (config, mut run) =
            (names.apply(config, run)).map_err(|e| PyValueError::new_err(e.to_string()))?;
        run.resume = (state.map(|s| py_support::from_python(s, "a token state"))).transpose()?;
        if paths.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(
                "a token stream takes a list of paths or URLs, not one string",
            ));
        }
        let paths = (paths.try_iter()?)
            .map(|p| Location::extract(&p?))
            .collect::<PyResult<Vec<Location>>>()?;
        let mut kwargs = Kwargs::new("_TokenPlan", options)?;
        let args = RemoteArgs::take(&mut kwargs)?;
        kwargs.finish()?;
        let dataset = open_locations(py, &paths, &args)?;
        let shared = enter_stream(py, || SharedPlan::open(dataset, weights, config, &run))?;
        Ok(Self(shared))
    }

    /// Rows this rank reads (the same on every rank).
    fn __len__(&self) -> usize {
        usize::try_from(self.0.plan().len()).unwrap_or(usize::MAX)
    }

    /// Rows (windows or bins) of the whole epoch.
    #[getter]
    fn rows(&self) -> u64 {
        self.0.plan().rows()
    }

    /// Tokens of the epoch's documents, boundary tokens included.
    #[getter]
    fn epoch_tokens(&self) -> u64 {
        self.0.plan().total_tokens()
    }

    /// Tokens of padding in the epoch's rows, over all their input tokens.
    #[getter]
    fn padding_fraction(&self) -> f64 {
        self.0.plan().padding_fraction()
    }

    /// Each cache's tokens in the epoch.
    #[getter]
    fn source_tokens(&self) -> Vec<u64> {
        self.0.plan().source_tokens()
    }

    /// The BOS and EOS added to each cache's documents (None where not added).
    #[getter]
    fn boundary_tokens(&self) -> Vec<(Option<u32>, Option<u32>)> {
        self.0.plan().boundary_tokens()
    }

    /// What the epoch does on this topology (`dsrt plan --seq-len --json`'s report), as a
    /// dict; nothing is read but lengths.
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let report = enter_stream(py, || self.0.report(16))?;
        py_support::to_python(py, &report)
    }

    /// The state once every rank has read `steps` rows of this plan, as a dict.
    fn state_after<'py>(&self, py: Python<'py>, steps: u64) -> PyResult<Bound<'py, PyAny>> {
        py_support::to_python(py, &self.0.plan().state_after(steps).listed())
    }

    /// Reads this rank's steps `start..stop` as one batch (GIL released); `expand` derives
    /// the training columns now (else where they are first asked for).
    #[pyo3(signature = (start, stop, expand = true))]
    fn read(&self, py: Python<'_>, start: u64, stop: u64, expand: bool) -> PyResult<PyTokenBatch> {
        let batch = enter_stream(py, || self.0.read(start..stop, process_pool(), expand))?;
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
        PyTokenBatches(SharedLoader::new(self.0.loader(options)))
    }

    /// What `read` has done in this process since the plan was made, as a dict
    /// (docs/python.md, "Loader stats"): a `DataLoader` worker's share of the epoch.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py_support::to_python(py, &self.0.stats().report())
    }
}

/// Batches of a `_TokenPlan` read ahead by Rust threads: an iterator of `TokenBatch` (GIL
/// released while waiting).
#[pyclass(module = "datasetrt._native", name = "_TokenBatches", frozen)]
pub(crate) struct PyTokenBatches(SharedLoader<CacheSource>);

#[pymethods]
impl PyTokenBatches {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyTokenBatch>> {
        let batch = enter_stream(py, || self.0.next_batch())?;
        Ok(batch.map(PyTokenBatch::new))
    }

    /// What the loader has done so far, as a dict (docs/python.md, "Loader stats").
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py_support::to_python(py, &self.0.stats().report())
    }

    /// Batches left.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        enter_stream(py, || self.0.remaining())
    }
}

/// A batch of token rows (`datasetrt.TokenBatch`): `len(batch)` rows of `seq_len` inputs.
/// `batch.arrow()` is a record batch (read it with `pyarrow.record_batch`, no copy) of
/// `input_ids`, `labels`, `position_ids` (int64 `[seq_len]` lists), `segment_ids` (int32),
/// `loss_mask` (uint8), `cu_seqlens` (row `r`'s sequence starts in the flattened batch; the
/// list child also holds the final `len * seq_len`), `documents` (each row's pieces:
/// `cache_id`, `sample_id`, `start`, `length`), `padding` and `step`; the columns are derived
/// on first use (GIL released). `batch.max_seqlen` is the longest sequence. A batch pickles in
/// its compact form (the rows' `seq_len + 1` token ids and their pieces; the ids in 16 bits
/// when all of them fit), a quarter of the columns' bytes or less, and derives its columns
/// again where it is unpickled.
#[pyclass(module = "datasetrt", name = "TokenBatch", frozen)]
pub(crate) struct PyTokenBatch(SharedTokenBatch);

impl PyTokenBatch {
    fn new(batch: TokenBatch) -> Self {
        Self(SharedTokenBatch::new(batch, Arc::clone(process_pool())))
    }
}

#[pymethods]
impl PyTokenBatch {
    fn __len__(&self) -> usize {
        self.0.rows()
    }

    /// Input tokens per row.
    #[getter]
    fn seq_len(&self) -> usize {
        self.0.seq_len()
    }

    /// The padding token.
    #[getter]
    fn pad_id(&self) -> u32 {
        self.0.pad_id()
    }

    /// The longest sequence of `cu_seqlens` (derives the columns if not yet).
    #[getter]
    fn max_seqlen(&self, py: Python<'_>) -> PyResult<u32> {
        enter_stream(py, || self.0.max_seqlen())
    }

    /// The batch's columns as one Arrow record batch (see the class).
    fn arrow(&self, py: Python<'_>) -> PyResult<ArrowBatch> {
        let (batch, _) = enter_stream(py, || self.0.expanded())?;
        Ok(ArrowBatch { batch })
    }

    /// The compact form: `tokens` (the rows' `seq_len + 1` ids, uint32) and the row columns.
    fn compact(&self, py: Python<'_>) -> PyResult<ArrowBatch> {
        let batch = enter_stream(py, || self.0.compact())?;
        Ok(ArrowBatch { batch })
    }

    /// `(views, max_seqlen)`: the tensor columns (`input_ids`, `labels`, `position_ids`,
    /// `segment_ids`, `loss_mask`, `cu_seqlens`), in that order, as read-only `_ColumnView`s
    /// over their Arrow buffers (NumPy's array interface), so that `datasetrt.torch` makes its
    /// tensors with one call instead of walking the record batch.
    #[pyo3(name = "_tensor_columns")]
    fn tensor_columns(&self, py: Python<'_>) -> PyResult<(Vec<PyColumnView>, u32)> {
        let (columns, max) = enter_stream(py, || self.0.tensor_columns())?;
        Ok((columns.into_iter().map(PyColumnView).collect(), max))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        let (py, this) = (slf.py(), &slf.get().0);
        let native = py.import("datasetrt._native")?;
        if let Some(ticket) = enter_stream(py, || this.send_in_slot())? {
            // A `str`, not a `pathlib.Path`: the training process unpickles one per batch.
            let path = ticket.path.into_os_string();
            let args = (path, ticket.slot, ticket.generation).into_pyobject(py)?;
            return Ok((native.getattr("_token_batch_from_slot")?, args));
        }
        let compact = enter_stream(py, || this.transfer())?;
        let compact = Bound::new(py, ArrowBatch { batch: compact })?.into_any();
        let args = (compact, this.seq_len(), this.pad_id()).into_pyobject(py)?;
        Ok((native.getattr("_token_batch_from_arrow")?, args))
    }

    fn __repr__(&self) -> String {
        let (rows, seq_len) = (self.0.rows(), self.0.seq_len());
        format!("TokenBatch(<{rows} rows of {seq_len} tokens>)")
    }
}

/// One column of a token batch seen through NumPy's array interface: it keeps the Arrow
/// buffer (and so the batch's memory) alive for as long as an array made from it.
#[pyclass(module = "datasetrt._native", name = "_ColumnView", frozen)]
pub(crate) struct PyColumnView(TensorColumn);

#[pymethods]
impl PyColumnView {
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let column = &self.0;
        let interface = PyDict::new(py);
        interface.set_item("version", 3)?;
        interface.set_item("shape", PyTuple::new(py, &column.shape)?)?;
        interface.set_item("typestr", column.typestr)?;
        // Writable, as the tensors over it are: the memory is this batch's alone (a pooled
        // buffer or a received slot, mapped read-write), which nothing reads but its views.
        let address = column.buffer.as_ptr() as usize + column.offset;
        interface.set_item("data", (address, false))?;
        Ok(interface)
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

/// `_token_batch_from_slot(path, slot, generation)`: the `TokenBatch` a `DataLoader` worker
/// sent in a slot of shared memory (how such a pickled batch is rebuilt; its columns are read
/// in place, and free the slot when the last tensor over them is dropped).
#[pyfunction]
pub(crate) fn _token_batch_from_slot(
    py: Python<'_>,
    path: std::path::PathBuf,
    slot: u32,
    generation: u64,
) -> PyResult<PyTokenBatch> {
    let ticket = SlotTicket {
        path,
        slot,
        generation,
    };
    let pool = Arc::clone(process_pool());
    let batch = enter_stream(py, || SharedTokenBatch::receive_from_slot(&ticket, pool))?;
    Ok(PyTokenBatch(batch))
}

/// `_send_batches_in_slots()`: this process (a `DataLoader` worker) pickles its token batches
/// into slots of shared memory, their columns derived here, where a slot is free.
#[pyfunction]
pub(crate) fn _send_batches_in_slots() {
    enable_sending();
}
