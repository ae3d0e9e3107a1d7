//! Table inputs: Parquet files ([`crate::parquet`]) and Hugging Face `save_to_disk` datasets
//! ([`crate::hf`]), one sample per row, one column the payload and the others metadata.
//!
//! Column types map onto the cache's four (widening, never losing a value): bool -> bool;
//! int8..int64 and uint8..uint32 -> int64; uint64 -> int64, a value above `i64::MAX` refused
//! naming its row; float16..float64 -> float64; string, large_string, string_view and
//! dictionaries of them -> utf8. Any other type (lists, structs, maps, binary, decimals,
//! dates, timestamps, null) is refused naming the file and the column before anything is
//! written. A column is nullable when any file declares it so.

use crate::tokens::{default_dtype, list_value_type, token_schema, TokenColumn, TokenLists};
use crate::{hf, parquet, Convert, Emit, PackError};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType, Field, Schema as ArrowSchema};
use dsrt_schema::{Column, ColumnType, Schema, Value};
use dsrt_tokens::{TokenEncoder, TokenInfo, TOKENS_KEY};
use std::fs;
use std::path::{Path, PathBuf};

/// Which columns of a table input become what.
#[derive(Debug, Clone)]
pub struct TableOptions {
    payload_column: String,
    metadata_columns: Option<Vec<String>>,
    tokens: Option<TokenColumn>,
}

impl TableOptions {
    /// `payload_column` (binary, large_binary, string or their views; or a struct with a
    /// binary `bytes` field, as Hugging Face's `Image` and `Audio` features store) is each
    /// sample's payload; every other column is metadata.
    pub fn new(payload_column: impl Into<String>) -> Self {
        Self {
            payload_column: payload_column.into(),
            metadata_columns: None,
            tokens: None,
        }
    }

    /// A token cache (`dsrt-tokens`) instead: `column` holds each document, as
    /// [`TokenColumn`] says (ids in a list column, or text to tokenize); every other column is
    /// metadata, after `n_tokens`.
    pub fn tokens(column: impl Into<String>, tokens: TokenColumn) -> Self {
        Self {
            tokens: Some(tokens),
            ..Self::new(column)
        }
    }

    /// Only these columns, in this order, are metadata; the others are not read.
    pub fn metadata_columns(mut self, columns: Vec<String>) -> Self {
        self.metadata_columns = Some(columns);
        self
    }
}

/// One file of a table input.
#[derive(Debug)]
pub(crate) enum TableFile {
    /// A Parquet file and its footer, read once at scan.
    Parquet(parquet::ParquetFile),
    /// An Arrow IPC stream (a Hugging Face data file).
    Stream(PathBuf),
}

impl TableFile {
    fn path(&self) -> &Path {
        match self {
            Self::Parquet(file) => file.path(),
            Self::Stream(path) => path,
        }
    }
}

/// A unit of a table input: one Parquet row group, or one whole Arrow stream file (a stream
/// cannot be entered in the middle).
#[derive(Debug, Clone, Copy)]
pub struct TableUnit {
    file: usize,
    /// The row group, for a Parquet file.
    row_group: usize,
    /// The file's row number of the unit's first row.
    first_row: u64,
}

/// How the columns of every file become a sample.
#[derive(Debug)]
pub(crate) struct ColumnPlan {
    pub(crate) payload: String,
    /// For a token input: how documents become ids, and the cache's token info.
    pub(crate) tokens: Option<(TokenColumn, TokenInfo)>,
    /// (name, cache type) in schema order.
    pub(crate) metadata: Vec<(String, ColumnType)>,
}

impl ColumnPlan {
    /// The names of the columns to read: the payload first.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.payload.as_str()).chain(self.metadata.iter().map(|(n, _)| n.as_str()))
    }

    /// The positions of the columns to read in `schema`.
    pub(crate) fn projection(&self, schema: &ArrowSchema) -> Vec<usize> {
        let mut indices: Vec<usize> = self
            .names()
            .filter_map(|name| schema.index_of(name).ok())
            .collect();
        indices.sort_unstable();
        indices
    }
}

/// Parquet files and Hugging Face datasets, one sample per row: payload one column,
/// metadata (typed as the module says) the others or those chosen, in file order and row
/// order. Units are row groups (and whole Arrow stream files), so jobs share a file's row
/// groups; the cache is the same for every number of jobs.
#[derive(Debug)]
pub struct Tables {
    files: Vec<TableFile>,
    units: Vec<TableUnit>,
    plan: ColumnPlan,
    schema: Schema,
    rows: Option<u64>,
}

impl Tables {
    /// Lists and checks the inputs: each path a Parquet file, a directory of `*.parquet`
    /// files (sorted by name), or a Hugging Face `save_to_disk` directory (holding
    /// `state.json`; its data files in `_data_files` order). Only footers and schemas are
    /// read; every column of every file is checked against the options, so a refusal comes
    /// before anything is written.
    pub fn scan(paths: &[PathBuf], options: &TableOptions) -> Result<Self, PackError> {
        let mut files = Vec::new();
        for path in paths {
            let is_dir = fs::metadata(path)
                .map_err(PackError::io(path, "stat"))?
                .is_dir();
            if !is_dir {
                files.push(TableFile::Parquet(parquet::ParquetFile::open(path)?));
            } else if let Some(streams) = hf::data_files(path)? {
                files.extend(streams.into_iter().map(TableFile::Stream));
            } else {
                for file in parquet::files_in(path)? {
                    files.push(TableFile::Parquet(parquet::ParquetFile::open(&file)?));
                }
            }
        }
        if files.is_empty() {
            return Err(PackError::Input {
                input: paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                reason: "no input files given".into(),
            });
        }
        let mut check = SchemaCheck::new(options);
        let mut units = Vec::new();
        let mut rows = Some(0u64);
        for (index, file) in files.iter().enumerate() {
            match file {
                TableFile::Parquet(parquet) => {
                    check.file(parquet.path(), parquet.schema())?;
                    let mut first_row = 0u64;
                    for (row_group, len) in parquet.row_group_rows().enumerate() {
                        units.push(TableUnit {
                            file: index,
                            row_group,
                            first_row,
                        });
                        first_row += len;
                    }
                    rows = rows.map(|r| r + first_row);
                }
                TableFile::Stream(path) => {
                    check.file(path, &hf::stream_schema(path)?)?;
                    units.push(TableUnit {
                        file: index,
                        row_group: 0,
                        first_row: 0,
                    });
                    rows = None;
                }
            }
        }
        let (plan, schema) = check.finish()?;
        Ok(Self {
            files,
            units,
            plan,
            schema,
            rows,
        })
    }

    /// The schema of its samples.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// How many samples it makes, when the footers tell (Parquet only; an Arrow stream's
    /// length is known only once read).
    pub fn len(&self) -> Option<u64> {
        self.rows
    }

    /// Whether it is known to make no sample.
    pub fn is_empty(&self) -> bool {
        self.rows == Some(0)
    }

    /// The token info of the token cache it writes (`None` unless made with
    /// [`TableOptions::tokens`]).
    pub fn token_info(&self) -> Option<&TokenInfo> {
        self.plan.tokens.as_ref().map(|(_, info)| info)
    }
}

impl Convert for Tables {
    type Unit = TableUnit;

    fn cache_schema(&self) -> Schema {
        self.schema().clone()
    }

    fn units(&self) -> &[TableUnit] {
        &self.units
    }

    fn manifest_keys(&self) -> Vec<(String, serde_json::Value)> {
        self.token_info()
            .map(|info| vec![(TOKENS_KEY.to_owned(), info.to_json())])
            .unwrap_or_default()
    }

    fn convert(&self, unit: &TableUnit, emit: &mut Emit<'_>) -> Result<(), PackError> {
        let file = &self.files[unit.file];
        let mut sink = RowSink {
            path: file.path(),
            plan: &self.plan,
            next_row: unit.first_row,
            emit,
        };
        match file {
            TableFile::Parquet(parquet) => {
                parquet.read_row_group(unit.row_group, &self.plan, &mut sink)
            }
            TableFile::Stream(path) => hf::read_stream(path, &self.plan, &mut sink),
        }
    }
}

/// Turns record batches of one unit into samples.
pub(crate) struct RowSink<'a, 'e> {
    path: &'a Path,
    plan: &'a ColumnPlan,
    next_row: u64,
    emit: &'a mut Emit<'e>,
}

impl RowSink<'_, '_> {
    /// Emits every row of `batch`, in order.
    pub(crate) fn batch(&mut self, batch: &RecordBatch) -> Result<(), PackError> {
        let first_row = self.next_row;
        let column = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| PackError::Column {
                input: self.path.display().to_string(),
                column: name.to_owned(),
                reason: "missing from a record batch".into(),
            })
        };
        let payload = column(&self.plan.payload)?;
        if let Some((tokens, info)) = &self.plan.tokens {
            let metadata = self.metadata_columns(batch, first_row)?;
            return self.token_rows(payload.as_ref(), tokens, info, &metadata, batch.num_rows());
        }
        let payload = PayloadColumn::of(payload.as_ref()).ok_or_else(|| PackError::Column {
            input: self.path.display().to_string(),
            column: self.plan.payload.clone(),
            reason: format!("the payload column is {}", payload.data_type()),
        })?;
        let mut metadata = Vec::with_capacity(self.plan.metadata.len());
        for (name, ty) in &self.plan.metadata {
            metadata.push(MetadataColumn::of(
                column(name)?.as_ref(),
                *ty,
                |row| self.row_name(first_row + row as u64),
                name,
            )?);
        }
        for row in 0..batch.num_rows() {
            let number = first_row + row as u64;
            let bytes = payload.at(row).ok_or_else(|| PackError::Input {
                input: self.row_name(number),
                reason: format!("the payload column {:?} is null", self.plan.payload),
            })?;
            let values = metadata.iter().map(|c| c.at(row)).collect();
            let path = self.path;
            self.emit.sample(
                || format!("{} row {number}", path.display()),
                bytes.to_vec(),
                values,
            )?;
        }
        self.next_row += batch.num_rows() as u64;
        Ok(())
    }

    fn row_name(&self, row: u64) -> String {
        format!("{} row {row}", self.path.display())
    }

    fn metadata_columns(
        &self,
        batch: &RecordBatch,
        first_row: u64,
    ) -> Result<Vec<MetadataColumn>, PackError> {
        self.plan
            .metadata
            .iter()
            .map(|(name, ty)| {
                let array = batch
                    .column_by_name(name)
                    .ok_or_else(|| PackError::Column {
                        input: self.path.display().to_string(),
                        column: name.clone(),
                        reason: "missing from a record batch".into(),
                    })?;
                MetadataColumn::of(
                    array.as_ref(),
                    *ty,
                    |row| self.row_name(first_row + row as u64),
                    name,
                )
            })
            .collect()
    }

    /// Emits each row of a token input's batch: its ids (from a list column, or its text
    /// tokenized here) checked and laid out, `n_tokens` before the metadata.
    fn token_rows(
        &mut self,
        payload: &dyn Array,
        tokens: &TokenColumn,
        info: &TokenInfo,
        metadata: &[MetadataColumn],
        rows: usize,
    ) -> Result<(), PackError> {
        let encoder = TokenEncoder::new(info);
        let column = &self.plan.payload;
        let refuse = |reason: String| PackError::Column {
            input: self.path.display().to_string(),
            column: column.clone(),
            reason,
        };
        let first_row = self.next_row;
        let path = self.path;
        let mut ids = Vec::new();
        for row in 0..rows {
            let number = first_row + row as u64;
            let row_name = || format!("{} row {number}", path.display());
            let mut bytes = Vec::new();
            let n_tokens = match tokens {
                TokenColumn::Ids(_) => {
                    let lists = TokenLists::of(payload)
                        .ok_or_else(|| refuse(format!("is {}", payload.data_type())))?;
                    if lists.is_null(row) {
                        return Err(PackError::Input {
                            input: row_name(),
                            reason: format!("the token column {column:?} is null"),
                        });
                    }
                    lists
                        .encode(row, &encoder, &mut bytes)
                        .map_err(|(position, id)| PackError::TokenOutOfRange {
                            input: row_name(),
                            position,
                            id,
                            max_id: encoder.max_id(),
                            limit: info.limit(),
                        })?
                }
                TokenColumn::Text(tokenizer) => {
                    let text = PayloadColumn::of(payload)
                        .ok_or_else(|| refuse(format!("is {}", payload.data_type())))?
                        .at(row)
                        .ok_or_else(|| PackError::Input {
                            input: row_name(),
                            reason: format!("the text column {column:?} is null"),
                        })?;
                    let text = std::str::from_utf8(text).map_err(|e| PackError::Input {
                        input: row_name(),
                        reason: format!("the text column {column:?} is not UTF-8: {e}"),
                    })?;
                    tokenizer
                        .encode(text, &mut ids)
                        .map_err(|reason| PackError::Tokenizer {
                            input: row_name(),
                            reason,
                        })?;
                    encoder
                        .encode(&ids, &mut bytes)
                        .map_err(|bad| PackError::token_out_of_range(row_name(), bad, info))?;
                    ids.len()
                }
            };
            let mut values = Vec::with_capacity(metadata.len() + 1);
            values.push(Value::Int64(i64::try_from(n_tokens).unwrap_or(i64::MAX)));
            values.extend(metadata.iter().map(|c| c.at(row)));
            self.emit.sample(row_name, bytes, values)?;
        }
        self.next_row += rows as u64;
        Ok(())
    }
}

/// A payload column of one batch, whatever its byte or text type.
enum PayloadColumn<'a> {
    Binary(&'a arrow_array::BinaryArray),
    LargeBinary(&'a arrow_array::LargeBinaryArray),
    BinaryView(&'a arrow_array::BinaryViewArray),
    FixedSize(&'a arrow_array::FixedSizeBinaryArray),
    Utf8(&'a arrow_array::StringArray),
    LargeUtf8(&'a arrow_array::LargeStringArray),
    Utf8View(&'a arrow_array::StringViewArray),
    /// Hugging Face's `Image`/`Audio`: a struct whose `bytes` field is the payload.
    Struct(&'a arrow_array::StructArray, Box<PayloadColumn<'a>>),
}

impl<'a> PayloadColumn<'a> {
    fn of(array: &'a dyn Array) -> Option<Self> {
        Some(match array.data_type() {
            DataType::Binary => Self::Binary(array.as_binary()),
            DataType::LargeBinary => Self::LargeBinary(array.as_binary()),
            DataType::BinaryView => Self::BinaryView(array.as_binary_view()),
            DataType::FixedSizeBinary(_) => Self::FixedSize(array.as_fixed_size_binary()),
            DataType::Utf8 => Self::Utf8(array.as_string()),
            DataType::LargeUtf8 => Self::LargeUtf8(array.as_string()),
            DataType::Utf8View => Self::Utf8View(array.as_string_view()),
            DataType::Struct(_) => {
                let array = array.as_struct();
                let bytes = array.column_by_name("bytes")?;
                if matches!(bytes.data_type(), DataType::Struct(_)) {
                    return None;
                }
                Self::Struct(array, Box::new(Self::of(bytes.as_ref())?))
            }
            _ => return None,
        })
    }

    fn at(&self, row: usize) -> Option<&'a [u8]> {
        let valid = |a: &dyn Array| !a.is_null(row);
        match self {
            Self::Binary(a) => valid(*a).then(|| a.value(row)),
            Self::LargeBinary(a) => valid(*a).then(|| a.value(row)),
            Self::BinaryView(a) => valid(*a).then(|| a.value(row)),
            Self::FixedSize(a) => valid(*a).then(|| a.value(row)),
            Self::Utf8(a) => valid(*a).then(|| a.value(row).as_bytes()),
            Self::LargeUtf8(a) => valid(*a).then(|| a.value(row).as_bytes()),
            Self::Utf8View(a) => valid(*a).then(|| a.value(row).as_bytes()),
            Self::Struct(a, bytes) => {
                if a.is_null(row) {
                    None
                } else {
                    bytes.at(row)
                }
            }
        }
    }
}

/// Whether `ty` can be the payload column.
fn payload_type_ok(ty: &DataType) -> bool {
    match ty {
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_)
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View => true,
        DataType::Struct(fields) => fields
            .iter()
            .find(|f| f.name() == "bytes")
            .is_some_and(|f| {
                !matches!(f.data_type(), DataType::Struct(_)) && payload_type_ok(f.data_type())
            }),
        _ => false,
    }
}

/// The cache type of an Arrow type, or why there is none.
fn cache_type(ty: &DataType) -> Result<ColumnType, String> {
    Ok(match ty {
        DataType::Boolean => ColumnType::Bool,
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => ColumnType::Int64,
        DataType::Float16 | DataType::Float32 | DataType::Float64 => ColumnType::Float64,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => ColumnType::Utf8,
        DataType::Dictionary(_, values) => cache_type(values)?,
        other => {
            return Err(format!(
                "type {other} has no cache column type (a cache holds bool, int64, float64 \
                 and utf8 metadata); leave it out with the metadata column list"
            ))
        }
    })
}

/// One metadata column of one batch, in its cache type.
enum MetadataColumn {
    Bool(arrow_array::BooleanArray),
    Int64(arrow_array::Int64Array),
    Float64(arrow_array::Float64Array),
    Utf8(arrow_array::LargeStringArray),
}

impl MetadataColumn {
    fn of(
        array: &dyn Array,
        ty: ColumnType,
        row_name: impl Fn(usize) -> String,
        name: &str,
    ) -> Result<Self, PackError> {
        if let DataType::UInt64 = array.data_type() {
            let values = array.as_primitive::<UInt64Type>();
            if let Some(row) = (0..values.len())
                .find(|&r| values.is_valid(r) && i64::try_from(values.value(r)).is_err())
            {
                return Err(PackError::Input {
                    input: row_name(row),
                    reason: format!(
                        "column {name:?}: uint64 value {} does not fit the cache's int64",
                        values.value(row)
                    ),
                });
            }
        }
        let target = match ty {
            ColumnType::Bool => DataType::Boolean,
            ColumnType::Int64 => DataType::Int64,
            ColumnType::Float64 => DataType::Float64,
            ColumnType::Utf8 => DataType::LargeUtf8,
        };
        // Every cast here widens (checked by `cache_type`), so none can fail but on a bug;
        // `safe: false` makes such a bug an error rather than a null.
        let options = CastOptions {
            safe: false,
            ..CastOptions::default()
        };
        let cast = cast_with_options(array, &target, &options).map_err(|e| PackError::Input {
            input: row_name(0),
            reason: format!("column {name:?}: {e}"),
        })?;
        Ok(match ty {
            ColumnType::Bool => Self::Bool(cast.as_boolean().clone()),
            ColumnType::Int64 => Self::Int64(cast.as_primitive::<Int64Type>().clone()),
            ColumnType::Float64 => Self::Float64(
                cast.as_primitive::<arrow_array::types::Float64Type>()
                    .clone(),
            ),
            ColumnType::Utf8 => Self::Utf8(cast.as_string::<i64>().clone()),
        })
    }

    fn at(&self, row: usize) -> Value {
        let valid = match self {
            Self::Bool(a) => a.is_valid(row),
            Self::Int64(a) => a.is_valid(row),
            Self::Float64(a) => a.is_valid(row),
            Self::Utf8(a) => a.is_valid(row),
        };
        if !valid {
            return Value::Null;
        }
        match self {
            Self::Bool(a) => Value::Bool(a.value(row)),
            Self::Int64(a) => Value::Int64(a.value(row)),
            Self::Float64(a) => Value::Float64(a.value(row)),
            Self::Utf8(a) => Value::Utf8(a.value(row).to_owned()),
        }
    }
}

/// The cache schema a table of `schema` packs into, `(name, type, nullable)` per metadata
/// column: the payload column present and binary, string or a struct with a binary `bytes`
/// field; the metadata columns (those `options` chooses, else every other) each of a type
/// that widens into a cache type ([`cache_type`]). `input` names the table in a refusal.
fn cache_columns(
    schema: &ArrowSchema,
    options: &TableOptions,
    input: &str,
) -> Result<Vec<(String, ColumnType, bool)>, PackError> {
    let refuse = |column: &str, reason: String| PackError::Column {
        input: input.to_owned(),
        column: column.to_owned(),
        reason,
    };
    let payload = &options.payload_column;
    let field = schema.field_with_name(payload).map_err(|_| {
        refuse(
            payload,
            format!(
                "no such column (the payload column; the file has {})",
                names(schema)
            ),
        )
    })?;
    let ty = field.data_type();
    match &options.tokens {
        Some(TokenColumn::Ids(_)) if list_value_type(ty).is_none() => {
            return Err(refuse(
                payload,
                format!(
                    "the token column is {ty}; it must be a list, large list or fixed-size list \
                     of integers"
                ),
            ))
        }
        Some(TokenColumn::Text(_))
            if !matches!(
                ty,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            ) =>
        {
            return Err(refuse(
                payload,
                format!("the text column is {ty}; it must be string"),
            ))
        }
        Some(_) => {}
        None if !payload_type_ok(ty) => {
            return Err(refuse(
                payload,
                format!(
                    "the payload column is {ty}; it must be binary, large_binary or string (or a \
                     struct with a binary `bytes` field, as Hugging Face's Image and Audio \
                     features store)"
                ),
            ))
        }
        None => {}
    }
    let chosen: Vec<&Field> = match &options.metadata_columns {
        Some(list) => list
            .iter()
            .map(|name| {
                if name == payload {
                    return Err(refuse(name, "is the payload column, not metadata".into()));
                }
                schema.field_with_name(name).map_err(|_| {
                    refuse(
                        name,
                        format!("no such column (the file has {})", names(schema)),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        None => schema
            .fields()
            .iter()
            .filter(|f| f.name() != payload)
            .map(AsRef::as_ref)
            .collect(),
    };
    let mut columns = Vec::with_capacity(chosen.len());
    for field in chosen {
        let ty = cache_type(field.data_type()).map_err(|reason| refuse(field.name(), reason))?;
        columns.push((field.name().clone(), ty, field.is_nullable()));
    }
    Ok(columns)
}

/// The cache schema a table of `schema` packs into, by the rule [`Tables`] applies to every
/// file (see [`TableOptions`]); for tables that come from elsewhere (the blocks of a Ray
/// dataset), so every Arrow table becomes the same cache columns. `input` names the table in a
/// refusal.
pub fn table_schema(
    schema: &ArrowSchema,
    options: &TableOptions,
    input: &str,
) -> Result<Schema, PackError> {
    let columns = cache_columns(schema, options, input)?;
    let columns = columns
        .into_iter()
        .map(|(name, ty, nullable)| Column::new(name, ty, nullable));
    Schema::new(columns.collect()).map_err(|e| PackError::Input {
        input: input.to_owned(),
        reason: e.to_string(),
    })
}

/// The columns of every file checked against the options and against each other.
struct SchemaCheck<'a> {
    options: &'a TableOptions,
    /// (name, type, nullable) in schema order, from the first file.
    columns: Option<Vec<(String, ColumnType, bool)>>,
    first_file: PathBuf,
    /// The integer type of the first file's token lists (a token input of ids).
    token_values: Option<DataType>,
}

impl<'a> SchemaCheck<'a> {
    fn new(options: &'a TableOptions) -> Self {
        Self {
            options,
            columns: None,
            first_file: PathBuf::new(),
            token_values: None,
        }
    }

    fn file(&mut self, path: &Path, schema: &ArrowSchema) -> Result<(), PackError> {
        let refuse = |column: &str, reason: String| PackError::Column {
            input: path.display().to_string(),
            column: column.to_owned(),
            reason,
        };
        let columns = cache_columns(schema, self.options, &path.display().to_string())?;
        if let Some(TokenColumn::Ids(_)) = &self.options.tokens {
            let values = (schema.field_with_name(&self.options.payload_column).ok())
                .and_then(|field| list_value_type(field.data_type()));
            if let Some(values) = values {
                self.token_values.get_or_insert_with(|| values.clone());
            }
        }
        match &mut self.columns {
            None => {
                self.columns = Some(columns);
                self.first_file = path.to_path_buf();
            }
            Some(expected) => {
                let first = self.first_file.display();
                for (name, ty, nullable) in expected.iter_mut() {
                    let Some((_, found, found_nullable)) =
                        columns.iter().find(|(n, _, _)| n == name)
                    else {
                        return Err(refuse(
                            name,
                            format!("missing here, but present in {first}"),
                        ));
                    };
                    if found != ty {
                        return Err(refuse(
                            name,
                            format!("{} here, but {} in {first}", found.as_str(), ty.as_str()),
                        ));
                    }
                    *nullable |= *found_nullable;
                }
                if let Some((name, _, _)) = columns
                    .iter()
                    .find(|(n, _, _)| !expected.iter().any(|(e, _, _)| e == n))
                {
                    return Err(refuse(name, format!("not in {first}; every file must have the same columns (or choose them)")));
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<(ColumnPlan, Schema), PackError> {
        let columns = self.columns.unwrap_or_default();
        let first = self.first_file.display().to_string();
        let tokens = match &self.options.tokens {
            None => None,
            Some(TokenColumn::Ids(info)) => {
                let info = match info {
                    Some(info) => info.clone(),
                    None => TokenInfo::new(
                        self.token_values
                            .as_ref()
                            .map_or(dsrt_tokens::TokenDtype::U32, default_dtype),
                    ),
                };
                Some((TokenColumn::Ids(Some(info.clone())), info))
            }
            Some(TokenColumn::Text(tokenizer)) => Some((
                TokenColumn::Text(tokenizer.clone()),
                tokenizer.info().clone(),
            )),
        };
        if tokens.is_some() {
            let schema = token_schema(&columns, &first)?;
            let plan = ColumnPlan {
                payload: self.options.payload_column.clone(),
                tokens,
                metadata: columns.into_iter().map(|(n, t, _)| (n, t)).collect(),
            };
            return Ok((plan, schema));
        }
        let schema = Schema::new(
            columns
                .iter()
                .map(|(name, ty, nullable)| Column::new(name.clone(), *ty, *nullable))
                .collect(),
        )
        .map_err(|e| PackError::Input {
            input: self.first_file.display().to_string(),
            reason: e.to_string(),
        })?;
        let plan = ColumnPlan {
            payload: self.options.payload_column.clone(),
            tokens: None,
            metadata: columns.into_iter().map(|(n, t, _)| (n, t)).collect(),
        };
        Ok((plan, schema))
    }
}

fn names(schema: &ArrowSchema) -> String {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    if names.is_empty() {
        "no columns".into()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod schema_tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_table_from_elsewhere_gets_the_columns_a_parquet_file_would() {
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let schema = ArrowSchema::new(vec![
            Field::new("image", DataType::LargeBinary, false),
            Field::new("id", DataType::UInt64, false),
            Field::new("split", dict, true),
            Field::new("score", DataType::Float32, true),
        ]);
        let options = TableOptions::new("image");
        let cache = table_schema(&schema, &options, "the dataset").unwrap();
        let got: Vec<(&str, ColumnType, bool)> = (cache.columns().iter())
            .map(|c| (c.name.as_str(), c.ty, c.nullable))
            .collect();
        assert_eq!(
            got,
            [
                ("id", ColumnType::Int64, false),
                ("split", ColumnType::Utf8, true),
                ("score", ColumnType::Float64, true)
            ]
        );
        let item = Arc::new(Field::new("item", DataType::Utf8, true));
        let listed = ArrowSchema::new(vec![
            Field::new("image", DataType::Binary, false),
            Field::new("tags", DataType::List(item), true),
        ]);
        let refused = table_schema(&listed, &options, "the dataset").unwrap_err();
        assert!(
            refused
                .to_string()
                .starts_with("the dataset: column \"tags\": type "),
            "{refused}"
        );
        let refused =
            table_schema(&listed, &TableOptions::new("picture"), "the dataset").unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("column \"picture\": no such column"),
            "{refused}"
        );
    }
}
