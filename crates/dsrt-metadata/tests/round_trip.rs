//! metadata.arrow written by this crate, read back by it and by arrow-ipc's own reader.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_metadata::{MetadataError, MetadataTable, MetadataWriter};
use dsrt_schema::{Column, ColumnType, Schema, Value, ValueRef};
use proptest::prelude::*;

fn schema() -> Schema {
    Schema::new(vec![
        Column::new("flag", ColumnType::Bool, true),
        Column::new("label", ColumnType::Int64, false),
        Column::new("score", ColumnType::Float64, true),
        Column::new("caption", ColumnType::Utf8, true),
    ])
    .unwrap()
}

fn value_strategy(ty: ColumnType, nullable: bool) -> BoxedStrategy<Value> {
    let base = match ty {
        ColumnType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        ColumnType::Int64 => prop_oneof![Just(i64::MIN), Just(i64::MAX), any::<i64>()]
            .prop_map(Value::Int64)
            .boxed(),
        ColumnType::Float64 => prop_oneof![
            Just(-0.0f64),
            Just(f64::MIN_POSITIVE / 2.0),
            Just(f64::MAX),
            any::<f64>().prop_filter("finite", |v| v.is_finite())
        ]
        .prop_map(Value::Float64)
        .boxed(),
        ColumnType::Utf8 => "\\PC{0,12}".prop_map(Value::Utf8).boxed(),
    };
    if nullable {
        prop_oneof![1 => Just(Value::Null), 4 => base].boxed()
    } else {
        base
    }
}

fn rows_strategy() -> impl Strategy<Value = Vec<Vec<Value>>> {
    let columns: Vec<_> = schema()
        .columns()
        .iter()
        .map(|c| value_strategy(c.ty, c.nullable))
        .collect();
    proptest::collection::vec(columns, 0..40)
}

fn write(rows: &[Vec<Value>], batch_rows: usize) -> Vec<u8> {
    let mut writer = MetadataWriter::with_batch_rows(Vec::new(), &schema(), batch_rows).unwrap();
    for row in rows {
        let values: Vec<ValueRef<'_>> = row.iter().map(Value::as_ref).collect();
        writer.push(&values).unwrap();
    }
    let (bytes, digest, count) = writer.finish().unwrap();
    assert_eq!(count, rows.len() as u64);
    assert_eq!(digest, dsrt_atlas_codec::sha::sha256(&bytes));
    bytes
}

proptest! {
    #[test]
    fn round_trips(rows in rows_strategy(), batch_rows in 1usize..8) {
        let table = MetadataTable::from_bytes(write(&rows, batch_rows)).unwrap();
        prop_assert_eq!(table.num_rows(), rows.len() as u64);
        table.check_schema(&schema()).unwrap();
        for (i, row) in rows.iter().enumerate() {
            let view = table.row(i as u64).unwrap();
            for (c, expected) in row.iter().enumerate() {
                prop_assert!(view.get(c).unwrap().same_as(&expected.as_ref()), "row {} col {}", i, c);
            }
        }
        prop_assert!(table.row(rows.len() as u64).is_none());
        let labels: Vec<_> = table.column(1).unwrap().values().collect();
        prop_assert_eq!(labels.len(), rows.len());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = MetadataTable::from_bytes(bytes);
    }

    #[test]
    fn every_single_byte_corruption_is_an_error_or_a_table(position in 0usize..10_000, xor in 1u8..=255) {
        let rows = vec![vec![Value::Bool(true), Value::Int64(7), Value::Float64(0.5), Value::from("hi")]; 3];
        let mut bytes = write(&rows, 2);
        let position = position % bytes.len();
        bytes[position] ^= xor;
        if let Ok(table) = MetadataTable::from_bytes(bytes) {
            for i in 0..table.num_rows() {
                let _ = table.row(i).map(|r| r.values().count());
            }
        }
    }
}

#[test]
fn plain_arrow_ipc_reads_the_file() {
    let rows = vec![
        vec![
            Value::Null,
            Value::Int64(-1),
            Value::Float64(2.5),
            Value::from("é")
        ];
        5
    ];
    let bytes = write(&rows, 2);
    assert_eq!(&bytes[..6], b"ARROW1");
    let reader = arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(bytes), None).unwrap();
    assert_eq!(reader.schema().fields().len(), 4);
    assert_eq!(
        reader.schema().field(1).data_type(),
        &arrow_schema::DataType::Int64
    );
    assert!(!reader.schema().field(1).is_nullable());
    let total: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(total, 5);
}

#[test]
fn maps_a_file_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metadata.arrow");
    let rows: Vec<Vec<Value>> = (0..1000)
        .map(|i| {
            vec![
                Value::Bool(i % 2 == 0),
                Value::Int64(i),
                Value::Null,
                Value::from(format!("s{i}")),
            ]
        })
        .collect();
    std::fs::write(&path, write(&rows, 64)).unwrap();
    let table = MetadataTable::open(&path).unwrap();
    assert_eq!(table.num_rows(), 1000);
    assert_eq!(table.value(999, 1), Some(ValueRef::Int64(999)));
    assert_eq!(table.value(500, 3), Some(ValueRef::Utf8("s500")));
    assert_eq!(table.record_batches().len(), 16);
}

#[test]
fn schema_mismatch_names_the_column() {
    let table = MetadataTable::from_bytes(write(&[], 4)).unwrap();
    let mut columns = schema().columns().to_vec();
    columns[2].nullable = false;
    let err = table
        .check_schema(&Schema::new(columns.clone()).unwrap())
        .unwrap_err();
    assert!(
        matches!(err, MetadataError::SchemaMismatch { position: 2, .. }),
        "{err}"
    );
    let mut columns = schema().columns().to_vec();
    columns.pop();
    let err = table
        .check_schema(&Schema::new(columns).unwrap())
        .unwrap_err();
    assert!(
        err.to_string().contains("extra column \"caption\""),
        "{err}"
    );
}

#[test]
fn writer_refuses_a_value_of_the_wrong_type_without_corrupting_the_batch() {
    let mut writer = MetadataWriter::new(Vec::new(), &schema()).unwrap();
    let bad = [
        ValueRef::Bool(true),
        ValueRef::Utf8("x"),
        ValueRef::Null,
        ValueRef::Null,
    ];
    assert!(matches!(
        writer.push(&bad),
        Err(MetadataError::ValueType { .. })
    ));
    writer
        .push(&[
            ValueRef::Null,
            ValueRef::Int64(1),
            ValueRef::Null,
            ValueRef::Null,
        ])
        .unwrap();
    let (bytes, _, rows) = writer.finish().unwrap();
    assert_eq!(rows, 1);
    assert_eq!(
        MetadataTable::from_bytes(bytes).unwrap().value(0, 1),
        Some(ValueRef::Int64(1))
    );
}

#[test]
fn foreign_column_types_are_refused() {
    use arrow_array::{Int32Array, RecordBatch};
    use std::sync::Arc;
    let batch =
        RecordBatch::try_from_iter([("n", Arc::new(Int32Array::from(vec![1])) as _)]).unwrap();
    let mut bytes = Vec::new();
    let mut writer =
        arrow_ipc::writer::FileWriter::try_new(&mut bytes, batch.schema().as_ref()).unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    drop(writer);
    let err = MetadataTable::from_bytes(bytes).unwrap_err();
    assert!(
        matches!(err, MetadataError::UnsupportedType { .. }),
        "{err}"
    );
}

/// Batches of `rows` rows of one int64 column `label`, as arrow-ipc writes them.
fn batches_file(rows: &[usize]) -> Vec<u8> {
    use arrow_array::{Int64Array, RecordBatch};
    use std::sync::Arc;
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "label",
        arrow_schema::DataType::Int64,
        false,
    )]));
    let mut bytes = Vec::new();
    let mut writer = arrow_ipc::writer::FileWriter::try_new(&mut bytes, &schema).unwrap();
    for &n in rows {
        let column = Int64Array::from((0..n as i64).collect::<Vec<_>>());
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(column)]).unwrap();
        writer.write(&batch).unwrap();
    }
    writer.finish().unwrap();
    drop(writer);
    bytes
}

/// A file of a hundred thousand empty batches (the million cost 1.1 GiB and 3.8 s per
/// open) is refused at the second one; a leading empty batch, as some writers emit, is not.
#[test]
fn more_batches_than_rows_are_refused_before_they_are_decoded() {
    let mut rows = vec![1];
    rows.extend(std::iter::repeat_n(0, 100_000));
    let file = batches_file(&rows);
    let started = std::time::Instant::now();
    let err = MetadataTable::from_bytes(file).unwrap_err();
    assert!(
        err.to_string().contains("more batches than rows")
            && err.to_string().contains("100001 batches"),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let table = MetadataTable::from_bytes(batches_file(&[0, 3, 2])).unwrap();
    assert_eq!(table.num_rows(), 5);
    assert_eq!(
        MetadataTable::from_bytes(batches_file(&[0]))
            .unwrap()
            .num_rows(),
        0
    );
    assert_eq!(
        MetadataTable::from_bytes(batches_file(&[]))
            .unwrap()
            .num_rows(),
        0
    );
}
