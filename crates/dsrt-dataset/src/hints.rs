//! Telling shard sources (object storage) which shards the steps ahead of a reader need, so
//! that they are downloaded before they are read.

use crate::Dataset;
use dsrt_plan::{EpochPlan, Partition, PlanCursor, PlannedSample};
use std::collections::{HashSet, VecDeque};
use std::ops::Range;

/// The most shards of one cache a hint names: the shards a remote cache downloads ahead come
/// from these, so they must reach past its `prefetch_shards` (8 by default).
pub const HINT_SHARDS: usize = 16;

/// The most steps one hint looks at beyond those an earlier hint of the same [`ShardHints`]
/// looked at. The look-ahead goes on from where it stopped, chunk after chunk, until it sees
/// [`HINT_SHARDS`] shards of every cache ahead (or the end): each step is looked at once
/// however small the samples (a 16 MiB shard of 100-byte samples is 160,000 steps), and one
/// hint costs at most this many plan lookups beyond its chunk's own.
const HINT_SCAN_STEPS: u64 = 65_536;

/// What one reader of a partition (a loading thread, a `DataLoader` worker) tells the caches
/// with shard sources about the steps ahead of it: for each chunk it reads, the shards of the
/// chunk and then of the steps after it, in the order they are first needed, up to
/// [`HINT_SHARDS`] per cache. Local caches ignore hints; nothing read depends on one.
#[derive(Default)]
pub struct ShardHints {
    cursor: Option<PlanCursor>,
    ahead: LookAhead,
    /// The `(cache, sample)` reads of the chunk being hinted.
    chunk_reads: Vec<(usize, u64)>,
    /// [`Dataset::will_need`]'s scratch.
    hinted: Vec<Vec<u64>>,
}

impl ShardHints {
    /// Hints with nothing looked at yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tells each cache of `dataset` which of its shards the steps of `chunk` (of
    /// `partition`, in `plan`'s order) and the steps after it need, in the order they first
    /// need them.
    pub fn hint(
        &mut self,
        dataset: &Dataset,
        plan: &EpochPlan,
        partition: &Partition,
        chunk: Range<u64>,
    ) {
        let cursor = self.cursor.get_or_insert_with(|| plan.cursor());
        let caches = dataset.caches();
        // The chunk's own reads first: a shard first needed before the chunk (and so no
        // longer in the look-ahead) may still be read in it.
        self.chunk_reads.clear();
        self.chunk_reads.extend(chunk.clone().filter_map(|step| {
            let planned = cursor.get(plan, partition.global_position(step))?;
            Some((planned.cache, planned.sample))
        }));
        let ahead = &mut self.ahead;
        ahead.start_at(chunk.end);
        let wanted = HINT_SHARDS.saturating_mul(caches.len());
        let end = ahead
            .frontier
            .saturating_add(HINT_SCAN_STEPS)
            .min(partition.len());
        while ahead.frontier < end && ahead.order.len() < wanted {
            let step = ahead.frontier;
            let Some(planned) = cursor.get(plan, partition.global_position(step)) else {
                break;
            };
            if let Some(entry) = caches.get(planned.cache) {
                if let Ok(row) = entry.cache.index().row(planned.sample) {
                    ahead.saw(step, planned, row.shard_id);
                }
            }
            ahead.frontier += 1;
        }
        let reads = self.chunk_reads.iter().copied().chain(
            ahead
                .order
                .iter()
                .map(|&(_, planned, _)| (planned.cache, planned.sample)),
        );
        dataset.will_need(reads, HINT_SHARDS, &mut self.hinted);
    }
}

/// The shards the steps ahead of a reader need, in the order they first need them, kept from
/// hint to hint so that each step is looked at once.
#[derive(Default)]
struct LookAhead {
    /// The first step not looked at yet.
    frontier: u64,
    /// `(first step that needs it, that step's read, shard)`, by first step.
    order: VecDeque<(u64, PlannedSample, u64)>,
    /// The `(cache, shard)`s of `order`.
    seen: HashSet<(usize, u64)>,
}

impl LookAhead {
    /// Forgets the shards first needed before step `from` (earlier hints named them, and a
    /// hint names its chunk's own shards first), or everything where `from` is past what was
    /// looked at.
    fn start_at(&mut self, from: u64) {
        if from > self.frontier {
            self.frontier = from;
            self.order.clear();
            self.seen.clear();
            return;
        }
        while let Some(&(step, planned, shard)) = self.order.front() {
            if step >= from {
                break;
            }
            self.seen.remove(&(planned.cache, shard));
            self.order.pop_front();
        }
    }

    /// Step `step` makes read `planned`, of shard `shard` of its cache.
    fn saw(&mut self, step: u64, planned: PlannedSample, shard: u64) {
        if self.seen.insert((planned.cache, shard)) {
            self.order.push_back((step, planned, shard));
        }
    }
}
