//! One rank's plan of an epoch of rows: the sources' budgets, the merged document stream, the
//! rows it makes, and which of them the rank reads.

// Token counts below 2^63; counts of rows and intervals fit usize on 64-bit targets.
#![allow(clippy::cast_possible_truncation)]

use crate::merge::Merge;
use crate::pack::Packer;
use crate::source::{Coverage, DocumentSource, End};
use crate::stream::SourceStream;
use crate::{PackMode, RunConfig, TokenConfig, TokenSchedule, TokenState, TokenStreamError};
use dsrt_plan::{
    mix, phase_shares, weighted_shares, IterState, Mixture, Partition, Permutation, PlanError,
    RemainderPolicy, Topology,
};
use std::ops::Range;

/// Concatenation: the documents of each source just before a node boundary form a segment of
/// their own, read in layout order (the run the boundary splits), because the next node's first
/// window reaches back into them; without it they would be random documents of the whole
/// window, and their shards one more shard read by two nodes per source and boundary.
const TAIL_DOCUMENTS: u64 = 16;

/// Mixed into the seeds of the row blocks' permutations.
const BLOCK_DOMAIN: u64 = 0x626c_6f63_6b73; // "blocks"

/// The boundary tokens added to every document of one source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Boundary {
    /// The BOS put before each document, when its documents do not begin with it.
    pub(crate) bos: Option<u32>,
    /// The EOS put after each document, when its documents do not end with it.
    pub(crate) eos: Option<u32>,
}

impl Boundary {
    /// Tokens added to each document.
    pub(crate) fn added(self) -> u64 {
        u64::from(self.bos.is_some()) + u64::from(self.eos.is_some())
    }
}

/// One rank's plan of one epoch of rows (see the crate's documentation): computed from the
/// sources' shapes and lengths, never materialized. `Send + Sync`: a rank's loading threads
/// share one, each reading through its own [`crate::RowCursor`].
#[derive(Debug, Clone)]
pub struct TokenPlan {
    pub(crate) config: TokenConfig,
    epoch: u64,
    pub(crate) merge: Merge,
    pub(crate) boundary: Vec<Boundary>,
    /// Each source's token budget.
    budgets: Vec<u64>,
    /// `[p][c]`: source `c`'s budget in phase `p`; one phase (the budgets) without a schedule.
    phase_budgets: Vec<Vec<u64>>,
    /// `[c][p]`: source `c`'s stream position where phase `p` begins, and its end last.
    phase_positions: Vec<Vec<u64>>,
    /// Rows (windows or bins, padding bins included) in the epoch.
    rows: u64,
    /// Packing: rows per interval (its bins, then empty ones), and each interval's real bins
    /// and the tokens they hold.
    per_interval: u64,
    pub(crate) interval_bins: Vec<u64>,
    interval_used: Vec<u64>,
    start: TokenState,
    topology: Topology,
    policy: RemainderPolicy,
    partition: Partition,
}

impl TokenPlan {
    /// Plans epoch `run.epoch` of `source` for rank `run.rank`, from the epoch's start or from
    /// `run.resume`. Concatenation plans in time and memory that grow with shards and caches;
    /// packing also walks the epoch's document lengths once (no token is read), to count its
    /// bins.
    pub fn new<S: DocumentSource>(
        source: &S,
        config: &TokenConfig,
        run: &RunConfig,
    ) -> Result<Self, TokenStreamError> {
        config.check()?;
        let topology = Topology::new(run.world_size.max(1), run.ranks_per_node.max(1))?;
        if let Some(state) = &run.resume {
            state.check_settings(config.seq_len, config.mode)?;
        }
        let epoch = run.epoch;
        let sources = source.sources();
        let boundary = (0..sources)
            .map(|c| boundary_of(source, c, config))
            .collect::<Result<Vec<_>, _>>()?;
        let measured = (0..sources)
            .map(|c| SourceStream::measure(source, c, config, epoch, boundary[c].added()))
            .collect::<Result<Vec<_>, _>>()?;
        let natural: Vec<u64> = measured.iter().map(SourceStream::natural_tokens).collect();
        let (budgets, phase_budgets) = budgets(config, &natural)?;
        let streams = measured
            .into_iter()
            .zip(&budgets)
            .map(|(stream, &budget)| stream.with_budget(source, config, epoch, budget))
            .collect::<Result<Vec<_>, _>>()?;
        let total: u64 = streams.iter().map(SourceStream::total).sum();
        let phases = PhaseBounds::new(source, &streams, &phase_budgets);
        // What a row position means: the same rows come only from the same sources, budgets
        // (per phase with a schedule) and document orders, so a state of another mixture is
        // refused.
        let mixture = Mixture {
            caches: streams.iter().map(|s| s.plan().planned_cache(0)).collect(),
            shares: budgets.clone(),
            phases: if config.schedule.is_some() {
                phase_budgets.clone()
            } else {
                Vec::new()
            },
            sampling: config.sampling,
            shuffle: config.shuffle,
        };
        let seq_len = config.seq_len;
        let mut plan = match config.mode {
            PackMode::Concat => {
                let padded = total.div_ceil(seq_len);
                let dropped = total.saturating_sub(1) / seq_len;
                // The epoch's last partial window is kept or dropped by the run that started
                // the epoch; a resume under the other policy keeps that choice.
                let rows = match (&run.resume, run.policy) {
                    (Some(state), _) if [padded, dropped].contains(&state.rows.epoch_len) => {
                        state.rows.epoch_len
                    }
                    (_, RemainderPolicy::Pad) => padded,
                    (_, RemainderPolicy::Drop) => dropped,
                };
                let start = start_state(config, epoch, rows, topology, run, &mixture)?;
                // A cut between windows is a time: the fraction of the epoch's tokens before it.
                let times: Vec<(u128, u128)> = start
                    .rows
                    .cuts
                    .iter()
                    .map(|&cut| (u128::from(cut) * u128::from(seq_len), u128::from(total)))
                    .collect();
                let merge = merge_cut_at(source, streams, &times, TAIL_DOCUMENTS, &phases);
                Self::assemble(config, epoch, merge, boundary, budgets, rows, start, run)?
            }
            PackMode::FirstFit | PackMode::BestFit => {
                // Packing restarts at each node boundary of the epoch's first run (equal token
                // shares), so no bin spans two nodes; each interval is padded with empty rows
                // to the same count.
                let nodes = match &run.resume {
                    Some(state) if state.rows.epoch_len > 0 => state.rows.cuts.len() as u64 + 1,
                    Some(_) => 1,
                    None => topology.nodes(),
                };
                let times: Vec<(u128, u128)> = (1..nodes)
                    .map(|i| (u128::from(i), u128::from(nodes)))
                    .collect();
                let merge = merge_cut_at(source, streams, &times, 0, &phases);
                let (bins, used) = count_bins(source, config, &merge)?;
                let per_interval = match &run.resume {
                    // The rows per share are the started run's (its policy padded the shares
                    // to their most bins or dropped them to their fewest).
                    Some(state) => {
                        let per = state.rows.epoch_len / nodes;
                        if per * nodes != state.rows.epoch_len {
                            return Err(PlanError::State(format!(
                                "the state's {} rows do not divide into its {nodes} node shares",
                                state.rows.epoch_len
                            ))
                            .into());
                        }
                        per
                    }
                    None => {
                        let rpn = topology.ranks_per_node;
                        match run.policy {
                            RemainderPolicy::Pad => {
                                bins.iter().copied().max().unwrap_or(0).div_ceil(rpn) * rpn
                            }
                            RemainderPolicy::Drop => {
                                bins.iter().copied().min().unwrap_or(0) / rpn * rpn
                            }
                        }
                    }
                };
                let rows = per_interval * nodes;
                let start = start_state(config, epoch, rows, topology, run, &mixture)?;
                let mut plan =
                    Self::assemble(config, epoch, merge, boundary, budgets, rows, start, run)?;
                plan.per_interval = per_interval;
                plan.interval_bins = bins;
                plan.interval_used = used;
                plan
            }
        };
        if config.schedule.is_none() {
            plan.config.tokens_per_epoch = Some(plan.budgets.iter().sum());
        }
        plan.phase_budgets = phase_budgets;
        plan.phase_positions = phases.positions;
        Ok(plan)
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        config: &TokenConfig,
        epoch: u64,
        merge: Merge,
        boundary: Vec<Boundary>,
        budgets: Vec<u64>,
        rows: u64,
        start: TokenState,
        run: &RunConfig,
    ) -> Result<Self, TokenStreamError> {
        let topology = Topology::new(run.world_size.max(1), run.ranks_per_node.max(1))?;
        let partition = Partition::new(run.rank, topology, run.policy, &start.rows)?;
        Ok(Self {
            config: config.clone(),
            epoch,
            merge,
            boundary,
            budgets,
            phase_budgets: Vec::new(),
            phase_positions: Vec::new(),
            rows,
            per_interval: 0,
            interval_bins: Vec::new(),
            interval_used: Vec::new(),
            start,
            topology,
            policy: run.policy,
            partition,
        })
    }

    /// The settings (`tokens_per_epoch` set to the budgets' sum, without a schedule).
    pub fn config(&self) -> &TokenConfig {
        &self.config
    }

    /// The epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Rows (windows or bins) in the epoch, before they are dealt to ranks.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Rows this rank reads: the same on every rank.
    pub fn len(&self) -> u64 {
        self.partition.len()
    }

    /// Whether this rank reads no row.
    pub fn is_empty(&self) -> bool {
        self.partition.is_empty()
    }

    /// Tokens of the epoch's documents (boundary tokens included).
    pub fn total_tokens(&self) -> u64 {
        self.merge.total()
    }

    /// Each source's token budget (its share of `tokens_per_epoch`).
    pub fn budgets(&self) -> &[u64] {
        &self.budgets
    }

    /// Per phase, each source's budget: its share of the phase's tokens by the phase's
    /// weights. One phase, [`TokenPlan::budgets`], without a schedule.
    pub fn phase_budgets(&self) -> &[Vec<u64>] {
        &self.phase_budgets
    }

    /// Per phase, each source's tokens in it: the documents that begin in the phase. Every
    /// source's tokens up to the end of each phase are its budgets up to there, plus less than
    /// one document.
    pub fn phase_tokens(&self) -> Vec<Vec<u64>> {
        let starts = self.merge.phase_tokens();
        (0..self.merge.phases())
            .map(|p| starts.iter().map(|t| t[p + 1] - t[p]).collect())
            .collect()
    }

    /// Per phase, each source's documents in it (stream positions, repeats counted).
    pub fn phase_documents(&self) -> Vec<Vec<u64>> {
        (0..self.merge.phases())
            .map(|p| {
                self.phase_positions
                    .iter()
                    .map(|k| k[p + 1] - k[p])
                    .collect()
            })
            .collect()
    }

    /// The epoch's tokens before each phase: where in the epoch (in tokens, on every rank
    /// alike) each phase's weights take over.
    pub fn phase_starts(&self) -> Vec<u64> {
        let starts = self.merge.phase_tokens();
        (0..self.merge.phases())
            .map(|p| starts.iter().map(|t| t[p]).sum())
            .collect()
    }

    /// Each source's tokens in the epoch: its budget, plus less than one document.
    pub fn source_tokens(&self) -> Vec<u64> {
        self.merge.streams.iter().map(SourceStream::total).collect()
    }

    /// Each source's documents in the epoch.
    pub fn source_documents(&self) -> Vec<u64> {
        self.merge.streams.iter().map(SourceStream::end).collect()
    }

    /// The boundary tokens added to each document of each source: `(BOS, EOS)`, where added.
    pub fn boundary_tokens(&self) -> Vec<(Option<u32>, Option<u32>)> {
        self.boundary.iter().map(|b| (b.bos, b.eos)).collect()
    }

    /// Packing: each node share's bins (rows with documents).
    pub fn bins_per_share(&self) -> &[u64] {
        &self.interval_bins
    }

    /// Tokens of padding in the epoch's rows before they are dealt to ranks: inputs past the
    /// last token (concat, pad), the unfilled room of bins and the empty bins that even out the
    /// node shares (packing).
    pub fn padded_tokens(&self) -> u64 {
        let seq_len = self.config.seq_len;
        if self.config.mode == PackMode::Concat {
            return (self.rows * seq_len).saturating_sub(self.total_tokens());
        }
        let kept_used: u64 = self.kept_bins().map(|(_, used)| used).sum();
        self.rows * seq_len - kept_used
    }

    /// [`TokenPlan::padded_tokens`] over the input tokens of all the epoch's rows (0 for an
    /// epoch of no rows).
    pub fn padding_fraction(&self) -> f64 {
        let inputs = self.rows * self.config.seq_len;
        #[allow(clippy::cast_precision_loss)] // a ratio
        let fraction = self.padded_tokens() as f64 / inputs.max(1) as f64;
        fraction
    }

    /// Tokens of the epoch's documents no row holds: the last partial window (concat, drop) or
    /// the bins past the node shares' common count (packing, drop).
    pub fn dropped_tokens(&self) -> u64 {
        let seq_len = self.config.seq_len;
        if self.config.mode == PackMode::Concat {
            return self.total_tokens().saturating_sub(self.rows * seq_len);
        }
        let kept_used: u64 = self.kept_bins().map(|(_, used)| used).sum();
        self.interval_used.iter().sum::<u64>() - kept_used
    }

    /// Per interval, the bins kept and their tokens (approximately, for dropped shares: bins
    /// past the common count hold the mean).
    fn kept_bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.interval_bins
            .iter()
            .zip(&self.interval_used)
            .map(|(&bins, &used)| {
                let kept = bins.min(self.per_interval);
                let used = if bins == 0 {
                    0
                } else {
                    (u128::from(used) * u128::from(kept) / u128::from(bins)) as u64
                };
                (kept, used)
            })
    }

    /// The state the run started from (the epoch's start, or the resumed state).
    pub fn start_state(&self) -> &TokenState {
        &self.start
    }

    /// The state once every rank has read `steps` rows of this plan: resume from it on any
    /// topology, with any number of workers. Ranks in lockstep produce equal states.
    pub fn state_after(&self, steps: u64) -> TokenState {
        TokenState {
            seq_len: self.config.seq_len,
            mode: self.config.mode,
            rows: self.partition.state_after(&self.start.rows, steps),
        }
    }

    /// The same plan for rank `rank` of its topology.
    pub fn for_rank(&self, rank: u64) -> Result<Self, TokenStreamError> {
        let mut plan = self.clone();
        plan.partition = Partition::new(rank, self.topology, self.policy, &self.start.rows)?;
        Ok(plan)
    }

    /// This rank's share: its topology, node and positions.
    pub fn partition(&self) -> &Partition {
        &self.partition
    }

    /// The topology.
    pub fn topology(&self) -> Topology {
        self.topology
    }

    /// Padding or dropping.
    pub fn policy(&self) -> RemainderPolicy {
        self.policy
    }

    /// Memory the plan holds (the sources' plans, their run totals, the interval bounds).
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.merge.bytes()
            + (self.budgets.capacity()
                + self.interval_bins.capacity()
                + self.interval_used.capacity())
                * 8
            + self
                .phase_budgets
                .iter()
                .chain(&self.phase_positions)
                .map(|v| v.capacity() * 8)
                .sum::<usize>()
    }

    /// The row (window or bin index) at position `slot` of the epoch: the positions of each
    /// block of `window_block` rows (blocks start at every node boundary of the epoch's first
    /// run) are a permutation of that block's rows.
    pub fn row_at(&self, slot: u64) -> u64 {
        let block = self.block_of(slot);
        if block.end - block.start <= 1 {
            return slot;
        }
        let seed = mix(&[self.config.seed, self.epoch, BLOCK_DOMAIN, block.start]);
        block.start + Permutation::new(seed, block.end - block.start).apply(slot - block.start)
    }

    /// The block of rows (and of positions) that `slot` lies in.
    pub fn block_of(&self, slot: u64) -> Range<u64> {
        let cuts = &self.start.rows.cuts;
        let after = cuts.partition_point(|&c| c <= slot);
        let segment_start = if after == 0 { 0 } else { cuts[after - 1] };
        let segment_end = cuts.get(after).copied().unwrap_or(self.rows);
        let size = self.config.window_block.max(1);
        let start = segment_start + (slot - segment_start) / size * size;
        start..(start + size).min(segment_end)
    }

    /// Packing: the node share (interval) of row `row` and its index there.
    pub(crate) fn bin_of(&self, row: u64) -> (usize, u64) {
        let per = self.per_interval.max(1);
        ((row / per) as usize, row % per)
    }

    /// Packing: the rows of each node share.
    pub(crate) fn per_interval(&self) -> u64 {
        self.per_interval
    }
}

/// Each source's token budget, and per phase each source's budget in it (`[p][c]`; one phase
/// without a schedule). Without a schedule: its tokens (no weights), or its share of
/// `tokens_per_epoch` (default: all the sources' tokens) by weight; with `tokens_per_epoch`
/// and no weights, in proportion to the sources' tokens. With one: the sum of its shares of
/// the phases.
fn budgets(
    config: &TokenConfig,
    natural: &[u64],
) -> Result<(Vec<u64>, Vec<Vec<u64>>), TokenStreamError> {
    if let Some(schedule) = &config.schedule {
        let phases = scheduled_budgets(config, schedule, natural)?;
        let budgets = (0..natural.len())
            .map(|c| phases.iter().map(|phase| phase[c]).sum())
            .collect();
        return Ok((budgets, phases));
    }
    let all: u64 = natural.iter().sum();
    let budgets = match (&config.weights, config.tokens_per_epoch) {
        (None, None) => natural.to_vec(),
        (None, Some(total)) => {
            #[allow(clippy::cast_precision_loss)] // proportions
            let weights: Vec<f64> = natural.iter().map(|&t| t as f64).collect();
            weighted_shares(&weights, total)?
        }
        (Some(weights), total) => {
            if weights.len() != natural.len() {
                return Err(PlanError::Weights(format!(
                    "{} weights for {} caches",
                    weights.len(),
                    natural.len()
                ))
                .into());
            }
            weighted_shares(weights, total.unwrap_or(all))?
        }
    };
    Ok((budgets.clone(), vec![budgets]))
}

/// Each phase's budget of each source (`[p][c]`), the schedule checked phase by phase.
fn scheduled_budgets(
    config: &TokenConfig,
    schedule: &TokenSchedule,
    natural: &[u64],
) -> Result<Vec<Vec<u64>>, TokenStreamError> {
    if config.weights.is_some() {
        return Err(PlanError::ScheduleConflict { setting: "weights" }.into());
    }
    if config.tokens_per_epoch.is_some() {
        return Err(PlanError::ScheduleConflict {
            setting: "tokens_per_epoch",
        }
        .into());
    }
    if schedule.phases.is_empty() {
        return Err(PlanError::Schedule("it has no phases".into()).into());
    }
    if schedule.tokens().is_none_or(|tokens| tokens >= 1 << 63) {
        return Err(
            PlanError::TooLarge("the schedule's phases hold 2^63 tokens or more".into()).into(),
        );
    }
    let mut phases = Vec::with_capacity(schedule.phases.len());
    for (index, phase) in schedule.phases.iter().enumerate() {
        let problem = |problem: String| PlanError::Phase {
            phase: index,
            problem,
        };
        phases
            .push(phase_shares(&phase.weights, phase.tokens, natural, "tokens").map_err(problem)?);
    }
    Ok(phases)
}

/// Where each source's phases begin: `positions[c][p]` in its stream and `tokens[c][p]` of it
/// before then (the end last). A source's phase `p + 1` begins at its first document whose
/// preceding tokens reach its budgets of phases `0..=p`, so a document counts wholly in the
/// phase in which it begins.
struct PhaseBounds {
    positions: Vec<Vec<u64>>,
    tokens: Vec<Vec<u64>>,
}

impl PhaseBounds {
    fn new<S: DocumentSource>(source: &S, streams: &[SourceStream], budgets: &[Vec<u64>]) -> Self {
        let mut positions = Vec::with_capacity(streams.len());
        let mut tokens = Vec::with_capacity(streams.len());
        for (c, stream) in streams.iter().enumerate() {
            let mut cursor = stream.cursor();
            let (mut k, mut t) = (vec![0], vec![0]);
            let mut budget = 0;
            for phase in &budgets[..budgets.len() - 1] {
                budget += phase[c];
                let at = stream.first_reaching_layout(source, budget, &mut cursor);
                k.push(at);
                t.push(stream.layout_tokens(source, at, &mut cursor));
            }
            k.push(stream.end());
            t.push(stream.total());
            positions.push(k);
            tokens.push(t);
        }
        Self { positions, tokens }
    }

    fn phases(&self) -> usize {
        self.tokens.first().map_or(1, |t| t.len() - 1)
    }

    /// Source `c`'s tokens at the epoch's fraction `numerator / denominator` of `total`
    /// tokens: its tokens before the phase there, and its share of the phase's tokens up to
    /// there.
    fn source_target(&self, c: usize, numerator: u128, denominator: u128, total: u64) -> u64 {
        let starts = &self.tokens[c];
        if self.phases() == 1 {
            return (numerator * u128::from(starts[1])).div_ceil(denominator.max(1)) as u64;
        }
        let at = numerator * u128::from(total) / denominator.max(1);
        let epoch_start = |p: usize| -> u128 { self.tokens.iter().map(|t| u128::from(t[p])).sum() };
        let mut phase = 0;
        while phase + 1 < self.phases() && epoch_start(phase + 1) <= at {
            phase += 1;
        }
        let (from, to) = (epoch_start(phase), epoch_start(phase + 1));
        if to <= from {
            return starts[phase];
        }
        let len = u128::from(starts[phase + 1] - starts[phase]);
        starts[phase] + ((at - from) * len).div_ceil(to - from) as u64
    }
}
/// The state a run starts from, checked against the epoch's rows and the sources' mixture
/// (and recording that mixture from then on).
fn start_state(
    config: &TokenConfig,
    epoch: u64,
    rows: u64,
    topology: Topology,
    run: &RunConfig,
    mixture: &Mixture,
) -> Result<TokenState, TokenStreamError> {
    let state = match &run.resume {
        Some(state) => state.clone(),
        None => TokenState {
            seq_len: config.seq_len,
            mode: config.mode,
            rows: IterState::start(config.seed, epoch, rows, topology, run.policy),
        },
    };
    Ok(TokenState {
        rows: state
            .rows
            .checked_for(config.seed, epoch, rows, mixture.clone())?,
        ..state
    })
}

/// Cuts every stream where its share of the epoch reaches each time `numerator / denominator`
/// (increasing, below 1), and `tail` documents before, and where its phases begin, and merges
/// them with an interval starting at each time.
fn merge_cut_at<S: DocumentSource>(
    source: &S,
    streams: Vec<SourceStream>,
    times: &[(u128, u128)],
    tail: u64,
    phases: &PhaseBounds,
) -> Merge {
    let total: u64 = streams.iter().map(SourceStream::total).sum();
    let mut cuts: Vec<Vec<u64>> = Vec::with_capacity(times.len());
    let mut per_stream: Vec<Vec<u64>> = phases
        .positions
        .iter()
        .map(|k| {
            let mut cuts = Vec::with_capacity(times.len() * 2 + k.len());
            cuts.extend_from_slice(&k[1..k.len() - 1]);
            cuts
        })
        .collect();
    for &(numerator, denominator) in times {
        let positions: Vec<u64> = streams
            .iter()
            .enumerate()
            .map(|(c, stream)| {
                let target = phases.source_target(c, numerator, denominator, total);
                let k = stream.first_reaching_layout(source, target, &mut stream.cursor());
                per_stream[c].push(k);
                if tail > 0 && k > tail {
                    per_stream[c].push(k - tail);
                }
                k
            })
            .collect();
        cuts.push(positions);
    }
    let streams = streams
        .into_iter()
        .zip(per_stream)
        .map(|(stream, cuts)| stream.with_cuts(&cuts))
        .collect();
    Merge::new(source, streams, cuts, phases.tokens.clone())
}

/// The tokens added to source `c`'s documents, from what it records of their ends.
fn boundary_of<S: DocumentSource>(
    source: &S,
    c: usize,
    config: &TokenConfig,
) -> Result<Boundary, TokenStreamError> {
    Ok(Boundary {
        bos: match config.bos_id {
            Some(id) => added(source, c, End::Start, id)?,
            None => None,
        },
        eos: match config.eos_id {
            Some(id) => added(source, c, End::End, id)?,
            None => None,
        },
    })
}

/// `Some(token)` where no document of source `c` has `token` at `end`, `None` where every
/// one does; an error otherwise, since a window's start would then depend on every document's
/// tokens, not only on the lengths.
fn added<S: DocumentSource>(
    source: &S,
    c: usize,
    end: End,
    token: u32,
) -> Result<Option<u32>, TokenStreamError> {
    let (name, verb) = match end {
        End::Start => ("BOS", "begin"),
        End::End => ("EOS", "end"),
    };
    match source.coverage(c, end, token)? {
        Coverage::All => Ok(None),
        Coverage::None => Ok(Some(token)),
        Coverage::Some { count, of } => Err(TokenStreamError::Boundary {
            source_name: source.name(c),
            detail: format!(
                "{count} of {of} documents {verb} with the {name} {token} and the others do not; \
                 a boundary token is added only where every document or none carries it (where \
                 a window starts is computed from the documents' lengths, never from their \
                 tokens): write the cache with the token on every document, or leave the \
                 {name} unset"
            ),
        }),
        Coverage::Unknown => Err(TokenStreamError::Boundary {
            source_name: source.name(c),
            detail: format!(
                "the cache does not record how many of its documents {verb} with the {name} \
                 {token}, so whether to add one cannot be decided from the lengths alone; leave \
                 the {name} unset, or rewrite the cache with a token writer that records it"
            ),
        }),
    }
}

/// Packing: the bins of each interval and the tokens they hold, from one walk of the
/// epoch's lengths; a document `long_docs = "refuse"` cannot take is an error naming it.
fn count_bins<S: DocumentSource>(
    source: &S,
    config: &TokenConfig,
    merge: &Merge,
) -> Result<(Vec<u64>, Vec<u64>), TokenStreamError> {
    let mut cursor = merge.cursor(source);
    let mut packer = Packer::new(config.mode, config.seq_len, config.packing_bins, false);
    let mut bins = Vec::with_capacity(merge.intervals());
    let mut used = Vec::with_capacity(merge.intervals());
    for interval in 0..merge.intervals() {
        cursor.enter_interval(merge, source, interval);
        packer.reset();
        let (mut count, mut tokens) = (0u64, 0u64);
        let mut emit = |bin: crate::pack::Emitted<'_>| {
            count += 1;
            tokens += bin.used;
        };
        while let Some(doc) = cursor.next_within(merge, source) {
            for piece in crate::rows::items(config, source, &doc)? {
                packer.add(piece, &mut emit);
            }
        }
        packer.finish(&mut emit);
        bins.push(count);
        used.push(tokens);
    }
    Ok((bins, used))
}
