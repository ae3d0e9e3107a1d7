//! `datasetrt.Loader` and the per-rank step plan the PyTorch dataset reads through.

use crate::arrow::ArrowBatch;
use crate::cache::{read_samples, CacheRef, PySample};
use crate::dataset::PyDataset;
use crate::errors::{enter, Error};
use crate::options::{mixture_change_to_dict, state_from_dict, state_to_dict, Kwargs, PlanArgs};
use datasetrt::{Cache, Dataset, DatasetError, Loader, LoaderConfig, LoaderStats, RankPlan};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyBytes, PyDict, PyList, PyRange};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

fn loaded_sample(
    py: Python<'_>,
    dataset: &Arc<Dataset>,
    sample: datasetrt::LoadedSample,
) -> PyResult<PySample> {
    let cache_id = sample.key.cache_id;
    let position = (dataset.position(cache_id))
        .ok_or(Error::Dataset(DatasetError::UnknownCache { cache_id }))?;
    Ok(PySample {
        cache: CacheRef::InDataset(Arc::clone(dataset), position),
        cache_id: Some(cache_id),
        sample_id: sample.key.sample_id,
        payload: PyBytes::new(py, &sample.payload).into_any().unbind(),
        step: Some(sample.step),
        global_position: Some(sample.global_position),
        padding: sample.padding,
    })
}

/// Iterates one rank's share of one epoch of a Dataset, reproducibly: the same settings give
/// the same order on every machine, whatever the number of `workers` reading ahead, and every
/// rank yields `len(loader)` samples ("pad" repeats samples to fill the last round, "drop"
/// drops it). `state_dict()` and `load_state_dict(state)` resume exactly at the next sample,
/// with any number of workers or ranks. Waiting for samples releases the GIL.
#[pyclass(module = "datasetrt", name = "Loader", frozen)]
pub(crate) struct PyLoader {
    dataset: Arc<Dataset>,
    base: LoaderConfig,
    loader: Mutex<Loader>,
    /// The counters of the loader in `loader`, read without waiting for a thread iterating it.
    stats: Mutex<Arc<LoaderStats>>,
}

impl PyLoader {
    /// Locks the loader, waiting (if another thread iterates it) with the GIL released.
    fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, Loader>> {
        (self.loader.lock_py_attached(py))
            .map_err(|_| PyValueError::new_err("the loader failed in another thread"))
    }

    fn rebuild(&self, py: Python<'_>, config: LoaderConfig) -> PyResult<()> {
        let dataset = Arc::clone(&self.dataset);
        let fresh = enter(py, move || Loader::new(dataset, config))?;
        let stats = fresh.stats_handle();
        let old = std::mem::replace(&mut *self.lock(py)?, fresh);
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner) = stats;
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
    #[pyo3(
        signature = (dataset, **options),
        text_signature = "(dataset, *, seed=0, epoch=0, weights=None, samples_per_epoch=None, schedule=None, replacement=False, shuffle=\"local\", window_shards=4, rank=0, world_size=1, ranks_per_node=1, policy=\"pad\", workers=0, prefetch=512, prefetch_bytes=None)"
    )]
    fn new(
        py: Python<'_>,
        dataset: &Bound<'_, PyDataset>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut kwargs = Kwargs::new("Loader", options)?;
        let plan = PlanArgs::take(&mut kwargs)?;
        let mut base = plan.loader(kwargs.get("workers", 0)?, kwargs.get("prefetch", 512)?);
        base.prefetch_bytes = crate::options::size(&mut kwargs, "prefetch_bytes")?;
        kwargs.finish()?;
        let dataset = Arc::clone(&dataset.get().dataset);
        let (shared, config) = (Arc::clone(&dataset), base.clone());
        let loader = enter(py, move || Loader::new(shared, config))?;
        Ok(Self {
            dataset,
            base,
            stats: Mutex::new(loader.stats_handle()),
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
        (next.map(|sample| loaded_sample(py, &self.dataset, sample))).transpose()
    }

    /// Reads up to `n` next samples in one call (GIL released while waiting); an empty list
    /// at the end of the epoch.
    fn next_batch<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyList>> {
        let batch: Vec<_> = {
            let mut guard = self.lock(py)?;
            let loader = &mut *guard;
            enter(py, || loader.by_ref().take(n).collect::<Result<_, _>>())?
        };
        let samples = (batch.into_iter())
            .map(|sample| loaded_sample(py, &self.dataset, sample))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, samples)
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

    /// How the mixture changed where the loader resumed a state saved under another one (a
    /// dict: `position`, `weights`, `schedule`, `added`, `removed`), or None.
    #[getter]
    fn mixture_change<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let change = self.lock(py)?.plan().mixture_change().cloned();
        mixture_change_to_dict(py, change.as_ref())
    }

    /// The state after the samples yielded so far, as a dict. Ranks in lockstep produce equal
    /// states.
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let state = self.lock(py)?.state();
        state_to_dict(py, &state)
    }

    /// Restarts the epoch from a state returned by `state_dict` (of this or another run with
    /// the same dataset and settings, any number of workers or ranks).
    fn load_state_dict(&self, py: Python<'_>, state: &Bound<'_, PyDict>) -> PyResult<()> {
        let state = state_from_dict(state)?;
        let config = LoaderConfig {
            epoch: state.epoch,
            resume: Some(state),
            ..self.base.clone()
        };
        self.rebuild(py, config)
    }

    /// Starts epoch `epoch` from its beginning.
    fn set_epoch(&self, py: Python<'_>, epoch: u64) -> PyResult<()> {
        let config = LoaderConfig {
            epoch,
            ..self.base.clone()
        };
        self.rebuild(py, config)
    }

    /// What the loader has done since it was created or last restarted (`set_epoch`,
    /// `load_state_dict`), as a dict (docs/python.md, "Loader stats").
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stats = Arc::clone(&self.stats.lock().unwrap_or_else(PoisonError::into_inner));
        py_support::to_python(py, &stats.snapshot().report())
    }
}

/// One rank's steps of one epoch, for readers that split them further (the PyTorch
/// `StreamingDataset` gives each DataLoader worker process its own steps): `len(plan)` steps,
/// `read(steps)`, `read_columnar(steps)`, `read_located(steps)`, `keys(steps)`. `state` (a
/// `Loader.state_dict()`-style dict, or None for the epoch's start) is where the epoch stands,
/// so a plan can begin mid-epoch, on any topology (`datasetrt::RankPlan`).
#[pyclass(module = "datasetrt", name = "RankPlan", frozen)]
pub(crate) struct PyRankPlan {
    plan: RankPlan,
}

/// The steps a batch method was given: a `range` (expanded here, with no Python int per step)
/// or any sequence of ints.
fn steps_arg(steps: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    let Ok(range) = steps.cast::<PyRange>() else {
        return steps.extract();
    };
    let bound = |name: &str| -> PyResult<i64> { range.getattr(name)?.extract() };
    let (start, stop, step) = (bound("start")?, bound("stop")?, bound("step")?);
    if start < 0 || step <= 0 {
        let message = "a range of steps must start at 0 or later and go up";
        return Err(PyValueError::new_err(message));
    }
    let step = usize::try_from(step).unwrap_or(usize::MAX);
    let steps = (start..stop.max(start)).step_by(step);
    Ok(steps.filter_map(|s| u64::try_from(s).ok()).collect())
}

#[pymethods]
impl PyRankPlan {
    #[new]
    #[pyo3(
        signature = (dataset, **options),
        text_signature = "(dataset, *, seed=0, epoch=0, weights=None, samples_per_epoch=None, schedule=None, replacement=False, shuffle=\"local\", window_shards=4, rank=0, world_size=1, ranks_per_node=1, policy=\"pad\", state=None)"
    )]
    fn new(
        py: Python<'_>,
        dataset: &Bound<'_, PyDataset>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut kwargs = Kwargs::new("RankPlan", options)?;
        let args = PlanArgs::take(&mut kwargs)?;
        let resume = kwargs
            .take("state")?
            .map(|s| state_from_dict(&s))
            .transpose()?;
        kwargs.finish()?;
        let dataset = Arc::clone(&dataset.get().dataset);
        let plan = enter(py, move || {
            RankPlan::new(
                dataset,
                &args.plan,
                args.epoch,
                args.rank,
                args.topology,
                args.policy,
                resume.as_ref(),
            )
        })?;
        Ok(Self { plan })
    }

    /// Tells caches on object storage which shards `steps` (a `range` or a sequence of ints)
    /// will read, in order, so that they are downloaded ahead (a hint: nothing read depends on
    /// it). Does nothing for local caches.
    fn will_need(&self, steps: &Bound<'_, PyAny>) -> PyResult<()> {
        Ok(self
            .plan
            .will_need(&steps_arg(steps)?)
            .map_err(Error::from)?)
    }

    /// Tells caches on object storage which shards steps `start..stop` (the chunk about to
    /// be read) and the steps after them need, up to 16 shards per cache, each call going on
    /// from where the last stopped. Does nothing for local caches.
    fn hint_ahead(&self, py: Python<'_>, start: u64, stop: u64) -> PyResult<()> {
        enter(py, || {
            self.plan.hint_ahead(start..stop);
            Ok::<_, Error>(())
        })
    }

    /// Steps this rank yields from `start` to the end of the epoch.
    fn __len__(&self) -> usize {
        usize::try_from(self.plan.len()).unwrap_or(usize::MAX)
    }

    /// Samples the whole epoch holds.
    #[getter]
    fn epoch_len(&self) -> u64 {
        self.plan.epoch_len()
    }

    /// How the mixture changed where the plan resumed a state saved under another one (a
    /// dict like `Loader.mixture_change`), or None.
    #[getter]
    fn mixture_change<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        mixture_change_to_dict(py, self.plan.mixture_change())
    }

    /// The state once every rank has yielded `steps` of this plan's steps (a dict like
    /// `Loader.state_dict()`).
    fn state_after<'py>(&self, py: Python<'py>, steps: u64) -> PyResult<Bound<'py, PyAny>> {
        state_to_dict(py, &self.plan.state_after(steps))
    }

    /// The `(cache_id, sample_id)` keys of `steps`.
    fn keys(&self, steps: Vec<u64>) -> PyResult<Vec<(u64, u64)>> {
        let keys = self.plan.keys(&steps).map_err(Error::from)?;
        Ok(keys.iter().map(|k| (k.cache_id, k.sample_id)).collect())
    }

    /// Reads `steps` (a `range` or a sequence of ints; GIL released) as one columnar batch,
    /// an `ArrowBatch` of one row per step (`Dataset::read_columnar`): `payload`, `key`,
    /// `padding`, `step` and `metadata`.
    fn read_columnar(&self, py: Python<'_>, steps: &Bound<'_, PyAny>) -> PyResult<ArrowBatch> {
        let steps = steps_arg(steps)?;
        let batch = enter(py, || self.plan.read_columnar(&steps))?;
        Ok(ArrowBatch { batch })
    }

    /// Checks `steps` like `read_columnar` but copies no uncompressed payload: an `ArrowBatch`
    /// of where each payload lies (`Dataset::read_located`: `shard`, `offset`, `length`,
    /// `decoded`), then `key`, `padding`, `step` and `metadata`. For a reader that maps the
    /// shard files itself (`_located_payloads`).
    fn read_located(&self, py: Python<'_>, steps: &Bound<'_, PyAny>) -> PyResult<ArrowBatch> {
        let steps = steps_arg(steps)?;
        let batch = enter(py, || self.plan.read_located(&steps))?;
        Ok(ArrowBatch { batch })
    }

    /// Reads `steps` (GIL released) and returns their samples in order, each with `key`,
    /// `payload`, `metadata`, `step`, `global_position` and `padding`.
    fn read<'py>(&self, py: Python<'py>, steps: Vec<u64>) -> PyResult<Bound<'py, PyList>> {
        let dataset = self.plan.dataset();
        let caches = dataset.caches();
        let samples = self.plan.read_with(&steps, |_, rows| {
            let items: Vec<(&Cache, u64)> = (rows.iter())
                .map(|row| (&caches[row.cache].cache, row.sample_id))
                .collect();
            let samples = read_samples(py, &items, |i, payload| {
                let row = rows[i];
                PySample {
                    cache: CacheRef::InDataset(Arc::clone(dataset), row.cache),
                    cache_id: Some(caches[row.cache].cache_id),
                    sample_id: row.sample_id,
                    payload: payload.unbind(),
                    step: Some(row.step),
                    global_position: Some(self.plan.global_position(row.step)),
                    padding: row.padding,
                }
            });
            Ok(samples)
        });
        PyList::new(py, samples.map_err(Error::from)??)
    }

    /// What the reads of this plan have done in this process since it was made, as a dict
    /// (docs/python.md, "Loader stats"): a `DataLoader` worker's share of the epoch.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py_support::to_python(py, &self.plan.stats().report())
    }
}
