//! One source's documents in epoch order, and how many tokens come before any of them.
//!
//! The order is `dsrt-plan`'s: a single-cache [`EpochPlan`] whose share is whole passes over
//! the source, each pass laying its shard runs out (shuffled, or drawn with replacement) in
//! windows whose documents are read in an order of their own (a segment). The tokens before a stream position are therefore known
//! exactly wherever a segment starts (the tokens of whole passes, of the runs laid out before,
//! and of the front of one run), from per-run totals computed once; anywhere else they are
//! found by walking the documents of one segment, with a checkpoint every [`STRIDE`]
//! documents so that repeated lookups in one segment walk at most that many. Nothing is kept
//! per document.

// Stream positions and token counts stay below 2^63 (checked when the stream is built), and
// run indices fit usize on the 64-bit targets dsrt-plan builds for.
#![allow(clippy::cast_possible_truncation)]

use crate::source::DocumentSource;
use crate::{TokenConfig, TokenStreamError};
use dsrt_plan::{mix, EpochPlan, PassLayout, PlanConfig, PlanCursor, PlanError, Sampling};
use std::ops::Range;

/// Documents between two checkpoints of a segment walk.
const STRIDE: u64 = 256;

/// Mixed into every source's seed, so token streams and sample plans of the same seed differ.
const STREAM_DOMAIN: u64 = 0x746f_6b65_6e73; // "tokens"

/// One source's share of an epoch: its documents in order, up to its token budget.
#[derive(Debug, Clone)]
pub(crate) struct SourceStream {
    /// Which source of the [`DocumentSource`].
    index: usize,
    plan: EpochPlan,
    /// Documents in the source (the length of one pass).
    docs: u64,
    /// Boundary tokens added to every document (0, 1 or 2).
    added: u64,
    /// Tokens of each run (documents plus their added tokens), by run index.
    run_tokens: Vec<u64>,
    /// Tokens before each run of the first pass's layout, in reading order (one entry more
    /// than runs).
    first_prefix: Vec<u64>,
    /// Tokens of the source's documents (of one pass, without replacement).
    natural: u64,
    /// Whether passes draw their runs with replacement (and so hold different tokens).
    drawn: bool,
    /// Drawn passes: the tokens before each pass of the stream (one entry more than passes).
    /// Otherwise empty: pass `p` starts at `p * natural`.
    pass_starts: Vec<u64>,
    /// Stream positions the epoch reads: the documents until the budget is reached.
    end: u64,
    /// Tokens of those documents: at least the budget, less than one document more.
    total: u64,
}

/// What one reader of a [`SourceStream`] reuses between lookups.
#[derive(Debug, Clone)]
pub(crate) struct StreamCursor {
    plan: PlanCursor,
    /// The pass `prefix` is for (`u64::MAX`: none).
    prefix_pass: u64,
    /// As [`SourceStream::first_prefix`], for a later pass.
    prefix: Vec<u64>,
    /// The segment walked last and the tokens before every `STRIDE`-th of its positions.
    walk_segment: Range<u64>,
    checkpoints: Vec<u64>,
}

impl SourceStream {
    /// The stream of source `index` before its budget is known: the first pass laid out, every
    /// run's tokens counted (one pass over the source's lengths).
    pub(crate) fn measure<S: DocumentSource>(
        source: &S,
        index: usize,
        config: &TokenConfig,
        epoch: u64,
        added: u64,
    ) -> Result<Self, TokenStreamError> {
        let shape = source.shape(index);
        let docs = shape.len;
        let plan = EpochPlan::build(
            std::slice::from_ref(&shape),
            &plan_config(config, index, None),
            epoch,
        )?;
        let run_tokens: Vec<u64> = plan
            .runs(0)
            .iter()
            .map(|run| source.tokens_in(index, run.clone()) + added * (run.end - run.start))
            .collect();
        let natural = run_tokens.iter().sum();
        let mut stream = Self {
            index,
            plan,
            docs,
            added,
            run_tokens,
            first_prefix: Vec::new(),
            natural,
            drawn: config.sampling == Sampling::RunsWithReplacement,
            pass_starts: Vec::new(),
            end: 0,
            total: 0,
        };
        let mut cursor = stream.plan.cursor();
        let first = stream.plan.pass_layout(0, 0, &mut cursor).clone();
        stream.first_prefix = stream.layout_prefix(source, &first);
        Ok(stream)
    }

    /// Tokens of the source's documents.
    pub(crate) fn natural_tokens(&self) -> u64 {
        self.natural
    }

    /// The epoch's tokens of this stream before pass `pass` (passes computed so far).
    fn pass_start(&self, pass: u64) -> u64 {
        if self.drawn {
            self.pass_starts
                .get(pass as usize)
                .copied()
                .unwrap_or(self.total)
        } else {
            pass * self.natural
        }
    }

    /// The pass holding the stream's `tokens`-th token (1-based) and the tokens of that pass
    /// up to it.
    fn pass_of(&self, tokens: u64) -> (u64, u64) {
        let pass = if self.drawn {
            (self.pass_starts.partition_point(|&s| s < tokens) as u64).saturating_sub(1)
        } else {
            (tokens - 1) / self.natural
        };
        (pass, tokens - self.pass_start(pass))
    }

    /// Sets the stream's budget: whole passes while they fit, then the front of one more pass's
    /// layout until the budget is reached. The stream is cut where it ends, so its last segment
    /// holds exactly those documents.
    pub(crate) fn with_budget<S: DocumentSource>(
        mut self,
        source: &S,
        config: &TokenConfig,
        epoch: u64,
        budget: u64,
    ) -> Result<Self, TokenStreamError> {
        if budget == 0 {
            self.end = 0;
            self.total = 0;
            return Ok(self);
        }
        if self.natural == 0 {
            return Err(TokenStreamError::EmptySource {
                source_name: source.name(self.index),
            });
        }
        let passes = if self.drawn {
            // Passes of drawn runs hold different tokens: lay them out until they cover the
            // budget (a pass's layout costs one pass over the runs).
            self.pass_starts = vec![0];
            let mut cursor = self.cursor();
            let mut at = 0u64;
            let mut pass = 0;
            while at < budget {
                let layout = self.plan.pass_layout(0, pass, &mut cursor.plan).clone();
                at += self
                    .layout_prefix(source, &layout)
                    .last()
                    .copied()
                    .unwrap_or(0);
                self.pass_starts.push(at);
                pass += 1;
            }
            pass
        } else {
            budget.div_ceil(self.natural)
        };
        if passes > 1 {
            let share = passes.checked_mul(self.docs).ok_or_else(|| {
                PlanError::TooLarge(format!(
                    "{}: {passes} passes over {} documents",
                    source.name(self.index),
                    self.docs
                ))
            })?;
            let shape = source.shape(self.index);
            self.plan = EpochPlan::build(
                std::slice::from_ref(&shape),
                &plan_config(config, self.index, Some(share)),
                epoch,
            )?;
        }
        let mut cursor = self.cursor();
        self.end = self.first_reaching_layout(source, budget, &mut cursor);
        self.total = self.layout_tokens(source, self.end, &mut cursor);
        Ok(self)
    }

    /// The stream cut at stream positions `cuts` (and where its budget ends): segments never
    /// span a cut, so the tokens before a cut are known exactly.
    pub(crate) fn with_cuts(mut self, cuts: &[u64]) -> Self {
        let mut all: Vec<u64> = cuts.to_vec();
        all.push(self.end);
        all.sort_unstable();
        all.dedup();
        self.plan = self.plan.with_cuts(&all);
        self
    }

    /// A cursor for lookups in this stream.
    pub(crate) fn cursor(&self) -> StreamCursor {
        StreamCursor {
            plan: self.plan.cursor(),
            prefix_pass: u64::MAX,
            prefix: Vec::new(),
            walk_segment: 0..0,
            checkpoints: Vec::new(),
        }
    }

    /// Stream positions in the epoch.
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// Tokens of the stream's documents in the epoch.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Which source this is.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Memory the stream holds.
    pub(crate) fn bytes(&self) -> usize {
        self.plan.bytes() + (self.run_tokens.capacity() + self.first_prefix.capacity()) * 8
    }

    /// The plan of the stream's order (one cache).
    pub(crate) fn plan(&self) -> &EpochPlan {
        &self.plan
    }

    /// The document at stream position `position` (below [`SourceStream::end`]).
    #[inline]
    pub(crate) fn doc_at(&self, position: u64, cursor: &mut StreamCursor) -> u64 {
        self.plan.stream_sample(0, position, &mut cursor.plan)
    }

    /// Tokens of document `doc`, its added boundary tokens included.
    #[inline]
    pub(crate) fn len_of<S: DocumentSource>(&self, source: &S, doc: u64) -> u64 {
        source.n_tokens(self.index, doc) + self.added
    }

    /// The tokens of the first `k` stream positions in layout order: the whole passes before
    /// `k`'s, then the runs of its pass laid out before `k`, then the documents of `k`'s run
    /// before it. Equal to the tokens of the stream positions before `k` wherever a segment
    /// starts at `k`.
    pub(crate) fn layout_tokens<S: DocumentSource>(
        &self,
        source: &S,
        k: u64,
        cursor: &mut StreamCursor,
    ) -> u64 {
        if k == 0 || self.docs == 0 {
            return 0;
        }
        let (pass, offset) = (k / self.docs, k % self.docs);
        let whole = self.pass_start(pass);
        if offset == 0 {
            return whole;
        }
        self.ensure_prefix(source, pass, cursor);
        let layout = self.plan.pass_layout(0, pass, &mut cursor.plan);
        let prefix = if layout.pass() == 0 {
            &self.first_prefix
        } else {
            &cursor.prefix
        };
        let i = layout.run_at(offset);
        let run = &self.plan.runs(0)[layout.run_order()[i] as usize];
        let into = offset - layout.starts()[i];
        whole
            + prefix[i]
            + source.tokens_in(self.index, run.start..run.start + into)
            + self.added * into
    }

    /// The first stream position `k` whose layout tokens ([`SourceStream::layout_tokens`])
    /// reach `tokens`.
    pub(crate) fn first_reaching_layout<S: DocumentSource>(
        &self,
        source: &S,
        tokens: u64,
        cursor: &mut StreamCursor,
    ) -> u64 {
        if tokens == 0 || self.docs == 0 || self.natural == 0 {
            return 0;
        }
        let (pass, rest) = self.pass_of(tokens);
        self.ensure_prefix(source, pass, cursor);
        let layout = self.plan.pass_layout(0, pass, &mut cursor.plan);
        let prefix = if layout.pass() == 0 {
            &self.first_prefix
        } else {
            &cursor.prefix
        };
        // The run in which the pass's tokens reach `rest`: prefix[i] < rest <= prefix[i + 1].
        let i = prefix.partition_point(|&p| p < rest).saturating_sub(1);
        let run = &self.plan.runs(0)[layout.run_order()[i] as usize];
        let mut reached = prefix[i];
        let mut into = 0;
        for doc in run.clone() {
            reached += source.n_tokens(self.index, doc) + self.added;
            into += 1;
            if reached >= rest {
                break;
            }
        }
        pass * self.docs + layout.starts()[i] + into
    }

    /// The tokens of the stream positions before `k` (at most [`SourceStream::end`]).
    pub(crate) fn tokens_before<S: DocumentSource>(
        &self,
        source: &S,
        k: u64,
        cursor: &mut StreamCursor,
    ) -> u64 {
        if k == 0 {
            return 0;
        }
        if k >= self.end {
            return self.total;
        }
        let segment = self.plan.segment(0, k, &mut cursor.plan);
        if segment.start == k {
            return self.layout_tokens(source, k, cursor);
        }
        let step = (k - segment.start) / STRIDE;
        let mut tokens = self.checkpoint(source, &segment, step, cursor);
        for position in segment.start + step * STRIDE..k {
            let doc = self.doc_at(position, cursor);
            tokens += self.len_of(source, doc);
        }
        tokens
    }

    /// Bounds on [`SourceStream::first_reaching`] without walking a segment: stream positions
    /// `a < b` where the tokens before are exact (segment bounds) and the position sought lies
    /// in `a + 1 ..= b` (`(k, k)` where it is known exactly).
    pub(crate) fn reaching_bounds<S: DocumentSource>(
        &self,
        source: &S,
        tokens: u64,
        cursor: &mut StreamCursor,
    ) -> (u64, u64) {
        if tokens == 0 {
            return (0, 0);
        }
        if tokens > self.total {
            return (self.end, self.end);
        }
        let guess = self.first_reaching_layout(source, tokens, cursor);
        if guess == 0 {
            return (0, 0);
        }
        let segment = self.plan.segment(0, guess - 1, &mut cursor.plan);
        (segment.start, segment.end)
    }

    /// The first stream position whose preceding tokens reach `tokens` (or the end, where the
    /// stream's tokens do not).
    pub(crate) fn first_reaching<S: DocumentSource>(
        &self,
        source: &S,
        tokens: u64,
        cursor: &mut StreamCursor,
    ) -> u64 {
        if tokens == 0 {
            return 0;
        }
        if tokens > self.total {
            return self.end;
        }
        let guess = self.first_reaching_layout(source, tokens, cursor);
        if guess == 0 {
            return 0;
        }
        // Where a segment starts the layout's count is the stream's, so the position sought
        // lies in the segment of `guess - 1` (whose start has fewer tokens, whose end enough).
        let segment = self.plan.segment(0, guess - 1, &mut cursor.plan);
        let mut low = 0;
        loop {
            let next = low + 1;
            if segment.start + next * STRIDE >= segment.end
                || self.checkpoint(source, &segment, next, cursor) >= tokens
            {
                break;
            }
            low = next;
        }
        let mut position = segment.start + low * STRIDE;
        let mut reached = self.checkpoint(source, &segment, low, cursor);
        while reached < tokens && position < segment.end {
            let doc = self.doc_at(position, cursor);
            reached += self.len_of(source, doc);
            position += 1;
        }
        position
    }

    /// The tokens before position `segment.start + step * STRIDE` of `segment`, walked once per
    /// segment and remembered.
    fn checkpoint<S: DocumentSource>(
        &self,
        source: &S,
        segment: &Range<u64>,
        step: u64,
        cursor: &mut StreamCursor,
    ) -> u64 {
        if cursor.walk_segment != *segment || cursor.checkpoints.is_empty() {
            let start = self.layout_tokens(source, segment.start, cursor);
            cursor.walk_segment = segment.clone();
            cursor.checkpoints.clear();
            cursor.checkpoints.push(start);
        }
        while cursor.checkpoints.len() as u64 <= step {
            let last = cursor.checkpoints.len() as u64 - 1;
            let mut tokens = cursor.checkpoints[last as usize];
            let from = segment.start + last * STRIDE;
            for position in from..(from + STRIDE).min(segment.end) {
                let doc = self.doc_at(position, cursor);
                tokens += self.len_of(source, doc);
            }
            cursor.checkpoints.push(tokens);
        }
        cursor.checkpoints[step as usize]
    }

    /// Makes `cursor.prefix` the run prefix of pass `pass` when its layout is not the first's.
    fn ensure_prefix<S: DocumentSource>(&self, source: &S, pass: u64, cursor: &mut StreamCursor) {
        if pass == 0 || cursor.prefix_pass == pass {
            return;
        }
        let layout = self.plan.pass_layout(0, pass, &mut cursor.plan);
        if layout.pass() == 0 {
            return;
        }
        let prefix = self.layout_prefix(source, layout);
        cursor.prefix = prefix;
        cursor.prefix_pass = pass;
    }

    /// The tokens before each run of `layout`, in reading order, and of the whole pass (the
    /// last run of a pass of drawn runs may be cut to fit the pass).
    fn layout_prefix<S: DocumentSource>(&self, source: &S, layout: &PassLayout) -> Vec<u64> {
        let runs = self.plan.runs(0);
        let starts = layout.starts();
        let mut prefix = Vec::with_capacity(starts.len());
        let mut at = 0;
        prefix.push(0);
        for (i, &r) in layout.run_order().iter().enumerate() {
            let run = &runs[r as usize];
            let count = starts[i + 1] - starts[i];
            at += if count == run.end - run.start {
                self.run_tokens[r as usize]
            } else {
                source.tokens_in(self.index, run.start..run.start + count) + self.added * count
            };
            prefix.push(at);
        }
        prefix
    }
}

/// The plan config of source `index`'s stream: its own seed; `share` stream positions when
/// given (whole passes), else one pass.
fn plan_config(config: &TokenConfig, index: usize, share: Option<u64>) -> PlanConfig {
    PlanConfig {
        seed: mix(&[config.seed, STREAM_DOMAIN, index as u64]),
        weights: share.map(|_| vec![1.0]),
        samples_per_epoch: share,
        sampling: config.sampling,
        shuffle: config.shuffle,
        schedule: None,
    }
}
