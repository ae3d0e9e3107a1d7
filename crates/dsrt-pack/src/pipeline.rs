//! The parallel pipeline: workers convert and encode units, the calling thread appends them in
//! unit order.
//!
//! Unit `k`'s samples travel through a bounded queue of their own, which its worker hands
//! to the appending thread; that thread drains the queues in unit order, so the cache is the
//! one a single job writes. A worker claims unit `k` only once fewer than `2 * jobs` units lie
//! between it and the unit being appended, so memory holds at most that many units' queues
//! (each `queue` samples, or `queue_bytes` of payload when that allows more; see
//! `unit_queue.rs`), however far the slowest unit lags. Every unit ends with an explicit
//! end marker: a worker that dies mid-unit (a panic) can never pass for a short unit.

use crate::unit_queue::{unit_queue, QueueReceiver, QueueSender};
use crate::{PackError, PlanAhead};
use dsrt_schema::{Schema, Value};
use dsrt_writer::{CacheWriter, EncodedSample, SampleEncoder, WriterOptions};
use durable_fs::CancelToken;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Condvar, Mutex, PoisonError};

/// A conversion: input units in cache order, each turned into samples in order.
pub trait Convert: Sync {
    /// One input unit (a batch of files, a row group, an archive).
    type Unit: Sync;

    /// The units, in the order their samples go into the cache.
    fn units(&self) -> &[Self::Unit];

    /// Turns `unit` into its samples, in order, through `emit` (on a worker thread).
    fn convert(&self, unit: &Self::Unit, emit: &mut Emit<'_>) -> Result<(), PackError>;

    /// The schema of the cache it fills.
    fn cache_schema(&self) -> Schema;

    /// How many input samples the scan left out (`WebDataset` with `skip_bad`); `None` for an
    /// input that never skips one (the default).
    fn skipped_count(&self) -> Option<usize> {
        None
    }

    /// The options of the writer of the cache it fills: `options` made for its schema, with
    /// its manifest keys.
    fn writer_options(&self, options: impl FnOnce(Schema) -> WriterOptions) -> WriterOptions
    where
        Self: Sized,
    {
        let mut options = options(self.cache_schema());
        for (key, value) in self.manifest_keys() {
            options = options.manifest_key(key, value);
        }
        options
    }

    /// Top-level manifest keys the cache it fills carries (a token input's `tokens`), which
    /// the caller gives its writer ([`dsrt_writer::WriterOptions::manifest_key`]); default
    /// none.
    fn manifest_keys(&self) -> Vec<(String, serde_json::Value)> {
        Vec::new()
    }

    /// Where every sample's payload length and metadata are known before its payload is read:
    /// the planning [`pack`] then uses to write whole shards side by side (the default: none).
    fn plan_ahead(&self) -> Option<&dyn PlanAhead<Self::Unit>> {
        None
    }
}

/// How [`pack`] runs.
pub struct PackOptions<'a> {
    jobs: usize,
    queue: usize,
    queue_bytes: usize,
    plan_ahead: bool,
    pub(crate) cancel: CancelToken,
    pub(crate) progress: Option<&'a dyn Fn(u64)>,
}

impl std::fmt::Debug for PackOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackOptions")
            .field("jobs", &self.jobs)
            .field("queue", &self.queue)
            .field("queue_bytes", &self.queue_bytes)
            .finish_non_exhaustive()
    }
}

impl Default for PackOptions<'_> {
    fn default() -> Self {
        Self {
            jobs: std::thread::available_parallelism().map_or(1, usize::from),
            queue: 64,
            queue_bytes: 8 << 20,
            plan_ahead: true,
            cancel: CancelToken::new(),
            progress: None,
        }
    }
}

impl<'a> PackOptions<'a> {
    /// Worker threads (at least 1; default: the CPUs available). The output does not depend
    /// on it.
    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = jobs.max(1);
        self
    }

    /// Samples each unit's queue holds before its worker waits (at least 1; default 64); see
    /// [`PackOptions::queue_bytes`].
    pub fn queue(mut self, samples: usize) -> Self {
        self.queue = samples.max(1);
        self
    }

    /// Payload bytes each unit's queue holds before its worker waits, when that is more than
    /// [`PackOptions::queue`] samples (default 8 MiB): small samples (token documents) queue
    /// up to the bytes, so the next unit's worker runs on while this one is appended; large
    /// ones (images) to the count.
    pub fn queue_bytes(mut self, bytes: usize) -> Self {
        self.queue_bytes = bytes;
        self
    }

    /// Whether a conversion that can plan its shards ahead ([`Convert::plan_ahead`]) does,
    /// when the writer allows it (uncompressed, empty): each shard is then written whole by
    /// one worker. Default on; the bytes are the same either way.
    pub fn plan_ahead(mut self, plan: bool) -> Self {
        self.plan_ahead = plan;
        self
    }

    /// A token that stops the run (with [`PackError::Cancelled`]) when it fires.
    pub fn cancel(mut self, token: CancelToken) -> Self {
        self.cancel = token;
        self
    }

    /// Called on the calling thread with the samples written so far: after each sample when
    /// appending, every poll interval (a tenth of a second) and after each shard when the
    /// shards are planned ahead.
    pub fn progress(mut self, progress: &'a dyn Fn(u64)) -> Self {
        self.progress = Some(progress);
        self
    }

    /// The worker threads a run uses.
    pub fn job_count(&self) -> usize {
        self.jobs
    }
}

/// Whether a writer that a run of `jobs` workers feeds (default: one per CPU) should hash and
/// write its shards on background threads ([`dsrt_writer::WriterOptions::io_threads`]): only
/// when the workers leave a CPU free. Where they fill every CPU those threads add work and
/// move every byte to a cold cache; on 2 CPUs the streamed pipeline ran 2.2x faster without
/// them. The bytes are the same either way.
pub fn writer_io_threads(jobs: Option<usize>) -> bool {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    jobs.unwrap_or(cpus) < cpus
}

/// What a run appended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PackStats {
    /// Samples appended.
    pub samples: u64,
    /// Their payload bytes (before compression).
    pub payload_bytes: u64,
}

/// What travels from a worker to the appending thread for one unit.
enum Item {
    Sample(EncodedSample),
    Failed(PackError),
    Done,
}

/// What a unit's queue carries.
type UnitSender = QueueSender<Item>;

/// Hands a unit's samples, encoded on the worker, to the appending thread.
pub struct Emit<'a> {
    encoder: &'a SampleEncoder,
    sender: &'a UnitSender,
    cancel: &'a CancelToken,
}

impl Emit<'_> {
    /// Encodes one sample (its metadata in schema order) and queues it; `input` names it in
    /// an error. Fails with [`PackError::Cancelled`] once the run is stopping.
    pub fn sample(
        &mut self,
        input: impl FnOnce() -> String,
        payload: Vec<u8>,
        values: Vec<Value>,
    ) -> Result<(), PackError> {
        if self.cancel.is_cancelled() {
            return Err(PackError::Cancelled);
        }
        let encoded = self
            .encoder
            .encode(payload, values)
            .map_err(|source| PackError::Encode {
                input: input(),
                source,
            })?;
        let bytes = encoded.payload_len();
        self.sender
            .send(Item::Sample(encoded), bytes)
            .map_err(|_| PackError::Cancelled)
    }

    /// The schema samples must fit.
    pub fn schema(&self) -> &dsrt_schema::Schema {
        self.encoder.schema()
    }
}

/// How far the appending thread is, for workers to wait on before claiming a unit.
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

struct GateState {
    appended_units: usize,
    stopped: bool,
}

impl Gate {
    /// Waits until unit `unit` is fewer than `ahead` units past the one being appended;
    /// `false` when the run stopped meanwhile.
    fn admit(&self, unit: usize, ahead: usize) -> bool {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = self
            .changed
            .wait_while(state, |s| !s.stopped && unit >= s.appended_units + ahead)
            .unwrap_or_else(PoisonError::into_inner);
        !state.stopped
    }

    fn set(&self, update: impl FnOnce(&mut GateState)) {
        update(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
        self.changed.notify_all();
    }
}

/// Runs `convert` on `options.jobs` workers and appends every sample to `writer` in unit
/// order. A conversion that knows its payload lengths ahead ([`Convert::plan_ahead`]) into an
/// uncompressed, empty writer has its shards planned first and each written whole by one
/// worker instead (see [`PlanAhead`]); the bytes are the same. On an error (the first in unit order), a cancellation or a worker's panic, it stops
/// every worker and returns the error; the writer then holds a partial cache, which the
/// caller discards (it has no manifest until the caller finishes it).
pub fn pack<C: Convert>(
    convert: &C,
    writer: &mut CacheWriter,
    options: &PackOptions<'_>,
) -> Result<PackStats, PackError> {
    let units = convert.units();
    if let Some(plan) = convert.plan_ahead().filter(|_| options.plan_ahead) {
        if writer.can_plan() {
            return crate::planned::pack_planned(units, plan, writer, options);
        }
    }
    let jobs = options.jobs.clamp(1, units.len().max(1));
    let encoder = writer.encoder();
    let next_unit = AtomicUsize::new(0);
    let gate = Gate {
        state: Mutex::new(GateState {
            appended_units: 0,
            stopped: false,
        }),
        changed: Condvar::new(),
    };
    let (handoff, handed) = mpsc::channel::<(usize, QueueReceiver<Item>)>();
    let (queue, queue_bytes, cancel) = (options.queue, options.queue_bytes, &options.cancel);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                let handoff = handoff.clone();
                let (gate, next_unit, encoder) = (&gate, &next_unit, &encoder);
                scope.spawn(move || loop {
                    let unit = next_unit.fetch_add(1, Ordering::SeqCst);
                    if unit >= units.len() || !gate.admit(unit, 2 * jobs) {
                        return;
                    }
                    let (sender, receiver) = unit_queue(queue, queue_bytes);
                    if handoff.send((unit, receiver)).is_err() {
                        return;
                    }
                    let mut emit = Emit {
                        encoder,
                        sender: &sender,
                        cancel,
                    };
                    let converted = catch_unwind(AssertUnwindSafe(|| {
                        convert.convert(&units[unit], &mut emit)
                    }))
                    .unwrap_or_else(|panic| Err(PackError::WorkerPanicked(message(&*panic))));
                    let last = match converted {
                        Ok(()) => Item::Done,
                        Err(error) => Item::Failed(error),
                    };
                    let failed = matches!(last, Item::Failed(_));
                    if sender.send(last, 0).is_err() || failed {
                        return;
                    }
                })
            })
            .collect();
        drop(handoff);
        let appended = append_in_order(units.len(), &handed, writer, options, &gate);
        gate.set(|s| s.stopped = true);
        drop(handed);
        join_workers(workers, appended)
    })
}

/// Waits for every worker; a panic becomes `result`'s error unless it already holds one.
pub(crate) fn join_workers<T>(
    workers: Vec<std::thread::ScopedJoinHandle<'_, ()>>,
    mut result: Result<T, PackError>,
) -> Result<T, PackError> {
    for worker in workers {
        if let Err(panic) = worker.join() {
            if result.is_ok() {
                result = Err(PackError::WorkerPanicked(message(&*panic)));
            }
        }
    }
    result
}

pub(crate) fn message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

/// Whether the run must stop now (its token, or the process's wait-interrupt hook).
pub(crate) fn stopping(options: &PackOptions<'_>) -> bool {
    options.cancel.is_cancelled() || durable_fs::wait_interrupted()
}

/// The appending side: drains unit 0's queue, then unit 1's, and so on.
fn append_in_order(
    units: usize,
    handed: &Receiver<(usize, QueueReceiver<Item>)>,
    writer: &mut CacheWriter,
    options: &PackOptions<'_>,
    gate: &Gate,
) -> Result<PackStats, PackError> {
    let mut stats = PackStats::default();
    let mut waiting: HashMap<usize, QueueReceiver<Item>> = HashMap::new();
    let stopped = |options: &PackOptions<'_>| {
        if stopping(options) {
            options.cancel.cancel();
            Err(PackError::Cancelled)
        } else {
            Ok(())
        }
    };
    for unit in 0..units {
        let queue = loop {
            if let Some(queue) = waiting.remove(&unit) {
                break queue;
            }
            match handed.recv_timeout(durable_fs::INTERRUPT_POLL) {
                Ok((at, queue)) => {
                    waiting.insert(at, queue);
                }
                Err(RecvTimeoutError::Timeout) => stopped(options)?,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(PackError::WorkerPanicked(format!(
                        "no worker took unit {unit}"
                    )))
                }
            }
        };
        loop {
            match queue.recv_timeout(durable_fs::INTERRUPT_POLL) {
                Ok(Item::Sample(sample)) => {
                    writer.add_encoded(&sample)?;
                    stats.samples += 1;
                    stats.payload_bytes += sample.payload_len() as u64;
                    if let Some(progress) = options.progress {
                        progress(stats.samples);
                    }
                    // A steady stream never times out: ask between samples too.
                    if stats.samples % 256 == 0 {
                        stopped(options)?;
                    }
                }
                Ok(Item::Done) => break,
                Ok(Item::Failed(error)) => return Err(error),
                Err(RecvTimeoutError::Timeout) => stopped(options)?,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(PackError::WorkerPanicked(format!(
                        "the worker of unit {unit} stopped before its end"
                    )))
                }
            }
        }
        gate.set(|s| s.appended_units = unit + 1);
    }
    Ok(stats)
}
