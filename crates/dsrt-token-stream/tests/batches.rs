//! Batches read from synthetic sources: every column checked against the documents' tokens.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small values.

use dsrt_plan::RemainderPolicy;
use dsrt_token_stream::{
    BatchPiece, BatchPool, DocumentSource, Expanded, IdsDtype, LoaderOptions, PackMode, RunConfig,
    SyntheticSource, SyntheticSpec, TokenBatch, TokenConfig, TokenLoader, TokenPlan, IGNORE_INDEX,
};
use std::collections::HashMap;
use std::sync::Arc;

const EOS: u32 = 70_000;
const BOS: u32 = 70_001;

fn source() -> Arc<SyntheticSource> {
    Arc::new(SyntheticSource::new(
        (0..2u64)
            .map(|c| SyntheticSpec {
                seed: c + 3,
                cache_id: 40 + c,
                max_tokens: 400,
                vocab: 60_000,
                ..SyntheticSpec::new(300 + 200 * c, 5, 25)
            })
            .collect(),
    ))
}

/// Document `doc` of source `c` as the epoch holds it: BOS, its tokens, EOS.
fn document(source: &SyntheticSource, c: usize, doc: u64) -> Vec<u32> {
    let mut tokens = vec![BOS];
    tokens.extend((0..source.n_tokens(c, doc)).map(|i| source.token(c, doc, i)));
    tokens.push(EOS);
    tokens
}

fn loader(
    source: &Arc<SyntheticSource>,
    config: &TokenConfig,
    world: u64,
    rank: u64,
    options: LoaderOptions,
) -> TokenLoader<SyntheticSource> {
    let run = RunConfig {
        rank,
        world_size: world,
        ranks_per_node: 1,
        policy: RemainderPolicy::Pad,
        ..RunConfig::default()
    };
    let plan = Arc::new(TokenPlan::new(source.as_ref(), config, &run).unwrap());
    TokenLoader::new(plan, Arc::clone(source), options)
}

/// Checks every column of `batch` against the documents; returns the input stretches
/// `(source key, start, len)`.
fn check_batch(source: &SyntheticSource, batch: &TokenBatch) -> Vec<((u64, u64), u64, u64)> {
    let columns = batch.columns().unwrap();
    let s = batch.seq_len();
    let (ids, labels) = (columns.input_ids.to_i64(), columns.labels.to_i64());
    let (positions, segments) = (columns.position_ids.to_i64(), columns.segment_ids.values());
    let (mask, cu) = (columns.loss_mask.values(), columns.cu_seqlens.values());
    let mut expected_cu = Vec::new();
    let mut stretches = Vec::new();
    for row in 0..batch.rows() {
        let base = row * s;
        let mut at = 0usize;
        let mut row_tokens = Vec::new();
        let mut piece_of = Vec::new();
        for (n, piece) in batch.pieces_of(row).iter().enumerate() {
            let c = (piece.key.0 - 40) as usize;
            let doc = document(source, c, piece.key.1);
            let start = piece.start as usize;
            row_tokens.extend_from_slice(&doc[start..start + piece.len as usize]);
            piece_of.extend(std::iter::repeat_n((n, start), piece.len as usize));
            if at < s {
                expected_cu.push((base + at) as i32);
                stretches.push((
                    piece.key,
                    piece.start,
                    (piece.len as usize).min(s - at) as u64,
                ));
            }
            at += piece.len as usize;
        }
        assert_eq!(
            &batch.tokens()[row * (s + 1)..row * (s + 1) + row_tokens.len()],
            &row_tokens[..]
        );
        if at < s {
            expected_cu.push((base + at) as i32);
        }
        for i in 0..s {
            let k = base + i;
            if i < row_tokens.len() {
                let (n, start) = piece_of[i];
                assert_eq!(ids[k], i64::from(row_tokens[i]), "row {row} input {i}");
                assert_eq!(segments[k], n as i32 + 1);
                let first = piece_of.iter().position(|p| p.0 == n).unwrap();
                assert_eq!(positions[k], (i - first) as i64);
                let same = i + 1 < row_tokens.len() && piece_of[i + 1].0 == n;
                assert_eq!(mask[k], u8::from(same), "row {row} position {i}");
                let label = if same {
                    i64::from(row_tokens[i + 1])
                } else {
                    IGNORE_INDEX
                };
                assert_eq!(labels[k], label);
                let _ = start;
            } else {
                assert_eq!(
                    (ids[k], labels[k], segments[k], mask[k]),
                    (0, IGNORE_INDEX, 0, 0)
                );
            }
        }
    }
    expected_cu.push((batch.rows() * s) as i32);
    assert_eq!(cu, &expected_cu[..]);
    let longest = cu.windows(2).map(|w| (w[1] - w[0]) as u32).max().unwrap();
    assert_eq!(columns.max_seqlen, longest);
    stretches
}

#[test]
fn every_column_agrees_with_the_documents_and_every_token_is_an_input_once() {
    let source = source();
    for mode in [PackMode::Concat, PackMode::BestFit] {
        let config = TokenConfig {
            seq_len: 48,
            mode,
            bos_id: Some(BOS),
            eos_id: Some(EOS),
            window_block: 4,
            ..TokenConfig::default()
        };
        let mut stretches = Vec::new();
        for rank in 0..3 {
            let options = LoaderOptions {
                batch_size: 5,
                workers: 2,
                prefetch: 2,
                expand: true,
                first_batch: 0,
            };
            for batch in loader(&source, &config, 3, rank, options) {
                stretches.extend(check_batch(&source, &batch.unwrap()));
            }
        }
        let mut by_doc: HashMap<(u64, u64), Vec<(u64, u64)>> = HashMap::new();
        for (key, start, len) in stretches {
            by_doc.entry(key).or_default().push((start, len));
        }
        for c in 0..2 {
            for doc in 0..source.shape(c).len {
                let mut parts = by_doc.remove(&(40 + c as u64, doc)).unwrap();
                parts.sort_unstable();
                let mut at = 0;
                for (start, len) in parts {
                    assert_eq!(start, at, "{mode:?}: source {c} document {doc}");
                    at += len;
                }
                assert_eq!(
                    at,
                    source.n_tokens(c, doc) + 2,
                    "{mode:?}: source {c} document {doc}"
                );
            }
        }
        assert!(by_doc.is_empty());
    }
}

#[test]
fn batches_do_not_depend_on_workers_or_prefetch() {
    let source = source();
    let config = TokenConfig {
        seq_len: 32,
        eos_id: Some(EOS),
        ..TokenConfig::default()
    };
    let tokens = |workers, prefetch| -> Vec<u32> {
        let options = LoaderOptions {
            batch_size: 3,
            workers,
            prefetch,
            expand: false,
            first_batch: 0,
        };
        loader(&source, &config, 2, 1, options)
            .flat_map(|b| b.unwrap().tokens().to_vec())
            .collect()
    };
    let reference = tokens(0, 1);
    assert!(reference.len() > 1000);
    for (workers, prefetch) in [(1, 1), (3, 1), (3, 4)] {
        assert_eq!(
            tokens(workers, prefetch),
            reference,
            "{workers} workers, prefetch {prefetch}"
        );
    }
}

#[test]
fn a_compact_batch_rebuilt_from_its_parts_expands_to_the_same_columns() {
    let source = source();
    let config = TokenConfig {
        seq_len: 40,
        mode: PackMode::FirstFit,
        ..TokenConfig::default()
    };
    let options = LoaderOptions {
        batch_size: 4,
        workers: 0,
        prefetch: 1,
        expand: false,
        first_batch: 0,
    };
    let pool = BatchPool::new();
    for batch in loader(&source, &config, 1, 0, options).take(5) {
        let mut batch = batch.unwrap();
        let mut copy = rebuilt(&batch, &pool);
        assert_eq!(columns(batch.expand(&pool)), columns(copy.expand(&pool)));
    }
    let bad = TokenBatch::from_parts(
        4,
        0,
        vec![0],
        vec![false],
        vec![0, 1],
        vec![],
        &[0u32; 5],
        &pool,
    );
    assert!(bad.unwrap_err().to_string().contains("pieces 0..1"));
}

#[test]
fn int32_ids_are_the_int64_columns_narrowed_and_travel_with_the_compact_form() {
    let source = source();
    let pool = BatchPool::new();
    for mode in [PackMode::Concat, PackMode::BestFit] {
        let config = |ids_dtype| TokenConfig {
            seq_len: 48,
            mode,
            bos_id: Some(BOS),
            eos_id: Some(EOS),
            ids_dtype,
            ..TokenConfig::default()
        };
        let options = LoaderOptions {
            batch_size: 5,
            workers: 2,
            prefetch: 2,
            expand: true,
            first_batch: 0,
        };
        let wide = loader(&source, &config(IdsDtype::Int64), 2, 1, options);
        let narrow = loader(&source, &config(IdsDtype::Int32), 2, 1, options);
        let mut batches = 0;
        for (wide, narrow) in wide.zip(narrow) {
            let (wide, narrow) = (wide.unwrap(), narrow.unwrap());
            check_batch(&source, &narrow);
            let (w, n) = (wide.columns().unwrap(), narrow.columns().unwrap());
            assert_eq!(n.input_ids.dtype(), IdsDtype::Int32);
            assert_eq!(n.labels.dtype(), IdsDtype::Int32);
            assert_eq!(n.position_ids.dtype(), IdsDtype::Int32);
            assert_eq!(columns(w), columns(n), "{mode:?}");
            // The type crosses a process boundary with the tokens.
            let record = narrow.transfer_record().unwrap();
            let mut back =
                TokenBatch::from_compact_record(&record, 48, narrow.pad_id(), &pool).unwrap();
            assert_eq!(back.ids_dtype(), IdsDtype::Int32);
            assert_eq!(columns(back.expand(&pool)), columns(n));
            batches += 1;
        }
        assert!(batches > 10, "{mode:?}: {batches} batches");
    }
}

#[test]
fn an_id_past_int32_is_refused_naming_its_document_and_no_id_is_wrapped() {
    let pool = BatchPool::new();
    let piece = |sample_id, len| BatchPiece {
        key: (7, sample_id),
        start: 0,
        len,
    };
    let batch = TokenBatch::from_parts(
        4,
        0,
        vec![0],
        vec![false],
        vec![0, 2],
        vec![piece(3, 2), piece(9, 3)],
        &[1u32, 2, 5, 3_000_000_000, 4],
        &pool,
    )
    .unwrap();
    let error = batch
        .with_ids_dtype(IdsDtype::Int32)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(
            "document (cache 7, sample 9) holds token id 3000000000, past ids_dtype \"int32\""
        ),
        "{error}"
    );
    // Boundary and padding ids are checked with the settings, before anything is read.
    for (name, config) in [
        (
            "pad_id 4294967295",
            TokenConfig {
                pad_id: u32::MAX,
                ..TokenConfig::default()
            },
        ),
        (
            "eos_id 2147483648",
            TokenConfig {
                eos_id: Some(1 << 31),
                ..TokenConfig::default()
            },
        ),
    ] {
        let config = TokenConfig {
            ids_dtype: IdsDtype::Int32,
            ..config
        };
        let error = config.check().unwrap_err().to_string();
        assert!(
            error.contains(&format!("{name} does not fit ids_dtype \"int32\"")),
            "{error}"
        );
        assert!(TokenConfig {
            ids_dtype: IdsDtype::Int64,
            ..config
        }
        .check()
        .is_ok());
    }
}

#[test]
fn a_loader_state_resumes_after_the_last_batch_on_another_topology() {
    let source = source();
    let config = TokenConfig {
        seq_len: 32,
        ..TokenConfig::default()
    };
    let options = LoaderOptions {
        batch_size: 4,
        workers: 1,
        prefetch: 2,
        expand: false,
        first_batch: 0,
    };
    let everything: Vec<Vec<u32>> = loader(&source, &config, 1, 0, options)
        .flat_map(|b| {
            let b = b.unwrap();
            (0..b.rows())
                .map(|r| b.tokens()[r * 33..(r + 1) * 33].to_vec())
                .collect::<Vec<_>>()
        })
        .collect();
    let mut first = loader(&source, &config, 1, 0, options);
    let mut seen: Vec<Vec<u32>> = Vec::new();
    for _ in 0..7 {
        let b = first.next().unwrap().unwrap();
        seen.extend((0..b.rows()).map(|r| b.tokens()[r * 33..(r + 1) * 33].to_vec()));
    }
    let state = first.state();
    for world in [2u64, 3] {
        let mut all = seen.clone();
        for rank in 0..world {
            let run = RunConfig {
                rank,
                world_size: world,
                ranks_per_node: 1,
                policy: RemainderPolicy::Drop,
                resume: Some(state.clone()),
                ..RunConfig::default()
            };
            let plan = Arc::new(TokenPlan::new(source.as_ref(), &config, &run).unwrap());
            for b in TokenLoader::new(plan, Arc::clone(&source), options) {
                let b = b.unwrap();
                all.extend((0..b.rows()).map(|r| b.tokens()[r * 33..(r + 1) * 33].to_vec()));
            }
        }
        // Drop leaves out fewer than `world` windows of the rest.
        let mut expected = everything.clone();
        expected.sort();
        all.sort();
        let missing: Vec<_> = expected.iter().filter(|w| !all.contains(w)).collect();
        assert!(
            missing.len() < world as usize,
            "{} windows missing",
            missing.len()
        );
        assert!(all.iter().all(|w| expected.contains(w)));
        assert_eq!(all.len() + missing.len(), expected.len());
    }
}

/// `batch` rebuilt from its compact parts, its columns to come from `pool`.
fn rebuilt(batch: &TokenBatch, pool: &Arc<BatchPool>) -> TokenBatch {
    TokenBatch::from_parts(
        batch.seq_len(),
        batch.pad_id(),
        batch.steps().to_vec(),
        batch.padding().to_vec(),
        batch.row_pieces().to_vec(),
        batch.pieces().to_vec(),
        batch.tokens(),
        pool,
    )
    .unwrap()
}

/// Every derived column's values, widened to `i64`, and `max_seqlen`.
fn columns(c: &Expanded) -> Vec<Vec<i64>> {
    vec![
        c.input_ids.to_i64(),
        c.labels.to_i64(),
        c.position_ids.to_i64(),
        c.segment_ids
            .values()
            .iter()
            .map(|&v| i64::from(v))
            .collect(),
        c.loss_mask.values().iter().map(|&v| i64::from(v)).collect(),
        c.cu_seqlens
            .values()
            .iter()
            .map(|&v| i64::from(v))
            .collect(),
        vec![i64::from(c.max_seqlen)],
    ]
}

/// Every column of `batch` expanded with buffers from `pool` (returned to it afterwards).
fn expanded_columns(batch: &TokenBatch, pool: &Arc<BatchPool>) -> Vec<Vec<i64>> {
    columns(rebuilt(batch, pool).expand(pool))
}

#[test]
fn columns_over_recycled_buffers_equal_columns_over_fresh_ones() {
    // Recycled buffers keep the values of the batches before (the pool does not zero them):
    // batches of other shapes, larger and smaller, leave their values behind first.
    let source = source();
    let batches = |seq_len, mode, batch_size| -> Vec<TokenBatch> {
        let config = TokenConfig {
            seq_len,
            mode,
            bos_id: Some(BOS),
            eos_id: Some(EOS),
            ..TokenConfig::default()
        };
        let options = LoaderOptions {
            batch_size,
            workers: 0,
            prefetch: 1,
            expand: false,
            first_batch: 0,
        };
        loader(&source, &config, 1, 0, options)
            .take(6)
            .map(Result::unwrap)
            .collect()
    };
    let recycled = BatchPool::new();
    for (seq_len, mode, batch_size) in [
        (96, PackMode::Concat, 7),
        (24, PackMode::BestFit, 3),
        (40, PackMode::FirstFit, 4),
        (40, PackMode::Concat, 4),
    ] {
        let mut checked = 0;
        for batch in batches(seq_len, mode, batch_size) {
            let fresh = expanded_columns(&batch, &BatchPool::new());
            assert_eq!(
                expanded_columns(&batch, &recycled),
                fresh,
                "seq_len {seq_len}, {mode:?}"
            );
            checked += 1;
        }
        assert_eq!(checked, 6);
    }
}
