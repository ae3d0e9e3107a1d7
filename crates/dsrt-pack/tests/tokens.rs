//! Token inputs packed into token caches: Parquet list, large-list and fixed-size-list columns
//! of every integer type and a Hugging Face `save_to_disk` stream give the ids written, the
//! same files for 1, 2 and 3 jobs; text through real tokenizer files gives their ids; every
//! refused id names the file and the row.
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)] // Test code: a failure is the test failing.

use arrow_array::builder::{
    FixedSizeListBuilder, Int16Builder, Int64Builder, LargeListBuilder, ListBuilder, UInt32Builder,
};
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema as ArrowSchema};
use dsrt_atlas_test_runner::files_below;
use dsrt_pack::{
    pack, PackError, PackOptions, TableOptions, Tables, TextOptions, TextTokenizer, TokenColumn,
};
use dsrt_reader::OpenOptions;
use dsrt_tokens::{TokenBuf, TokenCache, TokenDtype, TokenInfo, TOKENS_KEY};
use dsrt_writer::{CacheWriter, WriterOptions};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn document(i: usize, vocab: u64) -> Vec<i64> {
    let len = 1 + (i * 7919) % 300 + if i % 97 == 0 { 3000 } else { 0 };
    (0..len)
        .map(|t| ((i * 31 + t * 104_729) as u64 % vocab) as i64)
        .collect()
}

fn write_parquet(path: &Path, batch: &RecordBatch) {
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(50))
        .build();
    let mut writer = ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
}

/// Three Parquet files of `ids` and `source` columns, each with another list type: list of
/// int64, large list of uint32, fixed-size (4) list of int16.
fn token_files(dir: &Path, rows: usize, vocab: u64) -> Vec<Vec<i64>> {
    std::fs::create_dir_all(dir).unwrap();
    let mut all = Vec::new();
    for (file, kind) in ["list", "large", "fixed"].iter().enumerate() {
        let docs: Vec<Vec<i64>> = (0..rows)
            .map(|r| {
                let mut d = document(file * rows + r, vocab);
                if *kind == "fixed" {
                    d.resize(4, 1);
                }
                d
            })
            .collect();
        let ids: ArrayRef = match *kind {
            "list" => {
                let mut b = ListBuilder::new(Int64Builder::new());
                for d in &docs {
                    b.values().append_slice(d);
                    b.append(true);
                }
                Arc::new(b.finish())
            }
            "large" => {
                let mut b = LargeListBuilder::new(UInt32Builder::new());
                for d in &docs {
                    b.values()
                        .append_slice(&d.iter().map(|&v| v as u32).collect::<Vec<_>>());
                    b.append(true);
                }
                Arc::new(b.finish())
            }
            _ => {
                let mut b = FixedSizeListBuilder::new(Int16Builder::new(), 4);
                for d in &docs {
                    b.values()
                        .append_slice(&d.iter().map(|&v| v as i16).collect::<Vec<_>>());
                    b.append(true);
                }
                Arc::new(b.finish())
            }
        };
        let source = StringArray::from_iter_values((0..rows).map(|r| format!("{kind}-{r}")));
        let schema = Arc::new(ArrowSchema::new(vec![
            Field::new("ids", ids.data_type().clone(), false),
            Field::new("source", DataType::Utf8, false),
        ]));
        let batch = RecordBatch::try_new(schema, vec![ids, Arc::new(source)]).unwrap();
        write_parquet(&dir.join(format!("{file}-{kind}.parquet")), &batch);
        all.extend(docs);
    }
    all
}

fn pack_tables(tables: &Tables, out: &Path, jobs: usize) -> Result<(), PackError> {
    let mut options =
        WriterOptions::new("tokens", tables.schema().clone()).max_shard_bytes(16 << 10);
    for (key, value) in dsrt_pack::Convert::manifest_keys(tables) {
        options = options.manifest_key(key, value);
    }
    let mut writer = CacheWriter::create(out, options).unwrap();
    pack(
        tables,
        &mut writer,
        &PackOptions::default().jobs(jobs).queue(4),
    )?;
    writer.finish().unwrap();
    Ok(())
}

fn read_ids(path: &Path) -> Vec<Vec<i64>> {
    let cache = TokenCache::open(path, OpenOptions::validated()).unwrap();
    let mut buf = TokenBuf::new();
    (0..cache.len())
        .map(|i| {
            let tokens = cache.read(i, &mut buf).unwrap();
            assert_eq!(cache.n_tokens(i).unwrap(), tokens.len() as u64);
            tokens.iter().map(i64::from).collect()
        })
        .collect()
}

#[test]
fn list_columns_of_every_kind_pack_their_ids_the_same_with_any_jobs() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("in");
    let expected = token_files(&input, 120, 30_000);
    let info = TokenInfo {
        eos_id: Some(0),
        ..TokenInfo::for_vocab(30_000)
    };
    let options = TableOptions::tokens("ids", TokenColumn::Ids(Some(info.clone())));
    let tables = Tables::scan(&[input], &options).unwrap();
    assert_eq!(tables.token_info(), Some(&info));
    assert_eq!(tables.schema().columns()[0].name, "n_tokens");
    assert_eq!(tables.schema().columns()[1].name, "source");
    let outs: Vec<PathBuf> = (1..=3)
        .map(|j| root.path().join(format!("out-{j}")))
        .collect();
    for (jobs, out) in (1..=3).zip(&outs) {
        pack_tables(&tables, out, jobs).unwrap();
    }
    let first = files_below(&outs[0]);
    assert!(first.len() > 5, "several shards");
    assert_eq!(first, files_below(&outs[1]));
    assert_eq!(first, files_below(&outs[2]));
    assert_eq!(read_ids(&outs[0]), expected);
    let cache = TokenCache::open(&outs[0], OpenOptions::default()).unwrap();
    assert_eq!(cache.info(), &info);
    assert_eq!(
        cache.cache().manifest().extra_key(TOKENS_KEY),
        Some(&info.to_json())
    );
    let row = cache.cache().metadata_row(130).unwrap();
    assert_eq!(row.get(1), Some(dsrt_schema::ValueRef::Utf8("large-10")));
}

#[test]
fn without_token_info_the_width_follows_the_list_type() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("in");
    token_files(&input, 10, 1000);
    let only = |name: &str| input.join(name);
    for (file, dtype) in [
        ("0-list.parquet", TokenDtype::U32),
        ("2-fixed.parquet", TokenDtype::U16),
    ] {
        let tables = Tables::scan(
            &[only(file)],
            &TableOptions::tokens("ids", TokenColumn::Ids(None)),
        )
        .unwrap();
        assert_eq!(tables.token_info(), Some(&TokenInfo::new(dtype)));
    }
}

#[test]
fn an_id_that_does_not_fit_is_refused_naming_file_and_row() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("bad.parquet");
    let mut b = ListBuilder::new(Int64Builder::new());
    let rows: Vec<Vec<Option<i64>>> = vec![
        vec![Some(1), Some(2)],
        vec![Some(3), Some(-1)],
        vec![Some(65_535), Some(65_536)],
        vec![Some(4), None],
    ];
    for (k, bad_row) in [1usize, 2, 3].iter().enumerate() {
        let path = root.path().join(format!("bad{k}.parquet"));
        let mut b2 = ListBuilder::new(Int64Builder::new());
        for row in [&rows[0], &rows[*bad_row]] {
            for v in row {
                b2.values().append_option(*v);
            }
            b2.append(true);
        }
        let ids: ArrayRef = Arc::new(b2.finish());
        let schema = Arc::new(ArrowSchema::new(vec![Field::new(
            "ids",
            ids.data_type().clone(),
            true,
        )]));
        write_parquet(&path, &RecordBatch::try_new(schema, vec![ids]).unwrap());
        let tables = Tables::scan(
            std::slice::from_ref(&path),
            &TableOptions::tokens(
                "ids",
                TokenColumn::Ids(Some(TokenInfo::new(TokenDtype::U16))),
            ),
        )
        .unwrap();
        let err = pack_tables(&tables, &root.path().join(format!("out{k}")), 2).unwrap_err();
        let expected_id = ["-1", "65536", "null"][k];
        match &err {
            PackError::TokenOutOfRange {
                input,
                position,
                id,
                max_id,
                ..
            } => {
                assert_eq!(input, &format!("{} row 1", path.display()));
                assert_eq!((*position, id.as_str(), *max_id), (1, expected_id, 65_535));
            }
            other => panic!("{other}"),
        }
        assert_eq!(err.kind(), "token_out_of_range");
    }
    // A null list, and a column that is not a list of integers.
    b.values().append_value(1);
    b.append(false);
    let ids: ArrayRef = Arc::new(b.finish());
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("ids", ids.data_type().clone(), true),
        Field::new("n", DataType::Int64, false),
    ]));
    let n: ArrayRef = Arc::new(Int64Array::from(vec![1]));
    write_parquet(&input, &RecordBatch::try_new(schema, vec![ids, n]).unwrap());
    let options = TableOptions::tokens("ids", TokenColumn::Ids(None));
    let tables = Tables::scan(std::slice::from_ref(&input), &options).unwrap();
    let err = pack_tables(&tables, &root.path().join("null"), 1).unwrap_err();
    assert!(
        err.to_string().contains("row 0") && err.to_string().contains("null"),
        "{err}"
    );
    let err =
        Tables::scan(&[input], &TableOptions::tokens("n", TokenColumn::Ids(None))).unwrap_err();
    assert!(
        matches!(err, PackError::Column { .. }) && err.to_string().contains("list"),
        "{err}"
    );
}

fn tokenizer(name: &str, options: TextOptions) -> TextTokenizer {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/tokenizers")
        .join(name);
    TextTokenizer::from_file(&path, options).unwrap()
}

#[test]
fn text_is_tokenized_as_the_tokenizer_file_says() {
    let gpt2 = tokenizer(
        "gpt2.json",
        TextOptions {
            append_eos: true,
            ..TextOptions::default()
        },
    );
    assert_eq!(gpt2.info().vocab_size, Some(50_257));
    assert_eq!(gpt2.info().dtype, TokenDtype::U16);
    assert_eq!(gpt2.info().eos_id, Some(50_256));
    let mut ids = Vec::new();
    gpt2.encode("Hello world", &mut ids).unwrap();
    assert_eq!(ids, [15_496, 995, 50_256]);
    let bert = tokenizer(
        "bert-base-uncased.json",
        TextOptions {
            add_special_tokens: true,
            ..TextOptions::default()
        },
    );
    bert.encode("Hello world", &mut ids).unwrap();
    assert_eq!(ids, [101, 7592, 2088, 102]);
    assert_eq!(
        (bert.info().pad_id, bert.info().bos_id),
        (Some(0), Some(101))
    );

    // A text column through the packer, one job and three: the same ids as encoding alone.
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("text.parquet");
    let texts: Vec<String> = (0..300)
        .map(|i| format!("Document {i}: Grüße, 世界! {}", "token ".repeat(i % 40)))
        .collect();
    let schema = Arc::new(ArrowSchema::new(vec![Field::new(
        "text",
        DataType::Utf8,
        false,
    )]));
    let column: ArrayRef = Arc::new(StringArray::from_iter_values(&texts));
    write_parquet(&path, &RecordBatch::try_new(schema, vec![column]).unwrap());
    let options = TableOptions::tokens("text", TokenColumn::Text(Arc::new(gpt2)));
    let tables = Tables::scan(&[path], &options).unwrap();
    pack_tables(&tables, &root.path().join("one"), 1).unwrap();
    pack_tables(&tables, &root.path().join("three"), 3).unwrap();
    assert_eq!(
        files_below(&root.path().join("one")),
        files_below(&root.path().join("three"))
    );
    let gpt2 = tokenizer(
        "gpt2.json",
        TextOptions {
            append_eos: true,
            ..TextOptions::default()
        },
    );
    let expected: Vec<Vec<i64>> = texts
        .iter()
        .map(|t| {
            gpt2.encode(t, &mut ids).unwrap();
            ids.iter().map(|&v| i64::from(v)).collect()
        })
        .collect();
    assert_eq!(read_ids(&root.path().join("one")), expected);
    let err = TextTokenizer::from_file(
        Path::new("/nonexistent/tokenizer.json"),
        TextOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind(), "tokenizer");
}
