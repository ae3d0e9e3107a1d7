//! Turns an epoch plan into samples on one rank, optionally with prefetching worker threads.

use crate::buffers::PooledBuffer;
use crate::hints::ShardHints;
use crate::stats::{LoaderStats, Stage, StatsSnapshot};
use crate::{Dataset, DatasetError, SampleKey};
use bytes::Bytes;
use dsrt_metadata::RowView;
use dsrt_plan::{
    CacheShape, EpochPlan, IterState, Partition, PlanConfig, PlanCursor, PlannedSample,
    RemainderPolicy, Topology,
};
use dsrt_reader::{SampleBuf, SharedPayload, SharedShard};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

/// How a rank iterates one epoch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LoaderConfig {
    /// Seed, weights or a schedule of phases, sampling and shuffle: what decides the global
    /// order.
    pub plan: PlanConfig,
    /// The epoch.
    pub epoch: u64,
    /// This rank.
    pub rank: u64,
    /// Number of ranks (0 is taken as 1).
    pub world_size: u64,
    /// Ranks per node (0 is taken as 1); divides `world_size`. Each node reads a contiguous
    /// share of the epoch, so each shard is read by one node (see docs/iteration.md).
    pub ranks_per_node: u64,
    /// Padding or dropping the last incomplete round.
    pub policy: RemainderPolicy,
    /// Worker threads reading ahead; 0 reads on the calling thread.
    pub workers: usize,
    /// Samples each worker may have read (or be reading) that the loader has not received yet
    /// (0 is taken as 1). Workers hand over chunks of `min(prefetch, 256)` consecutive steps;
    /// a worker's queue plus the chunk it fills never exceed `prefetch` samples, so at most
    /// `workers × prefetch` samples plus the chunk being consumed are read ahead of the consumer.
    /// The order never depends on it.
    pub prefetch: usize,
    /// Payload bytes read ahead of the consumer, at most (about; `None`:
    /// [`DEFAULT_PREFETCH_BYTES`]), whatever `prefetch` allows: workers hand chunks over in
    /// pieces of at most this divided by the pieces that can be in flight, each piece ending
    /// with the sample that fills it (so one sample larger than that is still read, alone).
    /// Without it, `prefetch` samples that each decode to megabytes (an LZ4 payload may be 255
    /// times its stored size) would take gigabytes. Only bytes copied out of shards count:
    /// payloads that are slices of a shared mapping cost none. The order never depends on it.
    pub prefetch_bytes: Option<u64>,
    /// Resume from a saved state instead of the start of the epoch.
    pub resume: Option<IterState>,
}

/// What [`LoaderConfig::prefetch_bytes`] is when not given: 256 MiB.
pub const DEFAULT_PREFETCH_BYTES: u64 = 256 << 20;

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
    /// from one pass over the mapped index, and its id, which the plan's states record so
    /// that a resume with another cache in its place is refused.
    pub fn shapes(&self) -> Vec<CacheShape> {
        self.caches()
            .iter()
            .map(|c| {
                let index = c.cache.index();
                CacheShape::from_shard_ids(
                    (0..index.len()).map(|i| index.row(i).map_or(u64::MAX, |r| r.shard_id)),
                )
                .with_cache_id(c.cache_id)
            })
            .collect()
    }

    /// The global order of `epoch`, its windows not cut for any topology (see
    /// [`EpochPlan::with_cuts`]).
    pub fn plan(&self, config: &PlanConfig, epoch: u64) -> Result<EpochPlan, DatasetError> {
        Ok(EpochPlan::build(&self.shapes(), config, epoch)?)
    }

    /// The plan of `epoch` on `topology`, from `resume` or the epoch's start, checked against
    /// the state; returns the plan (cut where the state says) and the state to start from.
    pub fn plan_for(
        &self,
        config: &PlanConfig,
        epoch: u64,
        topology: Topology,
        policy: RemainderPolicy,
        resume: Option<&IterState>,
    ) -> Result<(EpochPlan, IterState), DatasetError> {
        Ok(EpochPlan::for_run(
            &self.shapes(),
            config,
            epoch,
            topology,
            policy,
            resume,
        )?)
    }
}

/// Everything a step needs to find its sample.
struct Steps {
    dataset: Arc<Dataset>,
    plan: Arc<EpochPlan>,
    partition: Partition,
    /// The state the epoch started (or resumed) from.
    start: IterState,
    /// Steps per chunk: `min(prefetch, 256)`, at least 1.
    chunk_steps: u64,
    /// A piece of a chunk (one hand-over) ends with the sample that brings its buffer to
    /// this many bytes (see [`LoaderConfig::prefetch_bytes`]).
    piece_bytes: usize,
    /// The first `ramp` chunks hold 1, 2, 4, ... steps (all fewer than `chunk_steps`), so the
    /// first sample waits for one step's read, not a whole chunk's (on object storage, one
    /// shard's download, not every shard a chunk touches).
    ramp: u32,
    read_ahead: ReadAhead,
    /// Whether any cache's shards come from a `ShardSource` (object storage), which wants to
    /// hear which shards are needed next.
    hints: bool,
    /// Set once the first chunk is loaded. With shard sources, the other workers wait for it
    /// before they start: the first sample's shard then downloads alone instead of sharing
    /// the link with the shards of their first chunks.
    first_chunk: FirstChunk,
    /// What the loader has done (see [`Loader::stats`]).
    stats: Arc<LoaderStats>,
}

/// Whether the first chunk is loaded, for threads to wait on.
#[derive(Default)]
struct FirstChunk {
    loaded: Mutex<bool>,
    changed: Condvar,
}

impl FirstChunk {
    fn set(&self) {
        *self.loaded.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.changed.notify_all();
    }

    fn wait(&self) {
        let loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        drop(
            self.changed
                .wait_while(loaded, |loaded| !*loaded)
                .unwrap_or_else(PoisonError::into_inner),
        );
    }
}

/// Opens [`Steps::first_chunk`] when dropped, so a panicking first worker does not leave the
/// others waiting.
struct OpenOnDrop<'a>(&'a FirstChunk);

impl Drop for OpenOnDrop<'_> {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// Samples read ahead of the consumer, counted per chunk: samples of the chunks loading has
/// started minus samples of the chunks the consumer has finished, and the most it has been
/// (checked by the tests against `workers × prefetch + one chunk`). Two atomic additions per
/// chunk.
#[derive(Debug, Default)]
struct ReadAhead {
    started: AtomicU64,
    finished: AtomicU64,
    max: AtomicU64,
}

impl ReadAhead {
    /// Loading of a chunk of `samples` begins.
    fn start(&self, samples: u64) {
        let started = self.started.fetch_add(samples, Ordering::SeqCst) + samples;
        let ahead = started.saturating_sub(self.finished.load(Ordering::SeqCst));
        self.max.fetch_max(ahead, Ordering::Relaxed);
    }

    /// The consumer has yielded every sample of a chunk of `samples`.
    fn finish(&self, samples: u64) {
        self.finished.fetch_add(samples, Ordering::SeqCst);
    }
}

/// Where one step's payload lies: in its chunk's buffer, or in shard bytes a source shares.
struct Located {
    step: u64,
    global_position: u64,
    key: SampleKey,
    payload: Placed,
}

enum Placed {
    /// `range` of the chunk's buffer.
    InChunk(std::ops::Range<usize>),
    /// A slice of a shard's shared bytes: nothing copied.
    Shared(Bytes),
}

impl Steps {
    /// Reads one step's sample into `data` from offset `at`, or finds it in shard bytes its
    /// cache's source shares (`shared` keeps one handle per shard for the chunk, so each
    /// sample costs a reference count, not an allocation).
    fn locate(
        &self,
        (step, global_position, planned): (u64, u64, Option<PlannedSample>),
        scratch: &mut Scratch,
        data: &mut Vec<u8>,
        at: usize,
    ) -> Result<Located, DatasetError> {
        let planned = planned.ok_or_else(|| {
            DatasetError::Plan(dsrt_plan::PlanError::State(format!(
                "position {global_position} is outside the plan"
            )))
        })?;
        let entry = &self.dataset.caches()[planned.cache];
        let key = SampleKey {
            cache_id: entry.cache_id,
            sample_id: planned.sample,
        };
        let payload =
            match entry
                .cache
                .read_shared(planned.sample, &mut scratch.sample, data, at)?
            {
                SharedPayload::InOut(range) => Placed::InChunk(range),
                SharedPayload::InShard {
                    shard,
                    bytes,
                    range,
                } => {
                    let whole = scratch.shared_bytes(planned.cache, shard, bytes);
                    Placed::Shared(whole.slice(range))
                }
            };
        Ok(Located {
            step,
            global_position,
            key,
            payload,
        })
    }

    /// Finds the sample of each step of `range` (into `scratch.planned`).
    fn plan_steps(&self, range: std::ops::Range<u64>, scratch: &mut Scratch) {
        let cursor = scratch.cursor.get_or_insert_with(|| self.plan.cursor());
        scratch.planned.clear();
        scratch.planned.extend(range.map(|step| {
            let position = self.partition.global_position(step);
            (step, position, cursor.get(&self.plan, position))
        }));
    }

    /// The bytes of the records of the planned steps (what their payloads take uncompressed).
    fn chunk_bytes(&self, planned: &[(u64, u64, Option<PlannedSample>)]) -> usize {
        planned
            .iter()
            .filter_map(|p| p.2)
            .filter_map(|p| {
                let row = self.dataset.caches()[p.cache].cache.index().row(p.sample);
                usize::try_from(row.ok()?.length).ok()
            })
            .fold(0usize, usize::saturating_add)
    }

    /// Starts loading the steps `range` (one chunk): tells the shard sources what comes,
    /// plans the steps into `scratch`. Its pieces then come from [`Steps::load_piece`].
    fn begin_chunk(&self, range: std::ops::Range<u64>, scratch: &mut Scratch) {
        let started = Instant::now();
        self.read_ahead.start(range.end - range.start);
        if self.hints {
            scratch
                .hints
                .hint(&self.dataset, &self.plan, &self.partition, range.clone());
        }
        self.plan_steps(range, scratch);
        scratch.failed = None;
        self.stats.add_time(Stage::Plan, started.elapsed());
    }

    /// Reads the planned steps from `from` on into one shared payload buffer from the pool,
    /// up to the one that brings it to `piece_bytes`; the piece, and where the next begins
    /// (`scratch.planned.len()` once the chunk is done).
    fn load_piece(&self, scratch: &mut Scratch, from: usize) -> (Chunk, usize) {
        let started = Instant::now();
        let buffers = self.dataset.chunk_buffers();
        let mut data = buffers.take();
        let planned = std::mem::take(&mut scratch.planned);
        // One allocation per piece at most: growing the buffer record by record would copy
        // it each time it doubles (and fault in its pages each time).
        let need = self.chunk_bytes(&planned[from..]).min(self.piece_bytes);
        data.reserve(need.saturating_sub(data.len()));
        let mut used = 0;
        // Payload bytes of the piece (decoded), in the chunk buffer or shared: for the stats.
        let mut payload_bytes = 0u64;
        scratch.per_source.resize(self.dataset.caches().len(), 0);
        scratch.located.clear();
        let mut next = from;
        for &(step, position, sample) in &planned[from..] {
            next += 1;
            if let Some(failed_step) = scratch.failed {
                scratch
                    .located
                    .push(Err(DatasetError::SkippedAfterError { step, failed_step }));
                continue;
            }
            let located = self.locate((step, position, sample), scratch, &mut data, used);
            match &located {
                Ok(Located {
                    payload: Placed::InChunk(range),
                    ..
                }) => {
                    used = range.end;
                    payload_bytes += range.len() as u64;
                }
                Ok(Located {
                    payload: Placed::Shared(bytes),
                    ..
                }) => payload_bytes += bytes.len() as u64,
                Err(_) => scratch.failed = Some(step),
            }
            if let (Ok(_), Some(planned)) = (&located, sample) {
                if let Some(count) = scratch.per_source.get_mut(planned.cache) {
                    *count += 1;
                }
            }
            scratch.located.push(located);
            if used >= self.piece_bytes {
                break;
            }
        }
        scratch.planned = planned;
        scratch.shared.clear();
        self.stats.add_bytes_read(payload_bytes);
        for (source, count) in scratch.per_source.iter_mut().enumerate() {
            if *count > 0 {
                self.stats.add_source(source, std::mem::take(count));
            }
        }
        self.stats.add_time(Stage::Read, started.elapsed());
        let data = Bytes::from_owner(PooledBuffer::new(data, used, buffers));
        let piece = scratch
            .located
            .drain(..)
            .map(|item| {
                item.map(|l| LoadedSample {
                    step: l.step,
                    global_position: l.global_position,
                    padding: self.partition.is_padding(l.step),
                    key: l.key,
                    payload: match l.payload {
                        Placed::InChunk(range) => data.slice(range),
                        Placed::Shared(bytes) => bytes,
                    },
                })
            })
            .collect();
        (piece, next)
    }
}

/// What a loading thread reuses from chunk to chunk.
#[derive(Default)]
struct Scratch {
    sample: SampleBuf,
    /// The step of the chunk being loaded that failed: the rest of the chunk is skipped.
    failed: Option<u64>,
    /// The next planned step of the chunk being loaded (the inline loader's, between pieces).
    next: usize,
    located: Vec<Result<Located, DatasetError>>,
    /// The shared shard bytes this chunk's samples are slices of: (cache, shard, bytes).
    shared: Vec<(usize, u64, Bytes)>,
    /// The chunk's steps: step, global position and sample.
    planned: Vec<(u64, u64, Option<PlannedSample>)>,
    /// Reads the plan at the chunk's positions.
    cursor: Option<PlanCursor>,
    /// What this thread tells shard sources of the steps ahead.
    hints: ShardHints,
    /// Samples of the piece being loaded per cache, added to the stats once per piece.
    per_source: Vec<u64>,
}

impl Scratch {
    /// Shard `shard` of cache `cache` as one `Bytes` for this chunk, made from `bytes` the
    /// first time.
    fn shared_bytes(&mut self, cache: usize, shard: u64, bytes: SharedShard) -> &Bytes {
        let at = match self
            .shared
            .iter()
            .position(|(c, s, _)| (*c, *s) == (cache, shard))
        {
            Some(at) => at,
            None => {
                self.shared
                    .push((cache, shard, Bytes::from_owner(SharedOwner(bytes))));
                self.shared.len() - 1
            }
        };
        &self.shared[at].2
    }
}

/// Shared shard bytes as the owner of a `Bytes`.
struct SharedOwner(SharedShard);

impl AsRef<[u8]> for SharedOwner {
    fn as_ref(&self) -> &[u8] {
        (*self.0).as_ref()
    }
}

/// Consecutive steps' samples, in step order: a chunk, or a piece of one.
type Chunk = VecDeque<Result<LoadedSample, DatasetError>>;

/// A prefetch worker: the channel it fills with chunks of consecutive steps, and its thread.
type Worker = (Receiver<Chunk>, JoinHandle<()>);

/// Iterates one rank's share of one epoch in the plan's order, whatever the number of workers.
pub struct Loader {
    steps: Arc<Steps>,
    next_step: u64,
    /// Chunks the read-ahead has been told are yielded.
    finished_chunks: u64,
    /// Steps of the chunk being yielded not received yet (its later pieces).
    chunk_left: u64,
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
        let stats = Arc::new(LoaderStats::new(dataset.caches().len()));
        let planning = Instant::now();
        let topology = Topology::new(config.world_size.max(1), config.ranks_per_node.max(1))?;
        let (plan, start) = dataset.plan_for(
            &config.plan,
            config.epoch,
            topology,
            config.policy,
            config.resume.as_ref(),
        )?;
        let plan = Arc::new(plan);
        let partition = Partition::new(config.rank, topology, config.policy, &start)?;
        stats.add_time(Stage::Plan, planning.elapsed());
        let len = partition.len();
        let prefetch = config.prefetch.max(1);
        let chunk_steps = prefetch.min(MAX_CHUNK_STEPS);
        // A worker holds the piece it fills (or is handing over) plus `queue` sent ones:
        // (queue + 1) × chunk_steps <= prefetch.
        // (The channel allocates its slots up front, hence the cap on absurd values.)
        let queue = (prefetch / chunk_steps - 1).min(MAX_QUEUED_CHUNKS);
        // Pieces in flight: each worker's queue, the one it sends and the one it fills, and
        // the consumer's; together they hold about `prefetch_bytes`.
        let pieces = (config.workers as u64)
            .saturating_mul(queue as u64 + 2)
            .saturating_add(1);
        let prefetch_bytes = config.prefetch_bytes.unwrap_or(DEFAULT_PREFETCH_BYTES);
        let piece_bytes = usize::try_from((prefetch_bytes / pieces).max(1)).unwrap_or(usize::MAX);
        let hints = dataset.has_shard_sources();
        let steps = Arc::new(Steps {
            dataset,
            plan,
            partition,
            start,
            chunk_steps: chunk_steps as u64,
            piece_bytes,
            ramp: ramp_chunks(chunk_steps as u64),
            read_ahead: ReadAhead::default(),
            hints,
            first_chunk: FirstChunk::default(),
            stats,
        });
        let workers = (0..config.workers)
            .map(|w| spawn_worker(&steps, w as u64, config.workers as u64, len, queue))
            .collect();
        Ok(Self {
            steps,
            next_step: 0,
            finished_chunks: 0,
            chunk_left: 0,
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

    /// The state after the samples yielded so far: resume from it on any topology (world size
    /// and ranks per node) and with any number of workers, and every rank continues with what
    /// no rank has read. Ranks in lockstep produce identical states.
    pub fn state(&self) -> IterState {
        self.steps
            .partition
            .state_after(&self.steps.start, self.next_step)
    }

    /// This rank's share: its topology, node and the positions it reads.
    pub fn rank_partition(&self) -> &Partition {
        &self.steps.partition
    }

    /// The epoch's plan, cut for the topology the epoch started on.
    pub fn plan(&self) -> &EpochPlan {
        &self.steps.plan
    }

    /// What the loader has done so far (see [`StatsSnapshot`]); its batches are the pieces
    /// its workers hand over (chunks of up to `min(prefetch, 256)` steps), its sources the
    /// dataset's caches, counted in samples.
    pub fn stats(&self) -> StatsSnapshot {
        self.steps.stats.snapshot()
    }

    /// The loader's counters, to read from another thread while it runs.
    pub fn stats_handle(&self) -> Arc<LoaderStats> {
        Arc::clone(&self.steps.stats)
    }
}

/// The most steps a chunk (one channel hand-off, one payload buffer) holds: with a larger
/// `prefetch`, workers queue more chunks rather than larger ones.
const MAX_CHUNK_STEPS: usize = 256;

/// The most chunks a worker's queue holds (about a million samples).
const MAX_QUEUED_CHUNKS: usize = 4096;

/// How many chunks ramp up to `chunk_steps`: sizes 1, 2, 4, ... below it.
fn ramp_chunks(chunk_steps: u64) -> u32 {
    u64::BITS - chunk_steps.saturating_sub(1).leading_zeros()
}

impl Steps {
    /// The first step of chunk `chunk` (before clamping to the share's length).
    fn chunk_start(&self, chunk: u64) -> u64 {
        let ramped = (1u64 << self.ramp) - 1;
        if chunk < u64::from(self.ramp) {
            (1u64 << chunk) - 1
        } else {
            ramped.saturating_add((chunk - u64::from(self.ramp)).saturating_mul(self.chunk_steps))
        }
    }

    /// The chunk that holds `step`.
    fn chunk_of(&self, step: u64) -> u64 {
        let ramped = (1u64 << self.ramp) - 1;
        if step < ramped {
            u64::from(u64::BITS - 1 - (step + 1).leading_zeros())
        } else {
            u64::from(self.ramp) + (step - ramped) / self.chunk_steps
        }
    }

    /// The steps of chunk `chunk` in an epoch share of `len` steps.
    fn chunk_range(&self, chunk: u64, len: u64) -> std::ops::Range<u64> {
        self.chunk_start(chunk).min(len)..self.chunk_start(chunk + 1).min(len)
    }
}

/// Starts worker `first` of `stride`: it reads chunks `first, first + stride, ...` (each
/// `chunk_steps` consecutive steps) and sends each chunk in pieces of at most `piece_bytes`
/// (one piece for most chunks), in order, through a channel that holds `queue` pieces (0:
/// each hand-over waits for the consumer).
fn spawn_worker(steps: &Arc<Steps>, first: u64, stride: u64, len: u64, queue: usize) -> Worker {
    let (sender, receiver) = sync_channel(queue);
    let steps = Arc::clone(steps);
    let handle = std::thread::spawn(move || {
        let mut scratch = Scratch::default();
        let mut opener = (first == 0).then(|| OpenOnDrop(&steps.first_chunk));
        if opener.is_none() && steps.hints {
            steps.first_chunk.wait();
        }
        let mut chunk = first;
        while steps.chunk_start(chunk) < len {
            steps.begin_chunk(steps.chunk_range(chunk, len), &mut scratch);
            let mut next = 0;
            while next < scratch.planned.len() {
                let (piece, after) = steps.load_piece(&mut scratch, next);
                next = after;
                drop(opener.take());
                // A closed channel means the loader was dropped: stop quietly.
                if sender.send(piece).is_err() {
                    return;
                }
            }
            chunk += stride;
        }
    });
    (receiver, handle)
}

/// Why a chunk was not received.
enum Received {
    /// The process's interrupt hook asked the wait to stop.
    Interrupted,
    /// The worker is gone.
    Stopped,
}

/// The next chunk from `receiver`, asking the process's interrupt hook between polls: a
/// worker may wait minutes on a store, and only the waiting thread can hear Ctrl-C.
fn receive<T>(receiver: &Receiver<T>) -> Result<T, Received> {
    use std::sync::mpsc::RecvTimeoutError;
    loop {
        match receiver.recv_timeout(durable_fs::INTERRUPT_POLL) {
            Ok(value) => return Ok(value),
            Err(RecvTimeoutError::Disconnected) => return Err(Received::Stopped),
            Err(RecvTimeoutError::Timeout) if durable_fs::wait_interrupted() => {
                return Err(Received::Interrupted)
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

impl Iterator for Loader {
    type Item = Result<LoadedSample, DatasetError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next_step >= self.len {
            return None;
        }
        let step = self.next_step;
        if self.ready.is_empty() {
            let asked = Instant::now();
            let chunk = self.steps.chunk_of(step);
            if self.chunk_left == 0 {
                // Every chunk before this one is fully yielded (said once, also when the wait
                // for this one is interrupted and asked again).
                if chunk > 0 && self.finished_chunks < chunk {
                    let done = self.steps.chunk_range(chunk - 1, self.len);
                    self.steps.read_ahead.finish(done.end - done.start);
                    self.finished_chunks = chunk;
                }
                let range = self.steps.chunk_range(chunk, self.len);
                self.chunk_left = range.end - range.start;
                if self.workers.is_empty() {
                    self.steps.begin_chunk(range, &mut self.inline);
                    self.inline.next = 0;
                }
            }
            if self.workers.is_empty() {
                let from = self.inline.next;
                let (piece, next) = self.steps.load_piece(&mut self.inline, from);
                self.inline.next = next;
                self.ready = piece;
            } else {
                // Worker `chunk % n` produces exactly the chunks congruent to it, in order and
                // piece by piece, so receiving round-robin restores the plan's order without a
                // reorder buffer.
                let worker = usize::try_from(chunk % self.workers.len() as u64).unwrap_or(0);
                match receive(&self.workers[worker].0) {
                    Ok(samples) => self.ready = samples,
                    Err(Received::Interrupted) => {
                        return Some(Err(DatasetError::Interrupted { step }))
                    }
                    Err(Received::Stopped) => return Some(Err(DatasetError::WorkerStopped)),
                }
            }
            self.chunk_left = self.chunk_left.saturating_sub(self.ready.len() as u64);
            self.steps
                .stats
                .delivered(asked, self.ready.len() as u64, 0);
        }
        self.next_step += 1;
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: small known values
mod tests {
    use super::*;
    use crate::HINT_SHARDS;
    use dsrt_plan::Shuffle;
    use dsrt_reader::{Cache, OpenOptions};
    use dsrt_schema::{Column, ColumnType, Row, Schema};
    use dsrt_writer::{CacheWriter, WriterOptions};

    /// One cache of `samples` small payloads in several shards.
    fn dataset(root: &std::path::Path, samples: i64) -> Arc<Dataset> {
        let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
        let path = root.join("cache");
        let mut writer = CacheWriter::create(
            &path,
            WriterOptions::new("read-ahead", schema).max_shard_bytes(4096),
        )
        .unwrap();
        for i in 0..samples {
            writer
                .add(format!("sample {i}").as_bytes(), &Row::new().with("n", i))
                .unwrap();
        }
        writer.finish().unwrap();
        Arc::new(Dataset::open(&[path], OpenOptions::default()).unwrap())
    }

    fn config(workers: usize, prefetch: usize) -> LoaderConfig {
        LoaderConfig {
            plan: PlanConfig {
                seed: 5,
                shuffle: Shuffle::Full,
                ..PlanConfig::default()
            },
            world_size: 1,
            workers,
            prefetch,
            ..LoaderConfig::default()
        }
    }

    /// What `prefetch` promises, counted exactly rather than timed: at no point have more than
    /// `workers × prefetch` samples plus the chunk being consumed been read (or been being
    /// read) ahead of the consumer, and chunks hold `min(prefetch, 256)` steps. The order is
    /// the same for every number of workers and every prefetch.
    #[test]
    fn samples_read_ahead_stay_within_workers_times_prefetch_plus_one_chunk() {
        let root = tempfile::tempdir().unwrap();
        let dataset = dataset(root.path(), 1500);
        let reference: Vec<SampleKey> = Loader::new(Arc::clone(&dataset), config(0, 256))
            .unwrap()
            .map(|s| s.unwrap().key)
            .collect();
        assert_eq!(reference.len(), 1500);
        for workers in [0, 1, 2, 3] {
            for prefetch in [1, 2, 7, 16, 100, 256, 300, 512, 1000] {
                let mut loader =
                    Loader::new(Arc::clone(&dataset), config(workers, prefetch)).unwrap();
                let chunk = prefetch.min(256) as u64;
                assert_eq!(loader.steps.chunk_steps, chunk);
                let mut keys = Vec::new();
                for (i, sample) in loader.by_ref().enumerate() {
                    keys.push(sample.unwrap().key);
                    // A consumer that sometimes lags, so the workers run as far ahead as they
                    // may; the bound does not depend on it.
                    if i % 97 == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
                assert_eq!(keys, reference, "{workers} workers, prefetch {prefetch}");
                let max = loader.steps.read_ahead.max.load(Ordering::SeqCst);
                let bound = workers as u64 * prefetch as u64 + chunk;
                assert!(
                    max <= bound,
                    "{workers} workers, prefetch {prefetch}: {max} samples read ahead, more \
                     than {bound}"
                );
                assert!(max >= chunk, "at least the first chunk is read ahead");
            }
        }
    }

    /// Chunks tile the share: the ramp (1, 2, 4, ...) then chunks of `chunk_steps`, and
    /// `chunk_of` finds each step's chunk.
    #[test]
    fn chunks_ramp_up_then_tile_the_share() {
        let root = tempfile::tempdir().unwrap();
        let dataset = dataset(root.path(), 700);
        for prefetch in [1, 2, 3, 7, 100, 256, 1000] {
            let loader = Loader::new(Arc::clone(&dataset), config(0, prefetch)).unwrap();
            let steps = &loader.steps;
            let mut next = 0;
            let mut chunk = 0;
            while next < 700 {
                let range = steps.chunk_range(chunk, 700);
                assert_eq!(range.start, next, "prefetch {prefetch}, chunk {chunk}");
                assert!(!range.is_empty());
                let expected = if chunk < u64::from(steps.ramp) {
                    1 << chunk
                } else {
                    steps.chunk_steps
                };
                assert_eq!(range.end - range.start, expected.min(700 - next));
                for step in range.clone() {
                    assert_eq!(
                        steps.chunk_of(step),
                        chunk,
                        "prefetch {prefetch}, step {step}"
                    );
                }
                next = range.end;
                chunk += 1;
            }
            assert!((1u64 << steps.ramp) - 1 < steps.chunk_steps.max(1) * 2);
        }
    }

    /// Serves the cache's own shard files and records every hint; reads of `broken` fail.
    struct Recording {
        dir: std::path::PathBuf,
        hints: std::sync::Mutex<Vec<Vec<u64>>>,
        broken: Option<u64>,
        reads: std::sync::atomic::AtomicU64,
    }

    impl Recording {
        /// Serves the shards under `dir`; reads of shard `broken` fail.
        fn of(dir: &std::path::Path, broken: Option<u64>) -> Arc<Self> {
            Arc::new(Self {
                dir: dir.to_path_buf(),
                hints: std::sync::Mutex::new(Vec::new()),
                broken,
                reads: AtomicU64::new(0),
            })
        }
    }

    impl dsrt_reader::ShardSource for Recording {
        fn read_at(
            &self,
            shard: u64,
            offset: u64,
            buf: &mut [u8],
        ) -> Result<(), dsrt_reader::SourceError> {
            use std::os::unix::fs::FileExt;
            self.reads.fetch_add(1, Ordering::Relaxed);
            if self.broken == Some(shard) {
                let down = std::io::Error::other("the store is down");
                return Err(dsrt_reader::SourceError::new(down, true));
            }
            let name = dsrt_manifest::shard_file_name(shard as usize);
            let file = std::fs::File::open(self.dir.join("shards").join(name))?;
            Ok(file.read_exact_at(buf, offset)?)
        }

        fn will_need(&self, shards: &[u64]) {
            self.hints.lock().unwrap().push(shards.to_vec());
        }
    }

    /// A loader over a cache whose shards come from a source tells it, chunk by chunk, which
    /// shards the coming steps need, in the order they first need them.
    #[test]
    fn a_loader_hints_the_shards_it_will_need_in_plan_order() {
        let root = tempfile::tempdir().unwrap();
        let local = dataset(root.path(), 600);
        let path = local.caches()[0].path.clone();
        let source = Recording::of(&path, None);
        let cache = Cache::open_with_source(&path, OpenOptions::default(), source.clone()).unwrap();
        let sourced = Arc::new(Dataset::from_caches(vec![(path, cache)]).unwrap());
        let keys: Vec<SampleKey> = Loader::new(Arc::clone(&sourced), config(0, 100))
            .unwrap()
            .map(|s| s.unwrap().key)
            .collect();
        let plain: Vec<SampleKey> = Loader::new(local, config(0, 100))
            .unwrap()
            .map(|s| s.unwrap().key)
            .collect();
        assert_eq!(keys, plain);
        let hints = source.hints.lock().unwrap();
        // One hint per chunk: 7 ramp chunks (1, 2, ..., 64 steps) then chunks of 100.
        assert_eq!(hints.len(), 7 + 5);
        // The first hint lists, in order of first use, the shards of the steps ahead.
        let index = sourced.caches()[0].cache.index();
        let mut expected: Vec<u64> = Vec::new();
        for key in &keys {
            let shard = index.row(key.sample_id).unwrap().shard_id;
            if expected.len() < HINT_SHARDS && !expected.contains(&shard) {
                expected.push(shard);
            }
        }
        assert_eq!(hints[0], expected);
        assert!(expected.len() > 1, "the test needs several shards");
    }

    /// However many samples a shard holds, hints reach [`HINT_SHARDS`] shards ahead (what a
    /// remote cache's prefetch draws from): the look-ahead goes on from hint to hint instead of
    /// a fixed number of steps, here about 7,000 steps per shard.
    #[test]
    fn hints_reach_sixteen_shards_ahead_however_many_samples_a_shard_holds() {
        let root = tempfile::tempdir().unwrap();
        let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
        let path = root.path().join("dense");
        let options = WriterOptions::new("dense", schema).max_shard_bytes(200_000);
        let mut writer = CacheWriter::create(&path, options).unwrap();
        for i in 0..200_000i64 {
            writer
                .add(&i.to_le_bytes(), &Row::new().with("n", i))
                .unwrap();
        }
        writer.finish().unwrap();
        let source = Recording::of(&path, None);
        let cache = Cache::open_with_source(&path, OpenOptions::default(), source.clone()).unwrap();
        let shards = cache.manifest().description().shards.len() as u64;
        assert!(shards > HINT_SHARDS as u64 + 2, "{shards} shards");
        let per_shard = 200_000 / shards;
        assert!(per_shard > 4_096, "{per_shard} samples per shard");
        let dataset = Arc::new(Dataset::from_caches(vec![(path, cache)]).unwrap());
        let config = LoaderConfig {
            plan: PlanConfig {
                seed: 5,
                shuffle: Shuffle::Sequential,
                ..PlanConfig::default()
            },
            world_size: 1,
            workers: 0,
            prefetch: 256,
            ..LoaderConfig::default()
        };
        let mut loader = Loader::new(dataset, config).unwrap();
        for _ in 0..2_000 {
            loader.next().unwrap().unwrap();
        }
        let hints = source.hints.lock().unwrap();
        let last = hints.last().unwrap();
        assert_eq!(last.len(), HINT_SHARDS, "{last:?}");
        // In plan order: the chunk's own shard, then the next ones.
        assert_eq!(*last, (0..HINT_SHARDS as u64).collect::<Vec<_>>());
    }

    /// A chunk stops at its first failed step: the rest of it is reported as skipped, not
    /// read (so a dead store costs one step's retries), and later chunks are read again.
    #[test]
    fn a_chunk_stops_at_its_first_error() {
        let root = tempfile::tempdir().unwrap();
        let local = dataset(root.path(), 600);
        let path = local.caches()[0].path.clone();
        let source = Recording::of(&path, Some(1));
        let cache = Cache::open_with_source(&path, OpenOptions::default(), source.clone()).unwrap();
        let sourced = Arc::new(Dataset::from_caches(vec![(path, cache)]).unwrap());
        let index = sourced.caches()[0].cache.index();
        let mut failed_at = None;
        let mut reads_expected = 0;
        let mut skipped = 0;
        let loader = Loader::new(Arc::clone(&sourced), config(0, 256)).unwrap();
        let chunk_of: Vec<u64> = (0..600).map(|s| loader.steps.chunk_of(s)).collect();
        for (step, item) in loader.enumerate() {
            match item {
                Ok(sample) => {
                    reads_expected += 1;
                    assert_ne!(index.row(sample.key.sample_id).unwrap().shard_id, 1);
                }
                Err(DatasetError::SkippedAfterError {
                    step: s,
                    failed_step,
                }) => {
                    assert_eq!(s, step as u64);
                    assert_eq!(Some(failed_step), failed_at.map(|(f, _)| f));
                    assert_eq!(
                        chunk_of[step],
                        failed_at.unwrap().1,
                        "only within the chunk"
                    );
                    skipped += 1;
                }
                Err(DatasetError::Cache(_)) => {
                    reads_expected += 1;
                    assert!(
                        failed_at.is_none_or(|(_, c)| c != chunk_of[step]),
                        "a second failure in one chunk: step {step} was read"
                    );
                    failed_at = Some((step as u64, chunk_of[step]));
                }
                Err(other) => panic!("{other}"),
            }
        }
        assert!(failed_at.is_some() && skipped > 0);
        assert_eq!(source.reads.load(Ordering::Relaxed), reads_expected);
    }
}
