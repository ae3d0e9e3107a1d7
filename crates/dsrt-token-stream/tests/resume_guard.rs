//! A token state records the mixture of sources its rows were planned from (each source's
//! documents, shard runs and cache id, its token budget, the sampling and shuffle), and a plan
//! of another mixture with as many rows refuses it, naming what differs. A state saved before
//! the mixture was recorded resumes as before.
#![allow(clippy::unwrap_used)] // test code

use dsrt_plan::{PlanError, RemainderPolicy, Shuffle};
use dsrt_token_stream::{
    PackMode, RunConfig, SyntheticSource, SyntheticSpec, TokenConfig, TokenPlan, TokenState,
    TokenStreamError,
};

/// Three sources of a few hundred documents of about 40 tokens (at most 1,600).
fn sources(cache_ids: [u64; 3]) -> SyntheticSource {
    SyntheticSource::new(
        [300u64, 500, 200]
            .iter()
            .zip(cache_ids)
            .enumerate()
            .map(|(c, (&docs, cache_id))| SyntheticSpec {
                seed: c as u64 + 1,
                cache_id,
                max_tokens: 1600,
                ..SyntheticSpec::new(docs, 5 + c as u64, 40)
            })
            .collect(),
    )
}

const IDS: [u64; 3] = [100, 101, 102];

/// Windows of 8,192 tokens, the last partial one dropped: a budget of 12 windows and a token
/// makes 12 rows whatever the weights, as a source's overshoot (under one document) is far
/// below a window.
fn config(weights: Option<&[f64]>) -> TokenConfig {
    TokenConfig {
        seq_len: 8192,
        mode: PackMode::Concat,
        weights: weights.map(<[f64]>::to_vec),
        tokens_per_epoch: weights.map(|_| 12 * 8192 + 1),
        window_block: 4,
        ..TokenConfig::default()
    }
}

fn run(resume: Option<&TokenState>) -> RunConfig {
    RunConfig {
        epoch: 2,
        world_size: 2,
        ranks_per_node: 1,
        policy: RemainderPolicy::Drop,
        resume: resume.cloned(),
        ..RunConfig::default()
    }
}

/// The state after 3 steps of both ranks, round-tripped through JSON.
fn saved(source: &SyntheticSource, config: &TokenConfig) -> TokenState {
    let plan = TokenPlan::new(source, config, &run(None)).unwrap();
    let state = plan.state_after(3);
    serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap()
}

/// The refusal of `state` by the plan of `source` and `config`, which has as many rows as the
/// state's epoch (so only the mixture can tell them apart).
fn refusal(source: &SyntheticSource, config: &TokenConfig, state: &TokenState) -> String {
    let fresh = TokenPlan::new(source, config, &run(None)).unwrap();
    assert_eq!(
        fresh.rows(),
        state.rows.epoch_len,
        "the premise: equal rows"
    );
    match TokenPlan::new(source, config, &run(Some(state))) {
        Err(error @ TokenStreamError::Plan(PlanError::State(_))) => error.to_string(),
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a state of another mixture of sources was accepted"),
    }
}

#[test]
fn other_weights_of_the_same_rows_are_refused() {
    let source = sources(IDS);
    let state = saved(&source, &config(Some(&[1.0, 1.0, 1.0])));
    let text = refusal(&source, &config(Some(&[2.0, 1.0, 1.0])), &state);
    assert!(
        text.contains(
            "weights giving shares [32769, 32768, 32768] (the plan gives [49153, 24576, 24576])"
        ),
        "{text}"
    );
}

#[test]
fn a_source_replaced_by_another_cache_is_refused_by_its_id() {
    let state = saved(&sources(IDS), &config(None));
    let text = refusal(&sources([100, 999, 102]), &config(None), &state);
    assert!(
        text.contains(
            "cache id 0x0000000000000065 at position 1 (the plan's is 0x00000000000003e7)"
        ),
        "{text}"
    );
}

#[test]
fn another_shuffle_is_refused() {
    let source = sources(IDS);
    let state = saved(&source, &config(None));
    let full = TokenConfig {
        shuffle: Shuffle::Full,
        ..config(None)
    };
    let text = refusal(&source, &full, &state);
    assert!(
        text.contains("shuffle local(4) (the plan's is full)"),
        "{text}"
    );
}

#[test]
fn the_state_records_the_sources_and_a_state_of_before_resumes_as_before() {
    let source = sources(IDS);
    let config = config(Some(&[1.0, 1.0, 1.0]));
    let state = saved(&source, &config);
    let json = serde_json::to_value(&state).unwrap();
    assert_eq!(json["seq_len"], 8192);
    assert_eq!(
        json["mixture"]["caches"][1],
        serde_json::json!({"samples": 500, "shard_runs": 6, "cache_id": 101})
    );
    assert_eq!(
        json["mixture"]["shares"],
        serde_json::json!([32769, 32768, 32768])
    );

    let mut old = json.clone();
    old.as_object_mut().unwrap().remove("mixture");
    let old: TokenState = serde_json::from_value(old).unwrap();
    assert_eq!(old.rows.mixture, None);
    let from_new = TokenPlan::new(&source, &config, &run(Some(&state))).unwrap();
    let from_old = TokenPlan::new(&source, &config, &run(Some(&old))).unwrap();
    assert_eq!(from_old.start_state(), from_new.start_state());
    assert_eq!(from_old.partition(), from_new.partition());
    let rows: Vec<u64> = (0..from_new.rows()).map(|s| from_new.row_at(s)).collect();
    let old_rows: Vec<u64> = (0..from_old.rows()).map(|s| from_old.row_at(s)).collect();
    assert_eq!(old_rows, rows);
    // Checked as before: another mixture of as many rows is not refused.
    TokenPlan::new(
        &source,
        &TokenConfig {
            weights: Some(vec![2.0, 1.0, 1.0]),
            ..config
        },
        &run(Some(&old)),
    )
    .unwrap();
}
