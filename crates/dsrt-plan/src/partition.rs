use crate::{IterState, PlanError};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// What to do with the last round when the remaining samples do not divide by the world size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemainderPolicy {
    /// Fill the last round by repeating samples the same node already read, so no sample is
    /// skipped and no node reads another's shards. The default.
    #[default]
    Pad,
    /// Drop the samples of the incomplete last round.
    Drop,
}

/// A job's ranks: `world_size` of them, in nodes of `ranks_per_node` (rank `r` is on node
/// `r / ranks_per_node`, as torchrun numbers them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// Number of ranks.
    pub world_size: u64,
    /// Ranks on each node; divides `world_size`.
    pub ranks_per_node: u64,
}

impl Topology {
    /// `world_size` ranks in nodes of `ranks_per_node`.
    pub fn new(world_size: u64, ranks_per_node: u64) -> Result<Self, PlanError> {
        if world_size == 0 || ranks_per_node == 0 || world_size % ranks_per_node != 0 {
            return Err(PlanError::Topology {
                world_size,
                ranks_per_node,
            });
        }
        Ok(Self {
            world_size,
            ranks_per_node,
        })
    }

    /// One rank per node: every rank is its own node.
    pub fn ranks(world_size: u64) -> Result<Self, PlanError> {
        Self::new(world_size, 1)
    }

    /// Number of nodes.
    pub fn nodes(&self) -> u64 {
        self.world_size / self.ranks_per_node
    }

    /// Steps every rank takes over `remaining` positions.
    pub fn steps(&self, remaining: u64, policy: RemainderPolicy) -> u64 {
        match policy {
            RemainderPolicy::Pad => remaining.div_ceil(self.world_size),
            RemainderPolicy::Drop => remaining / self.world_size,
        }
    }
}

/// One rank's share of the part of an epoch not yet consumed.
///
/// The remaining positions, taken in order, are split into one contiguous span per node of
/// `ranks_per_node * len()` positions each; a node's ranks take its span round-robin (local
/// rank `l` takes span positions `l`, `l + ranks_per_node`, ...). Every rank gets the same
/// count, [`Partition::len`]. With `Pad`, a node whose span runs past the end repeats its own
/// last positions, counting back (a node with no position left of its own repeats the start
/// of the rest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    rank: u64,
    topology: Topology,
    remaining: Vec<Range<u64>>,
    /// `prefix[i]`: positions of `remaining` before range `i`.
    prefix: Vec<u64>,
    remaining_len: u64,
    steps: u64,
    /// This node's span, as offsets into the remaining positions.
    span_start: u64,
    /// Positions of the span that are real (the rest is padding).
    span_real: u64,
}

impl Partition {
    /// Rank `rank` of `topology`, over the positions `state` has not consumed.
    pub fn new(
        rank: u64,
        topology: Topology,
        policy: RemainderPolicy,
        state: &IterState,
    ) -> Result<Self, PlanError> {
        if rank >= topology.world_size {
            return Err(PlanError::Partition {
                rank,
                world_size: topology.world_size,
            });
        }
        let remaining = state.remaining();
        let mut prefix = Vec::with_capacity(remaining.len());
        let mut remaining_len = 0;
        for range in &remaining {
            prefix.push(remaining_len);
            remaining_len += range.end - range.start;
        }
        let steps = topology.steps(remaining_len, policy);
        let (span_start, span_real) = node_span(
            rank / topology.ranks_per_node,
            steps * topology.ranks_per_node,
            remaining_len,
        );
        Ok(Self {
            rank,
            topology,
            remaining,
            prefix,
            remaining_len,
            steps,
            span_start,
            span_real,
        })
    }

    /// Samples every rank yields: the same for all ranks.
    pub fn len(&self) -> u64 {
        self.steps
    }

    /// Whether this rank yields nothing.
    pub fn is_empty(&self) -> bool {
        self.steps == 0
    }

    /// The offset into the remaining positions of this rank's `step`-th sample, before padding.
    #[inline]
    fn offset(&self, step: u64) -> u64 {
        self.span_start + step * self.topology.ranks_per_node + self.local_rank()
    }

    /// The global position at `offset` into the remaining positions.
    #[inline]
    fn position_at(&self, offset: u64) -> u64 {
        let range = self.prefix.partition_point(|&p| p <= offset) - 1;
        self.remaining[range].start + (offset - self.prefix[range])
    }

    /// The global position of this rank's `step`-th sample (`step < len()`).
    #[inline]
    pub fn global_position(&self, step: u64) -> u64 {
        let offset = self.offset(step);
        let real_end = self.span_start + self.span_real;
        if offset < real_end {
            return self.position_at(offset);
        }
        // Padding: the node repeats its own last positions, counting back from its end (which a
        // resume on the same topology leaves in place, so it repeats the same ones), or, with
        // none of its own, the rest's first.
        let over = offset - real_end;
        if self.span_real > 0 {
            self.position_at(real_end - 1 - over % self.span_real)
        } else {
            self.position_at((offset - self.remaining_len) % self.remaining_len.max(1))
        }
    }

    /// Whether this rank's `step`-th sample is a padding repeat.
    pub fn is_padding(&self, step: u64) -> bool {
        self.offset(step) >= self.span_start + self.span_real
    }

    /// The state once every rank has yielded `steps` samples (of this partition), on a plan
    /// whose windows are cut at `cuts`.
    pub fn state_after(&self, base: &IterState, steps: u64) -> IterState {
        let taken = steps.min(self.steps) * self.topology.ranks_per_node;
        // Offsets into the remaining positions each node has consumed, in order.
        let mut consumed: Vec<Range<u64>> = Vec::new();
        for node in 0..self.topology.nodes() {
            let (start, real) = self.node_span(node);
            let end = start + taken.min(real);
            if end > start {
                consumed.push(start..end);
            }
        }
        let mut kept: Vec<[u64; 2]> = Vec::new();
        let mut push = |range: Range<u64>| {
            if range.start >= range.end {
                return;
            }
            match kept.last_mut() {
                Some(last) if last[1] == range.start => last[1] = range.end,
                _ => kept.push([range.start, range.end]),
            }
        };
        let mut at = 0;
        for taken in &consumed {
            for range in self.global_ranges(at..taken.start) {
                push(range);
            }
            at = taken.end;
        }
        for range in self.global_ranges(at..self.remaining_len) {
            push(range);
        }
        let left: u64 = kept.iter().map(|r| r[1] - r[0]).sum();
        IterState {
            seed: base.seed,
            epoch: base.epoch,
            position: base.epoch_len - left,
            epoch_len: base.epoch_len,
            cuts: base.cuts.clone(),
            remaining: Some(kept),
            mixture: base.mixture.clone(),
            continuation: base.continuation.clone(),
        }
    }

    /// The global ranges offsets `offsets` of the remaining positions cover.
    fn global_ranges(&self, offsets: Range<u64>) -> Vec<Range<u64>> {
        let mut out = Vec::new();
        let mut offset = offsets.start;
        while offset < offsets.end {
            let range = self.prefix.partition_point(|&p| p <= offset) - 1;
            let within = offset - self.prefix[range];
            let available = self.remaining[range].end - self.remaining[range].start - within;
            let take = available.min(offsets.end - offset);
            let start = self.remaining[range].start + within;
            out.push(start..start + take);
            offset += take;
        }
        out
    }

    /// Where node `node`'s span starts (an offset into the remaining positions) and how many
    /// of its positions are real.
    fn node_span(&self, node: u64) -> (u64, u64) {
        node_span(
            node,
            self.steps * self.topology.ranks_per_node,
            self.remaining_len,
        )
    }

    /// The global position ranges node `node` reads (its real span), in order.
    pub fn node_ranges(&self, node: u64) -> Vec<Range<u64>> {
        let (start, real) = self.node_span(node);
        self.global_ranges(start..start + real)
    }

    /// Padding steps this node's ranks take in all.
    pub fn node_padding(&self, node: u64) -> u64 {
        self.steps * self.topology.ranks_per_node - self.node_span(node).1
    }

    /// The topology.
    pub fn topology(&self) -> Topology {
        self.topology
    }

    /// The rank.
    pub fn rank(&self) -> u64 {
        self.rank
    }

    /// The rank's node.
    pub fn node(&self) -> u64 {
        self.rank / self.topology.ranks_per_node
    }

    /// The rank's position on its node.
    pub fn local_rank(&self) -> u64 {
        self.rank % self.topology.ranks_per_node
    }

    /// Positions not consumed when this partition began.
    pub fn remaining_len(&self) -> u64 {
        self.remaining_len
    }
}

/// Node `node`'s span of `span` positions: its start (an offset into the `remaining_len`
/// remaining positions) and how many of its positions are real, the rest being padding.
fn node_span(node: u64, span: u64, remaining_len: u64) -> (u64, u64) {
    let start = node * span;
    (start, remaining_len.saturating_sub(start).min(span))
}
