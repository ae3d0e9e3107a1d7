//! Token plans over synthetic sources: which pieces of which documents every rank's rows hold,
//! checked against the documents' lengths (tokens are read in `tests/batches.rs`).
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small values.

use dsrt_plan::{RemainderPolicy, Sampling};
use dsrt_token_stream::{
    DocumentSource, LongDocs, PackMode, RowBlock, RowCursor, RunConfig, SyntheticSource,
    SyntheticSpec, TokenConfig, TokenPlan, TokenState, TokenStreamError,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Three sources of long-tailed lengths (one document up to 30 windows long), 7 to 23 shards.
fn sources(docs: [u64; 3], mean: u64) -> SyntheticSource {
    SyntheticSource::new(
        docs.iter()
            .enumerate()
            .map(|(c, &n)| SyntheticSpec {
                seed: c as u64 * 7 + 1,
                cache_id: 100 + c as u64,
                max_tokens: 40 * mean,
                ..SyntheticSpec::new(n, 7 + 8 * c as u64, mean)
            })
            .collect(),
    )
}

fn run(world_size: u64, ranks_per_node: u64, rank: u64, resume: Option<&TokenState>) -> RunConfig {
    RunConfig {
        epoch: 3,
        rank,
        world_size,
        ranks_per_node,
        policy: RemainderPolicy::Pad,
        resume: resume.cloned(),
    }
}

/// One rank's rows, steps `from..`, as `(step, row, padding, pieces)`.
type Rows = Vec<(u64, Option<u64>, bool, Vec<dsrt_token_stream::Piece>)>;

fn rank_rows(
    source: &SyntheticSource,
    config: &TokenConfig,
    run: &RunConfig,
    from: u64,
) -> (TokenPlan, Rows) {
    let plan = TokenPlan::new(source, config, run).unwrap();
    let mut cursor = RowCursor::new(&plan, source);
    let mut block = RowBlock::default();
    let mut rows = Vec::new();
    // Chunks of 5 steps, read by two interleaved readers as DataLoader workers would.
    let mut other = RowCursor::new(&plan, source);
    let mut step = from;
    let mut turn = 0;
    while step < plan.len() {
        let reader = if turn % 2 == 0 {
            &mut cursor
        } else {
            &mut other
        };
        reader
            .read(&plan, source, step..step + 5, &mut block)
            .unwrap();
        for (i, spec) in block.specs.iter().enumerate() {
            rows.push((
                spec.step,
                spec.row,
                spec.padding,
                block.pieces_of(i).to_vec(),
            ));
        }
        step += 5;
        turn += 1;
    }
    (plan, rows)
}

/// Every rank's rows of a job of `nodes` x `per_node`, from `resume` (steps before
/// `from_step` skipped).
fn job(
    source: &SyntheticSource,
    config: &TokenConfig,
    nodes: u64,
    per_node: u64,
    resume: Option<&TokenState>,
    from_step: u64,
) -> Vec<(TokenPlan, Rows)> {
    let world = nodes * per_node;
    (0..world)
        .map(|rank| {
            rank_rows(
                source,
                config,
                &run(world, per_node, rank, resume),
                from_step,
            )
        })
        .collect()
}

/// The input tokens of a row's pieces (the first `seq_len` tokens): `(source, doc, start, len)`.
fn inputs(seq_len: u64, pieces: &[dsrt_token_stream::Piece]) -> Vec<(u32, u64, u64, u64)> {
    let mut at = 0;
    let mut out = Vec::new();
    for piece in pieces {
        let len = u64::from(piece.len).min(seq_len.saturating_sub(at));
        if len > 0 {
            out.push((piece.source, piece.doc, piece.start, len));
        }
        at += u64::from(piece.len);
    }
    out
}

/// Checks that the input stretches tile each document's tokens exactly once.
fn assert_every_token_once(
    source: &SyntheticSource,
    added: u64,
    stretches: impl IntoIterator<Item = (u32, u64, u64, u64)>,
) {
    let mut by_doc: HashMap<(u32, u64), Vec<(u64, u64)>> = HashMap::new();
    for (s, doc, start, len) in stretches {
        by_doc.entry((s, doc)).or_default().push((start, len));
    }
    for c in 0..source.sources() {
        for doc in 0..source.shape(c).len {
            let len = source.n_tokens(c, doc) + added;
            let mut stretches = by_doc.remove(&(c as u32, doc)).unwrap_or_default();
            stretches.sort_unstable();
            let mut at = 0;
            for (start, n) in stretches {
                assert_eq!(
                    start, at,
                    "source {c} document {doc}: a gap or an overlap at {at}"
                );
                at += n;
            }
            assert_eq!(
                at, len,
                "source {c} document {doc} of {len} tokens: {at} read"
            );
        }
    }
    assert!(by_doc.is_empty(), "stretches of unknown documents");
}

#[test]
fn concat_windows_of_eight_ranks_on_four_nodes_hold_every_token_once() {
    let source = sources([900, 1300, 700], 48);
    let config = TokenConfig {
        seq_len: 64,
        eos_id: Some(60_000),
        window_block: 16,
        seed: 9,
        ..TokenConfig::default()
    };
    let ranks = job(&source, &config, 4, 2, None, 0);
    let plan = &ranks[0].0;
    let steps = plan.len();
    assert!(ranks
        .iter()
        .all(|(p, rows)| p.len() == steps && rows.len() as u64 == steps));
    assert_eq!(plan.rows(), plan.total_tokens().div_ceil(64));
    assert_eq!(plan.boundary_tokens(), vec![(None, Some(60_000)); 3]);
    let mut seen_rows = BTreeSet::new();
    let mut stretches = Vec::new();
    let mut padding = 0;
    for (_, rows) in &ranks {
        for (_, row, pad, pieces) in rows {
            match row {
                None => {
                    assert!(*pad && pieces.is_empty());
                    padding += 1;
                }
                Some(row) => {
                    assert!(seen_rows.insert(*row), "row {row} read twice");
                    let tokens: u64 = pieces.iter().map(|p| u64::from(p.len)).sum();
                    // A window holds seq_len + 1 tokens but the epoch's last.
                    assert!(
                        tokens == 65 || *row == plan.rows() - 1,
                        "row {row}: {tokens}"
                    );
                    stretches.extend(inputs(64, pieces));
                }
            }
        }
    }
    assert_eq!(seen_rows.len() as u64, plan.rows());
    assert!(padding < 8);
    assert_every_token_once(&source, 1, stretches);
}

/// Per node, the shards its ranks' rows read (source, shard).
fn shards_by_node(
    source: &SyntheticSource,
    ranks: &[(TokenPlan, Rows)],
    per_node: u64,
) -> BTreeMap<(u32, u64), BTreeSet<u64>> {
    let shard_of = |c: u32, doc: u64| {
        let shape = source.shape(c as usize);
        shape.runs.iter().position(|r| r.contains(&doc)).unwrap() as u64
    };
    let mut readers: BTreeMap<(u32, u64), BTreeSet<u64>> = BTreeMap::new();
    for (rank, (_, rows)) in ranks.iter().enumerate() {
        for (_, _, _, pieces) in rows {
            for piece in pieces {
                readers
                    .entry((piece.source, shard_of(piece.source, piece.doc)))
                    .or_default()
                    .insert(rank as u64 / per_node);
            }
        }
    }
    readers
}

#[test]
fn each_shard_is_read_by_one_node_but_where_two_nodes_shares_meet() {
    let source = sources([3000, 4000, 2000], 30);
    for mode in [PackMode::Concat, PackMode::BestFit] {
        let config = TokenConfig {
            seq_len: 128,
            mode,
            ..TokenConfig::default()
        };
        let ranks = job(&source, &config, 4, 2, None, 0);
        let readers = shards_by_node(&source, &ranks, 2);
        let shared: Vec<_> = readers.iter().filter(|(_, n)| n.len() > 1).collect();
        // Per boundary and source, the run the boundary splits, and (concat) where the next
        // node's first window reaches back past the boundary's last documents, their run.
        let bound = if mode == PackMode::Concat { 2 } else { 1 } * 3 * 3;
        assert!(
            shared.len() <= bound,
            "{mode:?}: {} shards read by two nodes: {shared:?}",
            shared.len()
        );
        assert!(readers.len() >= 40, "{} shards read", readers.len());
    }
}

#[test]
fn a_job_stopped_at_37_percent_resumes_on_any_topology_with_exactly_the_rest() {
    let source = sources([800, 1100, 600], 40);
    for mode in [PackMode::Concat, PackMode::FirstFit] {
        let config = TokenConfig {
            seq_len: 96,
            mode,
            window_block: 8,
            ..TokenConfig::default()
        };
        let first = job(&source, &config, 4, 2, None, 0);
        let steps = first[0].0.len();
        let stop = steps * 37 / 100;
        let state = first[0].0.state_after(stop);
        assert!(first.iter().all(|(p, _)| p.state_after(stop) == state));
        // The rows of the whole epoch, from the first run.
        let mut pieces_of: HashMap<u64, Vec<dsrt_token_stream::Piece>> = HashMap::new();
        let mut consumed = Vec::new();
        for (_, rows) in &first {
            for (step, row, _, pieces) in rows {
                if let Some(row) = row {
                    pieces_of.insert(*row, pieces.clone());
                    if *step < stop {
                        consumed.push(*row);
                    }
                }
            }
        }
        let state_json = serde_json::to_string(&state).unwrap();
        let state: TokenState = serde_json::from_str(&state_json).unwrap();
        for (nodes, per_node) in [(3, 2), (6, 2), (1, 1)] {
            let resumed = job(&source, &config, nodes, per_node, Some(&state), 0);
            let counts: BTreeSet<u64> = resumed.iter().map(|(p, _)| p.len()).collect();
            assert_eq!(
                counts.len(),
                1,
                "{mode:?} {nodes}x{per_node}: unequal counts"
            );
            let mut all = consumed.clone();
            let mut padding = 0;
            for (_, rows) in &resumed {
                for (_, row, pad, pieces) in rows {
                    match row {
                        Some(row) => {
                            assert_eq!(&pieces_of[row], pieces, "row {row} differs on resume");
                            all.push(*row);
                        }
                        None => {
                            assert!(pad);
                            padding += 1;
                        }
                    }
                }
            }
            all.sort_unstable();
            let expected: Vec<u64> = (0..first[0].0.rows()).collect();
            assert_eq!(
                all, expected,
                "{mode:?} {nodes}x{per_node}: not exactly the epoch"
            );
            assert!(padding < nodes * per_node, "{padding} padding steps");
        }
    }
}

#[test]
fn token_shares_stay_within_one_document_of_the_weights_over_every_prefix() {
    let source = sources([2000, 500, 1200], 40);
    let natural: u64 = (0..3)
        .map(|c| source.tokens_in(c, 0..source.shape(c).len))
        .sum();
    let cases = [
        (natural * 6 / 10, Sampling::WithoutReplacement),
        (natural * 2, Sampling::WithoutReplacement),
        (natural * 6 / 10, Sampling::RunsWithReplacement),
        (natural * 3 / 2, Sampling::RunsWithReplacement),
    ];
    for (tokens_per_epoch, sampling) in cases {
        let config = TokenConfig {
            seq_len: 50,
            weights: Some(vec![0.5, 0.3, 0.2]),
            tokens_per_epoch: Some(tokens_per_epoch),
            window_block: 1,
            sampling,
            ..TokenConfig::default()
        };
        let (plan, rows) = rank_rows(&source, &config, &run(1, 1, 0, None), 0);
        let budgets = plan.budgets().to_vec();
        assert_eq!(budgets.iter().sum::<u64>(), tokens_per_epoch);
        let longest = (0..3)
            .flat_map(|c| (0..source.shape(c).len).map(move |d| (c, d)))
            .map(|(c, d)| source.n_tokens(c, d))
            .max()
            .unwrap();
        for (c, (&total, &budget)) in plan.source_tokens().iter().zip(&budgets).enumerate() {
            assert!(
                total >= budget && total < budget + longest,
                "source {c}: {total} for {budget}"
            );
        }
        // The documents in epoch order, from the windows' inputs.
        let mut occurrences: HashMap<(u32, u64), u64> = HashMap::new();
        let mut per_source = [0u64; 3];
        let mut all = 0u64;
        let mut worst = 0f64;
        for (_, _, _, pieces) in &rows {
            for (c, doc, start, len) in inputs(50, pieces) {
                if start == 0 {
                    *occurrences.entry((c, doc)).or_default() += 1;
                    // A document begins: the prefix before it ends between two documents.
                    for (s, &tokens) in per_source.iter().enumerate() {
                        let share = budgets[s] as f64 / tokens_per_epoch as f64;
                        worst = worst.max((tokens as f64 - share * all as f64).abs());
                    }
                }
                per_source[c as usize] += len;
                all += len;
            }
        }
        assert!(
            worst <= longest as f64,
            "a prefix strays {worst} tokens from its share (longest document {longest})"
        );
        // Without replacement a document comes at most once when its source is down-sampled
        // and at least once when it is up-sampled; with replacement (whole shard runs drawn)
        // an up-sampled source leaves some documents out and repeats others.
        let times: Vec<u64> = (0..2000)
            .map(|d| occurrences.get(&(0, d)).copied().unwrap_or(0))
            .collect();
        let (fewest, most) = (*times.iter().min().unwrap(), *times.iter().max().unwrap());
        match (sampling, tokens_per_epoch < natural) {
            (Sampling::WithoutReplacement, true) => assert!(most <= 1, "{most}"),
            (Sampling::WithoutReplacement, false) => assert!(fewest >= 1, "{fewest}"),
            (_, false) => assert!(fewest == 0 && most >= 2, "{fewest}..{most}"),
            (_, true) => {}
        }
    }
}

#[test]
fn up_sampled_sources_repeat_whole_passes_and_down_sampled_ones_never_repeat() {
    let source = sources([300, 300, 300], 30);
    let natural: Vec<u64> = (0..3).map(|c| source.tokens_in(c, 0..300)).collect();
    let config = TokenConfig {
        seq_len: 40,
        weights: Some(vec![0.6, 0.3, 0.1]),
        tokens_per_epoch: Some(natural.iter().sum()),
        ..TokenConfig::default()
    };
    let (plan, rows) = rank_rows(&source, &config, &run(1, 1, 0, None), 0);
    let mut tokens_of: HashMap<(u32, u64), u64> = HashMap::new();
    for (_, _, _, pieces) in &rows {
        for (c, doc, _, len) in inputs(40, pieces) {
            *tokens_of.entry((c, doc)).or_default() += len;
        }
    }
    for c in 0..3u32 {
        let passes = plan.source_tokens()[c as usize] as f64 / natural[c as usize] as f64;
        let times: Vec<u64> = (0..300)
            .map(|d| tokens_of.get(&(c, d)).copied().unwrap_or(0) / source.n_tokens(c as usize, d))
            .collect();
        let (low, high) = (passes.floor() as u64, passes.ceil() as u64);
        assert!(
            times.iter().all(|&t| t == low || t == high),
            "source {c} ({passes:.2} passes): a document read {:?} times",
            times.iter().collect::<BTreeSet<_>>()
        );
    }
}

#[test]
fn packing_holds_every_document_once_and_never_splits_one_that_fits() {
    let source = sources([700, 900, 500], 30);
    for mode in [PackMode::FirstFit, PackMode::BestFit] {
        let config = TokenConfig {
            seq_len: 128,
            mode,
            packing_bins: 8,
            eos_id: Some(60_000),
            ..TokenConfig::default()
        };
        let ranks = job(&source, &config, 2, 2, None, 0);
        let mut stretches = Vec::new();
        let mut used = 0u64;
        let mut rows = 0u64;
        for (_, rank) in &ranks {
            for (_, row, _, pieces) in rank {
                let tokens: u64 = pieces.iter().map(|p| u64::from(p.len)).sum();
                assert!(tokens <= 128);
                for piece in pieces {
                    let len = source.n_tokens(piece.source as usize, piece.doc) + 1;
                    if len <= 128 {
                        assert_eq!(
                            (piece.start, u64::from(piece.len)),
                            (0, len),
                            "{mode:?}: split"
                        );
                    }
                    stretches.push((piece.source, piece.doc, piece.start, u64::from(piece.len)));
                }
                used += tokens;
                rows += u64::from(row.is_some());
            }
        }
        assert_every_token_once(&source, 1, stretches);
        let padding = 1.0 - used as f64 / (rows * 128) as f64;
        let plan = &ranks[0].0;
        assert_eq!(
            plan.padded_tokens(),
            plan.rows() * 128 - plan.total_tokens()
        );
        assert!(padding < 0.12, "{mode:?}: {padding:.3} padding");
    }
}

#[test]
fn long_documents_are_split_truncated_or_refused() {
    let source = sources([200, 200, 200], 60);
    let config = |long_docs| TokenConfig {
        seq_len: 64,
        mode: PackMode::BestFit,
        long_docs,
        ..TokenConfig::default()
    };
    let (_, rows) = rank_rows(&source, &config(LongDocs::Truncate), &run(1, 1, 0, None), 0);
    let mut starts = BTreeSet::new();
    for (_, _, _, pieces) in &rows {
        for piece in pieces {
            starts.insert(piece.start);
        }
    }
    assert_eq!(
        starts,
        BTreeSet::from([0]),
        "truncated documents keep their first tokens"
    );
    let error =
        TokenPlan::new(&source, &config(LongDocs::Refuse), &run(1, 1, 0, None)).unwrap_err();
    match &error {
        TokenStreamError::LongDocument {
            source_name,
            tokens,
            seq_len: 64,
            ..
        } => assert!(*tokens > 64 && source_name.contains("synthetic"), "{error}"),
        other => panic!("{other}"),
    }
    assert!(error.to_string().contains("refuse"), "{error}");
}

#[test]
fn bad_settings_and_undecidable_boundaries_are_refused() {
    let source = sources([10, 10, 10], 5);
    let refused =
        |config: TokenConfig| TokenPlan::new(&source, &config, &run(1, 1, 0, None)).unwrap_err();
    let zero = refused(TokenConfig {
        seq_len: 0,
        ..TokenConfig::default()
    });
    assert!(
        matches!(zero, TokenStreamError::Config(ref m) if m.contains("seq_len")),
        "{zero}"
    );
    // Token 7 lies in the vocabulary: whether documents begin with it is not recorded.
    let bos = refused(TokenConfig {
        bos_id: Some(7),
        ..TokenConfig::default()
    });
    assert!(
        matches!(bos, TokenStreamError::Boundary { .. }) && bos.to_string().contains("BOS 7"),
        "{bos}"
    );
    let weights = refused(TokenConfig {
        weights: Some(vec![1.0, 2.0]),
        ..TokenConfig::default()
    });
    assert!(
        weights.to_string().contains("2 weights for 3 caches"),
        "{weights}"
    );
    let plan = TokenPlan::new(&source, &TokenConfig::default(), &run(1, 1, 0, None)).unwrap();
    let mut other = plan.state_after(0);
    other.seq_len = 4096;
    let resumed = TokenPlan::new(
        &source,
        &TokenConfig::default(),
        &run(1, 1, 0, Some(&other)),
    );
    assert!(resumed.unwrap_err().to_string().contains("seq_len 4096"));
}

#[test]
fn a_billion_documents_plan_in_bounded_memory_and_seek_anywhere() {
    let source = SyntheticSource::new(vec![
        SyntheticSpec::new(600_000_000, 60_000, 2000),
        SyntheticSpec {
            seed: 5,
            cache_id: 1,
            ..SyntheticSpec::new(400_000_000, 40_000, 1500)
        },
    ]);
    let config = TokenConfig {
        seq_len: 2048,
        weights: Some(vec![0.7, 0.3]),
        ..TokenConfig::default()
    };
    let started = std::time::Instant::now();
    let plan = TokenPlan::new(&source, &config, &run(512, 8, 300, None)).unwrap();
    assert!(plan.bytes() < 24 << 20, "{} bytes", plan.bytes());
    let total = plan.total_tokens();
    assert_eq!(plan.rows(), total.div_ceil(2048));
    assert_eq!(plan.len(), plan.rows().div_ceil(512));
    let shares: Vec<f64> = plan
        .source_tokens()
        .iter()
        .map(|&t| t as f64 / total as f64)
        .collect();
    assert!((shares[0] - 0.7).abs() < 1e-9, "{shares:?}");
    // Rank 300 (node 37) reads its first rows, then rows from the middle of its share.
    let mut cursor = RowCursor::new(&plan, &source);
    let mut block = RowBlock::default();
    for from in [0, plan.len() / 2] {
        cursor
            .read(&plan, &source, from..from + 4, &mut block)
            .unwrap();
        for (i, spec) in block.specs.iter().enumerate() {
            let tokens: u64 = block.pieces_of(i).iter().map(|p| u64::from(p.len)).sum();
            assert_eq!(tokens, 2049, "step {}", spec.step);
            assert_eq!(u64::from(spec.tokens), tokens);
        }
    }
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
}
