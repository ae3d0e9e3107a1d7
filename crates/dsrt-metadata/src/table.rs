use crate::arrow_types::from_arrow_schema;
use crate::MetadataError;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_buffer::Buffer;
use arrow_ipc::reader::{read_footer_length, FileDecoder};
use arrow_ipc::{root_as_footer, Block};
use arrow_schema::SchemaRef;
use dsrt_schema::{ColumnType, Schema, ValueRef};
use memmap2::Mmap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

const MAGIC: &[u8; 6] = b"ARROW1";
/// The IPC file trailer: a 4-byte footer length and the magic.
const TRAILER_LEN: usize = 10;

/// One column of one record batch, already downcast.
#[derive(Debug, Clone)]
enum TypedColumn {
    Bool(BooleanArray),
    Int64(Int64Array),
    Float64(Float64Array),
    Utf8(StringArray),
}

impl TypedColumn {
    fn new(array: &dyn Array, ty: ColumnType) -> Self {
        match ty {
            ColumnType::Bool => Self::Bool(array.as_boolean().clone()),
            ColumnType::Int64 => Self::Int64(array.as_primitive::<Int64Type>().clone()),
            ColumnType::Float64 => Self::Float64(array.as_primitive::<Float64Type>().clone()),
            ColumnType::Utf8 => Self::Utf8(array.as_string::<i32>().clone()),
        }
    }

    #[inline]
    fn value(&self, row: usize) -> ValueRef<'_> {
        let is_null = |a: &dyn Array| a.is_null(row);
        match self {
            Self::Bool(a) if !is_null(a) => ValueRef::Bool(a.value(row)),
            Self::Int64(a) if !is_null(a) => ValueRef::Int64(a.value(row)),
            Self::Float64(a) if !is_null(a) => ValueRef::Float64(a.value(row)),
            Self::Utf8(a) if !is_null(a) => ValueRef::Utf8(a.value(row)),
            _ => ValueRef::Null,
        }
    }
}

/// metadata.arrow, mapped and decoded without copying column data.
///
/// Holds one typed view per column per record batch; the number of allocations depends on
/// the number of batches, never on the number of rows.
#[derive(Debug)]
pub struct MetadataTable {
    schema: Schema,
    arrow_schema: SchemaRef,
    batches: Vec<RecordBatch>,
    columns: Vec<Vec<TypedColumn>>,
    /// First row of each batch, ascending.
    batch_starts: Vec<u64>,
    rows: u64,
}

impl MetadataTable {
    /// Maps `path` read-only and decodes its footer and record batches.
    pub fn open(path: &Path) -> Result<Self, MetadataError> {
        let file = durable_fs::open_regular(path)?;
        // SAFETY: published cache files are immutable while readers are alive (the format's
        // contract); the map is read-only and arrow bounds-checks every buffer it slices from it.
        #[allow(unsafe_code)]
        let map = unsafe { Mmap::map(&file)? };
        Self::from_buffer(Buffer::from(bytes::Bytes::from_owner(map)))
    }

    /// Decodes a file held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, MetadataError> {
        Self::from_buffer(Buffer::from_vec(bytes))
    }

    fn from_buffer(buffer: Buffer) -> Result<Self, MetadataError> {
        // arrow's decoders are not hardened against every malformed input; a panic inside
        // them must surface as a typed error about this file, not abort the reader.
        catch_unwind(AssertUnwindSafe(|| decode(&buffer)))
            .unwrap_or_else(|_| Err(MetadataError::Arrow("the decoder rejected the file".into())))
    }

    /// The schema the Arrow file declares.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The Arrow schema of the file itself (that of every [`Self::record_batches`] batch, also
    /// when there is none).
    pub fn arrow_schema(&self) -> &SchemaRef {
        &self.arrow_schema
    }

    /// Total rows over all batches.
    pub fn num_rows(&self) -> u64 {
        self.rows
    }

    /// The decoded record batches, for callers that want Arrow itself.
    pub fn record_batches(&self) -> &[RecordBatch] {
        &self.batches
    }

    /// Checks the Arrow schema against the manifest's `metadata_schema`.
    pub fn check_schema(&self, expected: &Schema) -> Result<(), MetadataError> {
        let (found, wanted) = (self.schema.columns(), expected.columns());
        for position in 0..found.len().max(wanted.len()) {
            let detail = match (found.get(position), wanted.get(position)) {
                (Some(f), Some(w)) if f == w => continue,
                (Some(f), Some(w)) => format!(
                    "Arrow has {:?} {} nullable={}, the manifest {:?} {} nullable={}",
                    f.name, f.ty, f.nullable, w.name, w.ty, w.nullable
                ),
                (Some(f), None) => format!("Arrow has extra column {:?}", f.name),
                (None, Some(w)) => format!("Arrow lacks column {:?}", w.name),
                (None, None) => unreachable!("position is below the longer length"),
            };
            return Err(MetadataError::SchemaMismatch { position, detail });
        }
        Ok(())
    }

    /// A view of row `row`, or `None` past the end.
    #[inline]
    pub fn row(&self, row: u64) -> Option<RowView<'_>> {
        if row >= self.rows {
            return None;
        }
        let batch = self.batch_starts.partition_point(|&start| start <= row) - 1;
        let local = usize::try_from(row - self.batch_starts[batch]).ok()?;
        Some(RowView {
            columns: &self.columns[batch],
            row: local,
        })
    }

    /// The value at (`row`, `column`), or `None` when either is out of range.
    #[inline]
    pub fn value(&self, row: u64, column: usize) -> Option<ValueRef<'_>> {
        self.row(row)?.get(column)
    }

    /// A view of column `column` across every row.
    pub fn column(&self, column: usize) -> Option<ColumnView<'_>> {
        (column < self.schema.len()).then_some(ColumnView {
            table: self,
            column,
        })
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct RowView<'a> {
    columns: &'a [TypedColumn],
    row: usize,
}

impl<'a> RowView<'a> {
    /// Value of column `column`.
    #[inline]
    pub fn get(&self, column: usize) -> Option<ValueRef<'a>> {
        Some(self.columns.get(column)?.value(self.row))
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// Whether the schema has no column.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The values in schema order.
    pub fn values(&self) -> impl Iterator<Item = ValueRef<'a>> + 'a {
        let row = self.row;
        self.columns.iter().map(move |c| c.value(row))
    }
}

/// One column across the table's batches.
#[derive(Debug, Clone, Copy)]
pub struct ColumnView<'a> {
    table: &'a MetadataTable,
    column: usize,
}

impl<'a> ColumnView<'a> {
    /// Every value of the column in row order.
    pub fn values(&self) -> impl Iterator<Item = ValueRef<'a>> + 'a {
        let column = self.column;
        self.table.columns.iter().flat_map(move |batch| {
            let typed = &batch[column];
            let len = typed_len(typed);
            (0..len).map(move |row| typed.value(row))
        })
    }
}

fn typed_len(column: &TypedColumn) -> usize {
    match column {
        TypedColumn::Bool(a) => a.len(),
        TypedColumn::Int64(a) => a.len(),
        TypedColumn::Float64(a) => a.len(),
        TypedColumn::Utf8(a) => a.len(),
    }
}

fn decode(buffer: &Buffer) -> Result<MetadataTable, MetadataError> {
    let bytes = buffer.as_slice();
    let bad = |why: &str| MetadataError::Arrow(why.to_owned());
    if bytes.len() < MAGIC.len() + TRAILER_LEN || &bytes[..MAGIC.len()] != MAGIC {
        return Err(bad("missing the leading ARROW1 magic"));
    }
    let trailer_start = bytes.len() - TRAILER_LEN;
    let trailer: [u8; TRAILER_LEN] = bytes[trailer_start..]
        .try_into()
        .map_err(|_| bad("short trailer"))?;
    let footer_len = read_footer_length(trailer)?;
    let footer_start = trailer_start
        .checked_sub(footer_len)
        .filter(|start| *start >= MAGIC.len())
        .ok_or_else(|| bad("footer length points before the start of the file"))?;
    let footer =
        root_as_footer(&bytes[footer_start..trailer_start]).map_err(|e| bad(&e.to_string()))?;
    let arrow_schema = footer.schema().ok_or_else(|| bad("footer has no schema"))?;
    let arrow_schema = Arc::new(arrow_ipc::convert::try_fb_to_schema(arrow_schema)?);
    let schema = from_arrow_schema(&arrow_schema)?;
    if footer.dictionaries().is_some_and(|d| !d.is_empty()) {
        return Err(bad("dictionary batches are not part of the format"));
    }
    let decoder = FileDecoder::new(Arc::clone(&arrow_schema), footer.version());
    let mut table = MetadataTable {
        schema,
        arrow_schema,
        batches: Vec::new(),
        columns: Vec::new(),
        batch_starts: Vec::new(),
        rows: 0,
    };
    for (number, block) in footer.recordBatches().into_iter().flatten().enumerate() {
        // At most one batch more than the rows before it (a leading empty batch, as some
        // writers emit, is honest): a file of a million empty batches would otherwise cost a
        // decoded batch each (gigabytes) for no data.
        if number as u64 > table.rows + 1 {
            return Err(MetadataError::Arrow(format!(
                "record batch {number} follows {} rows: more batches than rows (the file lists \
                 {} batches)",
                table.rows,
                footer.recordBatches().map_or(0, |b| b.len())
            )));
        }
        let data = block_bytes(buffer, block, footer_start)?;
        check_buffers(number, block, &data)?;
        let batch = decoder
            .read_record_batch(block, &data)?
            .ok_or_else(|| bad("empty record batch block"))?;
        table.push_batch(batch);
    }
    Ok(table)
}

/// Refuses record batch `number` when one of its buffers reaches outside its body: arrow
/// slices buffers without a check (a panic, whose message the process would print even where
/// it is caught).
fn check_buffers(number: usize, block: &Block, data: &[u8]) -> Result<(), MetadataError> {
    let bad = |why: String| MetadataError::Arrow(format!("record batch {number}: {why}"));
    let meta_len = usize::try_from(block.metaDataLength()).unwrap_or(usize::MAX);
    let meta = data
        .get(..meta_len)
        .ok_or_else(|| bad("its metadata is longer than its block".into()))?;
    // An encapsulated message: an optional continuation marker, its length, the flatbuffer.
    let message = match meta {
        [0xff, 0xff, 0xff, 0xff, rest @ ..] => rest.get(4..),
        _ => meta.get(4..),
    }
    .ok_or_else(|| bad("its metadata is shorter than a message header".into()))?;
    let message = arrow_ipc::root_as_message(message).map_err(|e| bad(e.to_string()))?;
    let Some(batch) = message.header_as_record_batch() else {
        return Ok(()); // not a record batch: the decoder says so
    };
    let body = u64::try_from(block.bodyLength()).unwrap_or(0);
    for (i, buffer) in batch.buffers().into_iter().flatten().enumerate() {
        let (offset, length) = (buffer.offset(), buffer.length());
        let end = u64::try_from(offset)
            .ok()
            .zip(u64::try_from(length).ok())
            .and_then(|(offset, length)| offset.checked_add(length));
        if end.is_none_or(|end| end > body) {
            return Err(bad(format!(
                "buffer {i} (offset {offset}, length {length}) lies outside the {body}-byte body"
            )));
        }
    }
    Ok(())
}

/// The bytes of one block, refusing offsets and lengths outside the file's data region.
fn block_bytes(buffer: &Buffer, block: &Block, data_end: usize) -> Result<Buffer, MetadataError> {
    let offset = usize::try_from(block.offset()).ok();
    let meta = usize::try_from(block.metaDataLength()).ok();
    let body = usize::try_from(block.bodyLength()).ok();
    let range = offset
        .zip(meta)
        .zip(body)
        .and_then(|((offset, meta), body)| {
            let len = meta.checked_add(body)?;
            let end = offset.checked_add(len)?;
            (end <= data_end).then_some((offset, len))
        });
    let (offset, len) = range.ok_or_else(|| {
        MetadataError::Arrow(format!(
            "record batch block at offset {} (metadata {} + body {} bytes) lies outside the file",
            block.offset(),
            block.metaDataLength(),
            block.bodyLength()
        ))
    })?;
    Ok(buffer.slice_with_length(offset, len))
}

impl MetadataTable {
    fn push_batch(&mut self, batch: RecordBatch) {
        let columns = self
            .schema
            .columns()
            .iter()
            .zip(batch.columns())
            .map(|(column, array)| TypedColumn::new(array.as_ref(), column.ty))
            .collect();
        self.batch_starts.push(self.rows);
        self.rows += batch.num_rows() as u64;
        self.columns.push(columns);
        self.batches.push(batch);
    }
}
