//! `dsrt pack --from-parquet` (Parquet files and Hugging Face save_to_disk directories) and
//! `--from-webdataset`: values read back through `dsrt cat`, the same cache for any `--jobs`,
//! refusals that name the file and column or the tar and key and leave nothing behind.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, BinaryArray, Float64Array, Int16Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use common::*;
use dsrt_atlas_test_runner::files_below;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

fn payload(i: usize) -> Vec<u8> {
    (0..(i * 41) % 900)
        .map(|b| ((b * 3 + i) % 256) as u8)
        .collect()
}

/// `rows` rows from `start`: payload `img`, nullable `label` (int16), `score` (float64) and
/// `caption` (string), in row groups of 16 rows.
fn write_parquet(path: &Path, start: usize, rows: usize, with_tags: bool) {
    let ids: Vec<usize> = (start..start + rows).collect();
    let mut fields = vec![
        Field::new("img", DataType::Binary, true),
        Field::new("label", DataType::Int16, true),
        Field::new("score", DataType::Float64, true),
        Field::new("caption", DataType::Utf8, true),
    ];
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(BinaryArray::from_iter_values(
            ids.iter().map(|&i| payload(i)),
        )),
        Arc::new(Int16Array::from_iter(
            ids.iter().map(|&i| (i % 4 != 3).then_some(i as i16)),
        )),
        Arc::new(Float64Array::from_iter(
            ids.iter().map(|&i| Some(i as f64 / 8.0)),
        )),
        Arc::new(StringArray::from_iter(
            ids.iter().map(|&i| (i % 5 != 0).then(|| format!("c{i}"))),
        )),
    ];
    if with_tags {
        let mut tags = ListBuilder::new(StringBuilder::new());
        for _ in &ids {
            tags.values().append_value("t");
            tags.append(true);
        }
        fields.push(Field::new(
            "tags",
            DataType::new_list(DataType::Utf8, true),
            true,
        ));
        columns.push(Arc::new(tags.finish()));
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(16))
        .build();
    let mut writer = ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

fn pack(dir: &Path, input: &[&str], out: &str, extra: &[&str]) -> Run {
    let mut args = vec!["pack"];
    args.extend_from_slice(input);
    args.extend_from_slice(&[
        "--out",
        out,
        "--source",
        "s",
        "--max-shard-bytes",
        "4KiB",
        "--json",
    ]);
    args.extend_from_slice(extra);
    dsrt_in(dir, &args)
}

#[test]
fn parquet_rows_pack_with_their_metadata_the_same_for_any_jobs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pq")).unwrap();
    write_parquet(&dir.path().join("pq/b.parquet"), 50, 30, false);
    write_parquet(&dir.path().join("pq/a.parquet"), 0, 50, false);
    let input = ["--from-parquet", "pq", "--payload-column", "img"];
    let mut caches = Vec::new();
    for jobs in ["1", "2", "3"] {
        let out = format!("c{jobs}");
        let report = pack(dir.path(), &input, &out, &["--jobs", jobs])
            .ok()
            .json();
        assert_eq!(report["samples"], 80);
        assert!(report.get("skipped_bad_samples").is_none(), "{report}");
        caches.push(files_below(&dir.path().join(out)));
    }
    assert!(caches[0].len() > 5);
    assert_eq!(caches[0], caches[1]);
    assert_eq!(caches[0], caches[2]);
    assert_eq!(
        schema_of(dir.path(), "c1"),
        [
            col("label", "int64", true),
            col("score", "float64", true),
            col("caption", "utf8", true)
        ]
    );
    for i in [0usize, 3, 5, 49, 50, 79] {
        let meta = dsrt_in(dir.path(), &["cat", "c2", &i.to_string(), "--metadata"])
            .ok()
            .json();
        let label = if i % 4 == 3 { json!(null) } else { json!(i) };
        let caption = if i % 5 == 0 {
            json!(null)
        } else {
            json!(format!("c{i}"))
        };
        assert_eq!(
            meta,
            json!({"label": label, "score": i as f64 / 8.0, "caption": caption})
        );
        assert_eq!(cat(dir.path(), "c2", i as u64), payload(i), "payload {i}");
    }
    // Chosen columns in the chosen order.
    let chosen = [
        "--from-parquet",
        "pq/a.parquet",
        "--payload-column",
        "img",
        "--metadata-columns",
        "caption,label",
    ];
    pack(dir.path(), &chosen, "chosen", &[]).ok();
    assert_eq!(
        schema_of(dir.path(), "chosen"),
        [col("caption", "utf8", true), col("label", "int64", true)]
    );
    dsrt_in(dir.path(), &["verify", "--full", "chosen"]).ok();
}

#[test]
fn a_parquet_column_the_cache_cannot_hold_is_refused_by_name_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    write_parquet(&dir.path().join("t.parquet"), 0, 20, true);
    let input = ["--from-parquet", "t.parquet", "--payload-column", "img"];
    let run = pack(dir.path(), &input, "c", &[]).fails(1);
    assert!(
        run.stderr.contains("t.parquet") && run.stderr.contains("column \"tags\""),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("c").exists());
    let run = pack(
        dir.path(),
        &["--from-parquet", "t.parquet", "--payload-column", "jpg"],
        "c",
        &[],
    )
    .fails(1);
    assert!(
        run.stderr.contains("column \"jpg\": no such column"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("c").exists());
    // Leaving it out packs.
    let ok = [
        "--from-parquet",
        "t.parquet",
        "--payload-column",
        "img",
        "--metadata-columns",
        "label",
    ];
    assert_eq!(pack(dir.path(), &ok, "c", &[]).ok().json()["samples"], 20);
    // The payload column is required.
    let run = dsrt_in(
        dir.path(),
        &[
            "pack",
            "--from-parquet",
            "t.parquet",
            "--out",
            "d",
            "--source",
            "s",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn a_hugging_face_save_to_disk_directory_packs_through_from_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let hf = dir.path().join("hf");
    std::fs::create_dir(&hf).unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("text", DataType::Utf8, true),
        Field::new("label", DataType::Int64, true),
    ]));
    let mut writer = arrow_ipc::writer::StreamWriter::try_new(
        std::fs::File::create(hf.join("data-00000-of-00001.arrow")).unwrap(),
        &schema,
    )
    .unwrap();
    for chunk in 0..3i64 {
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(
                    (0..10).map(|k| format!("text {}", chunk * 10 + k)),
                )),
                Arc::new(arrow_array::Int64Array::from_iter_values(
                    (0..10).map(|k| (chunk * 10 + k) % 2),
                )),
            ],
        )
        .unwrap();
        writer.write(&batch).unwrap();
    }
    writer.finish().unwrap();
    std::fs::write(
        hf.join("state.json"),
        br#"{"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_fingerprint": "f", "_format_columns": null, "_format_kwargs": {}, "_format_type": null, "_output_all_columns": false, "_split": null}"#,
    )
    .unwrap();
    std::fs::write(hf.join("dataset_info.json"), br#"{"features": {}}"#).unwrap();
    let report = pack(
        dir.path(),
        &["--from-parquet", "hf", "--payload-column", "text"],
        "c",
        &["--jobs", "2"],
    )
    .ok()
    .json();
    assert_eq!(report["samples"], 30);
    assert_eq!(cat(dir.path(), "c", 17), b"text 17");
    let meta = dsrt_in(dir.path(), &["cat", "c", "17", "--metadata"])
        .ok()
        .json();
    assert_eq!(meta, json!({"label": 1}));
}

fn member(tar: &mut tar::Builder<std::fs::File>, name: &str, data: &[u8]) {
    let mut header = tar::Header::new_gnu();
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, name, data).unwrap();
}

/// Two shards of 40 samples; key `000013` of the second has no payload.
fn write_shards(dir: &Path) {
    for shard in 0..2usize {
        let mut tar =
            tar::Builder::new(std::fs::File::create(dir.join(format!("{shard}.tar"))).unwrap());
        for k in 0..40usize {
            let i = shard * 40 + k;
            let key = format!("{i:06}");
            if i != 53 {
                member(&mut tar, &format!("{key}.jpg"), &payload(i));
            }
            member(
                &mut tar,
                &format!("{key}.cls"),
                (i % 3).to_string().as_bytes(),
            );
            member(
                &mut tar,
                &format!("{key}.json"),
                json!({"w": i, "src": "web"}).to_string().as_bytes(),
            );
        }
        tar.finish().unwrap();
    }
}

#[test]
fn webdataset_shards_pack_skip_or_refuse_bad_samples() {
    let dir = tempfile::tempdir().unwrap();
    write_shards(dir.path());
    let input = [
        "--from-webdataset",
        "0.tar",
        "1.tar",
        "--payload-ext",
        "png,jpg",
    ];
    let run = pack(dir.path(), &input, "c", &[]).fails(1);
    assert!(
        run.stderr.contains("1.tar")
            && run.stderr.contains("sample \"000053\"")
            && run.stderr.contains("no payload member"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("c").exists());

    let mut caches = Vec::new();
    for jobs in ["1", "2"] {
        let out = format!("c{jobs}");
        let report = pack(dir.path(), &input, &out, &["--skip-bad", "--jobs", jobs])
            .ok()
            .json();
        assert_eq!(report["samples"], 79);
        assert_eq!(report["skipped_bad_samples"], 1);
        caches.push(files_below(&dir.path().join(out)));
    }
    assert_eq!(caches[0], caches[1]);
    assert_eq!(
        schema_of(dir.path(), "c1"),
        [
            col("key", "utf8", false),
            col("cls", "int64", false),
            col("src", "utf8", false),
            col("w", "int64", false)
        ]
    );
    for (sample, i) in [(0u64, 0usize), (52, 52), (53, 54), (78, 79)] {
        assert_eq!(cat(dir.path(), "c1", sample), payload(i));
        let meta = dsrt_in(
            dir.path(),
            &["cat", "c1", &sample.to_string(), "--metadata"],
        )
        .ok()
        .json();
        assert_eq!(
            meta,
            json!({"key": format!("{i:06}"), "cls": i % 3, "w": i, "src": "web"})
        );
    }
    // The text summary says what was skipped.
    let run = dsrt_in(
        dir.path(),
        &[
            "pack",
            "--from-webdataset",
            "0.tar",
            "1.tar",
            "--payload-ext",
            "jpg",
            "--skip-bad",
            "--out",
            "t",
            "--source",
            "s",
        ],
    )
    .ok();
    assert!(
        run.stdout_text().contains("skipped 1 bad samples"),
        "{}",
        run.stdout_text()
    );
    assert!(
        run.stderr.contains("skipped sample \"000053\""),
        "{}",
        run.stderr
    );
}
