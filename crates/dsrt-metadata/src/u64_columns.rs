//! Arrow IPC files of non-null `UInt64` columns, such as a dataset's sample table
//! (`cache_id`, `sample_id`): written here, and read behind the same panic guard as
//! `metadata.arrow`, so every Arrow IPC byte the project parses goes through this crate.

use arrow_array::{Array, ArrayRef, RecordBatch, UInt64Array};
use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType, Field, Schema};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use thiserror::Error;

/// Why a file of `UInt64` columns cannot be written or read.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum U64ColumnsError {
    /// Not an Arrow IPC file, or a malformed one (including input that made arrow's decoder
    /// panic, caught here).
    #[error("not a valid Arrow IPC file: {0}")]
    Arrow(String),
    /// A column asked for is absent, or not `UInt64`.
    #[error("no UInt64 column {0:?}")]
    MissingColumn(String),
    /// A column holds nulls.
    #[error("column {0:?} holds nulls")]
    Nulls(String),
}

impl From<arrow_schema::ArrowError> for U64ColumnsError {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Self::Arrow(e.to_string())
    }
}

/// An Arrow IPC file (one record batch) of non-null `UInt64` columns `names`, holding
/// `columns`. Columns of different lengths are an error.
pub fn encode_u64_columns<const N: usize>(
    names: [&str; N],
    columns: [&[u64]; N],
) -> Result<Vec<u8>, U64ColumnsError> {
    let schema = Arc::new(Schema::new(
        names
            .iter()
            .map(|name| Field::new(*name, DataType::UInt64, false))
            .collect::<Vec<_>>(),
    ));
    let arrays: Vec<ArrayRef> = columns
        .iter()
        .map(|values| Arc::new(UInt64Array::from_iter_values(values.iter().copied())) as ArrayRef)
        .collect();
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays)?;
    let mut bytes = Vec::new();
    let mut writer = FileWriter::try_new(&mut bytes, &schema)?;
    writer.write(&batch)?;
    writer.finish()?;
    drop(writer);
    Ok(bytes)
}

/// The values of the `UInt64` columns `names` of the Arrow IPC file `bytes`, over all its
/// batches. Other columns are ignored. A panic inside arrow's decoder is a typed error.
pub fn decode_u64_columns<const N: usize>(
    bytes: &[u8],
    names: [&str; N],
) -> Result<[Vec<u64>; N], U64ColumnsError> {
    catch_unwind(AssertUnwindSafe(|| decode(bytes, names))).unwrap_or_else(|_| {
        Err(U64ColumnsError::Arrow(
            "the decoder rejected the file".into(),
        ))
    })
}

fn decode<const N: usize>(
    bytes: &[u8],
    names: [&str; N],
) -> Result<[Vec<u64>; N], U64ColumnsError> {
    let reader = FileReader::try_new(std::io::Cursor::new(bytes), None)?;
    let schema = reader.schema();
    let mut indices = [0usize; N];
    for (slot, name) in indices.iter_mut().zip(names) {
        *slot = schema
            .index_of(name)
            .ok()
            .filter(|&i| schema.field(i).data_type() == &DataType::UInt64)
            .ok_or_else(|| U64ColumnsError::MissingColumn(name.to_owned()))?;
    }
    let mut out: [Vec<u64>; N] = std::array::from_fn(|_| Vec::new());
    for batch in reader {
        let batch = batch?;
        for ((values, &index), name) in out.iter_mut().zip(&indices).zip(names) {
            let column = batch
                .columns()
                .get(index)
                .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
                .ok_or_else(|| U64ColumnsError::MissingColumn(name.to_owned()))?;
            if column.null_count() > 0 {
                return Err(U64ColumnsError::Nulls(name.to_owned()));
            }
            values.extend_from_slice(column.values());
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_typed_refusals() {
        let bytes = encode_u64_columns(["a", "b"], [&[1, 2, 3], &[4, 5, 6]]).unwrap();
        assert_eq!(
            decode_u64_columns(&bytes, ["b", "a"]).unwrap(),
            [vec![4, 5, 6], vec![1, 2, 3]]
        );
        assert_eq!(
            decode_u64_columns(&bytes, ["c"]),
            Err(U64ColumnsError::MissingColumn("c".into()))
        );
        assert!(matches!(
            decode_u64_columns(b"not arrow", ["a"]),
            Err(U64ColumnsError::Arrow(_))
        ));
        assert!(encode_u64_columns(["a", "b"], [&[1], &[]]).is_err());
    }
}
