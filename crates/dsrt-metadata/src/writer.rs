use crate::arrow_types::to_arrow_schema;
use crate::MetadataError;
use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_ipc::writer::FileWriter;
use dsrt_atlas_codec::{HashingWriter, Sha256Digest};
use dsrt_schema::{ColumnType, Schema, ValueRef};
use std::io::Write;
use std::sync::Arc;

/// Rows per record batch; bounds the writer's memory whatever the sample count.
pub const DEFAULT_BATCH_ROWS: usize = 65_536;

enum ColumnBuilder {
    Bool(BooleanBuilder),
    Int64(Int64Builder),
    Float64(Float64Builder),
    Utf8(StringBuilder),
}

impl ColumnBuilder {
    fn new(ty: ColumnType) -> Self {
        match ty {
            ColumnType::Bool => Self::Bool(BooleanBuilder::new()),
            ColumnType::Int64 => Self::Int64(Int64Builder::new()),
            ColumnType::Float64 => Self::Float64(Float64Builder::new()),
            ColumnType::Utf8 => Self::Utf8(StringBuilder::new()),
        }
    }

    fn accepts(&self, value: ValueRef<'_>) -> bool {
        matches!(
            (self, value),
            (_, ValueRef::Null)
                | (Self::Bool(_), ValueRef::Bool(_))
                | (Self::Int64(_), ValueRef::Int64(_))
                | (Self::Float64(_), ValueRef::Float64(_))
                | (Self::Utf8(_), ValueRef::Utf8(_))
        )
    }

    /// Appends `value`, which [`Self::accepts`] has approved.
    fn append(&mut self, value: ValueRef<'_>) {
        match (self, value) {
            (Self::Bool(b), ValueRef::Bool(v)) => b.append_value(v),
            (Self::Int64(b), ValueRef::Int64(v)) => b.append_value(v),
            (Self::Float64(b), ValueRef::Float64(v)) => b.append_value(v),
            (Self::Utf8(b), ValueRef::Utf8(v)) => b.append_value(v),
            (Self::Bool(b), ValueRef::Null) => b.append_null(),
            (Self::Int64(b), ValueRef::Null) => b.append_null(),
            (Self::Float64(b), ValueRef::Null) => b.append_null(),
            (Self::Utf8(b), ValueRef::Null) => b.append_null(),
            _ => {}
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Bool(b) => Arc::new(b.finish()),
            Self::Int64(b) => Arc::new(b.finish()),
            Self::Float64(b) => Arc::new(b.finish()),
            Self::Utf8(b) => Arc::new(b.finish()),
        }
    }
}

/// Streams metadata rows into an Arrow IPC file, hashing the bytes as they are written.
pub struct MetadataWriter<W: Write> {
    schema: Schema,
    writer: FileWriter<HashingWriter<W>>,
    builders: Vec<ColumnBuilder>,
    pending: usize,
    batch_rows: usize,
    rows: u64,
}

impl<W: Write> MetadataWriter<W> {
    /// Starts a file for `schema` on `out`, with [`DEFAULT_BATCH_ROWS`] rows per batch.
    pub fn new(out: W, schema: &Schema) -> Result<Self, MetadataError> {
        Self::with_batch_rows(out, schema, DEFAULT_BATCH_ROWS)
    }

    /// Starts a file whose record batches hold `batch_rows` rows (at least 1).
    pub fn with_batch_rows(
        out: W,
        schema: &Schema,
        batch_rows: usize,
    ) -> Result<Self, MetadataError> {
        let writer = FileWriter::try_new(HashingWriter::new(out), &to_arrow_schema(schema))?;
        Ok(Self {
            schema: schema.clone(),
            writer,
            builders: schema
                .columns()
                .iter()
                .map(|c| ColumnBuilder::new(c.ty))
                .collect(),
            pending: 0,
            batch_rows: batch_rows.max(1),
            rows: 0,
        })
    }

    /// Appends one row, values in schema order (already checked with `Row::check_into`).
    pub fn push(&mut self, values: &[ValueRef<'_>]) -> Result<(), MetadataError> {
        if values.len() != self.builders.len() {
            return Err(MetadataError::Arrow(format!(
                "row has {} values, the schema {} columns",
                values.len(),
                self.builders.len()
            )));
        }
        // Check the whole row first, so a refused row leaves every builder as it was.
        let refused = self
            .builders
            .iter()
            .zip(values)
            .position(|(b, v)| !b.accepts(*v));
        if let Some(position) = refused {
            let column = &self.schema.columns()[position];
            return Err(MetadataError::ValueType {
                column: column.name.clone(),
                expected: column.ty,
                found: format!("{}", values[position]),
            });
        }
        for (builder, value) in self.builders.iter_mut().zip(values) {
            builder.append(*value);
        }
        self.pending += 1;
        self.rows += 1;
        if self.pending >= self.batch_rows {
            self.flush_batch()?;
        }
        Ok(())
    }

    /// Rows pushed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn flush_batch(&mut self) -> Result<(), MetadataError> {
        if self.pending == 0 {
            return Ok(());
        }
        let columns: Vec<ArrayRef> = self
            .builders
            .iter_mut()
            .map(ColumnBuilder::finish)
            .collect();
        let batch = if columns.is_empty() {
            let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(self.pending));
            RecordBatch::try_new_with_options(self.writer.schema().clone(), columns, &options)?
        } else {
            RecordBatch::try_new(self.writer.schema().clone(), columns)?
        };
        self.writer.write(&batch)?;
        self.pending = 0;
        Ok(())
    }

    /// Writes the last batch and the file footer; returns the inner writer, the SHA-256 of the
    /// file and the row count.
    pub fn finish(mut self) -> Result<(W, Sha256Digest, u64), MetadataError> {
        self.flush_batch()?;
        self.writer.finish()?;
        let mut hashing = self.writer.into_inner()?;
        hashing.flush()?;
        let (inner, digest, _) = hashing.finish();
        Ok((inner, digest, self.rows))
    }
}
