//! Batches of samples as Arrow record batches: the columnar and located batches of a dataset
//! whose caches differ (compressed or not, other columns, another type for one column), and a
//! cache's range with its declared column types.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt64Type};
use arrow_array::Array;
use arrow_schema::DataType;
use dsrt_dataset::{read_arrow, BatchRow, Dataset, DatasetError, PayloadAt};
use dsrt_manifest::CompressionAlgo;
use dsrt_reader::OpenOptions;
use dsrt_schema::{Column, ColumnType, Row, Schema, Value};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::path::Path;

fn payload(cache: usize, sample: u64) -> Vec<u8> {
    format!("cache {cache} sample {sample} ")
        .repeat(1 + sample as usize % 5)
        .into_bytes()
}

/// Cache 0: `label` int64 and `text` utf8, uncompressed, 8 samples to a shard; cache 1: `label`
/// utf8 (nullable), LZ4.
fn dataset(dir: &Path, samples: u64) -> Dataset {
    let first = Schema::new(vec![
        Column::new("label", ColumnType::Int64, false),
        Column::new("text", ColumnType::Utf8, false),
    ])
    .unwrap();
    let second = Schema::new(vec![Column::new("label", ColumnType::Utf8, true)]).unwrap();
    let options = [
        WriterOptions::new("a", first).max_shard_bytes(8 * 200),
        WriterOptions::new("b", second).compression(CompressionAlgo::Lz4),
    ];
    let mut paths = Vec::new();
    for (cache, options) in options.into_iter().enumerate() {
        let path = dir.join(format!("c{cache}"));
        let mut writer = CacheWriter::create(&path, options).unwrap();
        for i in 0..samples {
            let row = match cache {
                0 => Row::new()
                    .with("label", i as i64)
                    .with("text", format!("t{i}")),
                _ if i % 3 == 0 => Row::new().with("label", Value::Null),
                _ => Row::new().with("label", format!("l{i}")),
            };
            writer.add(&payload(cache, i), &row).unwrap();
        }
        writer.finish().unwrap();
        paths.push(path);
    }
    Dataset::open(&paths, OpenOptions::default()).unwrap()
}

/// Rows alternating between the caches, steps from 10.
fn rows(samples: u64) -> Vec<BatchRow> {
    (0..2 * samples)
        .map(|i| BatchRow {
            cache: (i % 2) as usize,
            sample_id: (i * 7 + 3) % samples,
            step: 10 + i,
            padding: i == 2 * samples - 1,
        })
        .collect()
}

#[test]
fn a_columnar_batch_holds_every_payload_key_step_and_metadata_column() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dataset(dir.path(), 40);
    let rows = rows(40);
    let batch = dataset.read_columnar(&rows).unwrap();
    let names: Vec<&str> = batch
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["payload", "key", "padding", "step", "metadata"]);
    let payloads = batch.column(0).as_binary::<i64>();
    let keys = batch.column(1).as_fixed_size_list();
    let steps = batch.column(3).as_primitive::<Int64Type>();
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(payloads.value(i), payload(row.cache, row.sample_id));
        let key = keys.value(i);
        let key = key.as_primitive::<UInt64Type>();
        let cache_id = dataset.caches()[row.cache].cache_id;
        assert_eq!((key.value(0), key.value(1)), (cache_id, row.sample_id));
        assert_eq!(steps.value(i), row.step as i64);
        assert_eq!(batch.column(2).as_boolean().value(i), row.padding);
    }
    // `label` is int64 in one cache and utf8 in the other: a dense union; `text` only in the
    // first cache: null in the rows of the second.
    let metadata = batch.column(4).as_struct();
    assert!(matches!(
        metadata.column_by_name("label").unwrap().data_type(),
        DataType::Union(..)
    ));
    let text = metadata.column_by_name("text").unwrap().as_string::<i32>();
    assert_eq!(text.value(0), format!("t{}", rows[0].sample_id));
    assert!(text.is_null(1));
}

#[test]
fn a_located_batch_names_the_shard_file_of_each_stored_payload_and_decodes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dataset(dir.path(), 40);
    let rows = rows(40);
    let batch = dataset.read_located(&rows).unwrap();
    let names: Vec<&str> = batch
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(
        names,
        ["shard", "offset", "length", "decoded", "key", "padding", "step", "metadata"]
    );
    let shards = batch.column(0).as_dictionary::<Int32Type>();
    let paths = shards.values().as_string::<i32>();
    assert!(
        paths.len() > 1 && paths.len() < rows.len(),
        "one entry per shard file"
    );
    let offsets = batch.column(1).as_primitive::<Int64Type>();
    let lengths = batch.column(2).as_primitive::<Int64Type>();
    let decoded = batch.column(3).as_binary::<i64>();
    for (i, row) in rows.iter().enumerate() {
        let want = payload(row.cache, row.sample_id);
        if row.cache == 0 {
            let path = paths.value(shards.keys().value(i) as usize);
            let file = std::fs::read(path).unwrap();
            let at = offsets.value(i) as usize;
            assert_eq!(&file[at..at + lengths.value(i) as usize], want);
            assert!(decoded.is_null(i));
        } else {
            assert!(
                shards.is_null(i),
                "a compressed payload has no place in a file"
            );
            assert_eq!(decoded.value(i), want);
            assert_eq!(lengths.value(i) as usize, want.len());
        }
    }
}

#[test]
fn located_payloads_are_read_in_place_or_from_the_decoded_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dataset(dir.path(), 12);
    let items: Vec<_> = (0..24u64)
        .map(|i| (&dataset.caches()[(i % 2) as usize].cache, i / 2))
        .collect();
    let located = dsrt_dataset::read_located(&items).unwrap();
    for (i, place) in located.places.iter().enumerate() {
        assert_eq!(place.bytes(&located.decoded), payload(i % 2, i as u64 / 2));
        assert_eq!(matches!(place, PayloadAt::InShard { .. }), i % 2 == 0);
    }
}

#[test]
fn a_caches_range_keeps_its_declared_types_and_bad_ranges_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dataset(dir.path(), 12);
    let second = &dataset.caches()[1].cache;
    // Rows 3 and 6 hold null labels only: the column stays utf8, not a null array.
    let batch = read_arrow(second, 3..4).unwrap();
    assert_eq!(batch.schema_ref().field(1).data_type(), &DataType::Utf8);
    assert!(batch.column(1).is_null(0));
    let batch = read_arrow(second, 0..12).unwrap();
    assert_eq!(batch.num_rows(), 12);
    assert_eq!(batch.column(0).as_binary::<i64>().value(5), payload(1, 5));
    #[allow(clippy::reversed_empty_ranges)] // a start past the end is what is refused
    let backwards = 5..4;
    for bad in [backwards, 0..13] {
        let error = read_arrow(second, bad).unwrap_err();
        assert!(matches!(error, DatasetError::Batch(_)), "{error}");
    }
}

#[test]
fn a_row_past_the_caches_or_a_step_past_int64_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dataset(dir.path(), 4);
    let row = BatchRow {
        cache: 2,
        sample_id: 0,
        step: 0,
        padding: false,
    };
    assert!(matches!(
        dataset.read_columnar(&[row]),
        Err(DatasetError::Batch(_))
    ));
    let row = BatchRow {
        cache: 0,
        step: u64::MAX,
        ..row
    };
    assert!(matches!(
        dataset.read_located(&[row]),
        Err(DatasetError::Plan(_))
    ));
}

#[test]
fn a_located_batch_read_back_gives_every_payload_and_refuses_a_shorter_file() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dataset(dir.path(), 40);
    let rows = rows(40);
    let batch = dataset.read_located(&rows).unwrap();
    let located = dsrt_dataset::LocatedColumns::of(&batch).unwrap();
    let files: Vec<Vec<u8>> = located
        .shard_paths()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let lens: Vec<usize> = files.iter().map(Vec::len).collect();
    let ranges = located.ranges(&lens).unwrap();
    for (row, (file, range)) in rows.iter().zip(ranges.clone()) {
        let bytes = match file {
            Some(file) => &files[file][range],
            None => &located.decoded()[range],
        };
        assert_eq!(bytes, payload(row.cache, row.sample_id));
    }
    // A file now shorter than a payload it held.
    let (file, range) = ranges
        .iter()
        .find_map(|(f, r)| Some((f.as_ref()?, r)))
        .unwrap();
    let mut short = lens.clone();
    short[*file] = range.end - 1;
    let past = located.ranges(&short).unwrap_err();
    assert_eq!((past.file, past.file_len), (*file, range.end - 1));
    let columnar = dataset.read_columnar(&rows).unwrap();
    assert!(matches!(
        dsrt_dataset::LocatedColumns::of(&columnar),
        Err(DatasetError::Batch(_))
    ));
}
