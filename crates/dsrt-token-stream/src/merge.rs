//! The sources' streams merged into one stream of documents by token time.
//!
//! Source `c`, whose epoch holds `T_c` tokens, places each of its documents at the time
//! `P / T_c`, `P` being the tokens of its stream before the document; the epoch reads
//! documents in order of time (ties by source). Every prefix of the merged stream that ends
//! between two times therefore holds, of each source, its share of the tokens to within one
//! document: the share "over every prefix" mixing by tokens promises.
//!
//! With a schedule, each source's stream is cut into phases where its tokens reach its
//! cumulative budget of each phase, and a document's time is its phase (the upper 64 bits)
//! and its place within the source's tokens of that phase (the lower 64): the same rule, phase
//! by phase. Without one the epoch is one phase and the times are those above.
//!
//! The merged stream is cut into intervals at the epoch's cuts (node boundaries): each source's
//! stream is cut where its tokens reach its share of the boundary, so the documents of an
//! interval are whole segments of every source, and an interval's first token is known
//! exactly. A seek to any token finds its interval, then the time at which the merged stream
//! reaches it, by bisection over times, each probe costing a walk of at most one checkpoint
//! stride per source.

// Times are fixed-point fractions of the epoch (64 fractional bits) of token counts below
// 2^63, so a count shifted by 64 bits and a time multiplied by a count fit a u128.
#![allow(clippy::cast_possible_truncation)]

use crate::source::DocumentSource;
use crate::stream::{SourceStream, StreamCursor};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One document of the merged stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Doc {
    /// The source.
    pub(crate) source: usize,
    /// Its document id (sample id) in the source.
    pub(crate) doc: u64,
    /// The epoch's tokens before it.
    pub(crate) start: u64,
    /// Its tokens, boundary tokens included.
    pub(crate) len: u64,
}

impl Doc {
    /// The epoch token after its last.
    pub(crate) fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// The merged stream's shape: the sources' streams and where the intervals begin.
#[derive(Debug, Clone)]
pub(crate) struct Merge {
    pub(crate) streams: Vec<SourceStream>,
    /// `bounds[i][c]`: source `c`'s stream position where interval `i` begins; the last
    /// entry holds every stream's end.
    bounds: Vec<Vec<u64>>,
    /// `source_tokens[i][c]`: source `c`'s tokens before interval `i`.
    source_tokens: Vec<Vec<u64>>,
    /// `bound_tokens[i]`: the epoch's tokens before interval `i` (the last: all of them).
    bound_tokens: Vec<u64>,
    /// `phase_tokens[c][p]`: source `c`'s tokens before phase `p`; the last entry holds all of
    /// its tokens. One phase without a schedule.
    phase_tokens: Vec<Vec<u64>>,
}

/// The lower 64 bits of a time: the place within a phase.
const PLACE: u128 = u64::MAX as u128;

impl Merge {
    /// Merges `streams` (cut already, at their phases' starts too) with intervals beginning at
    /// each source's stream positions `cuts[i]` (one list per boundary, in order, none at 0 or
    /// the end), each source's phases starting at its tokens `phase_tokens[c]` (see
    /// [`Merge::phase_tokens`]).
    pub(crate) fn new<S: DocumentSource>(
        source: &S,
        streams: Vec<SourceStream>,
        cuts: Vec<Vec<u64>>,
        phase_tokens: Vec<Vec<u64>>,
    ) -> Self {
        let mut cursors: Vec<StreamCursor> = streams.iter().map(SourceStream::cursor).collect();
        let mut bounds = Vec::with_capacity(cuts.len() + 2);
        bounds.push(vec![0; streams.len()]);
        bounds.extend(cuts);
        bounds.push(streams.iter().map(SourceStream::end).collect());
        let source_tokens: Vec<Vec<u64>> = bounds
            .iter()
            .map(|positions| {
                streams
                    .iter()
                    .zip(positions)
                    .zip(cursors.iter_mut())
                    .map(|((stream, &k), cursor)| stream.layout_tokens(source, k, cursor))
                    .collect()
            })
            .collect();
        let bound_tokens = source_tokens.iter().map(|t| t.iter().sum()).collect();
        Self {
            streams,
            bounds,
            source_tokens,
            bound_tokens,
            phase_tokens,
        }
    }

    /// Phases of the epoch (1 without a schedule).
    pub(crate) fn phases(&self) -> usize {
        self.phase_tokens.first().map_or(1, |t| t.len() - 1)
    }

    /// `[c][p]`: source `c`'s tokens before phase `p`, and all of them last.
    pub(crate) fn phase_tokens(&self) -> &[Vec<u64>] {
        &self.phase_tokens
    }

    /// The time of source `c`'s document with `before` tokens of its stream before it.
    #[inline]
    fn time(&self, c: usize, before: u64) -> u128 {
        let starts = &self.phase_tokens[c];
        // The phase holding `before`: phases of no tokens of this source are passed over.
        let phase = starts[1..starts.len() - 1].partition_point(|&s| s <= before);
        let len = starts[phase + 1] - starts[phase];
        ((phase as u128) << 64) + (u128::from(before - starts[phase]) << 64) / u128::from(len)
    }

    /// The tokens source `c` has placed before time `time`: its documents before then are
    /// those with fewer preceding tokens than this.
    #[inline]
    fn tokens_before_time(&self, c: usize, time: u128) -> u64 {
        let starts = &self.phase_tokens[c];
        let phase = (time >> 64) as usize;
        if phase + 1 >= starts.len() {
            return starts[starts.len() - 1];
        }
        let scaled = (time & PLACE) * u128::from(starts[phase + 1] - starts[phase]);
        starts[phase] + ((scaled >> 64) + u128::from(scaled & PLACE != 0)) as u64
    }

    /// Tokens of the epoch.
    pub(crate) fn total(&self) -> u64 {
        self.bound_tokens.last().copied().unwrap_or(0)
    }

    /// Number of intervals.
    pub(crate) fn intervals(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Source `source`'s stream positions in interval `interval`.
    pub(crate) fn interval_positions(
        &self,
        interval: usize,
        source: usize,
    ) -> std::ops::Range<u64> {
        self.bounds[interval][source]..self.bounds[interval + 1][source]
    }

    /// Memory held.
    pub(crate) fn bytes(&self) -> usize {
        self.streams.iter().map(SourceStream::bytes).sum::<usize>()
            + self.bounds.iter().map(|b| b.capacity() * 8).sum::<usize>()
            + self
                .source_tokens
                .iter()
                .map(|b| b.capacity() * 8)
                .sum::<usize>()
            + self.bound_tokens.capacity() * 8
            + self
                .phase_tokens
                .iter()
                .map(|t| t.capacity() * 8)
                .sum::<usize>()
    }

    /// Each source's stream positions from the document holding token `first` (inclusive) to
    /// the one holding token `last` (inclusive): what reading those tokens reads.
    pub(crate) fn positions_between<S: DocumentSource>(
        &self,
        source: &S,
        first: u64,
        last: u64,
    ) -> Vec<std::ops::Range<u64>> {
        let mut cursor = self.cursor(source);
        cursor.seek(self, source, first);
        let from = cursor.at.positions_or_end(self);
        cursor.seek(self, source, last);
        let mut to = cursor.at.positions_or_end(self);
        if let Some(doc) = cursor.next(self, source) {
            let c = self
                .streams
                .iter()
                .position(|s| s.index() == doc.source)
                .unwrap_or(0);
            to[c] += 1;
        }
        from.into_iter().zip(to).map(|(a, b)| a..b.max(a)).collect()
    }

    /// A cursor at the epoch's start.
    pub(crate) fn cursor<S: DocumentSource>(&self, source: &S) -> MergeCursor {
        let mut cursor = MergeCursor {
            streams: self.streams.iter().map(SourceStream::cursor).collect(),
            at: MergeState::default(),
        };
        cursor.enter(self, source, 0);
        cursor
    }
}

/// Where a [`MergeCursor`] stands: small, cloned to come back to a place.
#[derive(Debug, Clone, Default)]
pub(crate) struct MergeState {
    interval: usize,
    /// Per source, its next stream position and the tokens before it.
    positions: Vec<u64>,
    tokens: Vec<u64>,
    /// Per source in the heap, its next document and that document's tokens.
    next: Vec<(u64, u64)>,
    heap: BinaryHeap<Reverse<(u128, u32)>>,
    /// The epoch's tokens before the next document.
    offset: u64,
}

/// Reads the merged stream document by document, and seeks to any token.
#[derive(Debug, Clone)]
pub(crate) struct MergeCursor {
    streams: Vec<StreamCursor>,
    at: MergeState,
}

impl MergeState {
    /// Each source's next stream position (the streams' ends where nothing is left).
    fn positions_or_end(&self, merge: &Merge) -> Vec<u64> {
        if self.positions.len() == merge.streams.len() {
            self.positions.clone()
        } else {
            merge.streams.iter().map(SourceStream::end).collect()
        }
    }
}

impl MergeCursor {
    /// The epoch's tokens before the next document.
    pub(crate) fn offset(&self) -> u64 {
        self.at.offset
    }

    /// Where the cursor stands (to come back to with [`MergeCursor::restore`]).
    pub(crate) fn state(&self) -> &MergeState {
        &self.at
    }

    /// Comes back to a place [`MergeCursor::state`] gave.
    pub(crate) fn restore(&mut self, state: &MergeState) {
        self.at.clone_from(state);
    }

    /// The next document, or `None` at the epoch's end.
    pub(crate) fn next<S: DocumentSource>(&mut self, merge: &Merge, source: &S) -> Option<Doc> {
        loop {
            if let Some(Reverse((_, c))) = self.at.heap.pop() {
                let c = c as usize;
                let (doc, len) = self.at.next[c];
                let found = Doc {
                    source: merge.streams[c].index(),
                    doc,
                    start: self.at.offset,
                    len,
                };
                self.at.offset += len;
                self.at.positions[c] += 1;
                self.at.tokens[c] += len;
                self.push(merge, source, c);
                return Some(found);
            }
            if self.at.interval + 1 >= merge.intervals() {
                return None;
            }
            let next = self.at.interval + 1;
            self.enter(merge, source, next);
        }
    }

    /// The next document of the interval the cursor is in, or `None` at the interval's end.
    pub(crate) fn next_within<S: DocumentSource>(
        &mut self,
        merge: &Merge,
        source: &S,
    ) -> Option<Doc> {
        if self.at.heap.is_empty() {
            return None;
        }
        self.next(merge, source)
    }

    /// Stands at the start of interval `interval`.
    pub(crate) fn enter_interval<S: DocumentSource>(
        &mut self,
        merge: &Merge,
        source: &S,
        interval: usize,
    ) {
        self.enter(merge, source, interval);
    }

    /// Places the cursor so that the next document is the one holding token `token` (the
    /// first after it where documents of no tokens lie there; at the end past the epoch).
    pub(crate) fn seek<S: DocumentSource>(&mut self, merge: &Merge, source: &S, token: u64) {
        if token >= merge.total() {
            let last = merge.intervals() - 1;
            self.set(merge, source, last, &merge.bounds[last + 1].clone());
            return;
        }
        let interval = merge.bound_tokens.partition_point(|&t| t <= token) - 1;
        // The latest time at which the interval's documents before it hold at most `token`
        // tokens, by bisection (times run from 0 to 2^64 per phase). Bounds from segment edges
        // settle most probes; only probes whose bounds straddle `token` (near the answer, in
        // one segment per source) walk a segment.
        let (mut low, mut high) = (0u128, ((merge.phases() as u128) << 64) + 1);
        let mut positions = vec![0; merge.streams.len()];
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            let (least, most) = self.bounds_at(merge, source, interval, middle);
            let below = if most <= token {
                true
            } else if least > token {
                false
            } else {
                self.tokens_at(merge, source, interval, middle, &mut positions) <= token
            };
            if below {
                low = middle;
            } else {
                high = middle;
            }
        }
        self.tokens_at(merge, source, interval, low, &mut positions);
        self.set(merge, source, interval, &positions);
        while let Some(&Reverse((_, c))) = self.at.heap.peek() {
            let len = self.at.next[c as usize].1;
            if self.at.offset + len > token {
                break;
            }
            self.next(merge, source);
        }
    }

    /// Bounds on [`MergeCursor::tokens_at`] found from segment edges alone (no walk).
    fn bounds_at<S: DocumentSource>(
        &mut self,
        merge: &Merge,
        source: &S,
        interval: usize,
        time: u128,
    ) -> (u64, u64) {
        let (mut least, mut most) = (merge.bound_tokens[interval], merge.bound_tokens[interval]);
        for (c, stream) in merge.streams.iter().enumerate() {
            let range = merge.interval_positions(interval, c);
            if stream.total() == 0 || range.is_empty() {
                continue;
            }
            let target = merge.tokens_before_time(c, time);
            let cursor = &mut self.streams[c];
            let (a, b) = stream.reaching_bounds(source, target, cursor);
            let before = merge.source_tokens[interval][c];
            let (a, b) = (
                a.clamp(range.start, range.end),
                b.clamp(range.start, range.end),
            );
            least += stream.layout_tokens(source, a, cursor) - before;
            most += stream.layout_tokens(source, b, cursor) - before;
        }
        (least, most)
    }

    /// The epoch's tokens before the documents of interval `interval` placed before time
    /// `time`; their stream positions into `positions`.
    fn tokens_at<S: DocumentSource>(
        &mut self,
        merge: &Merge,
        source: &S,
        interval: usize,
        time: u128,
        positions: &mut [u64],
    ) -> u64 {
        let mut tokens = merge.bound_tokens[interval];
        for (c, stream) in merge.streams.iter().enumerate() {
            let range = merge.interval_positions(interval, c);
            if stream.total() == 0 || range.is_empty() {
                positions[c] = range.start;
                continue;
            }
            let target = merge.tokens_before_time(c, time);
            let cursor = &mut self.streams[c];
            let k = stream
                .first_reaching(source, target, cursor)
                .clamp(range.start, range.end);
            positions[c] = k;
            tokens += stream.tokens_before(source, k, cursor) - merge.source_tokens[interval][c];
        }
        tokens
    }

    /// Stands at stream positions `positions` of interval `interval`.
    fn set<S: DocumentSource>(
        &mut self,
        merge: &Merge,
        source: &S,
        interval: usize,
        positions: &[u64],
    ) {
        let sources = merge.streams.len();
        self.at.interval = interval;
        self.at.positions.clear();
        self.at.positions.extend_from_slice(positions);
        self.at.tokens.clear();
        self.at.offset = 0;
        for (c, stream) in merge.streams.iter().enumerate() {
            let tokens = stream.tokens_before(source, positions[c], &mut self.streams[c]);
            self.at.tokens.push(tokens);
            self.at.offset += tokens;
        }
        self.at.next.clear();
        self.at.next.resize(sources, (0, 0));
        self.at.heap.clear();
        for c in 0..sources {
            self.push(merge, source, c);
        }
    }

    /// Stands at the start of interval `interval`.
    fn enter<S: DocumentSource>(&mut self, merge: &Merge, source: &S, interval: usize) {
        let positions = merge.bounds[interval].clone();
        self.set(merge, source, interval, &positions);
    }

    /// Puts source `c`'s next document of the interval on the heap, if it has one.
    fn push<S: DocumentSource>(&mut self, merge: &Merge, source: &S, c: usize) {
        let stream = &merge.streams[c];
        let position = self.at.positions[c];
        if position >= merge.bounds[self.at.interval + 1][c] {
            return;
        }
        let cursor = &mut self.streams[c];
        let doc = stream.doc_at(position, cursor);
        let len = stream.len_of(source, doc);
        self.at.next[c] = (doc, len);
        self.at
            .heap
            .push(Reverse((merge.time(c, self.at.tokens[c]), c as u32)));
    }
}
