//! What an epoch's plan does on a topology, computed from the plan alone: per node the shards
//! it reads and their bytes, how many shards more than one node reads, and how well shuffled a
//! rank's order is. `dsrt plan` prints it.

#![allow(clippy::cast_precision_loss)] // ratios and means of counts, reported as floats

use crate::stream::StreamSlot;
use crate::{EpochPlan, IterState, MixtureChange, Partition, PlanError, RemainderPolicy, Topology};
use serde::Serialize;
use std::collections::HashMap;
use std::ops::Range;

/// How a report is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportOptions {
    /// Shards a node downloads ahead of the ones it reads (a remote cache's `prefetch_shards`).
    pub prefetch_shards: usize,
    /// Blocks of 256 consecutive steps of rank 0 the shuffle figures look at (spread over the
    /// epoch).
    pub quality_blocks: u64,
}

/// Shards a remote cache downloads ahead of its reader by default (`prefetch_shards`): enough
/// to fill a link shaped like S3's from a nearby instance, where one connection carries a
/// fifth of what the link does (measured in docs/remote.md, "Downloads in flight"). Defined
/// here, below the remote cache, so that a plan's report of what a node keeps locally
/// counts what the cache really fetches.
pub const DEFAULT_PREFETCH_SHARDS: usize = 8;

impl Default for ReportOptions {
    fn default() -> Self {
        Self {
            prefetch_shards: DEFAULT_PREFETCH_SHARDS,
            quality_blocks: 64,
        }
    }
}

/// One node's reads in the epoch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeReport {
    /// The node (ranks `node * ranks_per_node ..`).
    pub node: u64,
    /// Samples its ranks read, padding included.
    pub samples: u64,
    /// Distinct shards it reads.
    pub shards: u64,
    /// Their bytes: what it downloads with an unbounded local cache.
    pub bytes: u64,
    /// The most bytes of shards it holds at once: the shards of the windows it is reading, one
    /// window per cache, plus the next `prefetch_shards` shards it downloads ahead.
    pub peak_local_bytes: u64,
}

/// How shuffled one rank's order is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShuffleQuality {
    /// Mean number of distinct shards among 256 consecutive samples of rank 0 (higher: more
    /// mixed; at most 256).
    pub distinct_shards_per_256: f64,
    /// Spearman rank correlation between rank 0's steps and the samples' physical order (caches
    /// one after another): 1 is physical order, 0 no relation.
    pub physical_rank_correlation: f64,
    /// Steps the figures were computed over.
    pub steps_measured: u64,
}

/// One phase of a scheduled epoch, as planned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhaseReport {
    /// The phase's index in the schedule.
    pub phase: usize,
    /// Its first global position.
    pub start: u64,
    /// Global positions it holds.
    pub samples: u64,
    /// Samples each cache draws during it, in dataset order.
    pub shares: Vec<u64>,
}

/// What an epoch's plan does on a topology.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanReport {
    /// Samples in the epoch.
    pub epoch_len: u64,
    /// Positions not consumed yet (the whole epoch unless resumed).
    pub remaining: u64,
    /// Ranks.
    pub world_size: u64,
    /// Ranks per node.
    pub ranks_per_node: u64,
    /// Steps every rank takes.
    pub steps_per_rank: u64,
    /// Padding steps, over all ranks.
    pub padding: u64,
    /// Positions no rank reads (the incomplete last round, with `drop`).
    pub dropped: u64,
    /// Bytes of the shards the epoch reads at least once.
    pub dataset_bytes: u64,
    /// Bytes all nodes download together, with unbounded local caches.
    pub downloaded_bytes: u64,
    /// `downloaded_bytes / dataset_bytes` (1 when no shard is read by two nodes).
    pub egress_factor: f64,
    /// Distinct shards the epoch reads.
    pub shards_read: u64,
    /// Shards that more than one node reads.
    pub shards_read_by_more_than_one_node: u64,
    /// The largest of the nodes' `peak_local_bytes`.
    pub peak_local_bytes_per_node: u64,
    /// Memory one process's plan holds (the plan, a cursor and its rank's partition).
    pub plan_bytes: u64,
    /// Shuffle figures for rank 0.
    pub shuffle: ShuffleQuality,
    /// Per node.
    pub nodes: Vec<NodeReport>,
    /// Per phase of the epoch's schedule; empty without one (and then left out of JSON).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseReport>,
    /// The change of mixture the plan was resumed under, if any (left out of JSON without).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mixture_change: Option<MixtureChange>,
}

/// Who reads one shard: the last node that did and how many nodes have.
#[derive(Debug, Clone, Copy)]
struct Readers {
    last: u64,
    nodes: u64,
}

impl PlanReport {
    /// Reports `plan` (cut for `state`) run on `topology` from `state`. `shard_bytes(cache,
    /// shard)` gives a shard's size.
    pub fn compute(
        plan: &EpochPlan,
        topology: Topology,
        policy: RemainderPolicy,
        state: &IterState,
        shard_bytes: &dyn Fn(usize, u64) -> u64,
        options: ReportOptions,
    ) -> Result<Self, PlanError> {
        state.check(state.seed, plan.epoch(), plan.len(), &plan.mixture())?;
        let partition = Partition::new(0, topology, policy, state)?;
        let mut readers: Vec<HashMap<u64, Readers>> = vec![HashMap::new(); plan.caches()];
        let mut nodes = Vec::new();
        let mut cursor = plan.cursor();
        for node in 0..topology.nodes() {
            let mut report = NodeReport {
                node,
                samples: partition.len() * topology.ranks_per_node,
                shards: 0,
                bytes: 0,
                peak_local_bytes: 0,
            };
            let mut segments: Vec<Vec<Vec<u64>>> = vec![Vec::new(); plan.caches()];
            for range in partition.node_ranges(node) {
                let from = plan.stream_positions_at(range.start);
                let to = plan.stream_positions_at(range.end);
                for cache in 0..plan.caches() {
                    for positions in plan.stream_ranges(cache, from[cache]..to[cache]) {
                        node_segments(plan, cache, positions, &mut segments[cache]);
                    }
                }
            }
            for (cache, segments) in segments.iter().enumerate() {
                for &shard in segments.iter().flatten() {
                    let entry = readers[cache].entry(shard).or_insert(Readers {
                        last: u64::MAX,
                        nodes: 0,
                    });
                    if entry.last != node {
                        entry.last = node;
                        entry.nodes += 1;
                        report.shards += 1;
                        report.bytes += shard_bytes(cache, shard);
                    }
                }
                report.peak_local_bytes += peak_bytes(segments, options.prefetch_shards, &|s| {
                    shard_bytes(cache, s)
                });
            }
            nodes.push(report);
        }
        let dataset_bytes: u64 = readers
            .iter()
            .enumerate()
            .flat_map(|(cache, shards)| shards.keys().map(move |&s| shard_bytes(cache, s)))
            .sum();
        let downloaded_bytes: u64 = nodes.iter().map(|n| n.bytes).sum();
        let shard_counts = readers.iter().flat_map(HashMap::values);
        let shards_read = shard_counts.clone().count() as u64;
        let shared = shard_counts.filter(|r| r.nodes > 1).count() as u64;
        let padding = (0..topology.nodes())
            .map(|n| partition.node_padding(n))
            .sum();
        let read = partition.len() * topology.world_size - padding;
        let shuffle = shuffle_quality(plan, &partition, &mut cursor, options.quality_blocks);
        Ok(Self {
            epoch_len: plan.len(),
            remaining: partition.remaining_len(),
            world_size: topology.world_size,
            ranks_per_node: topology.ranks_per_node,
            steps_per_rank: partition.len(),
            padding,
            dropped: partition.remaining_len() - read,
            dataset_bytes,
            downloaded_bytes,
            egress_factor: if dataset_bytes == 0 {
                1.0
            } else {
                downloaded_bytes as f64 / dataset_bytes as f64
            },
            shards_read,
            shards_read_by_more_than_one_node: shared,
            peak_local_bytes_per_node: nodes.iter().map(|n| n.peak_local_bytes).max().unwrap_or(0),
            plan_bytes: (plan.bytes() + cursor.bytes() + std::mem::size_of::<Partition>()) as u64,
            shuffle,
            nodes,
            phases: phase_reports(plan),
            mixture_change: plan.mixture_change().cloned(),
        })
    }
}

/// The phases of `plan`'s schedule, none without one.
fn phase_reports(plan: &EpochPlan) -> Vec<PhaseReport> {
    if !plan.is_scheduled() {
        return Vec::new();
    }
    plan.phases()
        .iter()
        .enumerate()
        .map(|(phase, planned)| {
            let positions = planned.positions();
            PhaseReport {
                phase,
                start: positions.start,
                samples: positions.end - positions.start,
                shares: planned.shares().to_vec(),
            }
        })
        .collect()
}

impl EpochPlan {
    /// The shards stream positions `positions` of cache `cache` read (sorted, each once): the
    /// runs of the whole segments they cover, and the samples of the segments they cover in
    /// part.
    pub fn shards_read(&self, cache: usize, positions: Range<u64>) -> Vec<u64> {
        let mut segments = Vec::new();
        node_segments(self, cache, positions, &mut segments);
        let mut shards: Vec<u64> = segments.into_iter().flatten().collect();
        shards.sort_unstable();
        shards.dedup();
        shards
    }
}

/// Appends the shards of each segment `positions` (a stretch of one cache's stream) reads, in
/// order. A segment read whole (without replacement) reads exactly the runs its stretch of the
/// layout covers; any other is enumerated position by position.
fn node_segments(
    plan: &EpochPlan,
    cache: usize,
    positions: Range<u64>,
    segments: &mut Vec<Vec<u64>>,
) {
    let stream = plan.stream(cache);
    let mut slot = StreamSlot::default();
    let mut at = positions.start;
    while at < positions.end {
        let placed = {
            let layout = stream.layout(at / stream.len, &mut slot.layout);
            stream.place(at, layout)
        };
        let covered = at.max(placed.segment.start)..positions.end.min(placed.segment.end);
        let mut shards: Vec<u64> = if covered == placed.segment && stream.reads_segments_whole() {
            stream
                .segment_runs(covered.clone(), &mut slot)
                .into_iter()
                .map(|run| stream.shard_of_run(run))
                .collect()
        } else {
            covered
                .clone()
                .map(|p| stream.shard_of_run(stream.sample(p, &mut slot).1))
                .collect()
        };
        shards.sort_unstable();
        shards.dedup();
        segments.push(shards);
        at = covered.end;
    }
}

/// The most bytes held at once while reading `segments` in order: one segment's shards plus
/// the next `prefetch` shards not among them.
fn peak_bytes(segments: &[Vec<u64>], prefetch: usize, bytes: &dyn Fn(u64) -> u64) -> u64 {
    let mut peak = 0;
    for (i, segment) in segments.iter().enumerate() {
        let mut held: u64 = segment.iter().map(|&s| bytes(s)).sum();
        let mut ahead = Vec::new();
        for &shard in segments[i + 1..].iter().flatten() {
            if ahead.len() >= prefetch {
                break;
            }
            if !segment.contains(&shard) && !ahead.contains(&shard) {
                ahead.push(shard);
                held += bytes(shard);
            }
        }
        peak = peak.max(held);
    }
    peak
}

/// Shuffle figures over up to `blocks` blocks of 256 steps of rank 0, spread over its steps.
#[allow(clippy::cast_possible_truncation)] // block counts are small
fn shuffle_quality(
    plan: &EpochPlan,
    partition: &Partition,
    cursor: &mut crate::PlanCursor,
    blocks: u64,
) -> ShuffleQuality {
    const BLOCK: u64 = 256;
    let steps = partition.len();
    let block_count = (steps / BLOCK).min(blocks).max(u64::from(steps > 0));
    let stride = (steps / BLOCK).max(1).checked_div(block_count).unwrap_or(0);
    let cache_start: Vec<u64> = {
        let mut at = 0;
        (0..plan.caches())
            .map(|c| {
                let start = at;
                at += plan.stream(c).len;
                start
            })
            .collect()
    };
    let mut distinct_sum = 0u64;
    let mut physical: Vec<u64> = Vec::new();
    let mut shards: Vec<(usize, u64)> = Vec::with_capacity(BLOCK as usize);
    for block in 0..block_count {
        let first = block * stride.max(1) * BLOCK;
        shards.clear();
        for step in first..(first + BLOCK).min(steps) {
            if let Some((sample, shard)) = cursor.locate(plan, partition.global_position(step)) {
                shards.push((sample.cache, shard));
                physical.push(cache_start[sample.cache] + sample.sample);
            }
        }
        shards.sort_unstable();
        shards.dedup();
        distinct_sum += shards.len() as u64;
    }
    ShuffleQuality {
        distinct_shards_per_256: if block_count == 0 {
            0.0
        } else {
            distinct_sum as f64 / block_count as f64
        },
        physical_rank_correlation: rank_correlation(&physical),
        steps_measured: physical.len() as u64,
    }
}

/// Spearman's rank correlation between `values` and their positions (ties get their mean
/// rank): how close an order of samples is to `values`' order (1: the same, 0: unrelated).
pub fn rank_correlation(values: &[u64]) -> f64 {
    let n = values.len();
    if n < 2 {
        return 0.0;
    }
    let mut by_value: Vec<usize> = (0..n).collect();
    by_value.sort_by_key(|&i| values[i]);
    let mut ranks = vec![0.0f64; n];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && values[by_value[j + 1]] == values[by_value[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0;
        for &k in &by_value[i..=j] {
            ranks[k] = mean;
        }
        i = j + 1;
    }
    let mean = (n - 1) as f64 / 2.0;
    let (mut cov, mut var_x, mut var_y) = (0.0, 0.0, 0.0);
    for (position, &rank) in ranks.iter().enumerate() {
        let dx = position as f64 - mean;
        let dy = rank - mean;
        cov += dx * dy;
        var_x += dx * dx;
        var_y += dy * dy;
    }
    if var_y == 0.0 {
        0.0
    } else {
        cov / (var_x * var_y).sqrt()
    }
}
