//! `datasetrt.Loader` and the per-rank step plan the PyTorch dataset reads through.

use crate::arrow::{arrow_batch, offsets_of, ArrowBatch};
use crate::cache::{payload_object, read_batch, read_copied, Located, PySample};
use crate::dataset::PyDataset;
use crate::errors::{enter, Error};
use arrow_array::builder::StringBuilder;
use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, FixedSizeListArray, Int32Array, Int64Array,
    LargeBinaryArray, StructArray, UInt64Array,
};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field};
use datasetrt::{
    Dataset, DatasetError, EpochPlan, IterState, Loader, LoaderConfig, Partition, PlanConfig,
    PlanCursor, RemainderPolicy, Sampling, ShardHints, Shuffle, Topology,
};
use pyo3::exceptions::{PyIndexError, PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::sync::{Arc, Mutex};

/// The order-deciding settings shared by `Loader` and `RankPlan`.
#[allow(clippy::too_many_arguments)]
fn plan_config(
    seed: u64,
    weights: Option<Vec<f64>>,
    samples_per_epoch: Option<u64>,
    replacement: bool,
    shuffle: &str,
    window_shards: usize,
) -> PyResult<PlanConfig> {
    let shuffle = match shuffle {
        "local" => Shuffle::Local { window_shards },
        "full" => Shuffle::Full,
        "sequential" | "none" => Shuffle::Sequential,
        other => {
            return Err(PyValueError::new_err(format!(
                "shuffle must be \"local\", \"full\" or \"sequential\", not {other:?}"
            )))
        }
    };
    Ok(PlanConfig {
        seed,
        weights,
        samples_per_epoch,
        sampling: if replacement {
            Sampling::WithReplacement
        } else {
            Sampling::WithoutReplacement
        },
        shuffle,
    })
}

fn policy(name: &str) -> PyResult<RemainderPolicy> {
    match name {
        "pad" => Ok(RemainderPolicy::Pad),
        "drop" => Ok(RemainderPolicy::Drop),
        other => Err(PyValueError::new_err(format!(
            "policy must be \"pad\" or \"drop\", not {other:?}"
        ))),
    }
}

/// An iteration state as a dict: `seed`, `epoch`, `position` (global positions consumed by
/// all ranks together), `epoch_len`, `cuts` (the node boundaries of the epoch's first run, a
/// list of ints) and `remaining` (the positions not consumed, a list of `[start, end]`).
/// Plain ints and lists, so it pickles, and `json.dumps` it as is.
pub(crate) fn state_to_dict<'py>(
    py: Python<'py>,
    state: &IterState,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("seed", state.seed)?;
    dict.set_item("epoch", state.epoch)?;
    dict.set_item("position", state.position)?;
    dict.set_item("epoch_len", state.epoch_len)?;
    dict.set_item("cuts", state.cuts.clone())?;
    let remaining: Vec<[u64; 2]> = state
        .remaining()
        .into_iter()
        .map(|r| [r.start, r.end])
        .collect();
    dict.set_item("remaining", remaining)?;
    Ok(dict)
}

/// The state a dict from [`state_to_dict`] describes (`cuts` and `remaining` may be missing,
/// as in states saved before they existed: then no cuts and `[position, epoch_len)`).
pub(crate) fn state_from_dict(dict: &Bound<'_, PyDict>) -> PyResult<IterState> {
    let get = |key: &str| -> PyResult<u64> {
        dict.get_item(key)?
            .ok_or_else(|| PyKeyError::new_err(format!("state dict has no {key:?}")))?
            .extract()
    };
    let cuts: Vec<u64> = match dict.get_item("cuts")? {
        Some(cuts) if !cuts.is_none() => cuts.extract()?,
        _ => Vec::new(),
    };
    let remaining: Option<Vec<[u64; 2]>> = match dict.get_item("remaining")? {
        Some(remaining) if !remaining.is_none() => Some(remaining.extract()?),
        _ => None,
    };
    Ok(IterState {
        seed: get("seed")?,
        epoch: get("epoch")?,
        position: get("position")?,
        epoch_len: get("epoch_len")?,
        cuts,
        remaining,
    })
}

fn loaded_sample(
    py: Python<'_>,
    dataset: &Arc<Dataset>,
    sample: datasetrt::LoadedSample,
) -> PyResult<PySample> {
    let cache_id = sample.key.cache_id;
    let position = dataset
        .position(cache_id)
        .ok_or(Error::Dataset(DatasetError::UnknownCache { cache_id }))?;
    Ok(PySample {
        cache: crate::cache::CacheRef::InDataset(Arc::clone(dataset), position),
        cache_id: Some(sample.key.cache_id),
        sample_id: sample.key.sample_id,
        payload: PyBytes::new(py, &sample.payload).into_any().unbind(),
        step: Some(sample.step),
        global_position: Some(sample.global_position),
        padding: sample.padding,
    })
}

/// Iterates one rank's share of one epoch of a Dataset, reproducibly.
///
/// `Loader(dataset, *, seed=0, epoch=0, weights=None, samples_per_epoch=None,
/// replacement=False, shuffle="local", window_shards=4, rank=0, world_size=1, policy="pad",
/// workers=0, prefetch=512)`: the same settings give the same order on every machine;
/// every rank yields `len(loader)` samples ("pad" repeats samples from the epoch's start to
/// fill the last round, "drop" drops it); `workers` threads read ahead (the order does not
/// depend on their number). Each item is a Sample with `key`, `payload`, `metadata`, `step`,
/// `global_position` and `padding`. `state_dict()` after any number of samples and
/// `load_state_dict(state)` (before iterating) resume exactly at the next sample, with any
/// number of workers or world size. Waiting for samples releases the GIL.
#[pyclass(module = "datasetrt", name = "Loader", frozen)]
pub(crate) struct PyLoader {
    dataset: Arc<Dataset>,
    base: LoaderConfig,
    loader: Mutex<Loader>,
}

impl PyLoader {
    /// Locks the loader, waiting (if another thread iterates it) with the GIL released.
    fn lock(&self, py: Python<'_>) -> PyResult<std::sync::MutexGuard<'_, Loader>> {
        self.loader
            .lock_py_attached(py)
            .map_err(|_| PyValueError::new_err("the loader failed in another thread"))
    }

    fn rebuild(&self, py: Python<'_>, config: LoaderConfig) -> PyResult<()> {
        let dataset = Arc::clone(&self.dataset);
        let fresh = enter(py, move || Loader::new(dataset, config))?;
        let mut guard = self.lock(py)?;
        let old = std::mem::replace(&mut *guard, fresh);
        drop(guard);
        // Joining the old workers may wait for a chunk in flight.
        enter(py, move || {
            drop(old);
            Ok::<_, Error>(())
        })
    }
}

#[pymethods]
impl PyLoader {
    #[new]
    #[pyo3(signature = (dataset, *, seed = 0, epoch = 0, weights = None, samples_per_epoch = None, replacement = false, shuffle = "local", window_shards = 4, rank = 0, world_size = 1, ranks_per_node = 1, policy = "pad", workers = 0, prefetch = 512))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        dataset: &Bound<'_, PyDataset>,
        seed: u64,
        epoch: u64,
        weights: Option<Vec<f64>>,
        samples_per_epoch: Option<u64>,
        replacement: bool,
        shuffle: &str,
        window_shards: usize,
        rank: u64,
        world_size: u64,
        ranks_per_node: u64,
        policy: &str,
        workers: usize,
        prefetch: usize,
    ) -> PyResult<Self> {
        let dataset = Arc::clone(&dataset.get().dataset);
        let base = LoaderConfig {
            plan: plan_config(
                seed,
                weights,
                samples_per_epoch,
                replacement,
                shuffle,
                window_shards,
            )?,
            epoch,
            rank,
            world_size,
            ranks_per_node,
            policy: self::policy(policy)?,
            workers,
            prefetch,
            resume: None,
        };
        let config = base.clone();
        let shared = Arc::clone(&dataset);
        let loader = enter(py, move || Loader::new(shared, config))?;
        Ok(Self {
            dataset,
            base,
            loader: Mutex::new(loader),
        })
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PySample>> {
        let next = {
            let mut guard = self.lock(py)?;
            let loader = &mut *guard;
            enter(py, || loader.next().transpose())?
        };
        next.map(|sample| loaded_sample(py, &self.dataset, sample))
            .transpose()
    }

    /// Reads up to `n` next samples in one call (GIL released while waiting); an empty list
    /// at the end of the epoch.
    fn next_batch<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyList>> {
        let batch: Vec<_> = {
            let mut guard = self.lock(py)?;
            let loader = &mut *guard;
            enter(py, || loader.by_ref().take(n).collect::<Result<_, _>>())?
        };
        let list = PyList::empty(py);
        for sample in batch {
            list.append(loaded_sample(py, &self.dataset, sample)?)?;
        }
        Ok(list)
    }

    /// Samples this rank yields in the epoch (the same on every rank).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(usize::try_from(self.lock(py)?.len()).unwrap_or(usize::MAX))
    }

    /// Samples the whole epoch holds, before partitioning between ranks.
    #[getter]
    fn epoch_len(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.lock(py)?.epoch_len())
    }

    /// The state after the samples yielded so far, as a dict (`seed`, `epoch`, `position`,
    /// `epoch_len`). Ranks in lockstep produce equal states.
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let state = self.lock(py)?.state();
        state_to_dict(py, &state)
    }

    /// Restarts the epoch from a state returned by `state_dict` (of this or another run with
    /// the same dataset and settings, any number of workers or ranks).
    fn load_state_dict(&self, py: Python<'_>, state: &Bound<'_, PyDict>) -> PyResult<()> {
        let state = state_from_dict(state)?;
        let mut config = self.base.clone();
        config.epoch = state.epoch;
        config.resume = Some(state);
        self.rebuild(py, config)
    }

    /// Starts epoch `epoch` from its beginning.
    fn set_epoch(&self, py: Python<'_>, epoch: u64) -> PyResult<()> {
        let mut config = self.base.clone();
        config.epoch = epoch;
        self.rebuild(py, config)
    }
}

/// One rank's steps of one epoch, for readers that split them further (the PyTorch
/// `StreamingDataset` gives each DataLoader worker process its own steps): `len(plan)` steps,
/// `plan.read(steps)` reads any of them (GIL released), `plan.keys(steps)` names them.
///
/// `RankPlan(dataset, *, seed, epoch, weights, samples_per_epoch, replacement, shuffle,
/// window_shards, rank, world_size, ranks_per_node, policy, state)`: `state` (a
/// `Loader.state_dict()`-style dict, or None for the epoch's start) is where the epoch
/// stands, so a plan can begin mid-epoch, on any topology.
#[pyclass(module = "datasetrt", name = "RankPlan", frozen)]
pub(crate) struct PyRankPlan {
    dataset: Arc<Dataset>,
    plan: Arc<EpochPlan>,
    partition: Partition,
    start: IterState,
    /// Reads the plan's positions; one per plan, locked per batch.
    cursor: Mutex<PlanCursor>,
    /// What `hint_ahead` has looked at of the steps ahead.
    hints: Mutex<ShardHints>,
}

impl PyRankPlan {
    fn locate(&self, step: u64, cursor: &mut PlanCursor) -> PyResult<(usize, u64, u64, bool)> {
        if step >= self.partition.len() {
            return Err(PyIndexError::new_err(format!(
                "step {step} out of range for a rank share of {} steps",
                self.partition.len()
            )));
        }
        let position = self.partition.global_position(step);
        let planned = cursor.get(&self.plan, position).ok_or_else(|| {
            PyIndexError::new_err(format!("position {position} outside the plan"))
        })?;
        Ok((
            planned.cache,
            planned.sample,
            position,
            self.partition.is_padding(step),
        ))
    }

    /// Every step located (see [`Self::locate`]), through the plan's cursor, locked once.
    fn locate_steps(&self, steps: &[u64]) -> PyResult<Vec<(usize, u64, u64, bool)>> {
        let mut cursor = self
            .cursor
            .lock()
            .map_err(|_| PyValueError::new_err("the plan failed in another thread"))?;
        steps.iter().map(|&s| self.locate(s, &mut cursor)).collect()
    }

    /// Every step located (see [`Self::locate`]), and the `(cache, sample)` each one reads.
    #[allow(clippy::type_complexity)]
    fn locate_items(
        &self,
        steps: &[u64],
    ) -> PyResult<(Vec<(usize, u64, u64, bool)>, Vec<(&datasetrt::Cache, u64)>)> {
        let located = self.locate_steps(steps)?;
        let items = located
            .iter()
            .map(|&(cache, sample, _, _)| (&self.dataset.caches()[cache].cache, sample))
            .collect();
        Ok((located, items))
    }

    /// The columns every columnar batch has after its payload columns: `key` (the
    /// `(cache_id, sample_id)` of each step, a fixed-size list of two uint64), `padding`
    /// (bool), `step` (int64) and `metadata` (a struct of the dataset's columns, see
    /// [`metadata_columns`]).
    fn batch_columns(
        &self,
        steps: &[u64],
        located: &[(usize, u64, u64, bool)],
        items: &[(&datasetrt::Cache, u64)],
    ) -> PyResult<Vec<(Field, ArrayRef)>> {
        let caches = self.dataset.caches();
        let keys: Vec<u64> = located
            .iter()
            .flat_map(|&(cache, sample, _, _)| [caches[cache].cache_id, sample])
            .collect();
        let key_item = Arc::new(Field::new("item", DataType::UInt64, false));
        let keys = FixedSizeListArray::try_new(
            Arc::clone(&key_item),
            2,
            Arc::new(UInt64Array::from(keys)),
            None,
        )
        .map_err(|e| PyValueError::new_err(format!("building the batch's keys: {e}")))?;
        let padding: BooleanArray = located.iter().map(|l| Some(l.3)).collect();
        let steps = steps
            .iter()
            .map(|&s| i64::try_from(s))
            .collect::<Result<Int64Array, _>>()
            .map_err(|_| PyValueError::new_err("a step past the int64 range"))?;
        let metadata = metadata_columns(caches, items);
        Ok(vec![
            (
                Field::new("key", DataType::FixedSizeList(key_item, 2), false),
                Arc::new(keys),
            ),
            (
                Field::new("padding", DataType::Boolean, false),
                Arc::new(padding),
            ),
            (Field::new("step", DataType::Int64, false), Arc::new(steps)),
            (
                Field::new("metadata", metadata.data_type().clone(), false),
                Arc::new(metadata),
            ),
        ])
    }
}

/// The dataset's metadata columns (in the order the caches first name them) for `items`, as
/// one struct array: each column typed by its values ([`datasetrt::gather_column`]), null
/// where the value is null or its cache lacks the column.
fn metadata_columns(
    caches: &[datasetrt::DatasetCache],
    items: &[(&datasetrt::Cache, u64)],
) -> StructArray {
    let mut names: Vec<&str> = Vec::new();
    for c in caches {
        for column in c.cache.schema().columns() {
            if !names.contains(&column.name.as_str()) {
                names.push(&column.name);
            }
        }
    }
    let mut values = Vec::with_capacity(items.len());
    let mut fields = Vec::with_capacity(names.len());
    let mut arrays = Vec::with_capacity(names.len());
    for name in names {
        values.clear();
        values.extend(items.iter().map(|&item| column_value(name, item)));
        let array = datasetrt::gather_column(&values);
        fields.push(Field::new(name, array.data_type().clone(), true));
        arrays.push(array);
    }
    if fields.is_empty() {
        return StructArray::new_empty_fields(items.len(), None);
    }
    StructArray::new(fields.into(), arrays, None)
}

/// Column `name` of `sample` in `cache` (null where the cache has no such column).
fn column_value<'a>(
    name: &str,
    (cache, sample): (&'a datasetrt::Cache, u64),
) -> datasetrt::ValueRef<'a> {
    cache
        .schema()
        .position(name)
        .and_then(|i| cache.metadata().value(sample, i))
        .unwrap_or(datasetrt::ValueRef::Null)
}

/// The steps a batch method was given: a `range` (expanded here, with no Python int per step)
/// or any sequence of ints.
fn steps_arg(steps: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if steps.is_instance_of::<pyo3::types::PyRange>() {
        let bound = |name: &str| -> PyResult<i64> { steps.getattr(name)?.extract() };
        let (start, stop, step) = (bound("start")?, bound("stop")?, bound("step")?);
        if start < 0 || step <= 0 {
            return Err(PyValueError::new_err(
                "a range of steps must start at 0 or later and go up",
            ));
        }
        let step = usize::try_from(step).unwrap_or(usize::MAX);
        return Ok((start..stop.max(start))
            .step_by(step)
            .filter_map(|s| u64::try_from(s).ok())
            .collect());
    }
    steps.extract()
}

#[pymethods]
impl PyRankPlan {
    #[new]
    #[pyo3(signature = (dataset, *, seed = 0, epoch = 0, weights = None, samples_per_epoch = None, replacement = false, shuffle = "local", window_shards = 4, rank = 0, world_size = 1, ranks_per_node = 1, policy = "pad", state = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        dataset: &Bound<'_, PyDataset>,
        seed: u64,
        epoch: u64,
        weights: Option<Vec<f64>>,
        samples_per_epoch: Option<u64>,
        replacement: bool,
        shuffle: &str,
        window_shards: usize,
        rank: u64,
        world_size: u64,
        ranks_per_node: u64,
        policy: &str,
        state: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let dataset = Arc::clone(&dataset.get().dataset);
        let config = plan_config(
            seed,
            weights,
            samples_per_epoch,
            replacement,
            shuffle,
            window_shards,
        )?;
        let policy = self::policy(policy)?;
        let topology = Topology::new(world_size, ranks_per_node)
            .map_err(|e| Error::Dataset(DatasetError::Plan(e)))?;
        let resume = state.map(state_from_dict).transpose()?;
        let shared = Arc::clone(&dataset);
        let (plan, start) = enter(py, move || {
            shared.plan_for(&config, epoch, topology, policy, resume.as_ref())
        })?;
        let partition = Partition::new(rank, topology, policy, &start)
            .map_err(|e| Error::Dataset(DatasetError::Plan(e)))?;
        let cursor = Mutex::new(plan.cursor());
        Ok(Self {
            dataset,
            plan: Arc::new(plan),
            partition,
            start,
            cursor,
            hints: Mutex::new(ShardHints::new()),
        })
    }

    /// Tells caches on object storage which shards `steps` (a `range` or a sequence of ints)
    /// will read, in order, so that they are downloaded ahead (a hint: nothing read depends on
    /// it). Does nothing for local caches.
    fn will_need(&self, steps: &Bound<'_, PyAny>) -> PyResult<()> {
        if !self.dataset.has_shard_sources() {
            return Ok(());
        }
        let steps = steps_arg(steps)?;
        let located = self.locate_steps(&steps)?;
        let planned = located.iter().map(|&(cache, sample, _, _)| (cache, sample));
        self.dataset.will_need(planned, usize::MAX, &mut Vec::new());
        Ok(())
    }

    /// Tells caches on object storage which shards steps `start..stop` (the chunk about to
    /// be read) and the steps after them need, in order, up to 16 shards per cache: what their
    /// prefetch downloads ahead. Each call goes on looking ahead from where the last one
    /// stopped, so however many samples a shard holds the hint reaches past the shards in
    /// flight. Does nothing for local caches.
    fn hint_ahead(&self, py: Python<'_>, start: u64, stop: u64) -> PyResult<()> {
        if !self.dataset.has_shard_sources() {
            return Ok(());
        }
        let stop = stop.min(self.partition.len());
        let start = start.min(stop);
        enter(py, || {
            self.hints
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .hint(&self.dataset, &self.plan, &self.partition, start..stop);
            Ok::<_, Error>(())
        })
    }

    /// Steps this rank yields from `start` to the end of the epoch.
    fn __len__(&self) -> usize {
        usize::try_from(self.partition.len()).unwrap_or(usize::MAX)
    }

    /// Samples the whole epoch holds.
    #[getter]
    fn epoch_len(&self) -> u64 {
        self.plan.len()
    }

    /// The state once every rank has yielded `steps` of this plan's steps (a dict like
    /// `Loader.state_dict()`).
    fn state_after<'py>(&self, py: Python<'py>, steps: u64) -> PyResult<Bound<'py, PyDict>> {
        state_to_dict(py, &self.partition.state_after(&self.start, steps))
    }

    /// The `(cache_id, sample_id)` keys of `steps`.
    fn keys(&self, steps: Vec<u64>) -> PyResult<Vec<(u64, u64)>> {
        let located = self.locate_steps(&steps)?;
        Ok(located
            .iter()
            .map(|&(cache, sample, _, _)| (self.dataset.caches()[cache].cache_id, sample))
            .collect())
    }

    /// Reads `steps` (a `range` or a sequence of ints; GIL released) as one columnar batch:
    /// an `ArrowBatch` (`pyarrow.record_batch(batch)` reads it without a copy) of one row per
    /// step, with columns `payload` (large_binary), `key` (fixed-size list of two uint64:
    /// cache_id, sample_id), `padding` (bool), `step` (int64) and `metadata` (a struct of
    /// the dataset's metadata columns, each typed by its values: null where a value is null or
    /// its cache lacks the column, a dense union where caches give it different types).
    fn read_columnar(&self, py: Python<'_>, steps: &Bound<'_, PyAny>) -> PyResult<ArrowBatch> {
        let steps = steps_arg(steps)?;
        let (located, items) = self.locate_items(&steps)?;
        let (data, ranges) = read_copied(py, &items)?;
        let offsets = offsets_of(ranges.iter().map(ExactSizeIterator::len))?;
        let payload = LargeBinaryArray::new(offsets, Buffer::from_vec(data), None);
        let mut columns: Vec<(Field, ArrayRef)> = vec![(
            Field::new("payload", DataType::LargeBinary, false),
            Arc::new(payload),
        )];
        columns.extend(self.batch_columns(&steps, &located, &items)?);
        arrow_batch(columns)
    }

    /// Checks `steps` (GIL released) like `read_columnar` but copies no uncompressed payload:
    /// an `ArrowBatch` with, per step, where its payload lies — `shard` (the path of its
    /// shard file, dictionary-encoded; null for a payload stored compressed), `offset` and
    /// `length` (its bytes in that file) and `decoded` (large_binary: the decoded payload of
    /// a compressed one, else null) — then `key`, `padding`, `step` and `metadata` as
    /// `read_columnar` gives them. For a reader that maps the shard files itself
    /// (`_located_payloads`).
    fn read_located(&self, py: Python<'_>, steps: &Bound<'_, PyAny>) -> PyResult<ArrowBatch> {
        let steps = steps_arg(steps)?;
        let (located, items) = self.locate_items(&steps)?;
        let dataset = &self.dataset;
        let (data, at) = read_batch(py, &items)?;
        // (cache, shard) -> its key in the dictionary of paths.
        let mut keys: std::collections::HashMap<(usize, u64), i32> =
            std::collections::HashMap::new();
        let mut paths = StringBuilder::new();
        let mut shard_keys = Vec::with_capacity(at.len());
        let mut offsets = Vec::with_capacity(at.len());
        let mut lengths = Vec::with_capacity(at.len());
        let to_i64 =
            |v: u64| i64::try_from(v).map_err(|_| PyValueError::new_err("offset out of range"));
        for (&(cache, _, _, _), place) in located.iter().zip(&at) {
            match *place {
                Located::InShard {
                    shard, offset, len, ..
                } => {
                    let key = match keys.get(&(cache, shard)) {
                        Some(&key) => key,
                        None => {
                            let caches = dataset.caches();
                            let path = caches[cache].cache.shard_path(shard).ok_or_else(|| {
                                PyIndexError::new_err(format!("no shard {shard}"))
                            })?;
                            let text = path.to_str().ok_or_else(|| {
                                PyValueError::new_err(format!(
                                    "{}: a shard path that is not UTF-8 cannot cross in a batch",
                                    path.display()
                                ))
                            })?;
                            let key = i32::try_from(keys.len()).map_err(|_| {
                                PyValueError::new_err("more shard files than a batch can name")
                            })?;
                            paths.append_value(text);
                            keys.insert((cache, shard), key);
                            key
                        }
                    };
                    shard_keys.push(Some(key));
                    offsets.push(to_i64(offset)?);
                    lengths.push(to_i64(len as u64)?);
                }
                Located::Buffer(ref range) => {
                    shard_keys.push(None);
                    offsets.push(0);
                    lengths.push(to_i64(range.len() as u64)?);
                }
            }
        }
        let shards = DictionaryArray::<Int32Type>::try_new(
            Int32Array::from(shard_keys),
            Arc::new(paths.finish()),
        )
        .map_err(|e| PyValueError::new_err(format!("building the batch's shards: {e}")))?;
        // The decoded payloads lie one after another in `data`, in step order.
        let decoded_lens = at.iter().map(|place| match place {
            Located::Buffer(range) => range.len(),
            Located::InShard { .. } => 0,
        });
        let decoded_valid: arrow_buffer::NullBuffer = at
            .iter()
            .map(|place| matches!(place, Located::Buffer(_)))
            .collect();
        let decoded = LargeBinaryArray::new(
            offsets_of(decoded_lens)?,
            Buffer::from_vec(data),
            Some(decoded_valid),
        );
        let mut columns: Vec<(Field, ArrayRef)> = vec![
            (
                Field::new("shard", shards.data_type().clone(), true),
                Arc::new(shards),
            ),
            (
                Field::new("offset", DataType::Int64, false),
                Arc::new(Int64Array::from(offsets)),
            ),
            (
                Field::new("length", DataType::Int64, false),
                Arc::new(Int64Array::from(lengths)),
            ),
            (
                Field::new("decoded", DataType::LargeBinary, true),
                Arc::new(decoded),
            ),
        ];
        columns.extend(self.batch_columns(&steps, &located, &items)?);
        arrow_batch(columns)
    }

    /// Reads `steps` (GIL released) and returns their samples in order, each with `key`,
    /// `payload`, `metadata`, `step`, `global_position` and `padding`.
    fn read<'py>(&self, py: Python<'py>, steps: Vec<u64>) -> PyResult<Bound<'py, PyList>> {
        let (located, items) = self.locate_items(&steps)?;
        let dataset = &self.dataset;
        let (data, at) = read_batch(py, &items)?;
        let list = PyList::empty(py);
        for ((&step, &(cache, sample, position, padding)), at) in
            steps.iter().zip(&located).zip(&at)
        {
            let cache_ref = crate::cache::CacheRef::InDataset(Arc::clone(dataset), cache);
            list.append(PySample {
                cache_id: Some(dataset.caches()[cache].cache_id),
                sample_id: sample,
                payload: payload_object(py, &data, at)?.unbind(),
                cache: cache_ref,
                step: Some(step),
                global_position: Some(position),
                padding,
            })?;
        }
        Ok(list)
    }
}
