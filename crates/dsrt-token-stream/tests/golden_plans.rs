//! Pins the rows of token plans without a schedule: fingerprints of every rank's rows (each
//! piece's source, document, offset and length), the budgets and the sources' tokens, for
//! concatenation and packing, with and without weights, with and without replacement, padded
//! and dropped, on 4 nodes x 2 ranks and from a resumed state. The values were recorded from the
//! code before token schedules existed; a change to how an unscheduled epoch's rows are made
//! fails here even where the behavioural tests still pass.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small values.

use dsrt_plan::{RemainderPolicy, Sampling, Shuffle};
use dsrt_token_stream::{
    PackMode, RowBlock, RowCursor, RunConfig, SyntheticSource, SyntheticSpec, TokenConfig,
    TokenPlan, TokenState,
};

/// FNV-1a over 64-bit words: stable across Rust versions, unlike `DefaultHasher`.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn word(&mut self, value: u64) {
        for byte in value.to_le_bytes() {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

fn sources() -> SyntheticSource {
    SyntheticSource::new(
        [(700, 40), (1100, 64), (450, 24)]
            .iter()
            .enumerate()
            .map(|(c, &(docs, mean))| SyntheticSpec {
                seed: c as u64 * 5 + 2,
                cache_id: 200 + c as u64,
                max_tokens: 30 * mean,
                ..SyntheticSpec::new(docs, 5 + 6 * c as u64, mean)
            })
            .collect(),
    )
}

fn run(world_size: u64, ranks_per_node: u64, rank: u64, policy: RemainderPolicy) -> RunConfig {
    RunConfig {
        epoch: 2,
        rank,
        world_size,
        ranks_per_node,
        policy,
        resume: None,
    }
}

/// Every rank's rows of `run`'s topology, from `resume` when given, hashed in rank order.
fn fingerprint(
    source: &SyntheticSource,
    config: &TokenConfig,
    run: &RunConfig,
    resume: Option<&TokenState>,
) -> u64 {
    let mut hash = Fnv::new();
    let first = TokenPlan::new(
        source,
        config,
        &RunConfig {
            resume: resume.cloned(),
            ..run.clone()
        },
    )
    .unwrap();
    hash.word(first.rows());
    hash.word(first.len());
    hash.word(first.padded_tokens());
    hash.word(first.dropped_tokens());
    for &budget in first.budgets() {
        hash.word(budget);
    }
    for tokens in first.source_tokens() {
        hash.word(tokens);
    }
    for rank in 0..run.world_size {
        let plan = first.for_rank(rank).unwrap();
        let mut cursor = RowCursor::new(&plan, source);
        let mut block = RowBlock::default();
        cursor
            .read(&plan, source, 0..plan.len(), &mut block)
            .unwrap();
        for (i, spec) in block.specs.iter().enumerate() {
            hash.word(spec.step);
            hash.word(spec.row.unwrap_or(u64::MAX));
            hash.word(u64::from(spec.padding));
            hash.word(u64::from(spec.tokens));
            for piece in block.pieces_of(i) {
                hash.word(u64::from(piece.source));
                hash.word(piece.doc);
                hash.word(piece.start);
                hash.word(u64::from(piece.len));
            }
        }
    }
    hash.0
}

#[test]
fn unscheduled_token_plans_are_unchanged() {
    let source = sources();
    let base = TokenConfig {
        seq_len: 96,
        seed: 11,
        window_block: 8,
        ..TokenConfig::default()
    };
    let weighted = TokenConfig {
        weights: Some(vec![0.5, 0.2, 0.3]),
        tokens_per_epoch: Some(90_000),
        ..base.clone()
    };
    let configs = [
        base.clone(),
        TokenConfig {
            shuffle: Shuffle::Full,
            bos_id: Some(60_000),
            ..base.clone()
        },
        weighted.clone(),
        TokenConfig {
            sampling: Sampling::RunsWithReplacement,
            tokens_per_epoch: Some(130_000),
            ..weighted.clone()
        },
        TokenConfig {
            mode: PackMode::BestFit,
            packing_bins: 16,
            ..weighted.clone()
        },
        TokenConfig {
            mode: PackMode::FirstFit,
            packing_bins: 8,
            ..base.clone()
        },
    ];
    let mut found = Vec::new();
    for config in &configs {
        for policy in [RemainderPolicy::Pad, RemainderPolicy::Drop] {
            let topology = run(8, 2, 0, policy);
            found.push(fingerprint(&source, config, &topology, None));
            // Resumed at 30% of the epoch on 3 nodes of 2.
            let plan = TokenPlan::new(&source, config, &topology).unwrap();
            let state = plan.state_after(plan.len() * 3 / 10);
            found.push(fingerprint(
                &source,
                config,
                &run(6, 2, 0, policy),
                Some(&state),
            ));
        }
    }
    let expected: [u64; 24] = [
        0xf742d09fda671f24,
        0x77e33ee30d91903c,
        0x4c8930482ae27a4c,
        0x4d46338c9c597979,
        0x7394b30169713120,
        0x28eaa5b8eec519e3,
        0x241d5c16c01429fd,
        0x0d4809909aa90589,
        0x34a21902af1ae116,
        0x7d8b4701e4e6c44f,
        0x0cc411c17d7b45d9,
        0xd4596ebd2848755f,
        0x74d874e5afb9b6e4,
        0x5d94c9a83e16b147,
        0x5b17a9f4c1eaad74,
        0x81a03abd92b25e09,
        0xb85ef8229eb4a8c8,
        0xac670055f24ea8a7,
        0x8e880031a45f250e,
        0x8e9cb5ce6778bf8d,
        0x13d57f514700f2fb,
        0x0c0ff6593d979a33,
        0xaacc58ec78eb2b02,
        0xd77b866aec64684e,
    ];
    assert_eq!(found, expected, "{found:#x?}");
}
