// Plans live in memory: every count below is already bounded by a `Vec`'s length, so
// converting it to `usize` cannot truncate on the 64-bit targets this crate builds for.
#![allow(clippy::cast_possible_truncation)]

use crate::continuation::{self, StreamRemap};
use crate::mixing::Interleaving;
use crate::rng::mix;
use crate::stream::{CacheStream, PassLayout, StreamSlot};
use crate::{
    Continuation, IterState, Mixture, MixtureChange, PlanConfig, PlanError, PlannedCache,
    RemainderPolicy, Sampling, Schedule, Shuffle, Topology,
};
use std::ops::Range;

/// Stream positions and sample ids stay below 2^48, so a time (a position shifted by 64 bits)
/// fits a `u128`.
const SAMPLE_MASK: u64 = (1 << 48) - 1;
const MAX_CACHES: usize = 1 << 16;

/// What planning needs to know about one cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheShape {
    /// Number of samples.
    pub len: u64,
    /// Consecutive sample ranges whose records share a shard, covering `0..len` in order.
    /// Used for locality; a single run `0..len` is valid (it disables locality).
    pub runs: Vec<Range<u64>>,
    /// The shard id of each run (empty: run `i` is shard `i`), for reports of which shards a
    /// node reads.
    pub run_shards: Vec<u64>,
    /// The cache's id, if known: recorded in the states of the plan so that a resume with
    /// another cache of the same length and runs in its place is refused. Plans from a
    /// dataset have it; the order never depends on it.
    pub cache_id: Option<u64>,
}

impl CacheShape {
    /// A shape with one run per maximal stretch of equal shard ids.
    pub fn from_shard_ids(shard_ids: impl IntoIterator<Item = u64>) -> Self {
        let mut runs: Vec<Range<u64>> = Vec::new();
        let mut run_shards = Vec::new();
        let mut last = None;
        let mut len = 0u64;
        for shard in shard_ids {
            match runs.last_mut() {
                Some(run) if last == Some(shard) => run.end = len + 1,
                _ => {
                    runs.push(len..len + 1);
                    run_shards.push(shard);
                }
            }
            last = Some(shard);
            len += 1;
        }
        Self {
            len,
            runs,
            run_shards,
            cache_id: None,
        }
    }

    /// `len` samples in `shards` equal runs (the first `len % shards` one sample longer), run
    /// `i` in shard `i`: a synthetic shape for planning without a cache.
    pub fn equal_shards(len: u64, shards: u64) -> Self {
        let shards = shards.clamp(1, len.max(1));
        let (per, extra) = (len / shards, len % shards);
        let mut runs = Vec::with_capacity(usize::try_from(shards).unwrap_or(0));
        let mut at = 0;
        for i in 0..shards {
            let end = at + per + u64::from(i < extra);
            if end > at {
                runs.push(at..end);
            }
            at = end;
        }
        Self {
            len,
            runs,
            run_shards: Vec::new(),
            cache_id: None,
        }
    }

    /// The same shape, of the cache with id `cache_id`.
    #[must_use]
    pub fn with_cache_id(mut self, cache_id: u64) -> Self {
        self.cache_id = Some(cache_id);
        self
    }
}

/// One step of an epoch: which cache (by position in the dataset list) and which sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlannedSample {
    /// Position of the cache in the dataset list.
    pub cache: usize,
    /// Sample id within that cache.
    pub sample: u64,
}

/// How the positions of one phase map to the caches' streams (as offsets from where each
/// stream stands when the phase begins).
#[derive(Debug, Clone, PartialEq)]
enum Mixing {
    /// No cache has samples to draw.
    Empty,
    /// One cache draws every sample: offset `p` is its stream offset `p`.
    Single(usize),
    /// `Sequential`: the caches' shares one after another; `starts[c]` is where cache `c`'s
    /// begins.
    Concatenated { starts: Vec<u64> },
    /// Interleaved by time (see `mixing`), seeded by `seed`.
    Interleaved { seed: u64 },
}

impl Mixing {
    /// The mixing of `shares` under `shuffle`; `seed` seeds an interleaving.
    fn of(shares: &[u64], shuffle: Shuffle, seed: u64) -> Self {
        let mut drawing = (0..shares.len()).filter(|&c| shares[c] > 0);
        match (drawing.next(), drawing.next(), shuffle) {
            (None, _, _) => Self::Empty,
            (Some(only), None, _) => Self::Single(only),
            (_, _, Shuffle::Sequential) => {
                let mut starts = Vec::with_capacity(shares.len() + 1);
                let mut at = 0;
                for &share in shares {
                    starts.push(at);
                    at += share;
                }
                starts.push(at);
                Self::Concatenated { starts }
            }
            _ => Self::Interleaved { seed },
        }
    }
}

/// A stretch of an epoch mixed at one set of shares: the whole epoch without a schedule, one
/// phase of it with a [`Schedule`]. Its caches' streams start where the earlier phases left
/// them.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanPhase {
    start: u64,
    len: u64,
    shares: Vec<u64>,
    stream_starts: Vec<u64>,
    mixing: Mixing,
}

impl PlanPhase {
    /// The global positions the phase holds.
    pub fn positions(&self) -> Range<u64> {
        self.start..self.start + self.len
    }

    /// Samples each cache draws during the phase, in dataset order; they sum to the phase's
    /// length.
    pub fn shares(&self) -> &[u64] {
        &self.shares
    }

    /// Where each cache's stream stands when the phase begins: its shares in the phases
    /// before, summed.
    pub fn stream_starts(&self) -> &[u64] {
        &self.stream_starts
    }

    /// Each cache's stream position once the phase's first `offset` positions are read.
    fn stream_positions_at(&self, offset: u64) -> Vec<u64> {
        let mut at = match &self.mixing {
            Mixing::Empty => vec![0; self.shares.len()],
            Mixing::Single(only) => {
                let mut at = vec![0; self.shares.len()];
                at[*only] = offset;
                at
            }
            Mixing::Concatenated { starts } => self
                .shares
                .iter()
                .zip(starts)
                .map(|(&share, &start)| offset.saturating_sub(start).min(share))
                .collect(),
            Mixing::Interleaved { seed } => {
                Interleaving::cursors_at(*seed, &self.shares, self.len, offset)
            }
        };
        for (at, &start) in at.iter_mut().zip(&self.stream_starts) {
            *at += start;
        }
        at
    }
}

/// The order of one epoch, as a function from global position to sample: O(1) to evaluate
/// for one cache, O(log caches) per step for many (plus O(log phases) with a schedule), and
/// memory in the number of shards, caches and phases, never in the number of samples (see
/// [`EpochPlan::bytes`]).
#[derive(Debug, Clone, PartialEq)]
pub struct EpochPlan {
    epoch: u64,
    len: u64,
    shares: Vec<u64>,
    streams: Vec<CacheStream>,
    /// At least one; several only with a schedule.
    phases: Vec<PlanPhase>,
    scheduled: bool,
    cuts: Vec<u64>,
    /// The shapes' cache ids, and the modes of the config: only for the [`Mixture`] a state
    /// records.
    cache_ids: Vec<Option<u64>>,
    sampling: Sampling,
    shuffle: Shuffle,
    /// After a change of mixture, per cache, how the plan's draws map onto its stream past
    /// what was consumed (see `continuation`); empty otherwise.
    remaps: Vec<StreamRemap>,
    /// The change this plan's run was resumed under.
    change: Option<MixtureChange>,
}

impl EpochPlan {
    /// Builds epoch `epoch`'s order over caches of the given shapes.
    pub fn build(
        shapes: &[CacheShape],
        config: &PlanConfig,
        epoch: u64,
    ) -> Result<Self, PlanError> {
        if shapes.len() > MAX_CACHES {
            return Err(PlanError::TooLarge(format!(
                "{} caches (at most {MAX_CACHES})",
                shapes.len()
            )));
        }
        if let Some(cache) = shapes.iter().position(|s| s.len > SAMPLE_MASK) {
            return Err(PlanError::TooLarge(format!(
                "cache {cache} has more than 2^48 samples"
            )));
        }
        if let Some(cache) = shapes.iter().position(|s| s.runs.len() > u32::MAX as usize) {
            return Err(PlanError::TooLarge(format!(
                "cache {cache} has more than 2^32 shard runs"
            )));
        }
        let phase_shares = match &config.schedule {
            Some(schedule) => scheduled_shares(shapes, config, schedule)?,
            None => vec![shares(shapes, config)?],
        };
        // Without a schedule the one phase's shares are the totals; with one, a cache's
        // stream is one stream over the whole epoch, as long as its shares in all phases.
        let mut shares = vec![0u64; shapes.len()];
        for phase in &phase_shares {
            for (total, &share) in shares.iter_mut().zip(phase) {
                *total = total.saturating_add(share);
            }
        }
        if let Some(cache) = shares.iter().position(|&s| s > SAMPLE_MASK) {
            return Err(PlanError::TooLarge(format!(
                "cache {cache} would draw more than 2^48 samples"
            )));
        }
        let len = shares
            .iter()
            .try_fold(0u64, |sum, &s| sum.checked_add(s))
            .ok_or_else(|| PlanError::TooLarge("more than 2^64 samples per epoch".into()))?;
        let streams = shapes
            .iter()
            .zip(&shares)
            .enumerate()
            .map(|(cache, (shape, &share))| {
                let seed = mix(&[config.seed, epoch, cache as u64]);
                let runs = normalized_runs(shape);
                let run_shards = if runs == shape.runs {
                    shape.run_shards.clone()
                } else {
                    Vec::new()
                };
                CacheStream::new(
                    runs,
                    run_shards,
                    shape.len,
                    share,
                    seed,
                    config.sampling,
                    config.shuffle,
                )
            })
            .collect();
        let scheduled = config.schedule.is_some();
        let phases = plan_phases(phase_shares, scheduled, config.shuffle, config.seed, epoch);
        Ok(Self {
            epoch,
            len,
            shares,
            streams,
            phases,
            scheduled,
            cuts: Vec::new(),
            cache_ids: shapes.iter().map(|shape| shape.cache_id).collect(),
            sampling: config.sampling,
            shuffle: config.shuffle,
            remaps: Vec::new(),
            change: None,
        })
    }

    /// The plan of `epoch` run on `topology` from `resume` (or from the epoch's start), with
    /// the state it starts from: the state is checked against the plan, and the plan's
    /// windows are cut where the state says (the node boundaries of the epoch's first run).
    pub fn for_run(
        shapes: &[CacheShape],
        config: &PlanConfig,
        epoch: u64,
        topology: Topology,
        policy: RemainderPolicy,
        resume: Option<&IterState>,
    ) -> Result<(Self, IterState), PlanError> {
        let plan = Self::build(shapes, config, epoch)?;
        if let Some((state, recorded)) = resume.and_then(|state| {
            let recorded = state.mixture.as_ref()?;
            (!recorded.same_as(&plan.mixture())).then_some((state, recorded))
        }) {
            let (state, change) =
                continuation::resume_changed(state, recorded, &plan, config.seed, epoch)?;
            let mut plan = plan.continued(state.continuation.as_ref(), config.seed)?;
            plan.change = Some(change);
            return Ok((plan, state));
        }
        let state = match resume {
            Some(state) => state.clone(),
            None => IterState::start(config.seed, epoch, plan.len(), topology, policy),
        };
        let state = state.checked_for(config.seed, epoch, plan.len(), plan.mixture())?;
        if let Some(continuation) = &state.continuation {
            if let Some(range) = state
                .remaining()
                .first()
                .filter(|r| r.start < continuation.position)
            {
                return Err(PlanError::State(format!(
                    "remaining range {}..{} lies before its continuation's position {}",
                    range.start, range.end, continuation.position
                )));
            }
        }
        let plan = plan
            .with_cuts(&state.cuts)
            .continued(state.continuation.as_ref(), config.seed)?;
        Ok((plan, state))
    }

    /// The plan read on from `continuation` (where a state resumed under a changed mixture
    /// says each stream stands): each cache's stream seeded and cut as when the epoch first
    /// read it, its draws past the continuation's position mapped past what it consumed.
    fn continued(
        mut self,
        continuation: Option<&Continuation>,
        seed: u64,
    ) -> Result<Self, PlanError> {
        let Some(continuation) = continuation else {
            return Ok(self);
        };
        let caches = self.caches();
        if continuation.streams.len() < caches {
            return Err(PlanError::State(format!(
                "its continuation lists {} for the plan's {caches}",
                crate::state::counted(continuation.streams.len() as u64, "stream")
            )));
        }
        let bases = self.stream_positions_at(continuation.position);
        let mut remaps = Vec::with_capacity(caches);
        for (cache, recorded) in continuation.streams.iter().take(caches).enumerate() {
            recorded.check(cache)?;
            let planned = self.planned_cache(cache);
            if (recorded.cache.samples, recorded.cache.shard_runs)
                != (planned.samples, planned.shard_runs)
            {
                return Err(PlanError::State(format!(
                    "its continuation's stream {cache} is of {} samples in {} shard runs (the \
                     plan's cache has {} in {})",
                    recorded.cache.samples,
                    recorded.cache.shard_runs,
                    planned.samples,
                    planned.shard_runs
                )));
            }
            if recorded.seed_index != cache as u64 {
                let stream_seed = mix(&[seed, self.epoch, recorded.seed_index]);
                self.streams[cache] = self.streams[cache].reseeded(stream_seed);
            }
            self.streams[cache].keep_cuts(recorded.cuts.clone());
            remaps.push(StreamRemap::new(bases[cache], &recorded.consumed));
        }
        self.remaps = remaps;
        Ok(self)
    }

    /// The change of mixture this plan's run was resumed under (see [`MixtureChange`]):
    /// `None` for a run from the epoch's start or resumed under the mixture it was saved
    /// under.
    pub fn mixture_change(&self) -> Option<&MixtureChange> {
        self.change.as_ref()
    }

    /// The positions of cache `cache`'s own stream that the plan's stream positions
    /// `positions` read (those of [`EpochPlan::stream_positions_at`]), in order: `positions`
    /// itself, but for a plan resumed under a changed mixture, where they skip what the
    /// stream consumed before (and positions before the change read nothing).
    pub fn stream_ranges(&self, cache: usize, positions: Range<u64>) -> Vec<Range<u64>> {
        match self.remaps.get(cache) {
            Some(remap) => remap.ranges(positions),
            None if positions.start < positions.end => vec![positions],
            None => Vec::new(),
        }
    }

    /// The same order with its windows cut at global positions `cuts` (the boundaries between
    /// nodes' shares): a segment of a window then never spans a cut, so the samples on either
    /// side of a cut come from whole shard runs plus at most one run split in two, per cache.
    /// Only the order within the cut windows changes; which samples every stretch between
    /// cuts holds does not.
    #[must_use]
    pub fn with_cuts(mut self, cuts: &[u64]) -> Self {
        let mut per_cache: Vec<Vec<u64>> = vec![Vec::new(); self.streams.len()];
        for &cut in cuts.iter().filter(|&&c| c > 0 && c < self.len) {
            for (cache, position) in self.stream_positions_at(cut).into_iter().enumerate() {
                per_cache[cache].push(position);
            }
        }
        for (stream, cuts) in self.streams.iter_mut().zip(per_cache) {
            stream.set_cuts(cuts);
        }
        self.cuts = cuts.to_vec();
        self
    }

    /// The global positions this plan's windows are cut at.
    pub fn cuts(&self) -> &[u64] {
        &self.cuts
    }

    /// What the plan's states record of it (see [`Mixture`]): its caches as it sees them,
    /// their shares, its phases' shares with a schedule, its sampling and shuffle.
    pub fn mixture(&self) -> Mixture {
        Mixture {
            caches: (0..self.caches()).map(|c| self.planned_cache(c)).collect(),
            shares: self.shares.clone(),
            phases: if self.scheduled {
                self.phases.iter().map(|p| p.shares.clone()).collect()
            } else {
                Vec::new()
            },
            sampling: self.sampling,
            shuffle: self.shuffle,
        }
    }

    /// Cache `cache` as the plan sees it: its length, its shard runs as laid out (see
    /// [`EpochPlan::runs`]) and its id, if the plan was given one.
    pub fn planned_cache(&self, cache: usize) -> PlannedCache {
        PlannedCache {
            samples: self.streams[cache].len,
            shard_runs: self.streams[cache].runs().len() as u64,
            cache_id: self.cache_ids[cache],
        }
    }

    /// The epoch number this plan is for.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Number of samples in the epoch.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the epoch is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Samples each cache draws in the epoch, in dataset order (with a schedule, its shares
    /// in all phases summed): the length of its stream.
    pub fn shares(&self) -> &[u64] {
        &self.shares
    }

    /// The epoch's phases in order: one covering the whole epoch without a schedule, one per
    /// phase of the schedule with one.
    pub fn phases(&self) -> &[PlanPhase] {
        &self.phases
    }

    /// Whether the plan follows a [`Schedule`].
    pub fn is_scheduled(&self) -> bool {
        self.scheduled
    }

    /// The index of the phase that holds global position `position` (the last phase for the
    /// epoch's end and beyond).
    pub fn phase_at(&self, position: u64) -> usize {
        self.phases
            .partition_point(|phase| phase.start <= position)
            .saturating_sub(1)
    }

    /// Each cache's stream position once the first `position` global positions are read:
    /// how many samples of each cache they hold.
    pub fn stream_positions_at(&self, position: u64) -> Vec<u64> {
        phases_stream_positions_at(&self.phases, position)
    }

    /// A cursor for reading positions of this plan (see [`PlanCursor`]).
    pub fn cursor(&self) -> PlanCursor {
        let interleaves = self
            .phases
            .iter()
            .any(|phase| matches!(phase.mixing, Mixing::Interleaved { .. }));
        PlanCursor {
            interleaving: interleaves.then(|| Interleaving::new(self.shares.len())),
            interleaving_phase: 0,
            slots: Vec::new(),
        }
    }

    /// The sample at global position `position` (`None` past the end, and before the position
    /// a plan resumed under a changed mixture starts from, whose samples the earlier mixtures
    /// read: see [`EpochPlan::mixture_change`]). Each call starts a new
    /// cursor: to read many positions, keep one [`PlanCursor`].
    pub fn get(&self, position: u64) -> Option<PlannedSample> {
        self.cursor().get(self, position)
    }

    /// The cache and stream position that global position `position` reads.
    fn stream_position(&self, cursor: &mut PlanCursor, position: u64) -> Option<(usize, u64)> {
        if position >= self.len {
            return None;
        }
        let index = self.phase_at(position);
        let phase = &self.phases[index];
        let offset = position - phase.start;
        let (cache, offset) = match &phase.mixing {
            Mixing::Empty => return None,
            Mixing::Single(only) => (*only, offset),
            Mixing::Concatenated { starts } => {
                let cache = starts.partition_point(|&s| s <= offset) - 1;
                (cache, offset - starts[cache])
            }
            Mixing::Interleaved { seed } => {
                let interleaving = cursor.interleaving.as_mut()?;
                // The heap holds one phase's streams at that phase's rates: another phase
                // starts from a seek.
                if cursor.interleaving_phase != index {
                    interleaving.restart();
                    cursor.interleaving_phase = index;
                }
                interleaving.at(*seed, &phase.shares, phase.len, offset)?
            }
        };
        let position = phase.stream_starts[cache] + offset;
        match self.remaps.get(cache) {
            Some(remap) => remap.map(position).map(|position| (cache, position)),
            None => Some((cache, position)),
        }
    }

    /// Memory the plan holds: its caches' runs, one pass layout per cache, the phases' shares
    /// and the cuts. A cursor adds one heap entry per cache and the layout of any later pass
    /// it is in.
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.shares.capacity() * 8
            + self.cuts.capacity() * 8
            + self.cache_ids.capacity() * std::mem::size_of::<Option<u64>>()
            + self.remaps.iter().map(StreamRemap::bytes).sum::<usize>()
            + self
                .streams
                .iter()
                .map(|s| s.bytes() + std::mem::size_of::<CacheStream>())
                .sum::<usize>()
            + self
                .phases
                .iter()
                .map(|phase| {
                    std::mem::size_of::<PlanPhase>()
                        + (phase.shares.capacity() + phase.stream_starts.capacity()) * 8
                        + match &phase.mixing {
                            Mixing::Concatenated { starts } => starts.capacity() * 8,
                            _ => 0,
                        }
                })
                .sum::<usize>()
    }

    /// Cache `cache`'s shard runs as the plan lays them out: its shape's runs, or one run of
    /// the whole cache where they do not tile it.
    pub fn runs(&self, cache: usize) -> &[Range<u64>] {
        self.streams[cache].runs()
    }

    /// The layout of pass `pass` over cache `cache` (each pass is `len` consecutive positions
    /// of the cache's stream): its runs in reading order. The first pass's is held by the plan;
    /// a later one is computed into `cursor`, which keeps it for the next call.
    pub fn pass_layout<'a>(
        &'a self,
        cache: usize,
        pass: u64,
        cursor: &'a mut PlanCursor,
    ) -> &'a PassLayout {
        cursor.ensure_slots(self.caches());
        self.streams[cache].layout(pass, &mut cursor.slots[cache].layout)
    }

    /// The segment of cache `cache`'s stream that holds stream position `position` (below the
    /// cache's share): the stream positions that read, in an order of their own, exactly the
    /// samples of one stretch of their pass's layout, the offsets
    /// `segment - pass * cache_len` of [`EpochPlan::pass_layout`]. A segment is a window of the
    /// layout, cut where the plan's cuts fall (with `Full`, the whole pass).
    pub fn segment(&self, cache: usize, position: u64, cursor: &mut PlanCursor) -> Range<u64> {
        cursor.ensure_slots(self.caches());
        self.streams[cache].segment_of(position, &mut cursor.slots[cache])
    }

    /// The sample at position `position` of cache `cache`'s own stream (below its share), as
    /// the epoch reads it wherever that stream position falls among the global positions.
    pub fn stream_sample(&self, cache: usize, position: u64, cursor: &mut PlanCursor) -> u64 {
        cursor.ensure_slots(self.caches());
        self.streams[cache]
            .sample(position, &mut cursor.slots[cache])
            .0
    }

    pub(crate) fn stream(&self, cache: usize) -> &CacheStream {
        &self.streams[cache]
    }

    pub(crate) fn caches(&self) -> usize {
        self.streams.len()
    }
}

/// Reads positions of one [`EpochPlan`]: holds what makes the next positions cheap (the
/// interleaving's heap, and the layout of any pass past the first a cache is in). Reading
/// positions in increasing order, with small gaps, costs O(log caches) each; a jump back or far
/// ahead, or into another phase of a schedule, costs one seek, O(caches · log caches).
#[derive(Debug, Clone)]
pub struct PlanCursor {
    interleaving: Option<Interleaving>,
    /// The phase whose positions `interleaving` last read.
    interleaving_phase: usize,
    slots: Vec<StreamSlot>,
}

impl PlanCursor {
    /// The sample at global position `position` of `plan` (`None` past the end, or before a
    /// change of mixture the plan resumed from, as [`EpochPlan::get`]).
    #[inline]
    pub fn get(&mut self, plan: &EpochPlan, position: u64) -> Option<PlannedSample> {
        self.locate(plan, position).map(|(sample, _)| sample)
    }

    /// The sample at `position` and the shard it lies in.
    pub fn locate(&mut self, plan: &EpochPlan, position: u64) -> Option<(PlannedSample, u64)> {
        let (cache, stream_position) = plan.stream_position(self, position)?;
        self.ensure_slots(plan.caches());
        let stream = plan.stream(cache);
        let (sample, run) = stream.sample(stream_position, &mut self.slots[cache]);
        Some((PlannedSample { cache, sample }, stream.shard_of_run(run)))
    }

    fn ensure_slots(&mut self, caches: usize) {
        if self.slots.len() < caches {
            self.slots.resize(caches, StreamSlot::default());
        }
    }

    /// Memory the cursor holds.
    pub fn bytes(&self) -> usize {
        self.interleaving.as_ref().map_or(0, Interleaving::bytes)
            + self.slots.iter().map(StreamSlot::bytes).sum::<usize>()
    }
}

/// The phases of an epoch mixed at `phase_shares` (one list of shares per phase, every
/// cache's stream running on across them).
pub(crate) fn plan_phases(
    phase_shares: Vec<Vec<u64>>,
    scheduled: bool,
    shuffle: Shuffle,
    seed: u64,
    epoch: u64,
) -> Vec<PlanPhase> {
    let caches = phase_shares.first().map_or(0, Vec::len);
    let mut phases = Vec::with_capacity(phase_shares.len());
    let mut start = 0u64;
    let mut stream_starts = vec![0u64; caches];
    for (index, shares) in phase_shares.into_iter().enumerate() {
        // An unscheduled plan keeps the seed it always had, so its order is unchanged;
        // each phase of a schedule interleaves with a seed of its own, so phases with the
        // same shares do not repeat one pattern.
        let phase_seed = if scheduled {
            mix(&[seed, epoch, u64::MAX, index as u64])
        } else {
            mix(&[seed, epoch, u64::MAX])
        };
        let len: u64 = shares.iter().sum();
        let mixing = Mixing::of(&shares, shuffle, phase_seed);
        let next_starts = stream_starts
            .iter()
            .zip(&shares)
            .map(|(a, b)| a + b)
            .collect();
        phases.push(PlanPhase {
            start,
            len,
            shares,
            stream_starts: std::mem::replace(&mut stream_starts, next_starts),
            mixing,
        });
        start += len;
    }
    phases
}

/// Each cache's stream position once the first `position` global positions of `phases` are
/// read (`position` clamped to their end).
pub(crate) fn phases_stream_positions_at(phases: &[PlanPhase], position: u64) -> Vec<u64> {
    let end = phases.last().map_or(0, |p| p.start + p.len);
    let position = position.min(end);
    let index = phases
        .partition_point(|phase| phase.start <= position)
        .saturating_sub(1);
    let phase = &phases[index];
    phase.stream_positions_at(position - phase.start)
}

/// Samples each cache contributes to the epoch.
fn shares(shapes: &[CacheShape], config: &PlanConfig) -> Result<Vec<u64>, PlanError> {
    let Some(weights) = &config.weights else {
        return Ok(shapes.iter().map(|s| s.len).collect());
    };
    if weights.len() != shapes.len() {
        return Err(PlanError::Weights(format!(
            "{} weights for {} caches",
            weights.len(),
            shapes.len()
        )));
    }
    let epoch_len = config
        .samples_per_epoch
        .unwrap_or_else(|| shapes.iter().map(|s| s.len).sum());
    let shares = weighted_shares(weights, epoch_len)?;
    if let Some(cache) = shapes
        .iter()
        .zip(&shares)
        .position(|(s, &share)| share > 0 && s.len == 0)
    {
        return Err(PlanError::EmptyCache { cache });
    }
    Ok(shares)
}

/// Samples each cache contributes to each phase of `schedule`, checked phase by phase.
fn scheduled_shares(
    shapes: &[CacheShape],
    config: &PlanConfig,
    schedule: &Schedule,
) -> Result<Vec<Vec<u64>>, PlanError> {
    if config.weights.is_some() {
        return Err(PlanError::ScheduleConflict { setting: "weights" });
    }
    if config.samples_per_epoch.is_some() {
        return Err(PlanError::ScheduleConflict {
            setting: "samples_per_epoch",
        });
    }
    if schedule.phases.is_empty() {
        return Err(PlanError::Schedule("it has no phases".into()));
    }
    if schedule.samples().is_none() {
        return Err(PlanError::TooLarge(
            "the schedule's phases hold more than 2^64 samples".into(),
        ));
    }
    let sizes: Vec<u64> = shapes.iter().map(|shape| shape.len).collect();
    schedule
        .phases
        .iter()
        .enumerate()
        .map(|(index, phase)| {
            let problem = |problem: String| PlanError::Phase {
                phase: index,
                problem,
            };
            phase_shares(&phase.weights, phase.samples, &sizes, "samples").map_err(problem)
        })
        .collect()
}

/// One phase's share of each cache: `length` (of `unit`, "samples" or "tokens") split by
/// `weights`, after the checks every schedule makes of a phase (a length of at least 1, one
/// weight per cache, each finite and non-negative, not all zero, none positive on a cache whose
/// size is 0). The error is the problem, for the caller to name the phase.
pub fn phase_shares(
    weights: &[f64],
    length: u64,
    sizes: &[u64],
    unit: &str,
) -> Result<Vec<u64>, String> {
    if length == 0 {
        return Err(format!("it holds 0 {unit} (at least 1)"));
    }
    if weights.len() != sizes.len() {
        return Err(format!(
            "{} weights for {} caches",
            weights.len(),
            sizes.len()
        ));
    }
    if let Some((cache, weight)) = weights
        .iter()
        .enumerate()
        .find(|(_, w)| !w.is_finite() || **w < 0.0)
    {
        return Err(format!(
            "the weight of cache {cache}, {weight}, is not a finite non-negative number"
        ));
    }
    if weights.iter().all(|&w| w == 0.0) {
        return Err("all its weights are zero".into());
    }
    // Refused by weight, not by share: whether a tiny weight rounds to a share of zero should
    // not decide whether an empty cache is accepted.
    if let Some(cache) = sizes
        .iter()
        .zip(weights)
        .position(|(&size, &w)| w > 0.0 && size == 0)
    {
        return Err(format!(
            "cache {cache} has weight {} but no {unit}",
            weights[cache]
        ));
    }
    weighted_shares(weights, length).map_err(|e| e.to_string())
}

/// Splits `total` in proportion to `weights` (finite, non-negative, not all zero), rounding by
/// largest remainder so the parts sum to exactly `total` (ties go to the earlier weight): how
/// a plan gives each cache its share of an epoch, of samples or of tokens.
pub fn weighted_shares(weights: &[f64], total: u64) -> Result<Vec<u64>, PlanError> {
    if let Some(bad) = weights.iter().find(|w| !w.is_finite() || **w < 0.0) {
        return Err(PlanError::Weights(format!(
            "{bad} is not a finite non-negative weight"
        )));
    }
    let total_weight: f64 = weights.iter().sum();
    if total_weight <= 0.0 {
        return Err(PlanError::Weights("all weights are zero".into()));
    }
    Ok(largest_remainder(weights, total_weight, total))
}

/// Splits `total` in proportion to `weights` so the parts sum to exactly `total`.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
fn largest_remainder(weights: &[f64], total_weight: f64, total: u64) -> Vec<u64> {
    let exact: Vec<f64> = weights
        .iter()
        .map(|w| w / total_weight * total as f64)
        .collect();
    let mut shares: Vec<u64> = exact.iter().map(|e| e.floor() as u64).collect();
    let assigned: u64 = shares.iter().sum();
    let mut by_remainder: Vec<usize> = (0..weights.len()).filter(|&i| weights[i] > 0.0).collect();
    // Ties go to the earlier cache, so the split is deterministic.
    by_remainder.sort_by(|&a, &b| {
        (exact[b] - exact[b].floor())
            .total_cmp(&(exact[a] - exact[a].floor()))
            .then(a.cmp(&b))
    });
    for &i in by_remainder
        .iter()
        .cycle()
        .take(total.saturating_sub(assigned) as usize)
    {
        shares[i] += 1;
    }
    shares
}

/// The shape's runs if they tile `0..len`, else one run per sample block of the whole cache.
fn normalized_runs(shape: &CacheShape) -> Vec<Range<u64>> {
    let tiles = shape.runs.first().is_some_and(|r| r.start == 0)
        && shape
            .runs
            .windows(2)
            .all(|w| w[0].end == w[1].start && w[0].start < w[0].end)
        && shape
            .runs
            .last()
            .is_some_and(|r| r.end == shape.len && r.start < r.end);
    if tiles {
        shape.runs.clone()
    } else {
        std::iter::once(0..shape.len).collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code

    use super::*;
    use crate::{Phase, Sampling};

    fn phase(samples: u64, weights: &[f64]) -> Phase {
        Phase {
            samples,
            weights: weights.to_vec(),
        }
    }

    fn scheduled(phases: Vec<Phase>) -> PlanConfig {
        PlanConfig {
            seed: 7,
            schedule: Some(Schedule { phases }),
            ..PlanConfig::default()
        }
    }

    fn shapes() -> Vec<CacheShape> {
        vec![
            CacheShape::equal_shards(500, 10),
            CacheShape::equal_shards(0, 1),
            CacheShape::equal_shards(300, 6),
        ]
    }

    #[test]
    fn each_phase_starts_each_stream_where_the_phases_before_left_it() {
        let plan = EpochPlan::build(
            &shapes(),
            &scheduled(vec![
                phase(100, &[1.0, 0.0, 1.0]),
                phase(40, &[0.0, 0.0, 1.0]),
                phase(60, &[3.0, 0.0, 1.0]),
            ]),
            0,
        )
        .unwrap();
        let starts: Vec<&[u64]> = plan.phases().iter().map(PlanPhase::stream_starts).collect();
        assert_eq!(starts, [&[0, 0, 0][..], &[50, 0, 50], &[50, 0, 90]]);
        assert_eq!(plan.shares(), [95, 0, 105]);
        let positions: Vec<Range<u64>> = plan.phases().iter().map(PlanPhase::positions).collect();
        assert_eq!(positions, [0..100, 100..140, 140..200]);
        assert_eq!(
            (plan.phase_at(99), plan.phase_at(100), plan.phase_at(200)),
            (0, 1, 2)
        );
        // The single-cache phase reads cache 2's stream on from 50.
        let mut cursor = plan.cursor();
        for position in 100..140 {
            let expected = plan.stream_sample(2, position - 50, &mut cursor);
            assert_eq!(
                cursor.get(&plan, position),
                Some(PlannedSample {
                    cache: 2,
                    sample: expected
                })
            );
        }
    }

    #[test]
    fn a_cursor_stepping_into_another_phase_finds_it() {
        // Short hops from one phase into the next, where a cursor would otherwise step on
        // through the previous phase's heap.
        let plan = EpochPlan::build(
            &shapes(),
            &scheduled(vec![
                phase(300, &[1.0, 0.0, 1.0]),
                phase(300, &[1.0, 0.0, 4.0]),
            ]),
            0,
        )
        .unwrap();
        let expected: Vec<Option<PlannedSample>> = (0..600).map(|p| plan.get(p)).collect();
        for from in (0..300).step_by(11) {
            for hop in [1, 5, 30, 63] {
                let to = 300 + from % 200 + hop;
                let mut cursor = plan.cursor();
                assert_eq!(cursor.get(&plan, from), expected[from as usize]);
                assert_eq!(
                    cursor.get(&plan, to),
                    expected[to as usize],
                    "{from} -> {to}"
                );
                assert_eq!(cursor.get(&plan, from + 1), expected[from as usize + 1]);
            }
        }
    }

    #[test]
    fn a_schedule_with_weights_or_samples_per_epoch_is_refused() {
        let schedule = Some(Schedule {
            phases: vec![phase(10, &[1.0, 0.0, 1.0])],
        });
        let with_weights = PlanConfig {
            weights: Some(vec![1.0, 0.0, 1.0]),
            schedule: schedule.clone(),
            ..PlanConfig::default()
        };
        assert_eq!(
            EpochPlan::build(&shapes(), &with_weights, 0),
            Err(PlanError::ScheduleConflict { setting: "weights" })
        );
        let with_length = PlanConfig {
            samples_per_epoch: Some(10),
            schedule,
            ..PlanConfig::default()
        };
        let error = EpochPlan::build(&shapes(), &with_length, 0).unwrap_err();
        assert_eq!(
            error,
            PlanError::ScheduleConflict {
                setting: "samples_per_epoch"
            }
        );
        assert!(error.to_string().contains("samples_per_epoch"), "{error}");
    }

    #[test]
    fn bad_phases_are_refused_naming_the_phase_and_the_problem() {
        let good = phase(10, &[1.0, 0.0, 1.0]);
        let cases: [(Phase, &str); 7] = [
            (phase(0, &[1.0, 0.0, 1.0]), "0 samples"),
            (phase(10, &[1.0, 1.0]), "2 weights for 3 caches"),
            (phase(10, &[1.0, 0.0, f64::NAN]), "cache 2, NaN"),
            (phase(10, &[1.0, 0.0, f64::INFINITY]), "cache 2, inf"),
            (phase(10, &[-0.5, 0.0, 1.0]), "cache 0, -0.5"),
            (phase(10, &[0.0, 0.0, 0.0]), "all its weights are zero"),
            (
                phase(10, &[1.0, 0.25, 1.0]),
                "cache 1 has weight 0.25 but no samples",
            ),
        ];
        for (bad, problem) in cases {
            let config = scheduled(vec![good.clone(), good.clone(), bad]);
            match EpochPlan::build(&shapes(), &config, 0) {
                Err(error @ PlanError::Phase { phase: 2, .. }) => {
                    let text = error.to_string();
                    assert!(
                        text.contains("phase 2") && text.contains(problem),
                        "{text:?} should name {problem:?}"
                    );
                }
                other => panic!("{problem}: {other:?}"),
            }
        }
        assert!(matches!(
            EpochPlan::build(&shapes(), &scheduled(Vec::new()), 0),
            Err(PlanError::Schedule(_))
        ));
        assert!(matches!(
            EpochPlan::build(
                &shapes(),
                &scheduled(vec![
                    phase(u64::MAX, &[1.0, 0.0, 1.0]),
                    phase(2, &[1.0, 0.0, 1.0])
                ]),
                0
            ),
            Err(PlanError::TooLarge(_))
        ));
        assert!(matches!(
            EpochPlan::build(
                &shapes(),
                &scheduled(vec![phase(1 << 50, &[1.0, 0.0, 0.0])]),
                0
            ),
            Err(PlanError::TooLarge(_))
        ));
    }

    #[test]
    fn plans_without_a_schedule_have_one_phase_of_the_whole_epoch() {
        for sampling in [Sampling::WithoutReplacement, Sampling::WithReplacement] {
            let config = PlanConfig {
                weights: Some(vec![1.0, 0.0, 2.0]),
                samples_per_epoch: Some(900),
                sampling,
                ..PlanConfig::default()
            };
            let plan = EpochPlan::build(&shapes(), &config, 0).unwrap();
            assert!(!plan.is_scheduled());
            assert_eq!(plan.phases().len(), 1);
            assert_eq!(plan.phases()[0].positions(), 0..900);
            assert_eq!(plan.phases()[0].shares(), plan.shares());
            assert_eq!(plan.phases()[0].stream_starts(), [0, 0, 0]);
        }
    }
}
