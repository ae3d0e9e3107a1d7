//! One rank's share of an epoch, read a few steps at a time in whatever order the caller
//! chooses (a `DataLoader` worker reads every n-th chunk, a Ray task one slice), beside
//! [`Loader`](crate::Loader), which reads the share in order on threads of its own.

use crate::hints::ShardHints;
use crate::stats::{LoaderStats, StatsSnapshot};
use crate::{BatchRow, Dataset, DatasetError, SampleKey};
use arrow_array::RecordBatch;
use dsrt_plan::{
    EpochPlan, IterState, MixtureChange, Partition, PlanConfig, PlanCursor, RemainderPolicy,
    Topology,
};
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// Rank `rank`'s steps of one epoch of a dataset: which sample each step reads, the batches of
/// any steps read at once, the state once every rank has read so far, and hints to remote
/// caches of the shards ahead. What it reads is counted in [`stats`](Self::stats).
pub struct RankPlan {
    dataset: Arc<Dataset>,
    plan: EpochPlan,
    partition: Partition,
    start: IterState,
    /// Reads the plan's positions; locked once per call.
    cursor: Mutex<PlanCursor>,
    /// What `hint_ahead` has looked at of the steps ahead.
    hints: Mutex<ShardHints>,
    stats: LoaderStats,
}

impl RankPlan {
    /// The plan of epoch `epoch` by `config` for `rank` of `topology`, from `resume` (a state
    /// saved on any topology) or the epoch's start.
    pub fn new(
        dataset: Arc<Dataset>,
        config: &PlanConfig,
        epoch: u64,
        rank: u64,
        topology: Topology,
        policy: RemainderPolicy,
        resume: Option<&IterState>,
    ) -> Result<Self, DatasetError> {
        let (plan, start) = dataset.plan_for(config, epoch, topology, policy, resume)?;
        let partition = Partition::new(rank, topology, policy, &start)?;
        let cursor = Mutex::new(plan.cursor());
        let stats = LoaderStats::new(dataset.caches().len());
        Ok(Self {
            dataset,
            plan,
            partition,
            start,
            cursor,
            hints: Mutex::new(ShardHints::new()),
            stats,
        })
    }

    /// The dataset read.
    pub fn dataset(&self) -> &Arc<Dataset> {
        &self.dataset
    }

    /// Steps this rank reads, from where the plan starts to the epoch's end.
    pub fn len(&self) -> u64 {
        self.partition.len()
    }

    /// Whether this rank has no step to read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Samples the whole epoch holds.
    pub fn epoch_len(&self) -> u64 {
        self.plan.len()
    }

    /// How the mixture changed where the plan resumed a state saved under another one.
    pub fn mixture_change(&self) -> Option<&MixtureChange> {
        self.plan.mixture_change()
    }

    /// The state once every rank has read `steps` of its steps.
    pub fn state_after(&self, steps: u64) -> IterState {
        self.partition.state_after(&self.start, steps)
    }

    /// The epoch's global position of `step`.
    pub fn global_position(&self, step: u64) -> u64 {
        self.partition.global_position(step)
    }

    /// Each step as the batch row it reads; a step past this rank's share is refused.
    pub fn rows(&self, steps: &[u64]) -> Result<Vec<BatchRow>, DatasetError> {
        let mut cursor = self.cursor.lock().unwrap_or_else(PoisonError::into_inner);
        let len = self.partition.len();
        (steps.iter())
            .map(|&step| {
                if step >= len {
                    return Err(DatasetError::StepIndex { step, steps: len });
                }
                let position = self.partition.global_position(step);
                let planned = cursor.get(&self.plan, position).ok_or_else(|| {
                    DatasetError::Batch(format!("position {position} is outside the plan"))
                })?;
                Ok(BatchRow {
                    cache: planned.cache,
                    sample_id: planned.sample,
                    step,
                    padding: self.partition.is_padding(step),
                })
            })
            .collect()
    }

    /// The `(cache_id, sample_id)` keys `steps` read.
    pub fn keys(&self, steps: &[u64]) -> Result<Vec<SampleKey>, DatasetError> {
        let caches = self.dataset.caches();
        Ok((self.rows(steps)?.iter())
            .map(|row| SampleKey {
                cache_id: caches[row.cache].cache_id,
                sample_id: row.sample_id,
            })
            .collect())
    }

    /// Reads `steps` as one record batch ([`Dataset::read_columnar`]).
    pub fn read_columnar(&self, steps: &[u64]) -> Result<RecordBatch, DatasetError> {
        self.read_with(steps, |dataset, rows| dataset.read_columnar(rows))
    }

    /// Locates `steps`' payloads ([`Dataset::read_located`]).
    pub fn read_located(&self, steps: &[u64]) -> Result<RecordBatch, DatasetError> {
        self.read_with(steps, |dataset, rows| dataset.read_located(rows))
    }

    /// Plans `steps`, lets `read` read their rows, and counts both in the stats.
    pub fn read_with<T>(
        &self,
        steps: &[u64],
        read: impl FnOnce(&Dataset, &[BatchRow]) -> Result<T, DatasetError>,
    ) -> Result<T, DatasetError> {
        let asked = Instant::now();
        let rows = self.rows(steps)?;
        let planned = Instant::now();
        let read = read(&self.dataset, &rows)?;
        self.stats.batch_read(asked, planned, &rows);
        Ok(read)
    }

    /// Tells caches on object storage which shards `steps` read, in order, so that they are
    /// downloaded ahead (a hint: nothing read depends on it). Nothing for local caches.
    pub fn will_need(&self, steps: &[u64]) -> Result<(), DatasetError> {
        if self.dataset.has_shard_sources() {
            let rows = self.rows(steps)?;
            let planned = rows.iter().map(|row| (row.cache, row.sample_id));
            self.dataset.will_need(planned, usize::MAX, &mut Vec::new());
        }
        Ok(())
    }

    /// Tells caches on object storage which shards `steps` (the chunk about to be read) and
    /// the steps after them need, up to [`HINT_SHARDS`](crate::HINT_SHARDS) per cache, each
    /// call going on from where the last stopped. Nothing for local caches.
    pub fn hint_ahead(&self, steps: Range<u64>) {
        if !self.dataset.has_shard_sources() {
            return;
        }
        let stop = steps.end.min(self.partition.len());
        let mut hints = self.hints.lock().unwrap_or_else(PoisonError::into_inner);
        hints.hint(
            &self.dataset,
            &self.plan,
            &self.partition,
            steps.start.min(stop)..stop,
        );
    }

    /// What the reads of this plan have done since it was made.
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }
}
