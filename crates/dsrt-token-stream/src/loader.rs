//! A rank's batches of an epoch, read ahead by worker threads, in the plan's order whatever the
//! number of workers.

use crate::batch::{BatchPool, TokenBatch};
use crate::rows::{RowBlock, RowCursor};
use crate::source::DocumentSource;
use crate::{TokenPlan, TokenState, TokenStreamError};
use dsrt_dataset::{LoaderStats, Stage, StatsSnapshot};
use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// How a [`TokenLoader`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoaderOptions {
    /// Rows per batch (at least 1; the epoch's last batch may be shorter).
    pub batch_size: usize,
    /// Threads reading ahead; 0 reads on the calling thread.
    pub workers: usize,
    /// Batches each worker may hold that the consumer has not received (at least 1).
    pub prefetch: usize,
    /// Whether batches come with their training columns derived ([`TokenBatch::expand`]) or
    /// compact (tokens and pieces, to cross a process boundary and be expanded there).
    pub expand: bool,
    /// The first batch to read (earlier ones are skipped, not read).
    pub first_batch: u64,
}

impl Default for LoaderOptions {
    fn default() -> Self {
        Self {
            batch_size: 8,
            workers: 2,
            prefetch: 2,
            expand: true,
            first_batch: 0,
        }
    }
}

/// What reading a batch needs, shared by the loader and its workers.
struct Shared<S> {
    plan: Arc<TokenPlan>,
    source: Arc<S>,
    pool: Arc<BatchPool>,
    batch_size: u64,
    expand: bool,
    /// What the loader has done (see [`TokenLoader::stats`]).
    stats: Arc<LoaderStats>,
}

/// What one reading thread reuses from batch to batch: its place in the stream, the rows and
/// token buffers of the batch it reads, and that batch's tokens per source. The loader's
/// threads read through one each, as does anything that reads single batches of a plan (the
/// Python binding's `_TokenPlan.read`, in a `DataLoader` worker).
pub struct BatchReader<S: DocumentSource> {
    cursor: RowCursor,
    rows: RowBlock,
    buf: S::Buf,
    /// Tokens of the batch being read per source, added to the stats once per batch.
    per_source: Vec<u64>,
}

impl<S: DocumentSource> std::fmt::Debug for BatchReader<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchReader").finish_non_exhaustive()
    }
}

impl<S: DocumentSource> BatchReader<S> {
    /// A reader of `plan`'s steps from `source`.
    pub fn new(plan: &TokenPlan, source: &S) -> Self {
        Self {
            cursor: RowCursor::new(plan, source),
            rows: RowBlock::default(),
            buf: S::Buf::default(),
            per_source: vec![0; source.sources()],
        }
    }

    /// Steps `steps` of `plan` as one batch (its columns derived when `expand`), its columns
    /// from `pool`; the time each stage took and each source's tokens are added to `stats`
    /// (the batch's delivery is the caller's to count).
    pub fn read(
        &mut self,
        plan: &TokenPlan,
        source: &S,
        steps: Range<u64>,
        pool: &Arc<BatchPool>,
        expand: bool,
        stats: &LoaderStats,
    ) -> Result<TokenBatch, TokenStreamError> {
        let started = Instant::now();
        self.cursor.read(plan, source, steps, &mut self.rows)?;
        let planned = Instant::now();
        stats.add_time(Stage::Plan, planned - started);
        source.will_need(&mut self.rows.pieces.iter().map(|p| (p.source as usize, p.doc)));
        let mut batch = TokenBatch::read(plan, source, &self.rows, &mut self.buf, pool)?;
        let read = Instant::now();
        stats.add_time(Stage::Read, read - planned);
        for piece in &self.rows.pieces {
            if let Some(count) = self.per_source.get_mut(piece.source as usize) {
                *count += u64::from(piece.len);
            }
        }
        for (source, count) in self.per_source.iter_mut().enumerate() {
            if *count > 0 {
                stats.add_source(source, std::mem::take(count));
            }
        }
        if expand {
            batch.expand(pool);
            stats.add_time(Stage::Assemble, read.elapsed());
        }
        Ok(batch)
    }
}

/// Batch `index` of `shared`'s plan, read by `reader`.
fn read_batch<S: DocumentSource>(
    reader: &mut BatchReader<S>,
    shared: &Shared<S>,
    index: u64,
) -> Result<TokenBatch, TokenStreamError> {
    let plan = shared.plan.as_ref();
    let start = index * shared.batch_size;
    let steps = start..(start + shared.batch_size).min(plan.len());
    reader.read(
        plan,
        shared.source.as_ref(),
        steps,
        &shared.pool,
        shared.expand,
        &shared.stats,
    )
}

type Worker = (
    Receiver<Result<TokenBatch, TokenStreamError>>,
    JoinHandle<()>,
);

/// One rank's batches of one epoch ([`Iterator`]): the same on every machine for the same plan,
/// whatever `workers` and `prefetch` are. [`TokenLoader::state`] after any number of batches
/// resumes exactly after the last one, on any topology.
pub struct TokenLoader<S: DocumentSource + 'static> {
    shared: Arc<Shared<S>>,
    /// The first batch read.
    first: u64,
    next_batch: u64,
    batches: u64,
    inline: Option<BatchReader<S>>,
    workers: Vec<Worker>,
}

impl<S: DocumentSource + 'static> std::fmt::Debug for TokenLoader<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenLoader")
            .field("next_batch", &self.next_batch)
            .field("batches", &self.batches)
            .finish_non_exhaustive()
    }
}

impl<S: DocumentSource + 'static> TokenLoader<S> {
    /// Reads `plan`'s steps from `source` in batches, starting the worker threads.
    pub fn new(plan: Arc<TokenPlan>, source: Arc<S>, options: LoaderOptions) -> Self {
        let batch_size = options.batch_size.max(1) as u64;
        let batches = plan.len().div_ceil(batch_size);
        let stats = Arc::new(LoaderStats::new(source.sources()));
        let shared = Arc::new(Shared {
            plan,
            source,
            pool: BatchPool::new(),
            batch_size,
            expand: options.expand,
            stats,
        });
        let first = options.first_batch.min(batches);
        let workers = (0..options.workers)
            .map(|w| {
                let stride = options.workers as u64;
                spawn(&shared, first + w as u64, stride, batches, options.prefetch)
            })
            .collect();
        let inline =
            (options.workers == 0).then(|| BatchReader::new(&shared.plan, shared.source.as_ref()));
        Self {
            shared,
            first,
            next_batch: first,
            batches,
            inline,
            workers,
        }
    }

    /// The plan read.
    pub fn plan(&self) -> &TokenPlan {
        &self.shared.plan
    }

    /// Batches this rank yields in the epoch.
    pub fn len(&self) -> u64 {
        self.batches
    }

    /// Whether it yields none.
    pub fn is_empty(&self) -> bool {
        self.batches == 0
    }

    /// The pool the batches' columns come from (to expand a compact batch with).
    pub fn pool(&self) -> &Arc<BatchPool> {
        &self.shared.pool
    }

    /// The state after the batches yielded so far: resume from it on any topology and with
    /// any number of workers. Ranks in lockstep produce equal states.
    pub fn state(&self) -> TokenState {
        let plan = &self.shared.plan;
        plan.state_after((self.next_batch * self.shared.batch_size).min(plan.len()))
    }

    /// What the loader has done so far (see [`StatsSnapshot`]): its batches, their rows as
    /// samples and their input tokens (`rows × seq_len`), its sources' shares in the tokens
    /// of the pieces read.
    pub fn stats(&self) -> StatsSnapshot {
        self.shared.stats.snapshot()
    }

    /// The loader's counters, to read from another thread while it runs.
    pub fn stats_handle(&self) -> Arc<LoaderStats> {
        Arc::clone(&self.shared.stats)
    }
}

fn spawn<S: DocumentSource + 'static>(
    shared: &Arc<Shared<S>>,
    first: u64,
    stride: u64,
    batches: u64,
    prefetch: usize,
) -> Worker {
    let (sender, receiver) = sync_channel(prefetch.max(1) - 1);
    let shared = Arc::clone(shared);
    let handle = std::thread::spawn(move || {
        let mut reader = BatchReader::new(&shared.plan, shared.source.as_ref());
        let mut index = first;
        while index < batches {
            let batch = read_batch(&mut reader, &shared, index);
            // A closed channel: the loader was dropped.
            if sender.send(batch).is_err() {
                return;
            }
            index += stride;
        }
    });
    (receiver, handle)
}

impl<S: DocumentSource + 'static> Iterator for TokenLoader<S> {
    type Item = Result<TokenBatch, TokenStreamError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next_batch >= self.batches {
            return None;
        }
        let index = self.next_batch;
        let asked = Instant::now();
        let batch = if let Some(reader) = self.inline.as_mut() {
            read_batch(reader, &self.shared, index)
        } else {
            let worker =
                usize::try_from((index - self.first) % self.workers.len() as u64).unwrap_or(0);
            match receive(&self.workers[worker].0) {
                Ok(batch) => batch,
                Err(error) => {
                    return Some(Err(match error {
                        Received::Interrupted => TokenStreamError::Interrupted {
                            step: index * self.shared.batch_size,
                        },
                        Received::Stopped => TokenStreamError::WorkerStopped,
                    }))
                }
            }
        };
        self.next_batch += 1;
        if let Ok(batch) = &batch {
            let rows = batch.rows() as u64;
            let tokens = rows * batch.seq_len() as u64;
            self.shared.stats.delivered(asked, rows, tokens);
        }
        Some(batch)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.batches - self.next_batch).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

impl<S: DocumentSource + 'static> Drop for TokenLoader<S> {
    fn drop(&mut self) {
        for (receiver, handle) in self.workers.drain(..) {
            drop(receiver);
            let _ = handle.join();
        }
    }
}

enum Received {
    Interrupted,
    Stopped,
}

/// The next batch from `receiver`, asking the process's interrupt hook between polls (a
/// worker may wait on a store for minutes, and only the waiting thread hears Ctrl-C).
fn receive<T>(receiver: &Receiver<T>) -> Result<T, Received> {
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
