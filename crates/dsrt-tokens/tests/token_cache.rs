//! Token caches written and read through the public API: ids and lengths exact for both
//! widths over thousands of long-tailed documents, and every refusal typed, naming the cache
//! and the document, with nothing written.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_reader::{Cache, OpenOptions};
use dsrt_schema::{Column, ColumnType, Row, Schema, Value, ValueRef};
use dsrt_tokens::{
    TokenBuf, TokenCache, TokenDtype, TokenError, TokenIds, TokenInfo, N_TOKENS_COLUMN, TOKENS_KEY,
};
use dsrt_writer::{CacheWriter, WriterOptions};

/// A deterministic long-tailed length in 1..=20,000 (most documents short, a few long).
fn length(i: u64) -> usize {
    let x = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as f64 / f64::from(1 << 24);
    (1.0 + 20_000.0 * x.powi(8)) as usize
}

fn document(i: u64, vocab: u64) -> Vec<u32> {
    (0..length(i) as u64)
        .map(|t| ((i * 7919 + t * 104_729) % vocab) as u32)
        .collect()
}

fn source_schema() -> Schema {
    Schema::new(vec![Column::new("source", ColumnType::Utf8, false)]).unwrap()
}

#[test]
fn documents_round_trip_in_both_widths() {
    for (vocab, dtype) in [(50_257u64, TokenDtype::U16), (128_256, TokenDtype::U32)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c");
        let info = TokenInfo {
            eos_id: Some(2),
            tokenizer: Some("test".into()),
            ..TokenInfo::for_vocab(vocab)
        };
        assert_eq!(info.dtype, dtype);
        let options = WriterOptions::new("tokens", source_schema()).max_shard_bytes(1 << 20);
        let mut writer = dsrt_tokens::TokenWriter::create(&path, options, info.clone()).unwrap();
        let documents = 1000u64;
        let mut total = 0u64;
        for i in 0..documents {
            let ids = document(i, vocab);
            total += ids.len() as u64;
            let row = Row::new().with("source", format!("doc-{i}"));
            // Alternate the input types: the stored bytes are the same.
            let sample = if i % 2 == 0 {
                writer.add(&ids, &row).unwrap()
            } else {
                let wide: Vec<i64> = ids.iter().map(|&v| i64::from(v)).collect();
                writer
                    .add_values(&wide, &[ValueRef::Utf8(&format!("doc-{i}"))])
                    .unwrap()
            };
            assert_eq!(sample, i);
        }
        let summary = writer.finish().unwrap();
        assert_eq!((summary.cache.samples, summary.tokens), (documents, total));
        assert!(summary.cache.shards.len() > 3, "several shards");

        let cache = TokenCache::open(&path, OpenOptions::validated()).unwrap();
        assert_eq!(cache.info(), &info);
        assert_eq!(cache.n_tokens_column(), 0);
        let mut buf = TokenBuf::new();
        let mut ids = Vec::new();
        for i in 0..documents {
            let expected = document(i, vocab);
            assert_eq!(cache.n_tokens(i).unwrap(), expected.len() as u64);
            let tokens = cache.read(i, &mut buf).unwrap();
            assert_eq!(tokens.as_le_bytes().len(), expected.len() * dtype.width());
            ids.clear();
            tokens.extend_u32(&mut ids);
            assert_eq!(ids, expected, "document {i}");
            let mut as_i64 = vec![0i64; tokens.len()];
            tokens.copy_to(&mut as_i64);
            assert!(as_i64
                .iter()
                .zip(&expected)
                .all(|(a, &b)| *a == i64::from(b)));
            assert_eq!(
                tokens.slice(1..3).iter().collect::<Vec<_>>(),
                expected[1.min(expected.len())..3.min(expected.len())]
            );
        }
        let summed: i64 = cache.n_tokens_batches().flatten().sum();
        assert_eq!(summed as u64, total);
        let row = cache.cache().metadata_row(5).unwrap();
        assert_eq!(row.get(1), Some(ValueRef::Utf8("doc-5")));
    }
}

#[test]
fn an_id_that_does_not_fit_is_refused_naming_cache_document_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("refusing");
    let info = TokenInfo::for_vocab(1000);
    let options = WriterOptions::new("r", Schema::default());
    let mut writer = dsrt_tokens::TokenWriter::create(&path, options, info).unwrap();
    writer.add(&[1u16, 2, 3], &Row::new()).unwrap();
    let cases: [(&[i64], i128, &str); 3] = [
        (&[4, 1000], 1000, "vocab_size 1000"),
        (&[-1], -1, "vocab_size 1000"),
        (&[0, 0, 70_000], 70_000, "vocab_size 1000"),
    ];
    for (ids, bad, limit) in cases {
        let err = writer.add(ids, &Row::new()).unwrap_err();
        match &err {
            TokenError::TokenOutOfRange {
                path: at,
                sample,
                id,
                max_id,
                limit: found,
                ..
            } => {
                assert_eq!((at, *sample, *id, *max_id), (&path, 1, bad, 999));
                assert_eq!(found, limit);
            }
            other => panic!("{other}"),
        }
        let text = err.to_string();
        assert!(
            text.contains("refusing") && text.contains("document 1"),
            "{text}"
        );
    }
    let u16_only = dir.path().join("narrow");
    let mut narrow = dsrt_tokens::TokenWriter::create(
        &u16_only,
        WriterOptions::new("n", Schema::default()),
        TokenInfo::new(TokenDtype::U16),
    )
    .unwrap();
    let err = narrow.add(&[65_536u32], &Row::new()).unwrap_err();
    assert!(err.to_string().contains("dtype uint16"), "{err}");
    // The refusals wrote nothing: the writer goes on and the cache holds one document.
    writer.add(&[7u8], &Row::new()).unwrap();
    writer.finish().unwrap();
    let cache = TokenCache::open(&path, OpenOptions::validated()).unwrap();
    assert_eq!(cache.len(), 2);
    let mut buf = TokenBuf::new();
    assert_eq!(
        cache.read(1, &mut buf).unwrap().iter().collect::<Vec<_>>(),
        [7]
    );
}

#[test]
fn ids_of_a_type_known_at_run_time_are_written_and_refused_as_their_own_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("any");
    let info = TokenInfo::for_vocab(1000);
    let options = WriterOptions::new("a", Schema::default());
    let mut writer = dsrt_tokens::TokenWriter::create(&path, options, info).unwrap();
    let documents = [
        TokenIds::I8(vec![1, 2]),
        TokenIds::U64(vec![999]),
        TokenIds::from_le_bytes(false, 2, &[7, 0, 8, 0]).unwrap(),
        TokenIds::I64(vec![]),
    ];
    for (i, ids) in documents.iter().enumerate() {
        assert_eq!(writer.add_ids(ids, &Row::new()).unwrap(), i as u64);
    }
    let err = (writer.add_ids(&TokenIds::I16(vec![3, -2]), &Row::new())).unwrap_err();
    assert!(err.to_string().contains("token 1 is -2"), "{err}");
    let huge = TokenIds::Beyond {
        position: 2,
        id: "1180591620717411303424".into(),
    };
    let err = writer.add_ids(&huge, &Row::new()).unwrap_err();
    assert_eq!(
        (err.kind(), err.path()),
        ("token_out_of_range", Some(path.as_path()))
    );
    assert!(
        err.to_string().ends_with(
            "document 4: token 2 is 1180591620717411303424, outside 0..=999 (vocab_size 1000)"
        ),
        "{err}"
    );
    assert_eq!(writer.tokens(), 5);
    writer.finish().unwrap();
    let cache = TokenCache::open(&path, OpenOptions::validated()).unwrap();
    let mut buf = TokenBuf::new();
    let read = cache.read(2, &mut buf).unwrap().iter().collect::<Vec<_>>();
    assert_eq!(read, [7, 8]);
}

#[test]
fn token_info_that_contradicts_itself_is_refused_before_any_file() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        TokenInfo {
            vocab_size: Some(128_256),
            ..TokenInfo::new(TokenDtype::U16)
        },
        TokenInfo {
            eos_id: Some(50_257),
            ..TokenInfo::for_vocab(50_257)
        },
    ];
    for (k, info) in cases.into_iter().enumerate() {
        let path = dir.path().join(k.to_string());
        let err = dsrt_tokens::TokenWriter::create(
            &path,
            WriterOptions::new("x", Schema::default()),
            info,
        )
        .unwrap_err();
        assert!(matches!(err, TokenError::BadTokenInfo { .. }), "{err}");
        assert!(!path.exists(), "nothing written");
    }
    let schema = Schema::new(vec![Column::new(N_TOKENS_COLUMN, ColumnType::Int64, false)]).unwrap();
    let err = dsrt_tokens::TokenWriter::create(
        dir.path().join("n"),
        WriterOptions::new("x", schema),
        TokenInfo::new(TokenDtype::U32),
    )
    .unwrap_err();
    assert!(matches!(err, TokenError::NTokensColumn { .. }), "{err}");
}

/// A cache written by hand with the token layout's keys but `n_tokens` values of its own.
fn forged(path: &std::path::Path, n_tokens: &[(i64, usize)], nullable: bool, tokens: bool) {
    let schema = Schema::new(vec![Column::new(
        N_TOKENS_COLUMN,
        ColumnType::Int64,
        nullable,
    )])
    .unwrap();
    let mut options = WriterOptions::new("forged", schema);
    if tokens {
        options = options.manifest_key(TOKENS_KEY, TokenInfo::new(TokenDtype::U32).to_json());
    }
    let mut writer = CacheWriter::create(path, options).unwrap();
    for &(n, bytes) in n_tokens {
        writer
            .add_values(&vec![1; bytes], &[ValueRef::Int64(n)])
            .unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn a_payload_that_disagrees_with_n_tokens_is_a_typed_error_naming_cache_and_document() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forged");
    forged(&path, &[(2, 8), (3, 8), (-1, 0), (1, 3)], false, true);
    let cache = TokenCache::open(&path, OpenOptions::default()).unwrap();
    let mut buf = TokenBuf::new();
    assert_eq!(cache.read(0, &mut buf).unwrap().len(), 2);
    for (sample, kind) in [
        (1, "length_mismatch"),
        (2, "bad_n_tokens"),
        (3, "length_mismatch"),
    ] {
        let err = cache.read(sample, &mut buf).unwrap_err();
        assert_eq!(err.kind(), kind, "{err}");
        let text = err.to_string();
        assert!(
            text.contains("forged") && text.contains(&format!("document {sample}")),
            "{text}"
        );
    }
    assert!(matches!(
        cache.n_tokens(2),
        Err(TokenError::BadNTokens { sample: 2, .. })
    ));
    assert!(matches!(cache.n_tokens(4), Err(TokenError::Read(_))));
}

#[test]
fn a_cache_without_the_token_layout_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain");
    forged(&plain, &[(1, 4)], false, false);
    let err = TokenCache::open(&plain, OpenOptions::default()).unwrap_err();
    assert!(matches!(err, TokenError::NotATokenCache { .. }), "{err}");
    let nullable = dir.path().join("nullable");
    forged(&nullable, &[(1, 4)], true, true);
    let err = TokenCache::new(Cache::open(&nullable, OpenOptions::default()).unwrap()).unwrap_err();
    assert!(matches!(err, TokenError::NTokensColumn { .. }), "{err}");
    let value = Value::Int64(1);
    assert_eq!(value.as_ref(), ValueRef::Int64(1));
}
