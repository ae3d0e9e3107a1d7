//! Which pieces of which documents each of a rank's rows holds, found by walking the merged
//! document stream (lengths only; no token is read here).
//!
//! A reader keeps its place between calls. Rows are permuted within blocks, so a reader asked
//! for a chunk of steps walks the chunk's rows in increasing order; it remembers where the
//! block it is in began, so a later chunk in the same block (another worker's turn passed)
//! starts from there instead of seeking.

// Row offsets are below seq_len + 1 (< 2^25) and fit u32.
#![allow(clippy::cast_possible_truncation)]

use crate::merge::{Doc, MergeCursor, MergeState};
use crate::pack::{Emitted, Packer};
use crate::source::DocumentSource;
use crate::{LongDocs, TokenConfig, TokenPlan, TokenStreamError};
use std::collections::VecDeque;
use std::ops::Range;

/// Tokens past the current document within which a reader walks forward rather than seeks
/// (a seek costs about as much as walking this far).
const WALK_RATHER_THAN_SEEK: u64 = 1 << 24;

/// A stretch of one document in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Piece {
    /// The source (cache position in the dataset).
    pub source: u32,
    /// The document (sample id).
    pub doc: u64,
    /// Its first token's offset in the document, boundary tokens counted (a BOS is offset 0).
    pub start: u64,
    /// Its tokens.
    pub len: u32,
}

/// One step of a rank, before its tokens are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSpec {
    /// The rank's step.
    pub step: u64,
    /// The row (window or bin index) it reads; `None` for a padding step.
    pub row: Option<u64>,
    /// Whether the row holds no loss: a padding step, or an empty bin evening out node shares.
    pub padding: bool,
    /// Its pieces, in row order: a range of [`RowBlock::pieces`].
    pub pieces: Range<usize>,
    /// Tokens of the row's `seq_len + 1` that are real (the rest is padding).
    pub tokens: u32,
}

/// The rows of consecutive steps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowBlock {
    /// One per step, in step order.
    pub specs: Vec<RowSpec>,
    /// The pieces the specs index.
    pub pieces: Vec<Piece>,
}

impl RowBlock {
    /// Empties it, keeping its allocations.
    pub fn clear(&mut self) {
        self.specs.clear();
        self.pieces.clear();
    }

    /// The pieces of row `i`.
    pub fn pieces_of(&self, i: usize) -> &[Piece] {
        &self.pieces[self.specs[i].pieces.clone()]
    }
}

/// What one reader of a [`TokenPlan`] keeps between calls: its place in the merged stream.
#[derive(Debug, Clone)]
pub struct RowCursor {
    walker: Walker,
    /// `(row, spec index)` of the non-padding steps of a call, sorted by row.
    wanted: Vec<(u64, usize)>,
}

#[derive(Debug, Clone)]
enum Walker {
    Concat(Box<ConcatWalker>),
    Pack(Box<PackWalker>),
}

impl RowCursor {
    /// A reader at the epoch's start.
    pub fn new<S: DocumentSource>(plan: &TokenPlan, source: &S) -> Self {
        let cursor = plan.merge.cursor(source);
        let walker = if plan.config.mode.packs() {
            Walker::Pack(Box::new(PackWalker::new(plan, cursor)))
        } else {
            Walker::Concat(Box::new(ConcatWalker {
                cursor,
                current: None,
                block: None,
            }))
        };
        Self {
            walker,
            wanted: Vec::new(),
        }
    }

    /// The rows of this rank's steps `steps` (clamped to its share), into `out`.
    pub fn read<S: DocumentSource>(
        &mut self,
        plan: &TokenPlan,
        source: &S,
        steps: Range<u64>,
        out: &mut RowBlock,
    ) -> Result<(), TokenStreamError> {
        out.clear();
        self.wanted.clear();
        let partition = plan.partition();
        for step in steps.start..steps.end.min(plan.len()) {
            let row = if partition.is_padding(step) {
                None
            } else {
                Some(plan.row_at(partition.global_position(step)))
            };
            if let Some(row) = row {
                self.wanted.push((row, out.specs.len()));
            }
            out.specs.push(RowSpec {
                step,
                row,
                padding: row.is_none(),
                pieces: 0..0,
                tokens: 0,
            });
        }
        self.wanted.sort_unstable();
        for &(row, at) in &self.wanted {
            let first = out.pieces.len();
            let tokens = match &mut self.walker {
                Walker::Concat(walker) => walker.window(plan, source, row, &mut out.pieces),
                Walker::Pack(walker) => walker.bin(plan, source, row, &mut out.pieces)?,
            };
            let spec = &mut out.specs[at];
            spec.pieces = first..out.pieces.len();
            spec.tokens = tokens;
            spec.padding = tokens == 0;
        }
        Ok(())
    }
}

/// Concatenation: window `w` is the epoch's tokens `w * seq_len ..= (w + 1) * seq_len`.
#[derive(Debug, Clone)]
struct ConcatWalker {
    cursor: MergeCursor,
    /// The document the walk stands on (holding the last token looked at).
    current: Option<Doc>,
    /// The block the walk is in: its first window and the walk's place at its start.
    block: Option<(u64, MergeState, Option<Doc>)>,
}

impl ConcatWalker {
    /// Appends window `window`'s pieces to `pieces`; returns its real tokens.
    fn window<S: DocumentSource>(
        &mut self,
        plan: &TokenPlan,
        source: &S,
        window: u64,
        pieces: &mut Vec<Piece>,
    ) -> u32 {
        let seq_len = plan.config.seq_len;
        let block = plan.block_of(window).start;
        let from = window * seq_len;
        match &self.block {
            Some((start, state, current)) if *start == block => {
                if self.is_past(from) {
                    self.cursor.restore(state);
                    self.current = *current;
                }
            }
            _ => {
                self.stand_on(plan, source, block * seq_len);
                match &mut self.block {
                    Some((start, state, current)) => {
                        *start = block;
                        state.clone_from(self.cursor.state());
                        *current = self.current;
                    }
                    None => {
                        self.block = Some((block, self.cursor.state().clone(), self.current));
                    }
                }
            }
        }
        self.stand_on(plan, source, from);
        let to = (from + seq_len + 1).min(plan.total_tokens());
        let mut at = from;
        while at < to {
            let Some(doc) = self.current else { break };
            let end = doc.end().min(to);
            if end > at {
                pieces.push(Piece {
                    source: doc.source as u32,
                    doc: doc.doc,
                    start: at - doc.start,
                    len: (end - at) as u32,
                });
            }
            if doc.end() >= to {
                break;
            }
            at = doc.end();
            self.current = self.cursor.next(&plan.merge, source);
        }
        (to.saturating_sub(from)) as u32
    }

    /// Whether the walk stands past token `token`.
    fn is_past(&self, token: u64) -> bool {
        match self.current {
            Some(doc) => doc.start > token,
            None => self.cursor.offset() > token,
        }
    }

    /// Stands on the document holding `token`, walking forward when it is near, seeking
    /// otherwise (`None` past the epoch's end).
    fn stand_on<S: DocumentSource>(&mut self, plan: &TokenPlan, source: &S, token: u64) {
        let merge = &plan.merge;
        loop {
            let walk_from = match self.current {
                Some(doc) if doc.start <= token && token < doc.end() => return,
                Some(doc) if doc.end() <= token => doc.end(),
                Some(_) => u64::MAX,
                None => self.cursor.offset(),
            };
            if token >= merge.total() && self.current.is_none() && walk_from >= merge.total() {
                return;
            }
            if walk_from <= token && token - walk_from <= WALK_RATHER_THAN_SEEK {
                self.current = self.cursor.next(merge, source);
                if self.current.is_none() {
                    return;
                }
            } else {
                self.cursor.seek(merge, source, token);
                self.current = self.cursor.next(merge, source);
                return;
            }
        }
    }
}

/// The items a document becomes when packed: itself, or (longer than `seq_len`) pieces of
/// `seq_len` tokens or its first `seq_len` tokens, as `long_docs` says; documents of no
/// tokens become none.
pub(crate) fn items<S: DocumentSource>(
    config: &TokenConfig,
    source: &S,
    doc: &Doc,
) -> Result<Items, TokenStreamError> {
    let seq_len = config.seq_len;
    let len = match config.long_docs {
        _ if doc.len <= seq_len => doc.len,
        LongDocs::Split => doc.len,
        LongDocs::Truncate => seq_len,
        LongDocs::Refuse => {
            return Err(TokenStreamError::LongDocument {
                source_name: source.name(doc.source),
                sample_id: source.key(doc.source, doc.doc).1,
                tokens: doc.len,
                seq_len,
            })
        }
    };
    Ok(Items {
        source: doc.source as u32,
        doc: doc.doc,
        at: 0,
        len,
        seq_len,
    })
}

/// See [`items`].
pub(crate) struct Items {
    source: u32,
    doc: u64,
    at: u64,
    len: u64,
    seq_len: u64,
}

impl Iterator for Items {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        if self.at >= self.len {
            return None;
        }
        let take = (self.len - self.at).min(self.seq_len);
        let piece = Piece {
            source: self.source,
            doc: self.doc,
            start: self.at,
            len: take as u32,
        };
        self.at += take;
        Some(piece)
    }
}

/// An emitted bin waiting to be taken: its index in its interval, pieces and tokens.
#[derive(Debug, Clone, Default)]
struct Bin {
    index: u64,
    pieces: Vec<Piece>,
    used: u64,
}

/// Where a [`PackWalker`] stands.
#[derive(Debug, Clone)]
struct PackPlace {
    interval: usize,
    cursor: MergeState,
    packer: Packer,
    /// Index of the next bin to be emitted.
    emitted: u64,
    /// Emitted bins not taken yet, in order.
    queue: VecDeque<Bin>,
    /// Whether the interval's documents are all placed and its bins emitted.
    finished: bool,
}

/// Packing: bin `j` of interval `i` is the `j`-th bin its packer emits.
#[derive(Debug, Clone)]
struct PackWalker {
    cursor: MergeCursor,
    place: PackPlace,
    /// The block the walk is in: `(interval, first bin)` and the place at its start.
    block: Option<((usize, u64), PackPlace)>,
    /// Bins' piece lists to reuse.
    spare: Vec<Vec<Piece>>,
}

impl PackWalker {
    fn new(plan: &TokenPlan, cursor: MergeCursor) -> Self {
        let config = &plan.config;
        Self {
            cursor,
            place: PackPlace {
                interval: usize::MAX,
                cursor: MergeState::default(),
                packer: Packer::new(config.mode, config.seq_len, config.packing_bins, true),
                emitted: 0,
                queue: VecDeque::new(),
                finished: false,
            },
            block: None,
            spare: Vec::new(),
        }
    }

    /// Appends row `row`'s pieces; returns its tokens (0: an empty bin).
    fn bin<S: DocumentSource>(
        &mut self,
        plan: &TokenPlan,
        source: &S,
        row: u64,
        pieces: &mut Vec<Piece>,
    ) -> Result<u32, TokenStreamError> {
        let (interval, index) = plan.bin_of(row);
        if index >= plan.interval_bins[interval] {
            return Ok(0);
        }
        let per = plan.per_interval().max(1);
        let block = plan.block_of(row).start - interval as u64 * per;
        let key = (interval, block);
        if self.block.as_ref().is_some_and(|(k, _)| *k == key) {
            if self.is_past(interval, index) {
                if let Some((_, place)) = &self.block {
                    self.place.clone_from(place);
                    self.cursor.restore(&self.place.cursor);
                }
            }
        } else {
            if self.is_past(interval, block) {
                self.start_interval(plan, source, interval);
            }
            self.advance_to(plan, source, block)?;
            self.place.cursor.clone_from(self.cursor.state());
            match &mut self.block {
                Some((k, place)) => {
                    *k = key;
                    place.clone_from(&self.place);
                }
                None => self.block = Some((key, self.place.clone())),
            }
        }
        self.advance_to(plan, source, index)?;
        while self.place.queue.front().is_some_and(|b| b.index < index) {
            if let Some(bin) = self.place.queue.pop_front() {
                self.spare.push(bin.pieces);
            }
        }
        let Some(bin) = self.place.queue.front() else {
            return Ok(0);
        };
        pieces.extend_from_slice(&bin.pieces);
        Ok(bin.used as u32)
    }

    /// Whether the walk stands past bin `index` of interval `interval` (or in another one).
    fn is_past(&self, interval: usize, index: u64) -> bool {
        if self.place.interval != interval {
            return true;
        }
        match self.place.queue.front() {
            Some(bin) => bin.index > index,
            None => self.place.emitted > index,
        }
    }

    /// Stands at the start of interval `interval`, no bin emitted.
    fn start_interval<S: DocumentSource>(&mut self, plan: &TokenPlan, source: &S, interval: usize) {
        self.cursor.enter_interval(&plan.merge, source, interval);
        self.place.interval = interval;
        self.place.packer.reset();
        self.place.emitted = 0;
        while let Some(bin) = self.place.queue.pop_front() {
            self.spare.push(bin.pieces);
        }
        self.place.finished = false;
    }

    /// Places documents until bin `index` is emitted (or the interval is finished).
    fn advance_to<S: DocumentSource>(
        &mut self,
        plan: &TokenPlan,
        source: &S,
        index: u64,
    ) -> Result<(), TokenStreamError> {
        let Self {
            cursor,
            place,
            spare,
            ..
        } = self;
        let PackPlace {
            packer,
            emitted,
            queue,
            finished,
            ..
        } = place;
        while !*finished && *emitted <= index {
            let mut emit = |bin: Emitted<'_>| {
                let mut kept = spare.pop().unwrap_or_default();
                kept.clear();
                kept.extend_from_slice(bin.pieces);
                queue.push_back(Bin {
                    index: *emitted,
                    pieces: kept,
                    used: bin.used,
                });
                *emitted += 1;
            };
            match cursor.next_within(&plan.merge, source) {
                Some(doc) => {
                    for piece in items(&plan.config, source, &doc)? {
                        packer.add(piece, &mut emit);
                    }
                }
                None => {
                    packer.finish(&mut emit);
                    *finished = true;
                }
            }
        }
        Ok(())
    }
}
