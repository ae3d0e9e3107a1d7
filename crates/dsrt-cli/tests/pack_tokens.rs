//! `dsrt pack` into token caches: the same documents as Parquet list columns, JSONL token
//! arrays and a Megatron-LM indexed dataset give identical ids; text through a tokenizer.json
//! gives the same ids from Parquet and JSONL; the bytes are the same for every --jobs; an id
//! that does not fit is refused naming the file and the row or line, and nothing is left.
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap
)] // Test code.

mod common;

use arrow_array::builder::{Int64Builder, ListBuilder};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema as ArrowSchema};
use common::*;
use datasetrt::tokens::{TokenBuf, TokenCache};
use datasetrt::OpenOptions;
use dsrt_atlas_test_runner::files_below;
use std::path::Path;
use std::sync::Arc;

fn documents() -> Vec<Vec<i64>> {
    (0..700)
        .map(|d| {
            (0..(d * 37) % 400 + (d % 3))
                .map(|t| ((d * 7 + t * 13) % 50_257) as i64)
                .collect()
        })
        .collect()
}

fn texts() -> Vec<String> {
    let lines = [
        "All human beings are born free and equal in dignity and rights.",
        "Tous les êtres humains naissent libres et égaux en dignité et en droits.",
        "Alle Menschen sind frei und gleich an Würde und Rechten geboren.",
        "Все люди рождаются свободными и равными в своем достоинстве и правах.",
        "人人生而自由，在尊严和权利上一律平等。",
        "すべての人間は、生まれながらにして自由であり、かつ、尊厳と権利とについて平等である。",
        "جميع الناس يولدون أحراراً متساوين في الكرامة والحقوق.",
        "सभी मनुष्यों को गौरव और अधिकारों के मामले में जन्मजात स्वतन्त्रता प्राप्त है।",
    ];
    (0..160)
        .map(|i| format!("{} {i}", lines[i % lines.len()]).repeat(i % 5 + 1))
        .collect()
}

/// A Parquet file with a list column `ids` (when `docs` is given) or a string column `text`.
fn write_parquet(path: &Path, docs: Option<&[Vec<i64>]>, texts: Option<&[String]>) {
    let (mut fields, mut columns): (Vec<Field>, Vec<ArrayRef>) = (Vec::new(), Vec::new());
    if let Some(docs) = docs {
        let mut ids = ListBuilder::new(Int64Builder::new());
        for d in docs {
            ids.values().append_slice(d);
            ids.append(true);
        }
        let ids: ArrayRef = Arc::new(ids.finish());
        fields.push(Field::new("ids", ids.data_type().clone(), true));
        columns.push(ids);
    }
    if let Some(texts) = texts {
        fields.push(Field::new("text", DataType::Utf8, false));
        columns.push(Arc::new(StringArray::from_iter_values(texts)));
    }
    let batch = RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), columns).unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(100))
        .build();
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

fn write_megatron(prefix: &Path, docs: &[Vec<i64>]) {
    let (mut bin, mut lengths, mut pointers, mut doc_idx) =
        (Vec::new(), Vec::new(), Vec::new(), vec![0i64]);
    for d in docs {
        // Two sequences per document: a Megatron document may span several.
        for half in [&d[..d.len() / 2], &d[d.len() / 2..]] {
            pointers.push(bin.len() as i64);
            lengths.push(half.len() as i32);
            half.iter()
                .for_each(|&v| bin.extend_from_slice(&(v as u16).to_le_bytes()));
        }
        doc_idx.push(lengths.len() as i64);
    }
    let mut idx = b"MMIDIDX\x00\x00".to_vec();
    idx.extend_from_slice(&1u64.to_le_bytes());
    idx.push(8);
    idx.extend_from_slice(&(lengths.len() as u64).to_le_bytes());
    idx.extend_from_slice(&(doc_idx.len() as u64).to_le_bytes());
    lengths
        .iter()
        .for_each(|l| idx.extend_from_slice(&l.to_le_bytes()));
    pointers
        .iter()
        .for_each(|p| idx.extend_from_slice(&p.to_le_bytes()));
    doc_idx
        .iter()
        .for_each(|d| idx.extend_from_slice(&d.to_le_bytes()));
    std::fs::write(prefix.with_extension("idx"), idx).unwrap();
    std::fs::write(prefix.with_extension("bin"), bin).unwrap();
}

fn read_ids(path: &Path) -> Vec<Vec<i64>> {
    let cache = TokenCache::open(path, OpenOptions::validated()).unwrap();
    let mut buf = TokenBuf::new();
    (0..cache.len())
        .map(|i| {
            cache
                .read(i, &mut buf)
                .unwrap()
                .iter()
                .map(i64::from)
                .collect()
        })
        .collect()
}

fn pack(dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["pack"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--source", "tok", "--max-shard-bytes", "64KiB"]);
    dsrt_in(dir, &all)
}

#[test]
fn parquet_jsonl_and_megatron_give_identical_ids_for_any_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let docs = documents();
    write_parquet(&dir.path().join("in.parquet"), Some(&docs), None);
    let lines: Vec<serde_json::Value> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| serde_json::json!({"ids": d, "n": i}))
        .collect();
    std::fs::write(dir.path().join("in.jsonl"), jsonl(&lines)).unwrap();
    write_megatron(&dir.path().join("mega_text_document"), &docs);
    let vocab = [
        "--vocab-size",
        "50257",
        "--eos-id",
        "50256",
        "--tokenizer-name",
        "gpt2",
    ];
    for jobs in ["1", "2"] {
        let p = format!("p{jobs}");
        let mut args = vec![
            "--from-parquet",
            "in.parquet",
            "--tokens-column",
            "ids",
            "--out",
            &p,
            "--jobs",
            jobs,
        ];
        args.extend_from_slice(&vocab);
        pack(dir.path(), &args).ok();
        let j = format!("j{jobs}");
        let mut args = vec![
            "--jsonl",
            "in.jsonl",
            "--tokens-column",
            "ids",
            "--out",
            &j,
            "--jobs",
            jobs,
        ];
        args.extend_from_slice(&vocab);
        pack(dir.path(), &args).ok();
        let m = format!("m{jobs}");
        let mut args = vec![
            "--from-megatron",
            "mega_text_document",
            "--out",
            &m,
            "--jobs",
            jobs,
        ];
        args.extend_from_slice(&vocab);
        pack(dir.path(), &args).ok();
    }
    for name in ["p", "j", "m"] {
        let (one, two) = (
            dir.path().join(format!("{name}1")),
            dir.path().join(format!("{name}2")),
        );
        assert_eq!(files_below(&one), files_below(&two), "{name}: 1 vs 2 jobs");
        assert_eq!(read_ids(&one), docs, "{name}");
        let tokens = inspect(dir.path(), &format!("{name}1"))["tokens"].clone();
        assert_eq!(tokens["dtype"], "uint16");
        assert_eq!(tokens["eos_id"], 50256);
        assert_eq!(tokens["total"], docs.iter().map(Vec::len).sum::<usize>());
    }
    // The JSONL cache keeps its other fields as metadata after n_tokens.
    let schema = inspect(dir.path(), "j1")["schema"].clone();
    assert_eq!(schema[0]["name"], "n_tokens");
    assert_eq!(schema[1]["name"], "n");
}

#[test]
fn text_through_a_tokenizer_gives_the_same_ids_from_parquet_and_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let texts = texts();
    write_parquet(&dir.path().join("t.parquet"), None, Some(&texts));
    let lines: Vec<serde_json::Value> = texts
        .iter()
        .map(|t| serde_json::json!({"text": t}))
        .collect();
    std::fs::write(dir.path().join("t.jsonl"), jsonl(&lines)).unwrap();
    let tokenizer = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/tokenizers/bert-base-uncased.json");
    let tokenizer = tokenizer.to_str().unwrap();
    let common = [
        "--text-column",
        "text",
        "--tokenizer",
        tokenizer,
        "--add-special-tokens",
    ];
    pack(
        dir.path(),
        &[
            &["--from-parquet", "t.parquet", "--out", "tp", "--jobs", "2"][..],
            &common[..],
        ]
        .concat(),
    )
    .ok();
    pack(
        dir.path(),
        &[
            &["--jsonl", "t.jsonl", "--out", "tj", "--jobs", "2"][..],
            &common[..],
        ]
        .concat(),
    )
    .ok();
    let from_jsonl = read_ids(&dir.path().join("tj"));
    assert_eq!(from_jsonl.len(), texts.len());
    assert_eq!(&from_jsonl[0][..3], &[101, 2035, 2529], "[CLS] all human");
    assert!(from_jsonl
        .iter()
        .all(|d| d[0] == 101 && *d.last().unwrap() == 102));
    assert_eq!(read_ids(&dir.path().join("tp")), from_jsonl);
    let tokens = inspect(dir.path(), "tj")["tokens"].clone();
    assert_eq!(tokens["vocab_size"], 30522);
    assert_eq!(tokens["tokenizer"], "bert-base-uncased.json");
}

#[test]
fn an_id_that_does_not_fit_is_refused_naming_file_and_line_and_nothing_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let lines = vec![
        serde_json::json!({"ids": [1, 2]}),
        serde_json::json!({"ids": [3, -4]}),
    ];
    std::fs::write(dir.path().join("bad.jsonl"), jsonl(&lines)).unwrap();
    let run = pack(
        dir.path(),
        &[
            "--jsonl",
            "bad.jsonl",
            "--tokens-column",
            "ids",
            "--out",
            "c",
        ],
    )
    .fails(1);
    assert!(
        run.stderr.contains("bad.jsonl, line 2: token 1 is -4"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("c").exists());
    let lines = vec![serde_json::json!({"ids": "text"})];
    std::fs::write(dir.path().join("str.jsonl"), jsonl(&lines)).unwrap();
    let run = pack(
        dir.path(),
        &[
            "--jsonl",
            "str.jsonl",
            "--tokens-column",
            "ids",
            "--out",
            "c",
        ],
    )
    .fails(1);
    assert!(
        run.stderr.contains("line 1") && run.stderr.contains("array of token ids"),
        "{}",
        run.stderr
    );

    write_parquet(
        &dir.path().join("wide.parquet"),
        Some(&[vec![1], vec![5, 70_000]]),
        Some(&["a".into(), "b".into()]),
    );
    let run = pack(
        dir.path(),
        &[
            "--from-parquet",
            "wide.parquet",
            "--tokens-column",
            "ids",
            "--token-dtype",
            "uint16",
            "--out",
            "c",
        ],
    )
    .fails(1);
    assert!(
        run.stderr
            .contains("wide.parquet row 1: token 1 is 70000, outside 0..=65535 (dtype uint16)"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("c").exists());
    let run = pack(dir.path(), &["--from-megatron", "missing", "--out", "c"]).fails(1);
    assert!(run.stderr.contains("missing.idx"), "{}", run.stderr);
}
