//! Turns an epoch plan into samples on one rank, optionally with prefetching worker threads.

use crate::buffers::PooledBuffer;
use crate::{Dataset, DatasetError, SampleKey};
use bytes::Bytes;
use dsrt_metadata::RowView;
use dsrt_plan::{CacheShape, EpochPlan, IterState, Partition, PlanConfig, RemainderPolicy};
use dsrt_reader::SampleBuf;
use std::collections::VecDeque;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

/// How a rank iterates one epoch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LoaderConfig {
    /// Seed, weights, sampling and shuffle: what decides the global order.
    pub plan: PlanConfig,
    /// The epoch.
    pub epoch: u64,
    /// This rank.
    pub rank: u64,
    /// Number of ranks (0 is taken as 1).
    pub world_size: u64,
    /// Padding or dropping the last incomplete round.
    pub policy: RemainderPolicy,
    /// Worker threads reading ahead; 0 reads on the calling thread.
    pub workers: usize,
    /// Samples each worker may read ahead of the consumer; workers hand over chunks of 256
    /// steps, so at least one chunk is always in flight per worker.
    pub prefetch: usize,
    /// Resume from a saved state instead of the start of the epoch.
    pub resume: Option<IterState>,
}

/// One sample of an epoch, as a rank receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSample {
    /// This rank's step (0-based) within the epoch.
    pub step: u64,
    /// Position in the epoch's global order.
    pub global_position: u64,
    /// Whether this step repeats an earlier sample to pad the last round.
    pub padding: bool,
    /// The sample's address.
    pub key: SampleKey,
    /// The payload, decompressed. A slice of one buffer shared by a chunk of consecutive
    /// steps, so loading allocates per chunk, not per sample.
    pub payload: Bytes,
}

impl LoadedSample {
    /// The sample's metadata row from metadata.arrow (checked equal to the embedded copy when
    /// the sample was read), borrowed from `dataset` without copying.
    pub fn metadata<'d>(&self, dataset: &'d Dataset) -> Option<RowView<'d>> {
        dataset
            .cache(self.key.cache_id)
            .ok()?
            .metadata()
            .row(self.key.sample_id)
    }
}

impl Dataset {
    /// Each cache's shape for planning: its length and its runs of samples sharing a shard,
    /// from one pass over the mapped index.
    pub fn shapes(&self) -> Vec<CacheShape> {
        self.caches()
            .iter()
            .map(|c| {
                let index = c.cache.index();
                CacheShape::from_shard_ids(
                    (0..index.len()).map(|i| index.row(i).map_or(u64::MAX, |r| r.shard_id)),
                )
            })
            .collect()
    }

    /// The global order of `epoch`.
    pub fn plan(&self, config: &PlanConfig, epoch: u64) -> Result<EpochPlan, DatasetError> {
        Ok(EpochPlan::build(&self.shapes(), config, epoch)?)
    }
}

/// Everything a step needs to find its sample.
struct Steps {
    dataset: Arc<Dataset>,
    plan: Arc<EpochPlan>,
    partition: Partition,
}

/// Where one step's payload lies in its chunk's buffer.
struct Located {
    step: u64,
    global_position: u64,
    key: SampleKey,
    range: std::ops::Range<usize>,
}

impl Steps {
    /// Reads one step's sample into `data` from offset `at`.
    fn locate(
        &self,
        step: u64,
        buf: &mut SampleBuf,
        data: &mut Vec<u8>,
        at: usize,
    ) -> Result<Located, DatasetError> {
        let global_position = self.partition.global_position(step);
        let planned = self.plan.get(global_position).ok_or_else(|| {
            DatasetError::Plan(dsrt_plan::PlanError::State(format!(
                "position {global_position} is outside the plan"
            )))
        })?;
        let entry = &self.dataset.caches()[planned.cache];
        let key = SampleKey {
            cache_id: entry.cache_id,
            sample_id: planned.sample,
        };
        let range = entry.cache.read_at(planned.sample, buf, data, at)?;
        Ok(Located {
            step,
            global_position,
            key,
            range,
        })
    }

    /// Reads steps `range` into one shared payload buffer from the pool.
    fn load_chunk(&self, range: std::ops::Range<u64>, scratch: &mut Scratch) -> Chunk {
        let buffers = self.dataset.chunk_buffers();
        let mut data = buffers.take();
        let mut used = 0;
        scratch.located.clear();
        for step in range {
            let located = self.locate(step, &mut scratch.sample, &mut data, used);
            if let Ok(l) = &located {
                used = l.range.end;
            }
            scratch.located.push(located);
        }
        let data = Bytes::from_owner(PooledBuffer::new(data, used, buffers));
        scratch
            .located
            .drain(..)
            .map(|item| {
                item.map(|l| LoadedSample {
                    step: l.step,
                    global_position: l.global_position,
                    padding: self.partition.is_padding(l.step),
                    key: l.key,
                    payload: data.slice(l.range),
                })
            })
            .collect()
    }
}

/// What a loading thread reuses from chunk to chunk.
#[derive(Default)]
struct Scratch {
    sample: SampleBuf,
    located: Vec<Result<Located, DatasetError>>,
}

/// Consecutive steps' samples, in step order.
type Chunk = VecDeque<Result<LoadedSample, DatasetError>>;

/// A prefetch worker: the channel it fills with chunks of consecutive steps, and its thread.
type Worker = (Receiver<Chunk>, JoinHandle<()>);

/// Iterates one rank's share of one epoch in the plan's order, whatever the number of workers.
pub struct Loader {
    steps: Arc<Steps>,
    config: LoaderConfig,
    next_step: u64,
    len: u64,
    inline: Scratch,
    ready: Chunk,
    workers: Vec<Worker>,
}

impl std::fmt::Debug for Loader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loader")
            .field("next_step", &self.next_step)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Loader {
    /// Plans the epoch and, with `workers > 0`, starts the worker threads.
    pub fn new(dataset: Arc<Dataset>, config: LoaderConfig) -> Result<Self, DatasetError> {
        let plan = Arc::new(dataset.plan(&config.plan, config.epoch)?);
        let start = match &config.resume {
            Some(state) => {
                state.check(config.plan.seed, config.epoch, plan.len())?;
                state.position
            }
            None => 0,
        };
        let partition = Partition::new(
            config.rank,
            config.world_size.max(1),
            config.policy,
            start,
            plan.len(),
        )?;
        let steps = Arc::new(Steps {
            dataset,
            plan,
            partition,
        });
        let len = partition.len();
        let workers = (0..config.workers)
            .map(|w| {
                spawn_worker(
                    &steps,
                    w as u64,
                    config.workers as u64,
                    len,
                    config.prefetch,
                )
            })
            .collect();
        Ok(Self {
            steps,
            config,
            next_step: 0,
            len,
            inline: Scratch::default(),
            ready: VecDeque::new(),
            workers,
        })
    }

    /// Samples this rank yields in the epoch: the same on every rank.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether this rank yields nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Samples the whole epoch holds (before partitioning).
    pub fn epoch_len(&self) -> u64 {
        self.steps.plan.len()
    }

    /// The state after the samples yielded so far: resume from it, with any world size or
    /// number of workers, and every rank continues at the next sample. Ranks in lockstep
    /// produce identical states.
    pub fn state(&self) -> IterState {
        IterState {
            seed: self.config.plan.seed,
            epoch: self.config.epoch,
            position: self.steps.partition.consumed_after(self.next_step),
            epoch_len: self.steps.plan.len(),
        }
    }
}

/// Steps a worker reads per message: one channel hand-off per chunk, not per sample.
const CHUNK_STEPS: u64 = 256;
const CHUNK_STEPS_USIZE: usize = 256;

/// The steps of chunk `chunk` in an epoch share of `len` steps.
fn chunk_range(chunk: u64, len: u64) -> std::ops::Range<u64> {
    chunk * CHUNK_STEPS..((chunk + 1) * CHUNK_STEPS).min(len)
}

/// Starts worker `first` of `stride`: it reads chunks `first, first + stride, ...` (each
/// [`CHUNK_STEPS`] consecutive steps) and sends each chunk whole, in order.
fn spawn_worker(steps: &Arc<Steps>, first: u64, stride: u64, len: u64, prefetch: usize) -> Worker {
    let (sender, receiver) = sync_channel(prefetch.div_ceil(CHUNK_STEPS_USIZE).max(1));
    let steps = Arc::clone(steps);
    let handle = std::thread::spawn(move || {
        let mut scratch = Scratch::default();
        let mut chunk = first;
        while chunk * CHUNK_STEPS < len {
            let samples = steps.load_chunk(chunk_range(chunk, len), &mut scratch);
            // A closed channel means the loader was dropped: stop quietly.
            if sender.send(samples).is_err() {
                return;
            }
            chunk += stride;
        }
    });
    (receiver, handle)
}

impl Iterator for Loader {
    type Item = Result<LoadedSample, DatasetError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next_step >= self.len {
            return None;
        }
        let step = self.next_step;
        self.next_step += 1;
        if self.ready.is_empty() {
            let chunk = step / CHUNK_STEPS;
            if self.workers.is_empty() {
                self.ready = self
                    .steps
                    .load_chunk(chunk_range(chunk, self.len), &mut self.inline);
            } else {
                // Worker `chunk % n` produces exactly the chunks congruent to it, in order, so
                // receiving round-robin restores the plan's order without a reorder buffer.
                let worker = usize::try_from(chunk % self.workers.len() as u64).unwrap_or(0);
                match self.workers[worker].0.recv() {
                    Ok(samples) => self.ready = samples,
                    Err(_) => return Some(Err(DatasetError::WorkerStopped)),
                }
            }
        }
        Some(
            self.ready
                .pop_front()
                .unwrap_or(Err(DatasetError::WorkerStopped)),
        )
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.len - self.next_step).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        for (receiver, handle) in self.workers.drain(..) {
            drop(receiver);
            let _ = handle.join();
        }
    }
}
