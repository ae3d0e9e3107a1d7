//! A token batch as Arrow record batches, for any consumer that takes Arrow (the Python
//! binding hands them to NumPy, PyTorch and pyarrow without a copy).
//!
//! Two forms, each one record batch with a row per training row:
//!
//! - **expanded** ([`TokenBatch::expanded_record`]): `input_ids`, `labels`, `position_ids`
//!   (int64, or int32 in a batch of [`crate::IdsDtype::Int32`]), `segment_ids` (int32) and
//!   `loss_mask` (uint8), each a fixed-size list of `seq_len`; `cu_seqlens` (int32), row `r`'s
//!   list holding the sequence starts that lie in it, and the list's child array one more
//!   value after the last row's (`rows * seq_len`), so that the child is exactly
//!   flash-attention's `cu_seqlens`; then the row columns.
//! - **compact** ([`TokenBatch::compact_record`]): `tokens` (uint32, a fixed-size list of
//!   `seq_len + 1`), then the row columns, with the id columns' type in the schema's metadata
//!   ([`IDS_DTYPE_KEY`]); what crosses a process boundary, a quarter of the expanded bytes or
//!   less, turned back into a batch by [`TokenBatch::from_compact_record`].
//!   What crosses a process boundary is [`TokenBatch::transfer_record`]: the compact form with
//!   `tokens` as uint16 when every id of the batch fits 16 bits (vocabularies of up to 65,536
//!   ids), an eighth of the expanded bytes; `from_compact_record` takes either width.
//!
//! The row columns: `documents` (each row's pieces as a list of `cache_id`, `sample_id`,
//! `start` (uint64) and `length` (uint32) structs), `padding` (bool) and `step` (int64).
//!
//! [`tensor_columns`] finds the expanded form's six tensor columns as plain buffers with their
//! shapes and NumPy type strings, for a consumer that makes tensors over them in one call.

use crate::batch::{BatchPiece, BatchPool, Column, IdColumn, TokenBatch};
use crate::{IdsDtype, TokenStreamError};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BooleanArray, FixedSizeListArray, Int64Array, ListArray,
    PrimitiveArray, RecordBatch, StructArray, UInt16Array, UInt32Array, UInt64Array,
};
use arrow_buffer::{ArrowNativeType, Buffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema};
use std::sync::Arc;

/// Arrow refusing arrays this module built from a batch's own consistent parts: a bug here.
fn built(error: ArrowError) -> TokenStreamError {
    TokenStreamError::Config(format!("building a token batch's Arrow form: {error}"))
}

/// A column as an Arrow array over its own memory (back to its pool when Arrow lets go).
fn primitive<T: ArrowPrimitiveType>(column: Column<T::Native>) -> ArrayRef {
    let len = column.len();
    let buffer = Buffer::from(bytes::Bytes::from_owner(column.into_shared()));
    Arc::new(PrimitiveArray::<T>::new(
        ScalarBuffer::new(buffer, 0, len),
        None,
    ))
}

/// An id column as an Arrow array of its type.
fn ids(column: IdColumn) -> ArrayRef {
    match column {
        IdColumn::Int64(c) => primitive::<Int64Type>(c),
        IdColumn::Int32(c) => primitive::<Int32Type>(c),
    }
}

/// The six tensor columns of a batch as Arrow arrays (`rows * seq_len` values each, the last
/// `cu_seqlens`), before they become the expanded form's lists.
pub(crate) struct TensorArrays {
    pub(crate) input_ids: ArrayRef,
    pub(crate) labels: ArrayRef,
    pub(crate) position_ids: ArrayRef,
    pub(crate) segment_ids: ArrayRef,
    pub(crate) loss_mask: ArrayRef,
    pub(crate) cu_seqlens: ArrayRef,
}

/// `values` as a fixed-size list of `size` per row.
fn fixed_rows(values: ArrayRef, size: usize) -> Result<FixedSizeListArray, TokenStreamError> {
    let item = Arc::new(Field::new("item", values.data_type().clone(), false));
    let size = i32::try_from(size).map_err(|_| {
        TokenStreamError::Config(format!("rows of {size} values do not fit an Arrow list"))
    })?;
    FixedSizeListArray::try_new(item, size, values, None).map_err(built)
}

fn record(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch, TokenStreamError> {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, array)| Field::new(*name, array.data_type().clone(), false))
        .collect();
    let arrays = columns.into_iter().map(|(_, array)| array).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map_err(built)
}

fn piece_fields() -> Fields {
    let field = |name: &str, ty: DataType| Arc::new(Field::new(name, ty, false));
    Fields::from(vec![
        field("cache_id", DataType::UInt64),
        field("sample_id", DataType::UInt64),
        field("start", DataType::UInt64),
        field("length", DataType::UInt32),
    ])
}

/// Offsets as Arrow's `i32`, refusing any past its range (a batch is far below it).
fn offsets(values: impl Iterator<Item = usize>) -> Result<OffsetBuffer<i32>, TokenStreamError> {
    let offsets = values
        .map(|o| {
            i32::try_from(o).map_err(|_| {
                TokenStreamError::Config(format!("offset {o} past an Arrow list's range"))
            })
        })
        .collect::<Result<Vec<i32>, _>>()?;
    Ok(OffsetBuffer::new(ScalarBuffer::from(offsets)))
}

/// The tensor columns of the expanded form, in the order [`tensor_columns`] returns them.
pub const TENSOR_COLUMNS: [&str; 6] = [
    "input_ids",
    "labels",
    "position_ids",
    "segment_ids",
    "loss_mask",
    "cu_seqlens",
];

/// The compact form's schema metadata key naming the id columns' type ([`IdsDtype::name`]).
pub const IDS_DTYPE_KEY: &str = "ids_dtype";

/// NumPy's array-interface type string of a tensor column's values.
fn typestr(values: &DataType) -> Option<&'static str> {
    match values {
        DataType::Int64 => Some("<i8"),
        DataType::Int32 => Some("<i4"),
        DataType::UInt8 => Some("|u1"),
        _ => None,
    }
}

/// One tensor column of an expanded record batch as plain memory: the Arrow buffer holding
/// its values (which keeps the batch's memory alive), where they begin, their shape and
/// their NumPy type string (NumPy's array interface reads it as is).
#[derive(Debug, Clone)]
pub struct TensorColumn {
    /// The column's name (see [`TENSOR_COLUMNS`]).
    pub name: &'static str,
    /// The buffer the values lie in.
    pub buffer: Buffer,
    /// Where the values begin in `buffer`, in bytes.
    pub offset: usize,
    /// `[rows, seq_len]`, or `[sequences + 1]` for `cu_seqlens`.
    pub shape: Vec<usize>,
    /// `"<i8"`, `"<i4"` or `"|u1"` (the id columns are `"<i4"` in a batch of
    /// [`crate::IdsDtype::Int32`]).
    pub typestr: &'static str,
}

/// The [`TENSOR_COLUMNS`] of `record`, an expanded form ([`TokenBatch::expanded_record`]) of
/// rows of `seq_len`, in that order, over the record batch's own buffers (nothing is copied).
/// A record batch without one of them is [`TokenStreamError::Config`] naming it.
pub fn tensor_columns(
    record: &RecordBatch,
    seq_len: usize,
) -> Result<Vec<TensorColumn>, TokenStreamError> {
    let rows = record.num_rows();
    let column = |name: &str| {
        (record.column_by_name(name))
            .ok_or_else(|| TokenStreamError::Config(format!("a token batch has no column {name}")))
    };
    TENSOR_COLUMNS
        .iter()
        .map(|&name| {
            let column = column(name)?;
            let (values, shape) = if name == "cu_seqlens" {
                let list = column.as_list_opt::<i32>();
                let values = list.map(|l| l.values().to_data());
                let len = values.as_ref().map_or(0, |v| v.len());
                (values, vec![len])
            } else {
                let list = column.as_fixed_size_list_opt();
                (list.map(|l| l.values().to_data()), vec![rows, seq_len])
            };
            let values = values.ok_or_else(|| {
                TokenStreamError::Config(format!("a token batch's {name} is not a list"))
            })?;
            let typestr = typestr(values.data_type()).ok_or_else(|| {
                TokenStreamError::Config(format!(
                    "a token batch's {name} holds {}, not a tensor type",
                    values.data_type()
                ))
            })?;
            let buffer = (values.buffers().first().cloned())
                .unwrap_or_else(|| Buffer::from_vec(Vec::<u8>::new()));
            Ok(TensorColumn {
                name,
                buffer,
                offset: values.offset() * values.data_type().primitive_width().unwrap_or(1),
                shape,
                typestr,
            })
        })
        .collect()
}

impl TokenBatch {
    /// `documents`, `padding` and `step`: the columns both forms end with.
    fn row_columns(&self) -> Result<Vec<(&'static str, ArrayRef)>, TokenStreamError> {
        let pieces = self.pieces();
        let fields = piece_fields();
        let values = StructArray::try_new(
            fields.clone(),
            vec![
                Arc::new(UInt64Array::from_iter_values(
                    pieces.iter().map(|p| p.key.0),
                )),
                Arc::new(UInt64Array::from_iter_values(
                    pieces.iter().map(|p| p.key.1),
                )),
                Arc::new(UInt64Array::from_iter_values(
                    pieces.iter().map(|p| p.start),
                )),
                Arc::new(UInt32Array::from_iter_values(pieces.iter().map(|p| p.len))),
            ],
            None,
        )
        .map_err(built)?;
        let documents = ListArray::try_new(
            Arc::new(Field::new("item", DataType::Struct(fields), false)),
            offsets(self.row_pieces().iter().map(|&o| o as usize))?,
            Arc::new(values),
            None,
        )
        .map_err(built)?;
        let steps = self
            .steps()
            .iter()
            .map(|&s| i64::try_from(s))
            .collect::<Result<Int64Array, _>>()
            .map_err(|_| TokenStreamError::Config("a step past the int64 range".into()))?;
        Ok(vec![
            ("documents", Arc::new(documents)),
            (
                "padding",
                Arc::new(BooleanArray::from(self.padding().to_vec())),
            ),
            ("step", Arc::new(steps)),
        ])
    }

    /// The expanded form (see the module) and `max_seqlen`, deriving the columns from `pool`
    /// if [`TokenBatch::expand`] has not. Their buffers move into the record batch (so this
    /// is called once): they return to the pool when the last Arrow array over them drops.
    pub fn expanded_record(
        &mut self,
        pool: &Arc<BatchPool>,
    ) -> Result<(RecordBatch, u32), TokenStreamError> {
        let (rows, seq_len) = (self.rows(), self.seq_len());
        let taken =
            || TokenStreamError::Config("a token batch's columns were taken already".into());
        if self.columns().is_none() && self.tokens().len() != rows * (seq_len + 1) {
            return Err(taken());
        }
        self.expand(pool);
        let (tokens, columns) = self.take_columns();
        // The compact form stays, for a batch that crosses a process boundary after.
        self.restore_tokens(tokens);
        let columns = columns.ok_or_else(taken)?;
        let arrays = TensorArrays {
            input_ids: ids(columns.input_ids),
            labels: ids(columns.labels),
            position_ids: ids(columns.position_ids),
            segment_ids: primitive::<Int32Type>(columns.segment_ids),
            loss_mask: primitive::<UInt8Type>(columns.loss_mask),
            cu_seqlens: primitive::<Int32Type>(columns.cu_seqlens),
        };
        Ok((self.expanded_from(arrays)?, columns.max_seqlen))
    }

    /// The expanded form over `arrays`, this batch's columns wherever their memory lies.
    pub(crate) fn expanded_from(
        &self,
        arrays: TensorArrays,
    ) -> Result<RecordBatch, TokenStreamError> {
        let (rows, seq_len) = (self.rows(), self.seq_len());
        // Row r's list holds the sequence starts in [r * seq_len, (r + 1) * seq_len); the final
        // entry (rows * seq_len) lies in the child after the last row's list.
        let starts = arrays
            .cu_seqlens
            .as_primitive_opt::<Int32Type>()
            .ok_or_else(|| TokenStreamError::Config("cu_seqlens that are not int32".into()))?
            .values();
        let mut ends = Vec::with_capacity(rows + 1);
        ends.push(0usize);
        let mut at = 0usize;
        for row in 0..rows {
            let end = (row + 1) * seq_len;
            while at + 1 < starts.len() && (starts[at] as usize) < end {
                at += 1;
            }
            ends.push(at);
        }
        let cu_seqlens = ListArray::try_new(
            Arc::new(Field::new("item", DataType::Int32, false)),
            offsets(ends.into_iter())?,
            arrays.cu_seqlens,
            None,
        )
        .map_err(built)?;
        let mut out: Vec<(&str, ArrayRef)> = Vec::with_capacity(9);
        for (name, values) in [
            ("input_ids", arrays.input_ids),
            ("labels", arrays.labels),
            ("position_ids", arrays.position_ids),
            ("segment_ids", arrays.segment_ids),
            ("loss_mask", arrays.loss_mask),
        ] {
            out.push((name, Arc::new(fixed_rows(values, seq_len)?)));
        }
        out.push(("cu_seqlens", Arc::new(cu_seqlens)));
        out.extend(self.row_columns()?);
        record(out)
    }

    /// Gives a batch that holds no tokens (one received in a slot) its tokens again: each row's
    /// inputs from `record`'s `input_ids` (its expanded form), then the row's last token from
    /// `last`, in a buffer of `pool`.
    pub(crate) fn rebuild_tokens(
        &mut self,
        record: &RecordBatch,
        last: &[u32],
        pool: &Arc<BatchPool>,
    ) -> Result<(), TokenStreamError> {
        let (rows, seq_len) = (self.rows(), self.seq_len());
        let inputs = (record.column_by_name("input_ids"))
            .and_then(|c| c.as_fixed_size_list_opt())
            .map(|l| l.values().clone())
            .filter(|v| v.len() == rows * seq_len && last.len() == rows)
            .ok_or_else(|| {
                TokenStreamError::Config("a token batch without its input_ids".into())
            })?;
        let mut tokens = pool.take::<u32>(rows * (seq_len + 1));
        let out = tokens.values_mut();
        match inputs.data_type() {
            DataType::Int32 => unwiden(inputs.as_primitive::<Int32Type>(), last, seq_len, out),
            DataType::Int64 => unwiden(inputs.as_primitive::<Int64Type>(), last, seq_len, out),
            _ => {
                let message = "input_ids that are not int64 or int32";
                return Err(TokenStreamError::Config(message.into()));
            }
        }
        self.restore_tokens(tokens);
        Ok(())
    }

    /// The compact form (see the module): the rows' tokens and the row columns.
    pub fn compact_record(&self) -> Result<RecordBatch, TokenStreamError> {
        let tokens = Arc::new(UInt32Array::from(self.tokens().to_vec())) as ArrayRef;
        self.compact_with(tokens)
    }

    /// The form that crosses a process boundary: the compact form, its tokens uint16 when
    /// every id fits (half the bytes through a pipe or a socket), else uint32.
    pub fn transfer_record(&self) -> Result<RecordBatch, TokenStreamError> {
        let narrow: Result<Vec<u16>, _> =
            self.tokens().iter().map(|&id| u16::try_from(id)).collect();
        match narrow {
            Ok(ids) => self.compact_with(Arc::new(UInt16Array::from(ids))),
            Err(_) => self.compact_record(),
        }
    }

    fn compact_with(&self, tokens: ArrayRef) -> Result<RecordBatch, TokenStreamError> {
        let mut out: Vec<(&str, ArrayRef)> =
            vec![("tokens", Arc::new(fixed_rows(tokens, self.seq_len() + 1)?))];
        out.extend(self.row_columns()?);
        let record = record(out)?;
        // The columns' type travels with the tokens, so the receiver derives what was asked.
        let metadata = std::collections::HashMap::from([(
            IDS_DTYPE_KEY.to_string(),
            self.ids_dtype().name().to_string(),
        )]);
        let schema = Schema::clone(&record.schema()).with_metadata(metadata);
        record.with_schema(Arc::new(schema)).map_err(built)
    }

    /// The batch a compact record batch holds (as [`TokenBatch::compact_record`] and
    /// [`TokenBatch::transfer_record`] make them: uint32 or uint16 tokens, and the id columns'
    /// type in the schema's metadata, `int64` where there is none), with `seq_len` inputs per
    /// row and `pad_id` padding; a record batch of any other shape is
    /// [`TokenStreamError::Config`] naming what is wrong.
    pub fn from_compact_record(
        record: &RecordBatch,
        seq_len: usize,
        pad_id: u32,
        pool: &Arc<BatchPool>,
    ) -> Result<Self, TokenStreamError> {
        let bad =
            |what: &str| TokenStreamError::Config(format!("not a compact token batch: {what}"));
        let tokens = record
            .column_by_name("tokens")
            .and_then(|c| c.as_fixed_size_list_opt())
            .ok_or_else(|| bad("no tokens column of fixed-size lists"))?;
        let tokens = tokens.values();
        let documents = record
            .column_by_name("documents")
            .and_then(|c| c.as_list_opt::<i32>())
            .ok_or_else(|| bad("no documents column of lists"))?;
        let pieces = documents
            .values()
            .as_struct_opt()
            .filter(|s| s.num_columns() == 4)
            .ok_or_else(|| bad("documents are not structs of 4 fields"))?;
        let column = |i: usize, name: &str| {
            pieces
                .column(i)
                .as_primitive_opt::<UInt64Type>()
                .ok_or_else(|| bad(name))
        };
        let (cache_ids, sample_ids, starts) = (
            column(0, "cache_id is not uint64")?,
            column(1, "sample_id is not uint64")?,
            column(2, "start is not uint64")?,
        );
        let lens = pieces
            .column(3)
            .as_primitive_opt::<UInt32Type>()
            .ok_or_else(|| bad("length is not uint32"))?;
        let pieces: Vec<BatchPiece> = (0..pieces.len())
            .map(|i| BatchPiece {
                key: (cache_ids.value(i), sample_ids.value(i)),
                start: starts.value(i),
                len: lens.value(i),
            })
            .collect();
        let row_pieces = documents
            .offsets()
            .iter()
            .map(|&o| u32::try_from(o).map_err(|_| bad("a negative documents offset")))
            .collect::<Result<Vec<u32>, _>>()?;
        let padding: Vec<bool> = record
            .column_by_name("padding")
            .and_then(|c| c.as_boolean_opt())
            .ok_or_else(|| bad("no padding column of booleans"))?
            .iter()
            .map(|v| v.unwrap_or(false))
            .collect();
        let steps = record
            .column_by_name("step")
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or_else(|| bad("no step column of int64"))?
            .values()
            .iter()
            .map(|&s| u64::try_from(s).map_err(|_| bad("a negative step")))
            .collect::<Result<Vec<u64>, _>>()?;
        let dtype = (record.schema().metadata().get(IDS_DTYPE_KEY))
            .map_or(Ok(IdsDtype::Int64), |name| IdsDtype::from_name(name))?;
        let batch = if let Some(wide) = tokens.as_primitive_opt::<UInt32Type>() {
            let ids = wide.values();
            Self::from_parts(
                seq_len, pad_id, steps, padding, row_pieces, pieces, ids, pool,
            )
        } else if let Some(narrow) = tokens.as_primitive_opt::<UInt16Type>() {
            let ids = narrow.values();
            Self::from_parts(
                seq_len, pad_id, steps, padding, row_pieces, pieces, ids, pool,
            )
        } else {
            Err(bad("tokens are neither uint32 nor uint16"))
        };
        batch?.with_ids_dtype(dtype)
    }
}

/// Each row's `seq_len` input ids back as the row's tokens in `out` (rows of `seq_len + 1`),
/// with the row's last token from `last`. The ids were checked to be token ids when derived,
/// so the narrowing keeps every one.
#[allow(clippy::cast_possible_truncation)]
fn unwiden<T: ArrowPrimitiveType>(
    ids: &PrimitiveArray<T>,
    last: &[u32],
    seq_len: usize,
    out: &mut [u32],
) {
    let rows = out.chunks_exact_mut(seq_len + 1);
    for ((out, row), &end) in rows.zip(ids.values().chunks_exact(seq_len)).zip(last) {
        for (to, id) in out.iter_mut().zip(row) {
            *to = id.as_usize() as u32;
        }
        out[seq_len] = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RowCursor, RunConfig, SyntheticSource, SyntheticSpec, TokenConfig, TokenPlan};

    fn plan_and_source() -> (TokenPlan, SyntheticSource) {
        let source = SyntheticSource::new(vec![SyntheticSpec::new(400, 4, 90)]);
        let config = TokenConfig {
            seq_len: 64,
            ..TokenConfig::default()
        };
        let plan = TokenPlan::new(&source, &config, &RunConfig::default()).unwrap();
        (plan, source)
    }

    fn batch(plan: &TokenPlan, source: &SyntheticSource, pool: &Arc<BatchPool>) -> TokenBatch {
        let mut cursor = RowCursor::new(plan, source);
        let mut rows = crate::RowBlock::default();
        cursor.read(plan, source, 0..8, &mut rows).unwrap();
        TokenBatch::read(plan, source, &rows, &mut Default::default(), pool).unwrap()
    }

    #[test]
    fn the_expanded_form_holds_the_derived_columns_row_by_row() {
        let (plan, source) = plan_and_source();
        let pool = BatchPool::new();
        let mut reference = batch(&plan, &source, &pool);
        let expected = reference.expand(&pool);
        let (input_ids, labels, mask, cu) = (
            expected.input_ids.to_i64(),
            expected.labels.to_i64(),
            expected.loss_mask.values().to_vec(),
            expected.cu_seqlens.values().to_vec(),
        );
        let max = expected.max_seqlen;
        let mut batch = batch(&plan, &source, &pool);
        let (record, max_seqlen) = batch.expanded_record(&pool).unwrap();
        assert_eq!(max_seqlen, max);
        assert_eq!(record.num_rows(), 8);
        let values = |name: &str| {
            record
                .column_by_name(name)
                .unwrap()
                .as_fixed_size_list()
                .values()
                .clone()
        };
        assert_eq!(
            values("input_ids").as_primitive::<Int64Type>().values(),
            &input_ids[..]
        );
        assert_eq!(
            values("labels").as_primitive::<Int64Type>().values(),
            &labels[..]
        );
        assert_eq!(
            values("loss_mask").as_primitive::<UInt8Type>().values(),
            &mask[..]
        );
        let cu_list = record
            .column_by_name("cu_seqlens")
            .unwrap()
            .as_list::<i32>();
        assert_eq!(
            cu_list.values().as_primitive::<Int32Type>().values(),
            &cu[..]
        );
        // Each row's list holds the starts inside it; the last also the final total.
        for row in 0..8 {
            let starts = cu_list.value(row);
            let starts = starts.as_primitive::<Int32Type>().values();
            let inside = row * 64..(row + 1) * 64;
            assert!(
                starts.iter().all(|&s| inside.contains(&(s as usize))),
                "{row}"
            );
        }
        // Asked again, the batch derives its columns again from the tokens it kept, and its
        // compact form is whole (a batch pickled after its tensors were made).
        let (again, _) = batch.expanded_record(&pool).unwrap();
        let ids = again
            .column_by_name("input_ids")
            .unwrap()
            .as_fixed_size_list();
        assert_eq!(
            ids.values().as_primitive::<Int64Type>().values(),
            &input_ids[..]
        );
        let back = TokenBatch::from_compact_record(&batch.compact_record().unwrap(), 64, 0, &pool);
        assert_eq!(back.unwrap().tokens(), reference.tokens());
    }

    #[test]
    fn tensor_columns_lie_over_the_record_batchs_own_buffers() {
        let (plan, source) = plan_and_source();
        let pool = BatchPool::new();
        let mut batch = batch(&plan, &source, &pool);
        let (record, _) = batch.expanded_record(&pool).unwrap();
        let columns = tensor_columns(&record, 64).unwrap();
        let names: Vec<&str> = columns.iter().map(|c| c.name).collect();
        assert_eq!(names, TENSOR_COLUMNS);
        for column in &columns {
            let list = record.column_by_name(column.name).unwrap();
            let values = if column.name == "cu_seqlens" {
                list.as_list::<i32>().values().to_data()
            } else {
                list.as_fixed_size_list().values().to_data()
            };
            let width = values.data_type().primitive_width().unwrap();
            let elements: usize = column.shape.iter().product();
            // The same memory as the Arrow array's values, not a copy of it.
            let start = column.buffer.as_ptr() as usize + column.offset;
            assert_eq!(
                start,
                values.buffers()[0].as_ptr() as usize + values.offset() * width
            );
            assert_eq!(elements, values.len(), "{}", column.name);
        }
        assert_eq!(columns[0].shape, [8, 64]);
        assert_eq!((columns[3].typestr, columns[4].typestr), ("<i4", "|u1"));
        let cu = record
            .column_by_name("cu_seqlens")
            .unwrap()
            .as_list::<i32>();
        assert_eq!(columns[5].shape, [cu.values().len()]);

        let keep: Vec<usize> = (0..record.num_columns())
            .filter(|&i| record.schema().field(i).name() != "labels")
            .collect();
        let error = tensor_columns(&record.project(&keep).unwrap(), 64).unwrap_err();
        assert!(error.to_string().contains("no column labels"), "{error}");
    }

    #[test]
    fn the_compact_form_round_trips() {
        let (plan, source) = plan_and_source();
        let pool = BatchPool::new();
        let original = batch(&plan, &source, &pool);
        let record = original.compact_record().unwrap();
        let back = TokenBatch::from_compact_record(&record, 64, original.pad_id(), &pool).unwrap();
        assert_eq!(back.tokens(), original.tokens());
        assert_eq!(back.pieces(), original.pieces());
        assert_eq!(back.row_pieces(), original.row_pieces());
        assert_eq!(back.steps(), original.steps());
        assert_eq!(back.padding(), original.padding());
        assert_eq!(back.real_tokens(), original.real_tokens());
    }

    #[test]
    fn the_transfer_form_narrows_only_ids_that_fit_and_round_trips_either_width() {
        let (plan, source) = plan_and_source();
        let pool = BatchPool::new();
        let original = batch(&plan, &source, &pool);
        let width = |record: &RecordBatch| {
            let tokens = record.column_by_name("tokens").unwrap();
            tokens.as_fixed_size_list().values().data_type().clone()
        };
        let round_trip = |batch: &TokenBatch, want: DataType| {
            let record = batch.transfer_record().unwrap();
            assert_eq!(width(&record), want);
            let back = TokenBatch::from_compact_record(&record, 64, batch.pad_id(), &pool).unwrap();
            assert_eq!(back.tokens(), batch.tokens());
            assert_eq!(back.pieces(), batch.pieces());
            assert_eq!(back.row_pieces(), batch.row_pieces());
            assert_eq!(back.steps(), batch.steps());
            assert_eq!(back.padding(), batch.padding());
        };
        let with_last_id = |id: u32| {
            let mut ids = original.tokens().to_vec();
            *ids.last_mut().unwrap() = id;
            TokenBatch::from_parts(
                64,
                original.pad_id(),
                original.steps().to_vec(),
                original.padding().to_vec(),
                original.row_pieces().to_vec(),
                original.pieces().to_vec(),
                &ids,
                &pool,
            )
            .unwrap()
        };
        // The synthetic vocabulary (50,000 ids) fits 16 bits; so does the largest 16-bit id.
        round_trip(&original, DataType::UInt16);
        round_trip(&with_last_id(65_535), DataType::UInt16);
        // One id past it keeps the whole batch at 32 bits, every id intact.
        round_trip(&with_last_id(65_536), DataType::UInt32);
        round_trip(&with_last_id(u32::MAX), DataType::UInt32);
        // The public compact form is uint32 whatever the ids.
        assert_eq!(width(&original.compact_record().unwrap()), DataType::UInt32);

        // Tokens of any other type are refused by name.
        let record = original.compact_record().unwrap();
        let tokens = record
            .column_by_name("tokens")
            .unwrap()
            .as_fixed_size_list();
        let signed: ArrayRef = Arc::new(arrow_array::Int32Array::from(
            tokens
                .values()
                .as_primitive::<UInt32Type>()
                .values()
                .iter()
                .map(|&t| t as i32)
                .collect::<Vec<_>>(),
        ));
        let mut columns = record.columns().to_vec();
        columns[0] = Arc::new(fixed_rows(signed, 65).unwrap());
        let fields: Vec<Field> = record
            .schema()
            .fields()
            .iter()
            .zip(&columns)
            .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), f.is_nullable()))
            .collect();
        let other = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        let error = TokenBatch::from_compact_record(&other, 64, 0, &pool).unwrap_err();
        assert!(
            error.to_string().contains("neither uint32 nor uint16"),
            "{error}"
        );
    }

    #[test]
    fn a_record_batch_of_another_shape_is_refused_naming_what() {
        let (plan, source) = plan_and_source();
        let pool = BatchPool::new();
        let original = batch(&plan, &source, &pool);
        let record = original.compact_record().unwrap();
        let without = |name: &str| {
            let keep: Vec<usize> = (0..record.num_columns())
                .filter(|&i| record.schema().field(i).name() != name)
                .collect();
            record.project(&keep).unwrap()
        };
        for (name, says) in [
            ("tokens", "no tokens"),
            ("documents", "no documents"),
            ("padding", "no padding"),
            ("step", "no step"),
        ] {
            let error = TokenBatch::from_compact_record(&without(name), 64, 0, &pool).unwrap_err();
            assert!(error.to_string().contains(says), "{name}: {error}");
        }
        // Rows of another length than seq_len + 1.
        let error = TokenBatch::from_compact_record(&record, 32, 0, &pool).unwrap_err();
        assert!(error.to_string().contains("tokens for"), "{error}");
    }
}
