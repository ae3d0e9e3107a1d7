//! Token schedules: phases counted in tokens, each mixing the sources at its own weights. Over
//! synthetic sources and real token caches, on 8 ranks as 4 nodes x 2: the documents that begin
//! in each phase hold each source's budget of the phase to within one document, on every prefix
//! of the epoch; a resume at 30% on 3 x 2 reads exactly the rest; a state of another schedule
//! is refused naming the phase that differs; bad phases are refused naming the phase; a
//! billion documents plan in bounded memory.
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)] // Test code: small values, ratios.

use dsrt_dataset::Dataset;
use dsrt_plan::{mix, PlanError, RemainderPolicy, Sampling};
use dsrt_reader::OpenOptions;
use dsrt_token_stream::{
    CacheSource, DocumentSource, LoaderOptions, Piece, RowBlock, RowCursor, RunConfig,
    SyntheticSource, SyntheticSpec, TokenConfig, TokenLoader, TokenPhase, TokenPlan, TokenSchedule,
    TokenState, TokenStreamError,
};
use dsrt_tokens::{TokenInfo, TokenWriter};
use proptest::prelude::*;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

fn sources(docs: [u64; 3], mean: u64) -> SyntheticSource {
    SyntheticSource::new(
        docs.iter()
            .enumerate()
            .map(|(c, &n)| SyntheticSpec {
                seed: c as u64 * 3 + 1,
                cache_id: 300 + c as u64,
                max_tokens: 30 * mean,
                ..SyntheticSpec::new(n, 6 + 5 * c as u64, mean)
            })
            .collect(),
    )
}

fn natural<S: DocumentSource>(source: &S) -> u64 {
    (0..source.sources())
        .map(|c| source.tokens_in(c, 0..source.shape(c).len))
        .sum()
}

fn longest<S: DocumentSource>(source: &S) -> u64 {
    (0..source.sources())
        .flat_map(|c| (0..source.shape(c).len).map(move |d| (c, d)))
        .map(|(c, d)| source.n_tokens(c, d))
        .max()
        .unwrap()
}

fn schedule(phases: &[(u64, [f64; 3])]) -> TokenSchedule {
    TokenSchedule {
        phases: phases
            .iter()
            .map(|&(tokens, weights)| TokenPhase {
                tokens,
                weights: weights.to_vec(),
            })
            .collect(),
    }
}

fn run(world_size: u64, ranks_per_node: u64, rank: u64, resume: Option<&TokenState>) -> RunConfig {
    RunConfig {
        epoch: 1,
        rank,
        world_size,
        ranks_per_node,
        policy: RemainderPolicy::Pad,
        resume: resume.cloned(),
    }
}

/// Every rank's rows of a job (steps from `from` on), by row: `(rank plan, row -> (step,
/// pieces))`.
type Rows = HashMap<u64, (u64, Vec<Piece>)>;

fn job<S: DocumentSource>(
    source: &S,
    config: &TokenConfig,
    nodes: u64,
    per_node: u64,
    resume: Option<&TokenState>,
) -> (Vec<TokenPlan>, Rows) {
    let world = nodes * per_node;
    let mut plans = Vec::new();
    let mut rows = HashMap::new();
    for rank in 0..world {
        let plan = TokenPlan::new(source, config, &run(world, per_node, rank, resume)).unwrap();
        let mut cursor = RowCursor::new(&plan, source);
        let mut block = RowBlock::default();
        cursor
            .read(&plan, source, 0..plan.len(), &mut block)
            .unwrap();
        for (i, spec) in block.specs.iter().enumerate() {
            if let Some(row) = spec.row {
                rows.insert(row, (spec.step, block.pieces_of(i).to_vec()));
            }
        }
        plans.push(plan);
    }
    (plans, rows)
}

/// The tokens of each phase (`[p][c]`) of the documents that begin in it, read from the rows'
/// inputs in epoch order, and the worst distances of a source's tokens, on a prefix ending
/// where a document begins, from its share of the prefix: by the phases as realised (each
/// source's tokens of the phase spread over the phase's tokens), and by the schedule's budgets
/// (which the phases realise to within one document at their ends).
fn realised(plan: &TokenPlan, rows: &Rows, schedule: &TokenSchedule) -> (Vec<Vec<u64>>, f64, f64) {
    let seq_len = plan.config().seq_len;
    let sources = plan.budgets().len();
    let starts = plan.phase_starts();
    let budgets = plan.phase_budgets();
    let phase_tokens = plan.phase_tokens();
    let mut tokens = vec![vec![0u64; sources]; starts.len()];
    let mut so_far = vec![0u64; sources];
    let mut phase_of_doc = vec![0usize; sources];
    let mut at = 0u64;
    let (mut worst_realised, mut worst_scheduled) = (0f64, 0f64);
    assert_eq!(rows.len() as u64, plan.rows());
    for row in 0..plan.rows() {
        let mut used = 0;
        for piece in &rows[&row].1 {
            let len = u64::from(piece.len).min(seq_len - used);
            used += u64::from(piece.len);
            if len == 0 {
                continue;
            }
            let c = piece.source as usize;
            if piece.start == 0 {
                let phase = starts.partition_point(|&s| s <= at) - 1;
                phase_of_doc[c] = phase;
                let into = (at - starts[phase]) as f64;
                let realised_len: u64 = phase_tokens[phase].iter().sum();
                for (s, &got) in so_far.iter().enumerate() {
                    let before: u64 = phase_tokens[..phase].iter().map(|t| t[s]).sum();
                    let expected =
                        before as f64 + into / realised_len as f64 * phase_tokens[phase][s] as f64;
                    worst_realised = worst_realised.max((got as f64 - expected).abs());
                    let before: u64 = budgets[..phase].iter().map(|b| b[s]).sum();
                    let expected = before as f64
                        + into / schedule.phases[phase].tokens as f64 * budgets[phase][s] as f64;
                    worst_scheduled = worst_scheduled.max((got as f64 - expected).abs());
                }
            }
            tokens[phase_of_doc[c]][c] += len;
            so_far[c] += len;
            at += len;
        }
    }
    (tokens, worst_realised, worst_scheduled)
}

/// Checks a plan of `schedule` against the rows of its epoch.
fn check_phases(plan: &TokenPlan, rows: &Rows, schedule: &TokenSchedule, longest: u64) {
    let (tokens, worst_realised, worst_scheduled) = realised(plan, rows, schedule);
    assert_eq!(tokens, plan.phase_tokens(), "the phases the rows hold");
    let budgets = plan.phase_budgets();
    for (p, phase) in schedule.phases.iter().enumerate() {
        assert_eq!(budgets[p].iter().sum::<u64>(), phase.tokens, "phase {p}");
        for c in 0..budgets[p].len() {
            let budget: u64 = budgets[..=p].iter().map(|b| b[c]).sum();
            let got: u64 = tokens[..=p].iter().map(|t| t[c]).sum();
            assert!(
                got >= budget && got < budget + longest,
                "source {c} through phase {p}: {got} tokens for {budget}"
            );
        }
    }
    assert!(
        worst_realised <= longest as f64,
        "a prefix strays {worst_realised} tokens from its phase (longest document {longest})"
    );
    assert!(
        worst_scheduled <= 2.0 * longest as f64,
        "a prefix strays {worst_scheduled} tokens from the schedule (longest document {longest})"
    );
}

#[test]
fn three_phases_over_three_sources_on_eight_ranks_hold_each_phase_within_one_document() {
    let source = sources([1500, 700, 1100], 40);
    let n = natural(&source);
    let schedule = schedule(&[
        (n * 4 / 10, [0.5, 0.3, 0.2]),
        (n * 3 / 10, [0.1, 0.8, 0.1]),
        (n * 5 / 10, [0.2, 0.0, 0.8]),
    ]);
    for sampling in [Sampling::WithoutReplacement, Sampling::RunsWithReplacement] {
        let config = TokenConfig {
            seq_len: 64,
            window_block: 4,
            sampling,
            schedule: Some(schedule.clone()),
            ..TokenConfig::default()
        };
        let (plans, rows) = job(&source, &config, 4, 2, None);
        assert!(plans.iter().all(|p| p.len() == plans[0].len()));
        check_phases(&plans[0], &rows, &schedule, longest(&source));
        // Phase 2 gives the second source nothing.
        assert_eq!(plans[0].phase_tokens()[2][1], 0);
        assert_eq!(plans[0].phase_starts()[0], 0);
    }
}

#[test]
fn a_scheduled_job_stopped_at_30_percent_resumes_on_3x2_with_exactly_the_rest() {
    let source = sources([900, 1200, 600], 40);
    let n = natural(&source);
    let schedule = schedule(&[
        (n / 4, [1.0, 1.0, 1.0]),
        (n / 2, [0.7, 0.1, 0.2]),
        (n / 4, [0.0, 0.5, 0.5]),
    ]);
    let config = TokenConfig {
        seq_len: 96,
        window_block: 8,
        schedule: Some(schedule.clone()),
        ..TokenConfig::default()
    };
    let (first, rows) = job(&source, &config, 4, 2, None);
    let stop = first[0].len() * 3 / 10;
    let state = first[0].state_after(stop);
    assert!(first.iter().all(|p| p.state_after(stop) == state));
    let state: TokenState = serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
    let mut all: Vec<u64> = rows
        .iter()
        .filter(|(_, (step, _))| *step < stop)
        .map(|(&row, _)| row)
        .collect();
    let (resumed, rest) = job(&source, &config, 3, 2, Some(&state));
    assert!(resumed.iter().all(|p| p.len() == resumed[0].len()));
    for (row, (_, pieces)) in &rest {
        assert_eq!(&rows[row].1, pieces, "row {row} differs on resume");
        all.push(*row);
    }
    all.sort_unstable();
    assert_eq!(all, (0..first[0].rows()).collect::<Vec<_>>());
    check_phases(&resumed[0], &rows, &schedule, longest(&source));

    // The same state under another schedule names the phase that differs.
    let mut other = schedule.clone();
    other.phases[1].weights = vec![0.6, 0.2, 0.2];
    let changed = TokenConfig {
        schedule: Some(other),
        ..config.clone()
    };
    let error = TokenPlan::new(&source, &changed, &run(6, 2, 0, Some(&state))).unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, TokenStreamError::Plan(PlanError::State(_))) && message.contains("phase 1"),
        "{message}"
    );
    // And without a schedule.
    let unscheduled = TokenConfig {
        schedule: None,
        ..config
    };
    let message = TokenPlan::new(&source, &unscheduled, &run(6, 2, 0, Some(&state)))
        .unwrap_err()
        .to_string();
    assert!(message.contains("a schedule of 3 phases"), "{message}");
}

#[test]
fn bad_phases_are_refused_naming_the_phase_and_a_budget_conflicts_with_a_schedule() {
    let source = sources([100, 100, 100], 20);
    let good = (1000, [1.0, 1.0, 1.0]);
    let refused = |phases: TokenSchedule, tokens_per_epoch: Option<u64>| {
        let config = TokenConfig {
            seq_len: 32,
            schedule: Some(phases),
            tokens_per_epoch,
            ..TokenConfig::default()
        };
        TokenPlan::new(&source, &config, &run(1, 1, 0, None)).unwrap_err()
    };
    let bad_phases = [
        ((0, [1.0, 1.0, 1.0]), "0 tokens"),
        ((1000, [0.0, 0.0, 0.0]), "all its weights are zero"),
        ((1000, [1.0, -1.0, 1.0]), "cache 1, -1"),
        ((1000, [1.0, f64::NAN, 1.0]), "cache 1, NaN"),
    ];
    for (bad, expected) in bad_phases {
        let error = refused(schedule(&[good, good, bad]), None);
        let message = error.to_string();
        assert!(
            matches!(
                error,
                TokenStreamError::Plan(PlanError::Phase { phase: 2, .. })
            ) && message.contains(expected),
            "{message}"
        );
    }
    let two_weights = TokenSchedule {
        phases: vec![TokenPhase {
            tokens: 10,
            weights: vec![1.0, 1.0],
        }],
    };
    let message = refused(two_weights, None).to_string();
    assert!(
        message.contains("phase 0: 2 weights for 3 caches"),
        "{message}"
    );
    assert!(matches!(
        refused(schedule(&[good]), Some(5000)),
        TokenStreamError::Plan(PlanError::ScheduleConflict {
            setting: "tokens_per_epoch"
        })
    ));
    assert!(matches!(
        refused(TokenSchedule::default(), None),
        TokenStreamError::Plan(PlanError::Schedule(_))
    ));
}

#[test]
fn a_billion_documents_in_three_phases_plan_in_bounded_memory_and_seek_anywhere() {
    let source = SyntheticSource::new(
        [
            (500_000_000, 50_000, 2000),
            (300_000_000, 30_000, 1500),
            (200_000_000, 20_000, 800),
        ]
        .iter()
        .enumerate()
        .map(|(c, &(docs, shards, mean))| SyntheticSpec {
            seed: c as u64 + 9,
            cache_id: c as u64,
            ..SyntheticSpec::new(docs, shards, mean)
        })
        .collect(),
    );
    let tokens = 1_000_000_000_000u64;
    let config = TokenConfig {
        seq_len: 2048,
        schedule: Some(schedule(&[
            (tokens / 2, [0.5, 0.3, 0.2]),
            (tokens * 3 / 10, [0.2, 0.7, 0.1]),
            (tokens / 5, [0.1, 0.1, 0.8]),
        ])),
        ..TokenConfig::default()
    };
    let plan = TokenPlan::new(&source, &config, &run(512, 8, 300, None)).unwrap();
    assert!(plan.bytes() < 24 << 20, "{} bytes", plan.bytes());
    let starts = plan.phase_starts();
    for (p, &start) in starts.iter().enumerate() {
        let nominal = [0, tokens / 2, tokens * 8 / 10][p];
        assert!(start.abs_diff(nominal) < 3 * 60_000, "phase {p} at {start}");
    }
    let mut cursor = RowCursor::new(&plan, &source);
    let mut block = RowBlock::default();
    for from in [0, plan.len() / 3, plan.len() - 4] {
        cursor
            .read(&plan, &source, from..from + 4, &mut block)
            .unwrap();
        for i in 0..block.specs.len() {
            let tokens: u64 = block.pieces_of(i).iter().map(|p| u64::from(p.len)).sum();
            assert_eq!(tokens, 2049);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_schedules_hold_every_phase_within_one_document(
        phases in proptest::collection::vec(
            (1u64..40_000, proptest::array::uniform3(0u8..5)), 1..5),
        nodes in 1u64..4,
        seed in 0u64..1000,
    ) {
        let source = sources([300, 200, 250], 30);
        let phases: Vec<(u64, [f64; 3])> = phases
            .into_iter()
            .map(|(tokens, w)| {
                let w = if w == [0, 0, 0] { [1, 0, 0] } else { w };
                (tokens, w.map(f64::from))
            })
            .collect();
        let schedule = schedule(&phases);
        let config = TokenConfig {
            seq_len: 40,
            seed,
            window_block: 3,
            schedule: Some(schedule.clone()),
            ..TokenConfig::default()
        };
        let (plans, rows) = job(&source, &config, nodes, 2, None);
        check_phases(&plans[0], &rows, &schedule, longest(&source));
    }
}

/// A token cache of `docs` documents of 1 to 2,000 tokens.
fn write_cache(path: &Path, seed: u64, docs: u64) {
    let info = TokenInfo::for_vocab(50_000);
    let schema = dsrt_schema::Schema::new(vec![]).unwrap();
    let options =
        dsrt_writer::WriterOptions::new(format!("tokens-{seed}"), schema).max_shard_bytes(8 << 10);
    let mut writer = TokenWriter::create(path, options, info).unwrap();
    for doc in 0..docs {
        let h = mix(&[seed, doc]);
        let len = 1 + h % 200 + if h >> 61 == 0 { (h >> 20) % 2000 } else { 0 };
        let ids: Vec<u32> = (0..len)
            .map(|i| (mix(&[seed, doc, i]) % 49_000) as u32 + 5)
            .collect();
        writer.add(&ids, &dsrt_schema::Row::new()).unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn token_caches_follow_a_schedule_through_the_loader() {
    let root = tempfile::tempdir().unwrap();
    let paths: Vec<_> = [(1, 150), (2, 220), (3, 180)]
        .iter()
        .map(|&(seed, docs)| {
            let path = root.path().join(format!("c{seed}"));
            write_cache(&path, seed, docs);
            path
        })
        .collect();
    let source = CacheSource::new(Dataset::open(&paths, OpenOptions::default()).unwrap()).unwrap();
    let n = natural(&source);
    let schedule = schedule(&[
        (n / 3, [0.6, 0.2, 0.2]),
        (n / 3, [0.2, 0.6, 0.2]),
        (n / 3, [0.2, 0.2, 0.6]),
    ]);
    let config = TokenConfig {
        seq_len: 128,
        window_block: 4,
        schedule: Some(schedule.clone()),
        ..TokenConfig::default()
    };
    let (plans, rows) = job(&source, &config, 4, 2, None);
    check_phases(&plans[0], &rows, &schedule, longest(&source));
    // The loader's batches hold the plan's pieces, row for row, on every rank.
    let source = Arc::new(source);
    let mut pieces = 0;
    for plan in plans {
        let plan = Arc::new(plan);
        let options = LoaderOptions {
            batch_size: 4,
            workers: 2,
            ..LoaderOptions::default()
        };
        for batch in TokenLoader::new(Arc::clone(&plan), Arc::clone(&source), options) {
            pieces += batch.unwrap().pieces().len();
        }
    }
    let planned: usize = rows.values().map(|(_, p)| p.len()).sum();
    assert_eq!(pieces, planned);
}
