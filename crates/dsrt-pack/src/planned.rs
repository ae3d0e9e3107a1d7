//! Packing with shards planned ahead: for inputs whose payload lengths are known before they
//! are read (the files of a tree), whole shards go to the workers.
//!
//! The streaming pipeline ([`crate::pack`]) funnels every byte through one appending thread,
//! which copies it into the shard and hands it on to be hashed and written: its bytes reach
//! three threads on two cores, each from a cold cache. Here the calling thread runs the
//! rotation rule over the known lengths ([`CacheWriter::plan_sample`], which also writes the
//! index and metadata rows), and each shard, once its last sample is placed, goes whole to a
//! worker that reads its files, hashes and writes them while they are still in its cache, as
//! a plain copy would. The cache is byte for byte the one the streaming pipeline writes.

use crate::pipeline::{join_workers, message, stopping};
use crate::{PackError, PackOptions, PackStats};
use dsrt_schema::ValueRef;
use dsrt_writer::{CacheWriter, FinishedShard, PlannedShardWriter};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TrySendError};
use std::sync::{Mutex, PoisonError};

/// Receives each planned sample: its payload length and its metadata values (schema order),
/// borrowed, so planning allocates nothing per sample.
pub type PlannedSampleFn<'a> = dyn FnMut(usize, &[ValueRef<'_>]) -> Result<(), PackError> + 'a;

/// What a [`Convert`](crate::Convert) whose every sample's payload length and metadata are known before any
/// payload is read (the files of a tree, by their sizes) also offers, through
/// [`Convert::plan_ahead`](crate::Convert::plan_ahead), so [`crate::pack`] can place the shards ahead and write them side
/// by side. `U` is the conversion's unit.
pub trait PlanAhead<U>: Sync {
    /// The samples of `unit`, in order, through `sample(payload_len, values)` (values in
    /// schema order), without reading any payload.
    fn plan_unit(&self, unit: &U, sample: &mut PlannedSampleFn<'_>) -> Result<(), PackError>;

    /// Reads the payload of sample `index` of `unit` into `payload` (cleared first). A payload
    /// whose length is no longer the one [`Self::plan_unit`] gave is an error naming the input.
    fn read_payload(&self, unit: &U, index: usize, payload: &mut Vec<u8>) -> Result<(), PackError>;
}

/// The units with their planning, as the workers and the calling thread use them.
struct Planned<'a, U> {
    units: &'a [U],
    plan: &'a dyn PlanAhead<U>,
}

/// One planned shard for a worker: its writer, and where its samples start.
struct ShardJob {
    writer: PlannedShardWriter,
    unit: usize,
    offset: usize,
    samples: u64,
}

/// What a worker hands back for one shard.
type ShardResult = (u64, Result<FinishedShard, PackError>);

/// Packs `units` into `writer` byte for byte as the streaming pipeline does, with the shards
/// planned ahead by `plan` and written whole by `options.jobs` workers. The writer must be
/// able to plan ([`CacheWriter::can_plan`]).
pub(crate) fn pack_planned<U: Sync>(
    units: &[U],
    plan: &dyn PlanAhead<U>,
    writer: &mut CacheWriter,
    options: &PackOptions<'_>,
) -> Result<PackStats, PackError> {
    let convert = &Planned { units, plan };
    let jobs = options.job_count().max(1);
    let (job_tx, job_rx) = mpsc::sync_channel::<ShardJob>(jobs);
    let job_rx = Mutex::new(job_rx);
    let (result_tx, result_rx) = mpsc::channel::<ShardResult>();
    let written = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                let shared = Shared {
                    jobs: &job_rx,
                    written: &written,
                    stop: &stop,
                    cancel: &options.cancel,
                };
                let result_tx = result_tx.clone();
                scope.spawn(move || worker(convert, &shared, &result_tx))
            })
            .collect();
        drop(result_tx);
        let mut run = Run {
            writer,
            options,
            job_tx: Some(job_tx),
            results: &result_rx,
            waiting: BTreeMap::new(),
            most_waiting: 4 * jobs,
            written: &written,
        };
        let planned = run.plan_and_write(convert);
        if planned.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        run.job_tx = None;
        drop(run);
        join_workers(workers, planned)
    })
}

/// What the workers share.
struct Shared<'a> {
    jobs: &'a Mutex<Receiver<ShardJob>>,
    /// Samples written, for progress.
    written: &'a AtomicU64,
    /// Set when the run failed elsewhere.
    stop: &'a AtomicBool,
    cancel: &'a durable_fs::CancelToken,
}

/// A worker: takes shard jobs until there are none, writing each shard whole.
fn worker<U: Sync>(convert: &Planned<'_, U>, shared: &Shared<'_>, results: &Sender<ShardResult>) {
    let mut payload = Vec::new();
    loop {
        let job = shared
            .jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recv();
        let Ok(job) = job else { return };
        let shard = job.writer.shard();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            write_shard(convert, job, &mut payload, shared)
        }))
        .unwrap_or_else(|panic| Err(PackError::WorkerPanicked(message(&*panic))));
        let failed = outcome.is_err();
        if results.send((shard, outcome)).is_err() || failed {
            return;
        }
    }
}

/// Reads, hashes and writes the samples of one shard in order.
fn write_shard<U: Sync>(
    convert: &Planned<'_, U>,
    job: ShardJob,
    payload: &mut Vec<u8>,
    shared: &Shared<'_>,
) -> Result<FinishedShard, PackError> {
    let ShardJob {
        mut writer,
        mut unit,
        mut offset,
        samples,
    } = job;
    let units = convert.units;
    let mut left = samples;
    while left > 0 {
        let Some(current) = units.get(unit) else {
            return Err(PackError::WorkerPanicked(format!(
                "shard {} was planned past the last unit",
                writer.shard()
            )));
        };
        let mut index = 0usize;
        convert.plan.plan_unit(current, &mut |_, values| {
            if index >= offset && left > 0 {
                if shared.cancel.is_cancelled() || shared.stop.load(Ordering::Relaxed) {
                    return Err(PackError::Cancelled);
                }
                convert.plan.read_payload(current, index, payload)?;
                writer.append(payload, values)?;
                shared.written.fetch_add(1, Ordering::Relaxed);
                left -= 1;
            }
            index += 1;
            Ok(())
        })?;
        unit += 1;
        offset = 0;
    }
    Ok(writer.finish()?)
}

/// The calling thread's side: plans every sample, dispatches each shard once complete and
/// adopts the finished shards in order.
struct Run<'r, 'o> {
    writer: &'r mut CacheWriter,
    options: &'r PackOptions<'o>,
    job_tx: Option<mpsc::SyncSender<ShardJob>>,
    results: &'r Receiver<ShardResult>,
    /// Finished shards that arrived before the ones ahead of them, each holding its file open.
    waiting: BTreeMap<u64, FinishedShard>,
    /// How many may wait before no more shards are handed out: four per job, room for shards
    /// of uneven sizes to finish out of order. A worker slowed on one shard (a loaded machine,
    /// a large or slow input) would otherwise let the others run ahead by thousands of shards,
    /// each an open file.
    most_waiting: usize,
    written: &'r AtomicU64,
}

impl Run<'_, '_> {
    fn plan_and_write<U: Sync>(
        &mut self,
        convert: &Planned<'_, U>,
    ) -> Result<PackStats, PackError> {
        let mut stats = PackStats::default();
        // The shard being planned: where its first sample is, and how many it holds.
        let mut open: Option<(usize, usize, u64)> = None;
        let mut shards = 0u64;
        for (unit_index, unit) in convert.units.iter().enumerate() {
            let mut index = 0usize;
            let mut starts = Vec::new();
            convert.plan.plan_unit(unit, &mut |payload_len, values| {
                let placed = self.writer.plan_sample(payload_len, values)?;
                stats.samples += 1;
                stats.payload_bytes += payload_len as u64;
                if placed.starts_shard {
                    starts.push(index);
                }
                index += 1;
                Ok(())
            })?;
            // Dispatch outside the closure, which holds the writer.
            let mut next_start = starts.into_iter().peekable();
            let mut position = 0usize;
            while position < index {
                if next_start.peek() == Some(&position) {
                    next_start.next();
                    if let Some(done) = open.take() {
                        self.dispatch(done, shards - 1)?;
                    }
                    open = Some((unit_index, position, 0));
                    shards += 1;
                }
                let until = next_start.peek().copied().unwrap_or(index);
                if let Some(current) = open.as_mut() {
                    current.2 += (until - position) as u64;
                }
                position = until;
            }
            self.collect(false)?;
        }
        if let Some(done) = open.take() {
            self.dispatch(done, shards - 1)?;
        }
        self.job_tx = None;
        while self.writer_adopted() < shards {
            self.collect(true)?;
        }
        Ok(stats)
    }

    fn writer_adopted(&self) -> u64 {
        self.writer.shards_written() as u64
    }

    /// Hands shard `shard` (whose samples start at `(unit, offset)`) to a worker, adopting
    /// finished shards while the workers are all busy.
    fn dispatch(
        &mut self,
        (unit, offset, samples): (usize, usize, u64),
        shard: u64,
    ) -> Result<(), PackError> {
        // The shard the waiting ones wait for was handed out before them, so a worker is
        // writing it: waiting for it ends.
        while self.waiting.len() >= self.most_waiting {
            self.collect(true)?;
        }
        let mut job = ShardJob {
            writer: self.writer.planned_shard_writer(shard)?,
            unit,
            offset,
            samples,
        };
        loop {
            let Some(tx) = &self.job_tx else {
                return Err(PackError::Cancelled);
            };
            match tx.try_send(job) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Full(back)) => {
                    job = back;
                    self.collect(true)?;
                }
                Err(TrySendError::Disconnected(_)) => {
                    return Err(PackError::WorkerPanicked(
                        "every worker stopped before the last shard".into(),
                    ))
                }
            }
        }
    }

    /// Adopts what the workers finished, in shard order; with `wait`, waits up to a poll
    /// interval for something to arrive first. Reports progress and answers a cancellation.
    fn collect(&mut self, wait: bool) -> Result<(), PackError> {
        let first = if wait {
            match self.results.recv_timeout(durable_fs::INTERRUPT_POLL) {
                Ok(result) => Some(result),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(PackError::WorkerPanicked(
                        "every worker stopped before the last shard".into(),
                    ))
                }
            }
        } else {
            None
        };
        for (shard, finished) in first.into_iter().chain(self.results.try_iter()) {
            self.waiting.insert(shard, finished?);
        }
        loop {
            let next = self.writer_adopted();
            let Some(shard) = self.waiting.remove(&next) else {
                break;
            };
            self.writer.adopt_shard(shard)?;
        }
        if let Some(progress) = self.options.progress {
            progress(self.written.load(Ordering::Relaxed));
        }
        if stopping(self.options) {
            self.options.cancel.cancel();
            return Err(PackError::Cancelled);
        }
        Ok(())
    }
}
