//! What an epoch of rows does on a topology, computed from the plan and the documents' lengths:
//! rows per rank, tokens padded and dropped, each source's share of the tokens, the shards and
//! bytes each node reads, and how shuffled a rank's rows are. `dsrt plan --seq-len` prints it.

#![allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)] // ratios of counts

use crate::source::DocumentSource;
use crate::{PackMode, RowBlock, RowCursor, TokenPlan, TokenStreamError};
use dsrt_plan::{rank_correlation, CacheShape, Partition};
use serde::Serialize;
use std::collections::HashMap;

/// One source's part of the epoch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceReport {
    /// The source's name (path or URL).
    pub name: String,
    /// Its documents in the source.
    pub documents: u64,
    /// Its documents' tokens (boundary tokens included): one pass.
    pub natural_tokens: u64,
    /// Its budget: its share of `tokens_per_epoch`.
    pub budget: u64,
    /// The tokens the epoch holds of it (the budget, plus less than one document).
    pub tokens: u64,
    /// `tokens` over the epoch's tokens.
    pub share: f64,
    /// Documents the epoch reads of it (passes times documents, or part of a pass).
    pub epoch_documents: u64,
}

/// One source's part of one phase of a scheduled epoch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSourceReport {
    /// Its budget in the phase: its share of the phase's tokens by the phase's weights.
    pub budget: u64,
    /// The tokens of its documents that begin in the phase.
    pub tokens: u64,
    /// `tokens` over the phase's tokens.
    pub share: f64,
    /// Those documents.
    pub documents: u64,
}

/// One phase of a scheduled epoch, as planned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenPhaseReport {
    /// The phase's index in the schedule.
    pub phase: usize,
    /// The epoch's tokens before it: where its weights take over, on every rank alike.
    pub start: u64,
    /// Its tokens: of the documents that begin in it.
    pub tokens: u64,
    /// Its tokens in the schedule.
    pub scheduled_tokens: u64,
    /// Per source, in dataset order.
    pub sources: Vec<PhaseSourceReport>,
}

/// One node's reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenNodeReport {
    /// The node.
    pub node: u64,
    /// Rows its ranks read (padding included).
    pub rows: u64,
    /// Distinct shards it reads.
    pub shards: u64,
    /// Their bytes: what it downloads with an unbounded local cache.
    pub bytes: u64,
}

/// How shuffled one rank's rows are.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowShuffle {
    /// Mean distinct shards among the documents of 256 consecutive rows of rank 0.
    pub distinct_shards_per_256_rows: f64,
    /// Spearman correlation between rank 0's steps and the physical position of each row's
    /// first document (sources one after another): 1 is physical order.
    pub physical_rank_correlation: f64,
    /// Rows the figures were computed over.
    pub rows_measured: u64,
}

/// What an epoch of rows does on a topology.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenReport {
    /// Tokens of input per row.
    pub seq_len: u64,
    /// `concat`, `first_fit` or `best_fit`.
    pub mode: &'static str,
    /// Tokens of the epoch's documents (boundary tokens included).
    pub epoch_tokens: u64,
    /// Rows of the epoch (windows or bins, empty bins included).
    pub rows: u64,
    /// Rows not consumed yet (all, unless resumed).
    pub remaining_rows: u64,
    /// Ranks.
    pub world_size: u64,
    /// Ranks per node.
    pub ranks_per_node: u64,
    /// Rows every rank reads.
    pub rows_per_rank: u64,
    /// Steps of padding over all ranks (rows without loss that even out the last round).
    pub padding_rows: u64,
    /// Rows no rank reads (the incomplete last round, with `drop`).
    pub dropped_rows: u64,
    /// Tokens of padding in the rows ranks read (past the last token, unfilled bins, empty
    /// bins, padding steps).
    pub padded_tokens: u64,
    /// `padded_tokens` over the input tokens of all rows ranks read.
    pub padding_fraction: f64,
    /// Tokens of the epoch's documents no row holds (with `drop`).
    pub dropped_tokens: u64,
    /// Per source.
    pub sources: Vec<SourceReport>,
    /// Per phase of the epoch's schedule; empty without one (and then left out of JSON).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<TokenPhaseReport>,
    /// Bytes of the shards the epoch reads at least once.
    pub dataset_bytes: u64,
    /// Bytes all nodes download together, with unbounded local caches.
    pub downloaded_bytes: u64,
    /// `downloaded_bytes / dataset_bytes`.
    pub egress_factor: f64,
    /// Distinct shards the epoch reads.
    pub shards_read: u64,
    /// Shards more than one node reads.
    pub shards_read_by_more_than_one_node: u64,
    /// Memory one process's plan holds.
    pub plan_bytes: u64,
    /// Rank 0's shuffle figures.
    pub shuffle: RowShuffle,
    /// Per node.
    pub nodes: Vec<TokenNodeReport>,
}

impl TokenReport {
    /// Reports `plan` (planned for any rank) on its topology, reading no token. The shuffle
    /// figures look at `quality_blocks` blocks of 256 steps of rank 0, spread over its share.
    pub fn compute<S: DocumentSource>(
        plan: &TokenPlan,
        source: &S,
        quality_blocks: u64,
    ) -> Result<Self, TokenStreamError> {
        let topology = plan.topology();
        let seq_len = plan.config().seq_len;
        let rank0 = Partition::new(0, topology, plan.policy(), &plan.start_state().rows)?;
        let total = plan.total_tokens();
        let mut readers: Vec<HashMap<u64, (u64, u64)>> = vec![HashMap::new(); source.sources()];
        let mut nodes = Vec::with_capacity(topology.nodes() as usize);
        for node in 0..topology.nodes() {
            let mut report = TokenNodeReport {
                node,
                rows: rank0.len() * topology.ranks_per_node,
                shards: 0,
                bytes: 0,
            };
            for range in rank0.node_ranges(node) {
                for (c, positions) in node_positions(plan, source, range).into_iter().enumerate() {
                    let stream = &plan.merge.streams[c];
                    for shard in stream.plan().shards_read(0, positions) {
                        let entry = readers[c].entry(shard).or_insert((u64::MAX, 0));
                        if entry.0 != node {
                            entry.0 = node;
                            entry.1 += 1;
                            report.shards += 1;
                            report.bytes += source.shard_bytes(c, shard);
                        }
                    }
                }
            }
            nodes.push(report);
        }
        let dataset_bytes: u64 = readers
            .iter()
            .enumerate()
            .flat_map(|(c, shards)| shards.keys().map(move |&s| (c, s)))
            .map(|(c, s)| source.shard_bytes(c, s))
            .sum();
        let downloaded_bytes = nodes.iter().map(|n| n.bytes).sum();
        let shards_read = readers.iter().map(HashMap::len).sum::<usize>() as u64;
        let shared = readers
            .iter()
            .flat_map(HashMap::values)
            .filter(|(_, n)| *n > 1)
            .count() as u64;
        let padding_rows: u64 = (0..topology.nodes()).map(|n| rank0.node_padding(n)).sum();
        let read_rows = rank0.len() * topology.world_size;
        let dropped_rows = rank0.remaining_len() + padding_rows - read_rows;
        let natural = plan.merge.streams.iter().map(|s| s.natural_tokens());
        let sources = natural
            .zip(plan.source_tokens())
            .zip(plan.budgets())
            .zip(plan.source_documents())
            .enumerate()
            .map(
                |(c, (((natural_tokens, tokens), &budget), epoch_documents))| SourceReport {
                    name: source.name(c),
                    documents: source.shape(c).len,
                    natural_tokens,
                    budget,
                    tokens,
                    share: if total == 0 {
                        0.0
                    } else {
                        tokens as f64 / total as f64
                    },
                    epoch_documents,
                },
            )
            .collect();
        let phases = phase_reports(plan);
        let rows = plan.rows();
        // Padding per row the ranks read: the epoch's own (partial window, bins) spread over
        // its rows, plus whole rows of padding steps.
        let epoch_padding =
            plan.padded_tokens() as f64 * (read_rows - padding_rows) as f64 / rows.max(1) as f64;
        let padded_tokens = epoch_padding as u64 + padding_rows * seq_len;
        let dropped_tokens = plan.dropped_tokens() + dropped_rows * seq_len;
        let shuffle = shuffle_figures(plan, source, &rank0, quality_blocks)?;
        Ok(Self {
            seq_len,
            mode: plan.config().mode.name(),
            epoch_tokens: total,
            rows,
            remaining_rows: rank0.remaining_len(),
            world_size: topology.world_size,
            ranks_per_node: topology.ranks_per_node,
            rows_per_rank: rank0.len(),
            padding_rows,
            dropped_rows,
            padded_tokens,
            padding_fraction: padded_tokens as f64 / (read_rows * seq_len).max(1) as f64,
            dropped_tokens,
            sources,
            phases,
            dataset_bytes,
            downloaded_bytes,
            egress_factor: if dataset_bytes == 0 {
                1.0
            } else {
                downloaded_bytes as f64 / dataset_bytes as f64
            },
            shards_read,
            shards_read_by_more_than_one_node: shared,
            plan_bytes: plan.bytes() as u64,
            shuffle,
            nodes,
        })
    }
}

/// Each source's stream positions that rows `rows` (a range of positions, blocks taken whole)
/// read.
fn node_positions<S: DocumentSource>(
    plan: &TokenPlan,
    source: &S,
    rows: std::ops::Range<u64>,
) -> Vec<std::ops::Range<u64>> {
    let merge = &plan.merge;
    if rows.is_empty() {
        return vec![0..0; merge.streams.len()];
    }
    if plan.config().mode == PackMode::Concat {
        let seq_len = plan.config().seq_len;
        let total = plan.total_tokens();
        let first = (rows.start * seq_len).min(total.saturating_sub(1));
        let last = (rows.end * seq_len).min(total.saturating_sub(1));
        return merge.positions_between(source, first, last);
    }
    // Packing: the node shares (intervals) the rows lie in, whole.
    let per = plan.per_interval().max(1);
    let (first, last) = ((rows.start / per) as usize, ((rows.end - 1) / per) as usize);
    (0..merge.streams.len())
        .map(|c| {
            let a = merge.interval_positions(first.min(merge.intervals() - 1), c);
            let b = merge.interval_positions(last.min(merge.intervals() - 1), c);
            a.start..b.end
        })
        .collect()
}

/// Rank 0's shuffle figures over `blocks` blocks of 256 steps spread over its share.
fn shuffle_figures<S: DocumentSource>(
    plan: &TokenPlan,
    source: &S,
    rank0: &Partition,
    blocks: u64,
) -> Result<RowShuffle, TokenStreamError> {
    const BLOCK: u64 = 256;
    let rank0_plan = plan.for_rank(0)?;
    let steps = rank0.len();
    let count = (steps / BLOCK).min(blocks).max(u64::from(steps > 0));
    let stride = (steps / BLOCK).max(1) / count.max(1);
    let shapes: Vec<CacheShape> = (0..source.sources()).map(|c| source.shape(c)).collect();
    let firsts: Vec<u64> = shapes
        .iter()
        .scan(0, |at, s| {
            let first = *at;
            *at += s.len;
            Some(first)
        })
        .collect();
    let shard_of = |c: usize, doc: u64| {
        let shape = &shapes[c];
        let run = shape.runs.partition_point(|r| r.end <= doc);
        shape.run_shards.get(run).copied().unwrap_or(run as u64)
    };
    let mut cursor = RowCursor::new(&rank0_plan, source);
    let mut rows = RowBlock::default();
    let mut physical = Vec::new();
    let mut distinct = 0u64;
    let mut shards: Vec<(u32, u64)> = Vec::new();
    for block in 0..count {
        let first = block * stride * BLOCK;
        cursor.read(
            &rank0_plan,
            source,
            first..(first + BLOCK).min(steps),
            &mut rows,
        )?;
        shards.clear();
        for i in 0..rows.specs.len() {
            let pieces = rows.pieces_of(i);
            if let Some(piece) = pieces.first() {
                physical.push(firsts[piece.source as usize] + piece.doc);
            }
            shards.extend(
                pieces
                    .iter()
                    .map(|p| (p.source, shard_of(p.source as usize, p.doc))),
            );
        }
        shards.sort_unstable();
        shards.dedup();
        distinct += shards.len() as u64;
    }
    Ok(RowShuffle {
        distinct_shards_per_256_rows: if count == 0 {
            0.0
        } else {
            distinct as f64 / count as f64
        },
        physical_rank_correlation: rank_correlation(&physical),
        rows_measured: physical.len() as u64,
    })
}

/// The phases of a scheduled plan (none without a schedule).
fn phase_reports(plan: &TokenPlan) -> Vec<TokenPhaseReport> {
    let Some(schedule) = &plan.config().schedule else {
        return Vec::new();
    };
    let tokens = plan.phase_tokens();
    let documents = plan.phase_documents();
    plan.phase_starts()
        .into_iter()
        .zip(&schedule.phases)
        .enumerate()
        .map(|(p, (start, scheduled))| {
            let phase_tokens: u64 = tokens[p].iter().sum();
            TokenPhaseReport {
                phase: p,
                start,
                tokens: phase_tokens,
                scheduled_tokens: scheduled.tokens,
                sources: (0..tokens[p].len())
                    .map(|c| PhaseSourceReport {
                        budget: plan.phase_budgets()[p][c],
                        tokens: tokens[p][c],
                        share: tokens[p][c] as f64 / phase_tokens.max(1) as f64,
                        documents: documents[p][c],
                    })
                    .collect(),
            }
        })
        .collect()
}
