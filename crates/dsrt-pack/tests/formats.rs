//! Parquet files, Hugging Face `save_to_disk` datasets and WebDataset tars packed into caches:
//! every payload and metadata value reads back as written, the cache is the same for 1, 2 and
//! 3 jobs, and inputs the cache cannot take are refused naming the file and the column or key.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap
)] // Test code: a failure is the test failing.

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, DictionaryArray, Float32Array, Int32Array, Int8Array,
    LargeBinaryArray, RecordBatch, StringArray, StructArray, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema as ArrowSchema};
use dsrt_atlas_test_runner::files_below;
use dsrt_manifest::CompressionAlgo;
use dsrt_pack::{
    pack, Convert, PackError, PackOptions, TableOptions, Tables, WebDataset, WebDatasetOptions,
};
use dsrt_reader::{Cache, OpenOptions, SampleBuf};
use dsrt_schema::{ColumnType, Schema, Value};
use dsrt_writer::{CacheWriter, WriterOptions};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn write_cache<C: Convert>(convert: &C, schema: Schema, out: &Path, jobs: usize) {
    let options = WriterOptions::new("formats", schema)
        .compression(CompressionAlgo::Lz4)
        .max_shard_bytes(8_000);
    let mut writer = CacheWriter::create(out, options).unwrap();
    pack(
        convert,
        &mut writer,
        &PackOptions::default().jobs(jobs).queue(4),
    )
    .unwrap();
    writer.finish().unwrap();
}

/// Samples as (payload, metadata values).
type Samples = Vec<(Vec<u8>, Vec<Value>)>;

/// Every sample of the cache at `dir`.
fn read_back(dir: &Path) -> Samples {
    let cache = Cache::open(dir, OpenOptions::validated()).unwrap();
    let mut buf = SampleBuf::new();
    (0..cache.len())
        .map(|i| {
            let sample = cache.read(i, &mut buf).unwrap();
            let values = sample.metadata.values().map(|v| v.to_owned()).collect();
            (sample.payload.to_vec(), values)
        })
        .collect()
}

/// Packs `convert` with 1, 2 and 3 jobs, checks the three caches are the same files, and
/// returns what the first holds.
fn pack_three_ways<C: Convert>(
    convert: &C,
    schema: &Schema,
    root: &Path,
) -> Vec<(Vec<u8>, Vec<Value>)> {
    let outs: Vec<PathBuf> = (1..=3).map(|j| root.join(format!("out-{j}"))).collect();
    for (jobs, out) in (1..=3).zip(&outs) {
        write_cache(convert, schema.clone(), out, jobs);
    }
    let first = files_below(&outs[0]);
    assert!(first.len() > 5, "several shards: {}", first.len());
    assert_eq!(first, files_below(&outs[1]), "1 vs 2 jobs");
    assert_eq!(first, files_below(&outs[2]), "1 vs 3 jobs");
    read_back(&outs[0])
}

/// The rows a test table holds, as the cache must read them back.
struct Rows {
    payloads: Vec<Vec<u8>>,
    expected: Vec<Vec<Value>>,
}

/// A batch of `n` rows starting at global row `start`: nullable columns of every mapped
/// type, with nulls in a pattern.
fn batch(start: usize, n: usize, rows: &mut Rows) -> RecordBatch {
    let ids: Vec<usize> = (start..start + n).collect();
    let payload: Vec<Vec<u8>> = ids
        .iter()
        .map(|&i| {
            (0..(i * 37) % 2000)
                .map(|b| ((b * 7 + i) % 251) as u8)
                .collect()
        })
        .collect();
    let id = Int32Array::from_iter(ids.iter().map(|&i| (i % 5 != 1).then_some(i as i32 - 100)));
    let small = Int8Array::from_iter(ids.iter().map(|&i| Some((i % 200) as i8)));
    let big = UInt64Array::from_iter(ids.iter().map(|&i| Some(i as u64 * 1_000_000_007)));
    let score =
        Float32Array::from_iter(ids.iter().map(|&i| (i % 3 != 0).then_some(i as f32 / 4.0)));
    let name = StringArray::from_iter(
        ids.iter()
            .map(|&i| (i % 4 != 2).then(|| format!("row-{i}-é"))),
    );
    let flag = BooleanArray::from_iter(ids.iter().map(|&i| (i % 6 != 5).then_some(i % 2 == 0)));
    let keys = Int32Array::from_iter(ids.iter().map(|&i| Some((i % 3) as i32)));
    let split: DictionaryArray<Int32Type> = DictionaryArray::try_new(
        keys,
        Arc::new(StringArray::from(vec!["train", "val", "test"])),
    )
    .unwrap();
    for (k, &i) in ids.iter().enumerate() {
        rows.payloads.push(payload[k].clone());
        let opt = |valid: bool, v: Value| if valid { v } else { Value::Null };
        rows.expected.push(vec![
            opt(i % 5 != 1, Value::Int64(i as i64 - 100)),
            Value::Int64((i % 200) as i8 as i64),
            Value::Int64(i as i64 * 1_000_000_007),
            opt(i % 3 != 0, Value::Float64(f64::from(i as f32 / 4.0))),
            opt(i % 4 != 2, Value::Utf8(format!("row-{i}-é"))),
            opt(i % 6 != 5, Value::Bool(i % 2 == 0)),
            Value::Utf8(["train", "val", "test"][i % 3].to_owned()),
        ]);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(BinaryArray::from_iter_values(payload.iter())),
        Arc::new(id),
        Arc::new(small),
        Arc::new(big),
        Arc::new(score),
        Arc::new(name),
        Arc::new(flag),
        Arc::new(split),
    ];
    RecordBatch::try_new(table_schema(), columns).unwrap()
}

fn table_schema() -> Arc<ArrowSchema> {
    Arc::new(ArrowSchema::new(vec![
        Field::new("image", DataType::Binary, true),
        Field::new("id", DataType::Int32, true),
        Field::new("small", DataType::Int8, false),
        Field::new("big", DataType::UInt64, true),
        Field::new("score", DataType::Float32, true),
        Field::new("name", DataType::Utf8, true),
        Field::new("flag", DataType::Boolean, true),
        Field::new(
            "split",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            true,
        ),
    ]))
}

/// Writes `batches` to a Parquet file with row groups of `group_rows` rows.
fn write_parquet(path: &Path, batches: &[RecordBatch], group_rows: usize) {
    let file = std::fs::File::create(path).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group_rows))
        .build();
    let mut writer = ArrowWriter::try_new(file, batches[0].schema(), Some(props)).unwrap();
    for batch in batches {
        writer.write(batch).unwrap();
    }
    writer.close().unwrap();
}

#[test]
fn parquet_files_pack_every_row_and_value_the_same_with_any_jobs() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("parquet");
    std::fs::create_dir(&input).unwrap();
    let mut rows = Rows {
        payloads: Vec::new(),
        expected: Vec::new(),
    };
    // Three files (named so sorting by name is not the order of creation), 60-row groups.
    let mut start = 0;
    for (name, n) in [
        ("part-0.parquet", 250),
        ("part-1.parquet", 130),
        ("part-2.parquet", 61),
    ] {
        let batches: Vec<RecordBatch> = (0..n)
            .step_by(100)
            .map(|offset| {
                let len = (n - offset).min(100);
                batch(start + offset, len, &mut rows)
            })
            .collect();
        write_parquet(&input.join(name), &batches, 60);
        start += n;
    }
    std::fs::write(input.join("README.txt"), b"not parquet").unwrap();
    let tables = Tables::scan(std::slice::from_ref(&input), &TableOptions::new("image")).unwrap();
    assert_eq!(tables.len(), Some(441));
    assert_eq!(tables.units().len(), 5 + 3 + 2, "one unit per row group");
    let columns: Vec<(String, ColumnType, bool)> = tables
        .schema()
        .columns()
        .iter()
        .map(|c| (c.name.clone(), c.ty, c.nullable))
        .collect();
    assert_eq!(
        columns,
        [
            ("id".into(), ColumnType::Int64, true),
            ("small".into(), ColumnType::Int64, false),
            ("big".into(), ColumnType::Int64, true),
            ("score".into(), ColumnType::Float64, true),
            ("name".into(), ColumnType::Utf8, true),
            ("flag".into(), ColumnType::Bool, true),
            ("split".into(), ColumnType::Utf8, true),
        ]
    );
    let samples = pack_three_ways(&tables, tables.schema(), root.path());
    assert_eq!(samples.len(), 441);
    for (i, (payload, values)) in samples.iter().enumerate() {
        assert_eq!(payload, &rows.payloads[i], "payload of row {i}");
        assert_eq!(values, &rows.expected[i], "metadata of row {i}");
    }

    // Chosen columns, in the order asked, from files given one by one.
    let files: Vec<PathBuf> = ["part-2.parquet", "part-0.parquet"]
        .iter()
        .map(|n| input.join(n))
        .collect();
    let options = TableOptions::new("image").metadata_columns(vec!["name".into(), "id".into()]);
    let chosen = Tables::scan(&files, &options).unwrap();
    let out = root.path().join("chosen");
    write_cache(&chosen, chosen.schema().clone(), &out, 2);
    let back = read_back(&out);
    assert_eq!(back.len(), 61 + 250);
    let first_of_part2 = 250 + 130;
    assert_eq!(back[0].0, rows.payloads[first_of_part2]);
    assert_eq!(
        back[0].1,
        vec![
            rows.expected[first_of_part2][4].clone(),
            rows.expected[first_of_part2][0].clone()
        ]
    );
    assert_eq!(back[61].1[1], rows.expected[0][0]);
}

fn refusal(paths: &[PathBuf], options: &TableOptions) -> PackError {
    Tables::scan(paths, options).unwrap_err()
}

#[test]
fn columns_the_cache_cannot_hold_are_refused_by_file_and_name() {
    let root = tempfile::tempdir().unwrap();
    let mut tags = ListBuilder::new(StringBuilder::new());
    tags.values().append_value("a");
    tags.append(true);
    tags.append(false);
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("image", DataType::LargeBinary, false),
        Field::new("label", DataType::Int64, false),
        Field::new("tags", DataType::new_list(DataType::Utf8, true), true),
    ]));
    let listed = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(LargeBinaryArray::from_iter_values([b"x".as_slice(), b"y"])),
            Arc::new(arrow_array::Int64Array::from(vec![1, 2])),
            Arc::new(tags.finish()),
        ],
    )
    .unwrap();
    let file = root.path().join("tags.parquet");
    write_parquet(&file, &[listed], 10);

    let error = refusal(std::slice::from_ref(&file), &TableOptions::new("image"));
    assert!(
        matches!(&error, PackError::Column { input, column, .. }
            if input == &file.display().to_string() && column == "tags"),
        "{error}"
    );
    assert_eq!(error.kind(), "column");
    assert!(error.to_string().contains("List"), "{error}");

    // Leaving it out packs the rest.
    let options = TableOptions::new("image").metadata_columns(vec!["label".into()]);
    let tables = Tables::scan(std::slice::from_ref(&file), &options).unwrap();
    let out = root.path().join("ok");
    write_cache(&tables, tables.schema().clone(), &out, 1);
    assert_eq!(
        read_back(&out),
        vec![
            (b"x".to_vec(), vec![Value::Int64(1)]),
            (b"y".to_vec(), vec![Value::Int64(2)])
        ]
    );

    // A missing payload column, and a payload column of the wrong type.
    let error = refusal(std::slice::from_ref(&file), &TableOptions::new("jpeg"));
    assert!(
        matches!(&error, PackError::Column { column, reason, .. }
            if column == "jpeg" && reason.contains("image, label, tags")),
        "{error}"
    );
    let error = refusal(std::slice::from_ref(&file), &TableOptions::new("label"));
    assert!(
        matches!(&error, PackError::Column { column, reason, .. }
            if column == "label" && reason.contains("Int64")),
        "{error}"
    );
    let options = TableOptions::new("image").metadata_columns(vec!["nope".into()]);
    let error = refusal(std::slice::from_ref(&file), &options);
    assert!(
        matches!(&error, PackError::Column { column, .. } if column == "nope"),
        "{error}"
    );

    // A file whose column differs from the first file's.
    let mut rows = Rows {
        payloads: Vec::new(),
        expected: Vec::new(),
    };
    let good = root.path().join("a.parquet");
    write_parquet(&good, &[batch(0, 5, &mut rows)], 10);
    let other_schema = Arc::new(ArrowSchema::new(vec![
        Field::new("image", DataType::Binary, true),
        Field::new("id", DataType::Utf8, true),
    ]));
    let other = RecordBatch::try_new(
        other_schema,
        vec![
            Arc::new(BinaryArray::from_iter_values([b"p"])),
            Arc::new(StringArray::from(vec!["x"])),
        ],
    )
    .unwrap();
    let bad = root.path().join("b.parquet");
    write_parquet(&bad, &[other], 10);
    let options = TableOptions::new("image").metadata_columns(vec!["id".into()]);
    let error = refusal(&[good.clone(), bad.clone()], &options);
    assert!(
        matches!(&error, PackError::Column { input, column, reason }
            if input == &bad.display().to_string() && column == "id" && reason.contains("utf8 here, but int64")),
        "{error}"
    );
    let error = refusal(&[good, bad.clone()], &TableOptions::new("image"));
    assert!(
        matches!(&error, PackError::Column { input, .. } if input == &bad.display().to_string()),
        "{error}"
    );

    // Not Parquet at all.
    let junk = root.path().join("junk.parquet");
    std::fs::write(&junk, b"PAR1 not really").unwrap();
    let error = refusal(std::slice::from_ref(&junk), &TableOptions::new("image"));
    assert!(
        matches!(&error, PackError::Parquet { path, .. } if path == &junk),
        "{error}"
    );
}

#[test]
fn a_null_payload_or_an_unfitting_uint64_is_refused_naming_its_row() {
    let root = tempfile::tempdir().unwrap();
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("image", DataType::Binary, true),
        Field::new("n", DataType::UInt64, true),
    ]));
    let make = |payload: Vec<Option<&[u8]>>, n: Vec<Option<u64>>| {
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(BinaryArray::from(payload)),
                Arc::new(UInt64Array::from(n)),
            ],
        )
        .unwrap()
    };
    let nulls = root.path().join("nulls.parquet");
    let first = make(vec![Some(b"a"), Some(b"b")], vec![Some(1), None]);
    let second = make(vec![Some(b"c"), None], vec![Some(3), Some(4)]);
    write_parquet(&nulls, &[first, second], 2);
    let tables = Tables::scan(std::slice::from_ref(&nulls), &TableOptions::new("image")).unwrap();
    let out = root.path().join("c");
    let mut writer =
        CacheWriter::create(&out, WriterOptions::new("t", tables.schema().clone())).unwrap();
    let error = pack(&tables, &mut writer, &PackOptions::default().jobs(2)).unwrap_err();
    assert!(
        matches!(&error, PackError::Input { input, reason }
            if input == &format!("{} row 3", nulls.display()) && reason.contains("\"image\" is null")),
        "{error}"
    );

    let huge = root.path().join("huge.parquet");
    write_parquet(
        &huge,
        &[make(
            vec![Some(b"a"), Some(b"b")],
            vec![Some(5), Some(u64::MAX)],
        )],
        10,
    );
    let tables = Tables::scan(std::slice::from_ref(&huge), &TableOptions::new("image")).unwrap();
    let mut writer = CacheWriter::create(
        root.path().join("d"),
        WriterOptions::new("t", tables.schema().clone()),
    )
    .unwrap();
    let error = pack(&tables, &mut writer, &PackOptions::default().jobs(1)).unwrap_err();
    assert!(
        matches!(&error, PackError::Input { input, reason }
            if input == &format!("{} row 1", huge.display()) && reason.contains("18446744073709551615")),
        "{error}"
    );
}

/// A `save_to_disk` directory as `datasets` writes it: Arrow IPC streams listed in
/// state.json, an `Image`-feature struct column, a ClassLabel int64 column.
fn write_hf(dir: &Path, files: usize, rows_per_file: usize) -> Vec<(Vec<u8>, Vec<Value>)> {
    std::fs::create_dir_all(dir).unwrap();
    let image_fields = vec![
        Field::new("bytes", DataType::Binary, true),
        Field::new("path", DataType::Utf8, true),
    ];
    let schema = Arc::new(ArrowSchema::new(vec![
        Field::new("image", DataType::Struct(image_fields.clone().into()), true),
        Field::new("label", DataType::Int64, true),
        Field::new("caption", DataType::Utf8, true),
    ]));
    let mut expected = Vec::new();
    let mut names = Vec::new();
    for f in 0..files {
        let name = format!("data-{f:05}-of-{files:05}.arrow");
        let file = std::fs::File::create(dir.join(&name)).unwrap();
        let mut writer = arrow_ipc::writer::StreamWriter::try_new(file, &schema).unwrap();
        for chunk in 0..(rows_per_file / 40) {
            let ids: Vec<usize> = (0..40)
                .map(|k| (f * rows_per_file) + chunk * 40 + k)
                .collect();
            let bytes: Vec<Vec<u8>> = ids
                .iter()
                .map(|&i| format!("jpeg-{i}").repeat(i % 50 + 1).into_bytes())
                .collect();
            let image = StructArray::new(
                image_fields.clone().into(),
                vec![
                    Arc::new(BinaryArray::from_iter_values(bytes.iter())) as ArrayRef,
                    Arc::new(StringArray::from_iter(ids.iter().map(|_| None::<String>))),
                ],
                None,
            );
            let label =
                arrow_array::Int64Array::from_iter(ids.iter().map(|&i| Some((i % 10) as i64)));
            let caption = StringArray::from_iter(
                ids.iter()
                    .map(|&i| (i % 7 != 3).then(|| format!("a photo {i}"))),
            );
            for (k, &i) in ids.iter().enumerate() {
                let caption = if i % 7 != 3 {
                    Value::Utf8(format!("a photo {i}"))
                } else {
                    Value::Null
                };
                expected.push((
                    bytes[k].clone(),
                    vec![Value::Int64((i % 10) as i64), caption],
                ));
            }
            let batch = RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(image), Arc::new(label), Arc::new(caption)],
            )
            .unwrap();
            writer.write(&batch).unwrap();
        }
        writer.finish().unwrap();
        names.push(name);
    }
    let data_files: Vec<serde_json::Value> = names
        .iter()
        .map(|n| serde_json::json!({ "filename": n }))
        .collect();
    let state = serde_json::json!({
        "_data_files": data_files,
        "_fingerprint": "0123456789abcdef",
        "_format_columns": null,
        "_format_kwargs": {},
        "_format_type": null,
        "_output_all_columns": false,
        "_split": "train",
    });
    std::fs::write(
        dir.join("state.json"),
        serde_json::to_vec_pretty(&state).unwrap(),
    )
    .unwrap();
    let info = serde_json::json!({
        "citation": "", "description": "", "homepage": "", "license": "",
        "features": {
            "image": {"_type": "Image"},
            "label": {"names": ["0","1","2","3","4","5","6","7","8","9"], "_type": "ClassLabel"},
            "caption": {"dtype": "string", "_type": "Value"},
        },
    });
    std::fs::write(
        dir.join("dataset_info.json"),
        serde_json::to_vec_pretty(&info).unwrap(),
    )
    .unwrap();
    expected
}

#[test]
fn a_hugging_face_save_to_disk_dataset_packs_its_rows_in_order() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("hf");
    let expected = write_hf(&dir, 3, 120);
    let tables = Tables::scan(std::slice::from_ref(&dir), &TableOptions::new("image")).unwrap();
    assert_eq!(tables.len(), None, "a stream's length is not in its header");
    assert_eq!(tables.units().len(), 3);
    let samples = pack_three_ways(&tables, tables.schema(), root.path());
    assert_eq!(samples, expected);

    // A DatasetDict is one directory per split: refused naming them.
    let dict = root.path().join("dict");
    std::fs::create_dir(&dict).unwrap();
    std::fs::write(
        dict.join("dataset_dict.json"),
        br#"{"splits": ["train", "test"]}"#,
    )
    .unwrap();
    let error = Tables::scan(&[dict], &TableOptions::new("image")).unwrap_err();
    assert!(error.to_string().contains("train"), "{error}");
    assert!(error.to_string().contains("DatasetDict"), "{error}");
}

/// Appends a member to a tar being built.
fn member(tar: &mut tar::Builder<std::fs::File>, name: &str, data: &[u8]) {
    let mut header = tar::Header::new_gnu();
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, name, data).unwrap();
}

/// Three shards of WebDataset samples: jpg payloads (png for some), cls, txt on most, json
/// with ints, floats mixed with ints, strings, bools and nulls; an ignored extra member.
fn write_shards(dir: &Path) -> (Vec<PathBuf>, Samples) {
    std::fs::create_dir_all(dir).unwrap();
    let mut expected = Vec::new();
    let mut tars = Vec::new();
    let mut i = 0usize;
    for shard in 0..3 {
        let path = dir.join(format!("shard-{shard:06}.tar"));
        let mut tar = tar::Builder::new(std::fs::File::create(&path).unwrap());
        for _ in 0..(70 + shard * 20) {
            let key = format!("s{shard}/{i:06}");
            let payload: Vec<u8> = (0..(i * 53) % 3000)
                .map(|b| ((b + i) % 256) as u8)
                .collect();
            let ext = if i % 9 == 0 { "png" } else { "jpg" };
            member(&mut tar, &format!("{key}.{ext}"), &payload);
            member(
                &mut tar,
                &format!("{key}.cls"),
                format!("{}\n", i % 17).as_bytes(),
            );
            let txt = (i % 5 != 0).then(|| format!("caption {i} ü"));
            if let Some(txt) = &txt {
                member(&mut tar, &format!("{key}.txt"), txt.as_bytes());
            }
            let weight = if i % 2 == 0 {
                serde_json::json!(i)
            } else {
                serde_json::json!(i as f64 + 0.5)
            };
            let json = serde_json::json!({
                "width": i % 640,
                "weight": weight,
                "source": if i % 4 == 0 { serde_json::Value::Null } else { serde_json::json!(format!("src{}", i % 3)) },
                "ok": i % 3 == 0,
            });
            member(
                &mut tar,
                &format!("{key}.json"),
                json.to_string().as_bytes(),
            );
            member(&mut tar, &format!("{key}.seg.npy"), b"ignored");
            expected.push((
                payload,
                vec![
                    Value::Utf8(key),
                    Value::Int64((i % 17) as i64),
                    txt.map_or(Value::Null, Value::Utf8),
                    Value::Int64((i % 640) as i64),
                    Value::Float64(if i % 2 == 0 { i as f64 } else { i as f64 + 0.5 }),
                    if i % 4 == 0 {
                        Value::Null
                    } else {
                        Value::Utf8(format!("src{}", i % 3))
                    },
                    Value::Bool(i % 3 == 0),
                ],
            ));
            i += 1;
        }
        tar.finish().unwrap();
        tars.push(path);
    }
    (tars, expected)
}

fn wds_options() -> WebDatasetOptions {
    WebDatasetOptions::new(vec!["jpg".into(), "png".into()])
}

#[test]
fn webdataset_shards_pack_every_member_the_same_with_any_jobs() {
    let root = tempfile::tempdir().unwrap();
    let (tars, expected) = write_shards(&root.path().join("wds"));
    let wds = WebDataset::scan(&tars, wds_options()).unwrap();
    assert_eq!(wds.len(), 70 + 90 + 110);
    let columns: Vec<(String, ColumnType, bool)> = wds
        .schema()
        .columns()
        .iter()
        .map(|c| (c.name.clone(), c.ty, c.nullable))
        .collect();
    let mut names: Vec<&str> = columns.iter().map(|(n, _, _)| n.as_str()).collect();
    names[3..].sort_unstable();
    assert_eq!(
        names,
        ["key", "cls", "txt", "ok", "source", "weight", "width"]
    );
    let column = |name: &str| columns.iter().find(|(n, _, _)| n == name).unwrap().clone();
    assert_eq!(column("cls"), ("cls".into(), ColumnType::Int64, false));
    assert_eq!(column("txt"), ("txt".into(), ColumnType::Utf8, true));
    assert_eq!(
        column("weight"),
        ("weight".into(), ColumnType::Float64, false)
    );
    assert_eq!(column("source"), ("source".into(), ColumnType::Utf8, true));
    let samples = pack_three_ways(&wds, wds.schema(), root.path());
    assert_eq!(samples.len(), expected.len());
    // The json fields' column order is the object's key order; compare by name.
    let order = ["key", "cls", "txt", "width", "weight", "source", "ok"];
    for (i, ((payload, values), (want_payload, want))) in samples.iter().zip(&expected).enumerate()
    {
        assert_eq!(payload, want_payload, "payload of sample {i}");
        for (c, (name, _, _)) in columns.iter().enumerate() {
            let at = order.iter().position(|o| o == name).unwrap();
            assert_eq!(values[c], want[at], "{name} of sample {i}");
        }
    }
}

#[test]
fn bad_webdataset_samples_are_refused_by_tar_and_key_or_skipped() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("bad.tar");
    let mut tar = tar::Builder::new(std::fs::File::create(&path).unwrap());
    member(&mut tar, "a.jpg", b"A");
    member(&mut tar, "a.json", br#"{"w": 1}"#);
    member(&mut tar, "b.cls", b"3");
    member(&mut tar, "b.json", br#"{"w": 2}"#);
    member(&mut tar, "c.jpg", b"C");
    member(&mut tar, "c.json", br#"{"w": [1, 2]}"#);
    member(&mut tar, "d.jpg", b"D");
    member(&mut tar, "d.cls", b"three");
    member(&mut tar, "e.jpg", b"E");
    member(&mut tar, "e.json", br#"{"w": 5}"#);
    tar.finish().unwrap();
    let tars = vec![path.clone()];
    let name = path.display().to_string();

    let error = WebDataset::scan(&tars, wds_options()).unwrap_err();
    assert!(
        matches!(&error, PackError::BadSample { input, key, reason }
            if input == &name && key == "b" && reason.contains("no payload member")),
        "{error}"
    );
    assert_eq!(error.kind(), "bad_sample");

    let wds = WebDataset::scan(&tars, wds_options().skip_bad(true)).unwrap();
    let skipped: Vec<(&str, &str)> = wds
        .skipped()
        .iter()
        .map(|s| (s.key.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert_eq!(skipped[0].0, "b");
    assert_eq!(skipped[1].0, "c");
    assert!(
        skipped[1].1.contains("\"w\" is an array"),
        "{}",
        skipped[1].1
    );
    assert_eq!(skipped[2].0, "d");
    assert!(skipped[2].1.contains("not an int64"), "{}", skipped[2].1);
    let out = root.path().join("c");
    write_cache(&wds, wds.schema().clone(), &out, 2);
    assert_eq!(
        read_back(&out),
        vec![
            (
                b"A".to_vec(),
                vec![Value::Utf8("a".into()), Value::Int64(1)]
            ),
            (
                b"E".to_vec(),
                vec![Value::Utf8("e".into()), Value::Int64(5)]
            ),
        ]
    );

    // Types that differ across samples are refused even with skipping.
    let path = root.path().join("mixed.tar");
    let mut tar = tar::Builder::new(std::fs::File::create(&path).unwrap());
    member(&mut tar, "x/1.jpg", b"1");
    member(&mut tar, "x/1.json", br#"{"label": 1}"#);
    member(&mut tar, "x/2.jpg", b"2");
    member(&mut tar, "x/2.json", br#"{"label": "dog"}"#);
    tar.finish().unwrap();
    let error =
        WebDataset::scan(std::slice::from_ref(&path), wds_options().skip_bad(true)).unwrap_err();
    assert!(
        matches!(&error, PackError::BadSample { input, key, reason }
            if input == &path.display().to_string() && key == "x/2"
                && reason.contains("\"label\" is utf8 here but int64")),
        "{error}"
    );

    // A field with no value anywhere has no type; a gzip-compressed tar is named as such.
    let path = root.path().join("null.tar");
    let mut tar = tar::Builder::new(std::fs::File::create(&path).unwrap());
    member(&mut tar, "n/1.jpg", b"1");
    member(&mut tar, "n/1.json", br#"{"note": null}"#);
    tar.finish().unwrap();
    let error = WebDataset::scan(std::slice::from_ref(&path), wds_options()).unwrap_err();
    assert!(
        matches!(&error, PackError::BadSample { key, reason, .. }
            if key == "n/1" && reason.contains("\"note\" is null in every sample")),
        "{error}"
    );
    let gz = root.path().join("shard.tar.gz");
    std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 0, 0]).unwrap();
    let error = WebDataset::scan(std::slice::from_ref(&gz), wds_options()).unwrap_err();
    assert!(
        matches!(&error, PackError::Input { input, reason }
            if input == &gz.display().to_string() && reason.contains("gzip")),
        "{error}"
    );
}
