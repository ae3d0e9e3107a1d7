//! Resuming an epoch under another mixture than the one it was saved under.
//!
//! The rule: the resumed epoch is the new plan's global positions from `G` on, `G` the
//! samples consumed. A cache's draws in it are mapped onto its own stream (the order it has
//! had since the epoch began) skipping what was consumed: the new plan's `k`-th draw from the
//! cache past `G` reads the `k`-th stream position not consumed yet. So every stream goes on
//! where it stopped, fills the holes other nodes left first, and never serves a consumed
//! sample again within the epoch.
//!
//! What a state keeps of this is O(caches + consumed ranges): per stream, its consumed stream
//! positions as ranges (each a node's consumed span, mapped onto the stream), never samples.

use crate::order::{phases_stream_positions_at, plan_phases};
use crate::state::{counted, sampling_name, shuffle_name};
use crate::{EpochPlan, IterState, Mixture, PlanError, PlannedCache};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::Range;

/// Where an epoch changed mixture and what every cache's stream had consumed by then: what a
/// state resumed under another mixture carries, so that the epoch goes on from each stream's
/// consumption and a later change (of topology or of mixture again) keeps all of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Continuation {
    /// The global position of the plan where its mixture took over: the samples consumed
    /// under the earlier ones. The plan's positions before it are never read.
    pub position: u64,
    /// Every stream the epoch has read: first one per cache of the plan, in dataset order,
    /// then those of caches removed at a change, kept so a cache added back goes on.
    pub streams: Vec<ConsumedStream>,
}

/// One cache's stream as a [`Continuation`] records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumedStream {
    /// The cache as the epoch first planned it: a resume where it reads otherwise (other
    /// length or shard runs under the same id) is refused.
    pub cache: PlannedCache,
    /// What seeds the stream's order: the cache's position in the plan that first read it (a
    /// cache added at a change: one past every stream before it), so a stream keeps its order
    /// when caches before it come and go.
    pub seed_index: u64,
    /// Stream positions where the stream's shuffle windows are cut (the node boundaries of the
    /// epoch's first run, as they fell in this stream).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<u64>,
    /// Stream positions consumed, as sorted disjoint `[start, end)` pairs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consumed: Vec<[u64; 2]>,
}

impl ConsumedStream {
    /// Samples of the stream consumed.
    pub fn consumed_len(&self) -> u64 {
        self.consumed.iter().map(|r| r[1] - r[0]).sum()
    }

    /// Checks that the consumed ranges are sorted, disjoint, not empty and below 2^48 (where
    /// every stream position lies): what a state read from a file must hold before a plan
    /// computes with it.
    pub(crate) fn check(&self, stream: usize) -> Result<(), PlanError> {
        let mut end = 0;
        for (i, &[start, stop]) in self.consumed.iter().enumerate() {
            if (i > 0 && start <= end) || start >= stop || stop > 1 << 48 {
                return Err(PlanError::State(format!(
                    "its continuation's stream {stream} has consumed range {start}..{stop}, \
                     empty, out of order or past 2^48"
                )));
            }
            end = stop;
        }
        Ok(())
    }
}

/// How the mixture a plan resumed under differs from the one its state was saved under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MixtureChange {
    /// The global position the new mixture governs from: the samples consumed before.
    pub position: u64,
    /// Whether a cache kept across the change draws other shares (other weights).
    pub weights: bool,
    /// Whether the phases changed: a schedule given or taken away, or its phases' number or
    /// lengths.
    pub schedule: bool,
    /// Caches of the plan the state did not have, by position in the plan: their streams
    /// start at their beginning.
    pub added: Vec<usize>,
    /// Caches of the state the plan no longer has.
    pub removed: Vec<RemovedCache>,
}

/// A cache a resumed plan no longer reads, and what the epoch had consumed of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RemovedCache {
    /// Its position in the list the state was saved with.
    pub cache: usize,
    /// Its id, where the state recorded one.
    pub cache_id: Option<u64>,
    /// Samples of it the epoch consumed.
    pub consumed: u64,
}

impl fmt::Display for MixtureChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.weights {
            parts.push("weights changed".to_owned());
        }
        if self.schedule {
            parts.push("phases changed".to_owned());
        }
        if !self.added.is_empty() {
            let added: Vec<String> = self.added.iter().map(usize::to_string).collect();
            parts.push(format!(
                "{} added (position {})",
                counted(self.added.len() as u64, "cache"),
                added.join(", ")
            ));
        }
        if !self.removed.is_empty() {
            parts.push(format!(
                "{} removed",
                counted(self.removed.len() as u64, "cache")
            ));
        }
        if parts.is_empty() {
            parts.push("the same caches in another order".to_owned());
        }
        write!(
            f,
            "resumed under a changed mixture from global position {}: {}",
            self.position,
            parts.join(", ")
        )
    }
}

impl fmt::Display for RemovedCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cache {}", self.cache)?;
        if let Some(id) = self.cache_id {
            write!(f, " (id {id:#018x})")?;
        }
        write!(
            f,
            " was removed after {} of it were consumed; the rest of its share is not read",
            counted(self.consumed, "sample")
        )
    }
}

/// How a plan's draws from one cache map onto the cache's stream: the plan's stream position
/// `base + k` reads the `k`-th stream position not consumed. Lookups are binary searches
/// over the consumed ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamRemap {
    base: u64,
    /// Start of each consumed range.
    starts: Vec<u64>,
    /// `free_before[i]`: stream positions not consumed below `starts[i]`.
    free_before: Vec<u64>,
    /// `consumed_before[i]`: positions of the ranges before range `i` (one more entry).
    consumed_before: Vec<u64>,
}

impl StreamRemap {
    pub(crate) fn new(base: u64, consumed: &[[u64; 2]]) -> Self {
        let mut starts = Vec::with_capacity(consumed.len());
        let mut free_before = Vec::with_capacity(consumed.len());
        let mut consumed_before = Vec::with_capacity(consumed.len() + 1);
        let mut total = 0;
        for &[start, end] in consumed {
            starts.push(start);
            free_before.push(start - total);
            consumed_before.push(total);
            total += end - start;
        }
        consumed_before.push(total);
        Self {
            base,
            starts,
            free_before,
            consumed_before,
        }
    }

    /// The `k`-th stream position not consumed.
    #[inline]
    fn unconsumed(&self, k: u64) -> u64 {
        let below = self.free_before.partition_point(|&f| f <= k);
        k + self.consumed_before[below]
    }

    /// The stream position the plan's stream position `position` reads; `None` below the
    /// continuation's base (positions consumed under earlier mixtures).
    #[inline]
    pub(crate) fn map(&self, position: u64) -> Option<u64> {
        position.checked_sub(self.base).map(|k| self.unconsumed(k))
    }

    /// The stream ranges the plan's stream positions `positions` read, in order.
    pub(crate) fn ranges(&self, positions: Range<u64>) -> Vec<Range<u64>> {
        let start = positions.start.max(self.base) - self.base;
        let end = positions.end.max(self.base) - self.base;
        self.unconsumed_ranges(start..end)
    }

    /// The stream ranges of the `k`-th unconsumed positions, `k` in `ks`.
    fn unconsumed_ranges(&self, ks: Range<u64>) -> Vec<Range<u64>> {
        let mut out = Vec::new();
        let mut k = ks.start;
        while k < ks.end {
            let below = self.free_before.partition_point(|&f| f <= k);
            let at = k + self.consumed_before[below];
            let gap_end = self.starts.get(below).copied().unwrap_or(u64::MAX);
            let take = (gap_end - at).min(ks.end - k);
            out.push(at..at + take);
            k += take;
        }
        out
    }

    pub(crate) fn bytes(&self) -> usize {
        (self.starts.capacity() + self.free_before.capacity() + self.consumed_before.capacity()) * 8
    }
}

/// The state and the change of resuming `state`, saved under `recorded`, under `plan`, built
/// with `seed` for `epoch`; every difference the state cannot honour is named in the error.
pub(crate) fn resume_changed(
    state: &IterState,
    recorded: &Mixture,
    plan: &EpochPlan,
    seed: u64,
    epoch: u64,
) -> Result<(IterState, MixtureChange), PlanError> {
    let now = plan.mixture();
    let mut refused = Vec::new();
    if state.seed != seed {
        refused.push(format!("seed {} (the plan's is {seed})", state.seed));
    }
    if state.epoch != epoch {
        refused.push(format!("epoch {} (the plan's is {epoch})", state.epoch));
    }
    if recorded.sampling != now.sampling {
        refused.push(format!(
            "sampling {} (the plan's is {})",
            sampling_name(recorded.sampling),
            sampling_name(now.sampling)
        ));
    }
    if recorded.shuffle != now.shuffle {
        refused.push(format!(
            "shuffle {} (the plan's is {})",
            shuffle_name(recorded.shuffle),
            shuffle_name(now.shuffle)
        ));
    }
    let caches = recorded.caches.len();
    let phase_shares = if recorded.phases.is_empty() {
        vec![recorded.shares.clone()]
    } else {
        recorded.phases.clone()
    };
    if recorded.shares.len() != caches || phase_shares.iter().any(|p| p.len() != caches) {
        return Err(PlanError::State(format!(
            "its mixture has shares for other than its {}",
            counted(caches as u64, "cache")
        )));
    }
    // Every sum the old phases are rebuilt from stays below this total.
    if phase_shares
        .iter()
        .flatten()
        .try_fold(0u64, |sum, &share| sum.checked_add(share))
        .is_none()
    {
        return Err(PlanError::State(
            "its mixture's shares add up to more than 2^64 samples".into(),
        ));
    }
    let streams = match &state.continuation {
        Some(continuation) => continuation.streams.clone(),
        None => Vec::new(),
    };
    for (index, stream) in streams.iter().enumerate() {
        stream.check(index)?;
    }
    // Match the plan's caches to the state's streams before refusing, so that every
    // difference is named at once.
    let by_id = now.caches.iter().all(|c| c.cache_id.is_some())
        && recorded.caches.iter().all(|c| c.cache_id.is_some())
        && streams.iter().all(|s| s.cache.cache_id.is_some());
    let matched: Vec<Option<usize>> = now
        .caches
        .iter()
        .enumerate()
        .map(|(j, cache)| {
            if by_id {
                recorded
                    .caches
                    .iter()
                    .position(|c| c.cache_id == cache.cache_id)
                    .or_else(|| {
                        streams
                            .iter()
                            .position(|s| s.cache.cache_id == cache.cache_id)
                            .filter(|&m| m >= caches)
                    })
            } else {
                (j < caches).then_some(j)
            }
        })
        .collect();
    for (j, m) in matched.iter().enumerate() {
        let Some(m) = *m else { continue };
        let was = if m < caches {
            recorded.caches[m]
        } else {
            streams[m].cache
        };
        let is = now.caches[j];
        if (was.samples, was.shard_runs) != (is.samples, is.shard_runs) {
            let named = match is.cache_id {
                Some(id) => format!("cache id {id:#018x} (position {j})"),
                None => format!("cache {j}"),
            };
            refused.push(format!(
                "{named} of {} in {} (the plan's has {} in {}): its contents changed",
                counted(was.samples, "sample"),
                counted(was.shard_runs, "shard run"),
                is.samples,
                is.shard_runs
            ));
        }
    }
    if !refused.is_empty() {
        return Err(PlanError::State(format!(
            "the mixture changed, which a resume follows, but the state is for {}",
            refused.join(", ")
        )));
    }
    state.check(state.seed, state.epoch, recorded.epoch_len(), recorded)?;

    let old_phases = plan_phases(
        phase_shares,
        !recorded.phases.is_empty(),
        recorded.shuffle,
        seed,
        epoch,
    );
    let (from, mut streams) = match &state.continuation {
        Some(continuation) => {
            if continuation.streams.len() < caches
                || continuation
                    .streams
                    .iter()
                    .zip(&recorded.caches)
                    .any(|(s, c)| {
                        (s.cache.samples, s.cache.shard_runs) != (c.samples, c.shard_runs)
                    })
            {
                return Err(PlanError::State(
                    "its continuation does not list a stream for each of its caches".into(),
                ));
            }
            (continuation.position, streams)
        }
        None => (0, first_streams(state, recorded, &old_phases)),
    };
    let bases = phases_stream_positions_at(&old_phases, from);
    let remaps: Vec<StreamRemap> = (0..caches)
        .map(|c| StreamRemap::new(bases[c], &streams[c].consumed))
        .collect();
    // What the run since `from` consumed: the positions in `[from, len)` not remaining.
    let mut consumed_now: Vec<Vec<Range<u64>>> = vec![Vec::new(); caches];
    let mut at = from;
    let consumed_global = |range: Range<u64>, out: &mut Vec<Vec<Range<u64>>>| {
        if range.start >= range.end {
            return;
        }
        let a = phases_stream_positions_at(&old_phases, range.start);
        let b = phases_stream_positions_at(&old_phases, range.end);
        for c in 0..caches {
            if b[c] > a[c] {
                out[c].extend(remaps[c].ranges(a[c]..b[c]));
            }
        }
    };
    for range in state.remaining() {
        if range.start < from {
            return Err(PlanError::State(format!(
                "remaining range {}..{} lies before its continuation's position {from}",
                range.start, range.end
            )));
        }
        consumed_global(at..range.start, &mut consumed_now);
        at = range.end;
    }
    consumed_global(at..recorded.epoch_len(), &mut consumed_now);
    for (stream, now) in streams.iter_mut().zip(consumed_now) {
        stream.consumed = merged(&stream.consumed, now);
    }

    let mut next_seed_index = streams
        .iter()
        .map(|s| s.seed_index + 1)
        .max()
        .unwrap_or(0)
        .max(caches as u64);
    let mut taken = vec![false; streams.len()];
    let mut added = Vec::new();
    let mut continued = Vec::with_capacity(streams.len() + now.caches.len());
    for (j, m) in matched.iter().enumerate() {
        match *m {
            Some(m) => {
                taken[m] = true;
                continued.push(streams[m].clone());
            }
            None => {
                added.push(j);
                continued.push(ConsumedStream {
                    cache: now.caches[j],
                    seed_index: next_seed_index,
                    cuts: Vec::new(),
                    consumed: Vec::new(),
                });
                next_seed_index += 1;
            }
        }
    }
    let removed = (0..caches)
        .filter(|&i| !taken[i])
        .map(|i| RemovedCache {
            cache: i,
            cache_id: recorded.caches[i].cache_id,
            consumed: streams[i].consumed_len(),
        })
        .collect();
    continued.extend(
        streams
            .into_iter()
            .zip(taken)
            .filter(|(_, taken)| !taken)
            .map(|(stream, _)| stream),
    );

    let was_phases = if recorded.phases.is_empty() {
        std::slice::from_ref(&recorded.shares)
    } else {
        &recorded.phases[..]
    };
    let now_phases: Vec<&[u64]> = plan.phases().iter().map(|p| p.shares()).collect();
    let lengths = |phases: &mut dyn Iterator<Item = &[u64]>| -> Vec<u64> {
        phases.map(|p| p.iter().sum()).collect()
    };
    // An epoch of plain weights that only changes length is a change of weights, not of
    // phases.
    let schedule = recorded.phases.is_empty() == plan.is_scheduled()
        || (plan.is_scheduled()
            && lengths(&mut was_phases.iter().map(Vec::as_slice))
                != lengths(&mut now_phases.iter().copied()));
    let weights = matched.iter().enumerate().any(|(j, m)| {
        m.filter(|&m| m < caches).is_some_and(|m| {
            recorded.shares[m] != now.shares[j]
                || was_phases
                    .iter()
                    .zip(&now_phases)
                    .any(|(was, now)| was[m] != now[j])
        })
    });
    let position = state.position;
    let change = MixtureChange {
        position,
        weights,
        schedule,
        added,
        removed,
    };
    let resumed = IterState {
        seed,
        epoch,
        position: position.min(plan.len()),
        epoch_len: plan.len(),
        cuts: Vec::new(),
        remaining: None,
        mixture: Some(now),
        continuation: Some(Continuation {
            position,
            streams: continued,
        }),
    };
    Ok((resumed, change))
}

/// The streams of an epoch read under one mixture from its start: each cache's, seeded by
/// its position, cut where the state's node boundaries fell in it.
fn first_streams(
    state: &IterState,
    recorded: &Mixture,
    phases: &[crate::PlanPhase],
) -> Vec<ConsumedStream> {
    let len = recorded.epoch_len();
    let mut cuts: Vec<Vec<u64>> = vec![Vec::new(); recorded.caches.len()];
    for &cut in state.cuts.iter().filter(|&&c| c > 0 && c < len) {
        for (c, position) in phases_stream_positions_at(phases, cut)
            .into_iter()
            .enumerate()
        {
            if position > 0 && position < recorded.shares[c] {
                cuts[c].push(position);
            }
        }
    }
    recorded
        .caches
        .iter()
        .zip(cuts)
        .enumerate()
        .map(|(c, (cache, mut cuts))| {
            cuts.sort_unstable();
            cuts.dedup();
            ConsumedStream {
                cache: *cache,
                seed_index: c as u64,
                cuts,
                consumed: Vec::new(),
            }
        })
        .collect()
}

/// `was` and `more` (disjoint from it) as sorted disjoint pairs, touching ranges joined.
fn merged(was: &[[u64; 2]], more: Vec<Range<u64>>) -> Vec<[u64; 2]> {
    let mut all: Vec<Range<u64>> = was.iter().map(|&[s, e]| s..e).chain(more).collect();
    all.sort_unstable_by_key(|r| r.start);
    let mut out: Vec<[u64; 2]> = Vec::with_capacity(all.len());
    for range in all.into_iter().filter(|r| r.start < r.end) {
        match out.last_mut() {
            Some(last) if last[1] >= range.start => last[1] = last[1].max(range.end),
            _ => out.push([range.start, range.end]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kth_draw_reads_the_kth_position_not_consumed() {
        let remap = StreamRemap::new(10, &[[0, 3], [5, 6], [9, 12]]);
        let free: Vec<u64> = (0..20)
            .filter(|p| !matches!(p, 0..=2 | 5 | 9..=11))
            .collect();
        for (k, &expected) in free.iter().enumerate() {
            assert_eq!(remap.map(10 + k as u64), Some(expected));
        }
        assert_eq!(remap.map(9), None);
        assert_eq!(remap.ranges(10..15), vec![3..5, 6..9]);
        assert_eq!(remap.ranges(0..14), vec![3..5, 6..8]);
        assert_eq!(remap.ranges(14..17), vec![8..9, 12..14]);
    }

    #[test]
    fn consumed_ranges_merge_where_they_touch() {
        assert_eq!(
            merged(&[[0, 3], [10, 12]], vec![3..5, 8..10, 20..21, 6..6]),
            vec![[0, 5], [8, 12], [20, 21]]
        );
    }
}
