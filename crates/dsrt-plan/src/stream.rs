//! One cache's stream: the sample at any position of its share of an epoch, computed from the
//! seed and the cache's runs, never stored.
//!
//! A stream is a sequence of passes over the cache (with replacement, of `len` draws each).
//! A pass lays the cache's shard runs out in an order (shuffled with `Local`, physical
//! otherwise) and groups them into windows (`window_shards` runs with `Local`, one run with
//! `Sequential`, the whole pass with `Full`). A window is cut further into segments where the
//! plan's cuts fall (node boundaries); the samples of a segment are the segment's stretch of
//! the laid-out runs, in a pseudo-random order of their own. So the samples of a stretch of
//! the stream between two cuts come from the whole runs it covers plus at most one run cut in
//! two at each end.

// Shapes are held in memory: every run index below fits `usize` and `u32` (checked when the
// plan is built), so the conversions cannot truncate on the 64-bit targets this crate builds for.
#![allow(clippy::cast_possible_truncation)]

use crate::rng::{mix, scaled, Permutation, Rng};
use crate::{Sampling, Shuffle};
use std::ops::Range;
use std::sync::Arc;

/// The runs of one pass over a cache in the order it reads them, with where each starts in the
/// pass: what [`EpochPlan::pass_layout`](crate::EpochPlan::pass_layout) shows of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassLayout {
    pass: u64,
    /// Run indices in reading order.
    order: Vec<u32>,
    /// `starts[i]`: offset in the pass of the `i`-th run read; `starts[runs]` is `len`.
    starts: Vec<u64>,
}

impl PassLayout {
    pub(crate) fn bytes(&self) -> usize {
        self.order.capacity() * 4 + self.starts.capacity() * 8
    }

    /// The pass this is the layout of.
    pub fn pass(&self) -> u64 {
        self.pass
    }

    /// The cache's run indices (into [`EpochPlan::runs`](crate::EpochPlan::runs)) in the
    /// order the pass reads them.
    pub fn run_order(&self) -> &[u32] {
        &self.order
    }

    /// `starts()[i]`: the offset within the pass of the first sample of the `i`-th run read;
    /// one more entry than [`PassLayout::run_order`], the last being the pass's length.
    pub fn starts(&self) -> &[u64] {
        &self.starts
    }

    /// The index (into [`PassLayout::run_order`]) of the run that offset `offset` of the
    /// pass lies in (`offset` below the pass's length).
    pub fn run_at(&self, offset: u64) -> usize {
        self.starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1)
    }
}

/// One cache's share of an epoch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CacheStream {
    /// Samples in the cache.
    pub(crate) len: u64,
    /// Samples the epoch draws from it.
    pub(crate) share: u64,
    runs: Vec<Range<u64>>,
    run_shards: Vec<u64>,
    seed: u64,
    sampling: Sampling,
    shuffle: Shuffle,
    /// Runs per window.
    window_runs: usize,
    first_pass: Arc<PassLayout>,
    /// Stream positions where a segment ends and the next begins, sorted.
    cuts: Vec<u64>,
}

/// Where a stream position lies: its pass, its window's runs (indices into the pass's
/// reading order) and its segment (as stream positions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    pub(crate) pass: u64,
    pub(crate) runs: Range<usize>,
    pub(crate) segment: Range<u64>,
}

/// What a reader of one stream keeps between positions: the layout of the pass it is in (past
/// the first), and the segment it is in with that segment's permutation, so positions of the
/// same segment skip finding it.
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamSlot {
    pub(crate) layout: Option<PassLayout>,
    segment: Option<(Placement, Permutation)>,
}

impl StreamSlot {
    pub(crate) fn bytes(&self) -> usize {
        self.layout.as_ref().map_or(0, PassLayout::bytes)
    }
}

impl CacheStream {
    pub(crate) fn new(
        runs: Vec<Range<u64>>,
        run_shards: Vec<u64>,
        len: u64,
        share: u64,
        seed: u64,
        sampling: Sampling,
        shuffle: Shuffle,
    ) -> Self {
        let window_runs = match shuffle {
            Shuffle::Sequential => 1,
            Shuffle::Local { window_shards } => window_shards.max(1),
            Shuffle::Full => runs.len().max(1),
        };
        let mut stream = Self {
            len,
            share,
            runs,
            run_shards,
            seed,
            sampling,
            shuffle,
            window_runs,
            first_pass: Arc::new(PassLayout {
                pass: 0,
                order: Vec::new(),
                starts: vec![0],
            }),
            cuts: Vec::new(),
        };
        stream.first_pass = Arc::new(stream.layout_of(0));
        stream
    }

    /// Memory the stream holds (its runs, its first pass's layout and its cuts).
    pub(crate) fn bytes(&self) -> usize {
        self.runs.capacity() * std::mem::size_of::<Range<u64>>()
            + self.run_shards.capacity() * 8
            + self.first_pass.bytes()
            + self.cuts.capacity() * 8
    }

    pub(crate) fn set_cuts(&mut self, mut cuts: Vec<u64>) {
        cuts.retain(|&c| c > 0 && c < self.share);
        cuts.sort_unstable();
        cuts.dedup();
        self.cuts = cuts;
    }

    /// The same stream seeded by `seed`: a cache's stream keeps the seed of the plan that
    /// first read it when a change of mixture moves it to another position.
    pub(crate) fn reseeded(&self, seed: u64) -> Self {
        Self::new(
            self.runs.clone(),
            self.run_shards.clone(),
            self.len,
            self.share,
            seed,
            self.sampling,
            self.shuffle,
        )
    }

    /// Cuts recorded for the stream when the epoch first read it, kept whatever the share
    /// now (a stream read on past a change reads past its first share).
    pub(crate) fn keep_cuts(&mut self, mut cuts: Vec<u64>) {
        cuts.retain(|&c| c > 0);
        cuts.sort_unstable();
        cuts.dedup();
        self.cuts = cuts;
    }

    /// The shard id of run `run`.
    pub(crate) fn shard_of_run(&self, run: usize) -> u64 {
        self.run_shards.get(run).copied().unwrap_or(run as u64)
    }

    /// Whether segments are shuffled as a whole (with replacement, or `Full`) rather than
    /// cut where the plan's cuts fall.
    fn ignores_cuts(&self) -> bool {
        matches!(self.shuffle, Shuffle::Full)
    }

    fn layout_of(&self, pass: u64) -> PassLayout {
        if self.sampling == Sampling::RunsWithReplacement {
            return self.drawn_layout(pass);
        }
        let mut order: Vec<u32> = (0..self.runs.len() as u32).collect();
        if matches!(self.shuffle, Shuffle::Local { .. }) {
            Rng::new(mix(&[self.seed, pass])).shuffle(&mut order);
        }
        let mut starts = Vec::with_capacity(order.len() + 1);
        let mut at = 0;
        starts.push(0);
        for &run in &order {
            let run = &self.runs[run as usize];
            at += run.end - run.start;
            starts.push(at);
        }
        PassLayout {
            pass,
            order,
            starts,
        }
    }

    /// A pass of runs drawn uniformly with replacement until they hold `len` samples, the last
    /// one cut to fit (`Sampling::RunsWithReplacement`).
    fn drawn_layout(&self, pass: u64) -> PassLayout {
        let mut rng = Rng::new(mix(&[self.seed, pass, 3]));
        let mut order = Vec::with_capacity(self.runs.len());
        let mut starts = Vec::with_capacity(self.runs.len() + 1);
        let mut at = 0;
        while at < self.len && !self.runs.is_empty() {
            let run = rng.below(self.runs.len() as u64) as u32;
            order.push(run);
            starts.push(at);
            let run = &self.runs[run as usize];
            at += run.end - run.start;
        }
        starts.push(self.len);
        PassLayout {
            pass,
            order,
            starts,
        }
    }

    /// Whether every pass lays its runs out as the first does.
    fn passes_alike(&self) -> bool {
        !matches!(self.shuffle, Shuffle::Local { .. })
            && self.sampling != Sampling::RunsWithReplacement
    }

    /// The layout of `pass`: the first pass's, or one computed into `slot` (kept there for the
    /// next positions of the same pass). Only `Local` and runs drawn with replacement lay passes
    /// out differently.
    pub(crate) fn layout<'a>(
        &'a self,
        pass: u64,
        slot: &'a mut Option<PassLayout>,
    ) -> &'a PassLayout {
        if pass == 0 || self.passes_alike() {
            return &self.first_pass;
        }
        if slot.as_ref().is_none_or(|l| l.pass != pass) {
            *slot = Some(self.layout_of(pass));
        }
        slot.as_ref().unwrap_or(&self.first_pass)
    }

    /// The pass, window and segment of stream position `position` (`< share`).
    pub(crate) fn place(&self, position: u64, layout: &PassLayout) -> Placement {
        let pass = position / self.len;
        let base = pass * self.len;
        let offset = position - base;
        let run = layout.starts.partition_point(|&s| s <= offset) - 1;
        let first = run - run % self.window_runs;
        let last = (first + self.window_runs).min(layout.order.len());
        let mut segment = base + layout.starts[first]..base + layout.starts[last];
        if !self.ignores_cuts() {
            let next = self.cuts.partition_point(|&c| c <= position);
            if next > 0 {
                segment.start = segment.start.max(self.cuts[next - 1]);
            }
            if let Some(&cut) = self.cuts.get(next) {
                segment.end = segment.end.min(cut);
            }
        }
        Placement {
            pass,
            runs: first..last,
            segment,
        }
    }

    /// The sample at stream position `position` (`< share`) and the index of its run.
    #[inline]
    pub(crate) fn sample(&self, position: u64, slot: &mut StreamSlot) -> (u64, usize) {
        let StreamSlot { layout, segment } = slot;
        let (placed, permutation) = match segment {
            Some((placed, permutation)) if placed.segment.contains(&position) => {
                (&*placed, *permutation)
            }
            _ => {
                let pass = position / self.len;
                let placed = self.place(position, self.layout(pass, layout));
                let width = placed.segment.end - placed.segment.start;
                let seed = mix(&[self.seed, pass, placed.segment.start, 1]);
                let (placed, permutation) = segment.insert((placed, Permutation::new(seed, width)));
                (&*placed, *permutation)
            }
        };
        let layout = self.layout(placed.pass, layout);
        let start = placed.segment.start;
        let drawn = match (self.sampling, self.shuffle) {
            (Sampling::WithoutReplacement | Sampling::RunsWithReplacement, Shuffle::Sequential) => {
                position
            }
            (Sampling::WithoutReplacement | Sampling::RunsWithReplacement, _) => {
                start + permutation.apply(position - start)
            }
            (Sampling::WithReplacement, _) => {
                start + scaled(mix(&[self.seed, position, 2]), placed.segment.end - start)
            }
        };
        let offset = drawn - placed.pass * self.len;
        let starts = &layout.starts[placed.runs.start..=placed.runs.end];
        let run = placed.runs.start + starts.partition_point(|&s| s <= offset) - 1;
        let run_index = layout.order[run] as usize;
        (
            self.runs[run_index].start + (offset - layout.starts[run]),
            run_index,
        )
    }

    /// The segment holding stream position `position` (`< share`): the stream positions that
    /// read, in an order of their own, exactly the samples of one stretch of their pass's
    /// layout (offsets `segment - pass * len`).
    pub(crate) fn segment_of(&self, position: u64, slot: &mut StreamSlot) -> Range<u64> {
        if self.len == 0 {
            return position..position;
        }
        let layout = self.layout(position / self.len, &mut slot.layout);
        self.place(position, layout).segment
    }

    /// The cache's runs, as the stream lays them out.
    pub(crate) fn runs(&self) -> &[Range<u64>] {
        &self.runs
    }

    /// The run indices a whole segment `segment` (stream positions of one pass) reads: the runs
    /// its stretch of the pass's layout overlaps.
    pub(crate) fn segment_runs(&self, segment: Range<u64>, slot: &mut StreamSlot) -> Vec<usize> {
        let pass = segment.start / self.len;
        let layout = self.layout(pass, &mut slot.layout);
        let base = pass * self.len;
        let (start, end) = (segment.start - base, segment.end - base);
        let first = layout.starts.partition_point(|&s| s <= start) - 1;
        let mut runs = Vec::new();
        let mut i = first;
        while i < layout.order.len() && layout.starts[i] < end {
            runs.push(layout.order[i] as usize);
            i += 1;
        }
        runs
    }

    /// Whether every sample of a segment is read once its positions are (without
    /// replacement), so a node reading the whole segment reads exactly its runs.
    pub(crate) fn reads_segments_whole(&self) -> bool {
        self.sampling != Sampling::WithReplacement
    }
}
