//! Token streams over real token caches (`dsrt-tokens`): three caches of u16 and u32 ids,
//! documents of 1 to 20,000 tokens, 8 ranks on 4 nodes; every token of every document an input
//! of exactly one window, the columns agreeing with the documents, each shard read by one node
//! but where two nodes' shares meet, and a resume at 37% on other topologies giving exactly the
//! rest of the epoch.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small values.

use dsrt_dataset::Dataset;
use dsrt_plan::{mix, RemainderPolicy};
use dsrt_reader::OpenOptions;
use dsrt_token_stream::{
    CacheSource, LoaderOptions, RunConfig, SharedPlan, TokenBatch, TokenConfig, TokenLoader,
    TokenPlan, TokenState, TokenStreamError, TokenWeights, IGNORE_INDEX,
};
use dsrt_tokens::{TokenBuf, TokenCache, TokenInfo, TokenWriter};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const EOS: u32 = 3;

/// A long-tailed length in 1..=20,000: mostly short, one in a hundred in the thousands.
fn length(seed: u64, doc: u64) -> usize {
    let h = mix(&[seed, doc]);
    let base = 1 + h % 300;
    let tail = if h >> 60 == 0 { (h >> 20) % 20_000 } else { 0 };
    (base + tail).min(20_000) as usize
}

/// Writes a token cache of `docs` documents (ids below `vocab`, never the EOS) in shards of
/// about 24 KiB.
fn write_cache(path: &Path, seed: u64, docs: u64, vocab: u64) {
    let info = TokenInfo::for_vocab(vocab);
    let schema = dsrt_schema::Schema::new(vec![]).unwrap();
    let options =
        dsrt_writer::WriterOptions::new(format!("tokens-{seed}"), schema).max_shard_bytes(24 << 10);
    let mut writer = TokenWriter::create(path, options, info).unwrap();
    for doc in 0..docs {
        let ids: Vec<u32> = (0..length(seed, doc))
            .map(|i| (mix(&[seed, doc, i as u64]) % (vocab - 4)) as u32 + 4)
            .collect();
        writer.add(&ids, &dsrt_schema::Row::new()).unwrap();
    }
    writer.finish().unwrap();
}

fn caches(root: &Path) -> Vec<PathBuf> {
    let specs = [
        (1u64, 160u64, 50_000u64),
        (2, 240, 50_000),
        (3, 200, 100_000),
    ];
    specs
        .iter()
        .map(|&(seed, docs, vocab)| {
            let path = root.join(format!("c{seed}"));
            write_cache(&path, seed, docs, vocab);
            path
        })
        .collect()
}

fn source(paths: &[PathBuf]) -> Arc<CacheSource> {
    let dataset = Dataset::open(paths, OpenOptions::default()).unwrap();
    Arc::new(CacheSource::new(dataset).unwrap())
}

fn run(world: u64, per_node: u64, rank: u64, resume: Option<&TokenState>) -> RunConfig {
    RunConfig {
        epoch: 1,
        rank,
        world_size: world,
        ranks_per_node: per_node,
        policy: RemainderPolicy::Pad,
        resume: resume.cloned(),
    }
}

fn config() -> TokenConfig {
    TokenConfig {
        seq_len: 512,
        eos_id: Some(EOS),
        window_block: 16,
        seed: 17,
        ..TokenConfig::default()
    }
}

/// Every batch of every rank of a job of `nodes` x `per_node`, with each rank's plan.
fn job(
    source: &Arc<CacheSource>,
    nodes: u64,
    per_node: u64,
    resume: Option<&TokenState>,
) -> Vec<(Arc<TokenPlan>, Vec<TokenBatch>)> {
    let world = nodes * per_node;
    (0..world)
        .map(|rank| {
            let run = run(world, per_node, rank, resume);
            let plan = Arc::new(TokenPlan::new(source.as_ref(), &config(), &run).unwrap());
            let options = LoaderOptions {
                batch_size: 8,
                workers: 2,
                prefetch: 2,
                expand: true,
                first_batch: 0,
            };
            let loader = TokenLoader::new(Arc::clone(&plan), Arc::clone(source), options);
            let batches = loader.map(Result::unwrap).collect();
            (plan, batches)
        })
        .collect()
}

/// Each document's tokens as the epoch holds them (with its EOS), by key.
fn documents(paths: &[PathBuf]) -> HashMap<(u64, u64), Vec<u32>> {
    let dataset = Dataset::open(paths, OpenOptions::default()).unwrap();
    let mut out = HashMap::new();
    for entry in dataset.into_caches() {
        let cache_id = entry.cache_id;
        let cache = TokenCache::new(entry.cache).unwrap();
        let mut buf = TokenBuf::new();
        for doc in 0..cache.len() {
            let mut tokens: Vec<u32> = cache.read(doc, &mut buf).unwrap().iter().collect();
            tokens.push(EOS);
            out.insert((cache_id, doc), tokens);
        }
    }
    out
}

/// Checks a batch's columns against the documents; returns its input stretches.
fn check(docs: &HashMap<(u64, u64), Vec<u32>>, batch: &TokenBatch) -> Vec<((u64, u64), u64, u64)> {
    let columns = batch.columns().unwrap();
    let s = batch.seq_len();
    let mut stretches = Vec::new();
    let mut cu = vec![];
    for row in 0..batch.rows() {
        let base = row * s;
        let mut at = 0usize;
        let mut expected = Vec::new();
        let mut segment = Vec::new();
        for (n, piece) in batch.pieces_of(row).iter().enumerate() {
            let doc = &docs[&piece.key];
            let start = piece.start as usize;
            expected.extend_from_slice(&doc[start..start + piece.len as usize]);
            segment.extend(std::iter::repeat_n(n as i32 + 1, piece.len as usize));
            if at < s {
                cu.push((base + at) as i32);
                stretches.push((
                    piece.key,
                    piece.start,
                    (piece.len as usize).min(s - at) as u64,
                ));
            }
            at += piece.len as usize;
        }
        if at < s {
            cu.push((base + at) as i32);
        }
        let (ids, labels) = (columns.input_ids.to_i64(), columns.labels.to_i64());
        let positions = columns.position_ids.to_i64();
        for i in 0..s {
            let k = base + i;
            if i < expected.len() {
                assert_eq!(ids[k], i64::from(expected[i]));
                assert_eq!(columns.segment_ids.values()[k], segment[i]);
                let first = segment.iter().position(|&g| g == segment[i]).unwrap();
                assert_eq!(positions[k], (i - first) as i64);
                let same = i + 1 < expected.len() && segment[i + 1] == segment[i];
                let label = if same {
                    i64::from(expected[i + 1])
                } else {
                    IGNORE_INDEX
                };
                assert_eq!(labels[k], label, "row {row}, {i}");
                assert_eq!(columns.loss_mask.values()[k], u8::from(same));
            } else {
                assert_eq!(columns.segment_ids.values()[k], 0);
                assert_eq!(labels[k], IGNORE_INDEX);
            }
        }
    }
    cu.push((batch.rows() * s) as i32);
    assert_eq!(columns.cu_seqlens.values(), &cu[..]);
    stretches
}

#[test]
fn eight_ranks_on_four_nodes_read_every_token_once_from_three_token_caches() {
    let root = tempfile::tempdir().unwrap();
    let paths = caches(root.path());
    let source = source(&paths);
    let docs = documents(&paths);
    let ranks = job(&source, 4, 2, None);
    let steps = ranks[0].0.len();
    assert!(ranks.iter().all(|(p, _)| p.len() == steps));
    let mut stretches = Vec::new();
    let mut padding = 0;
    let mut readers: BTreeMap<(u64, u64), BTreeSet<u64>> = BTreeMap::new();
    let dataset = Dataset::open(&paths, OpenOptions::default()).unwrap();
    for (rank, (_, batches)) in ranks.iter().enumerate() {
        for batch in batches {
            stretches.extend(check(&docs, batch));
            padding += batch.padding().iter().filter(|&&p| p).count();
            for piece in batch.pieces() {
                let cache = dataset.cache(piece.key.0).unwrap();
                let shard = cache.index().row(piece.key.1).unwrap().shard_id;
                readers
                    .entry((piece.key.0, shard))
                    .or_default()
                    .insert(rank as u64 / 2);
            }
        }
    }
    assert!(padding < 8, "{padding} padding rows");
    // Every document's tokens, its EOS included, are inputs exactly once.
    let mut by_doc: HashMap<(u64, u64), Vec<(u64, u64)>> = HashMap::new();
    for (key, start, len) in stretches {
        by_doc.entry(key).or_default().push((start, len));
    }
    assert_eq!(by_doc.len(), docs.len());
    for (key, tokens) in &docs {
        let mut parts = by_doc.remove(key).unwrap();
        parts.sort_unstable();
        let mut at = 0;
        for (start, len) in parts {
            assert_eq!(start, at, "document {key:?}");
            at += len;
        }
        assert_eq!(at, tokens.len() as u64, "document {key:?}");
    }
    let shared = readers.values().filter(|n| n.len() > 1).count();
    assert!(readers.len() > 30, "{} shards", readers.len());
    assert!(
        shared <= 2 * 3 * 3,
        "{shared} of {} shards read by two nodes",
        readers.len()
    );
}

#[test]
fn a_resume_at_37_percent_on_3x2_6x2_and_1x1_reads_exactly_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let paths = caches(root.path());
    let source = source(&paths);
    let first = job(&source, 4, 2, None);
    let steps = first[0].0.len();
    let stop = steps * 37 / 100;
    let state = first[0].0.state_after(stop);
    // Windows by their tokens: what the first run read before the stop, and all of them.
    let windows = |batch: &TokenBatch| -> Vec<(bool, u64, Vec<u32>)> {
        (0..batch.rows())
            .map(|r| {
                let w = batch.seq_len() + 1;
                (
                    batch.padding()[r],
                    batch.steps()[r],
                    batch.tokens()[r * w..(r + 1) * w].to_vec(),
                )
            })
            .collect()
    };
    let mut consumed = Vec::new();
    let mut all = Vec::new();
    for (_, batches) in &first {
        for batch in batches {
            for (padding, step, tokens) in windows(batch) {
                if !padding {
                    if step < stop {
                        consumed.push(tokens.clone());
                    }
                    all.push(tokens);
                }
            }
        }
    }
    all.sort();
    for (nodes, per_node) in [(3, 2), (6, 2), (1, 1)] {
        let resumed = job(&source, nodes, per_node, Some(&state));
        let counts: BTreeSet<u64> = resumed.iter().map(|(p, _)| p.len()).collect();
        assert_eq!(counts.len(), 1);
        let mut union = consumed.clone();
        for (_, batches) in &resumed {
            for batch in batches {
                union.extend(windows(batch).into_iter().filter(|w| !w.0).map(|w| w.2));
            }
        }
        union.sort();
        assert_eq!(union.len(), all.len(), "{nodes}x{per_node}");
        assert!(union == all, "{nodes}x{per_node}: not exactly the epoch");
    }
}

#[test]
fn a_document_that_cannot_be_read_is_an_error_naming_the_cache_and_document() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("c");
    write_cache(&path, 9, 30, 50_000);
    // The first record's metadata envelope (after its 8-byte length) no longer parses.
    let shard = path.join("shards").join("000000.bin");
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[8] = b'X';
    std::fs::write(&shard, bytes).unwrap();
    let source = source(&[path]);
    // With an EOS asked for, the count of documents ending with it reads every document.
    let refused = TokenPlan::new(source.as_ref(), &config(), &run(1, 1, 0, None)).unwrap_err();
    assert!(refused.to_string().contains("sample 0"), "{refused}");
    let config = TokenConfig {
        eos_id: None,
        ..config()
    };
    let plan = Arc::new(TokenPlan::new(source.as_ref(), &config, &run(1, 1, 0, None)).unwrap());
    let options = LoaderOptions {
        batch_size: 4,
        workers: 0,
        prefetch: 1,
        expand: false,
        first_batch: 0,
    };
    let failure = TokenLoader::new(plan, Arc::clone(&source), options)
        .find_map(Result::err)
        .unwrap();
    assert!(matches!(failure, TokenStreamError::Read(_)), "{failure}");
    let text = failure.to_string();
    assert!(
        text.contains("shard 0") || text.contains("000000.bin"),
        "{text}"
    );
}

#[test]
fn a_shared_plan_takes_weights_per_source_name_as_the_same_weights_per_cache() {
    let root = tempfile::tempdir().unwrap();
    let paths = caches(root.path());
    let open = || Dataset::open(&paths, OpenOptions::default()).unwrap();
    assert_eq!(
        source(&paths).source_names(),
        ["tokens-1", "tokens-2", "tokens-3"]
    );
    let by_cache = SharedPlan::open(
        open(),
        Some(TokenWeights::PerCache(vec![0.2, 0.5, 0.3])),
        config(),
        &run(1, 1, 0, None),
    )
    .unwrap();
    let shares = [("tokens-3", 0.3), ("tokens-1", 0.2), ("tokens-2", 0.5)];
    let shares = shares.map(|(name, share)| (name.to_owned(), share));
    let by_source = SharedPlan::open(
        open(),
        Some(TokenWeights::PerSource(shares.to_vec())),
        config(),
        &run(1, 1, 0, None),
    )
    .unwrap();
    assert_eq!(by_source.plan().config().weights, Some(vec![0.2, 0.5, 0.3]));
    assert_eq!(
        by_source.plan().source_tokens(),
        by_cache.plan().source_tokens()
    );
    let pool = dsrt_token_stream::BatchPool::new();
    let (a, b) = (
        by_cache.read(0..4, &pool, false).unwrap(),
        by_source.read(0..4, &pool, false).unwrap(),
    );
    assert_eq!(a.tokens(), b.tokens());

    let unknown = vec![("tokens-9".to_owned(), 1.0)];
    let refused = SharedPlan::open(
        open(),
        Some(TokenWeights::PerSource(unknown)),
        config(),
        &run(1, 1, 0, None),
    )
    .unwrap_err();
    assert!(
        matches!(&refused, TokenStreamError::Weights(e) if e.is_lookup()),
        "{refused}"
    );
    assert!(refused.to_string().contains("\"tokens-9\""), "{refused}");
}
