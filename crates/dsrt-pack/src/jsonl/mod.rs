//! JSONL input: one sample per line, the payload in one field (a path, base64 or text), every
//! other field a metadata column, typed by inference over the whole input unless a schema is
//! given. [`Jsonl::scan`] reads the input once (inference, and where every run of lines
//! starts); [`pack`](crate::pack) then reads the runs on its workers, so memory stays bounded
//! and the cache is the same for every number of jobs.

mod infer;
mod payload;
mod problem;

use crate::{Convert, Emit, PackError, TokenColumn};
use dsrt_schema::{Column, ColumnType, Schema, Value, ValueRef};
use dsrt_tokens::{BadTokenId, TokenDtype, TokenEncoder, TokenInfo, N_TOKENS_COLUMN, TOKENS_KEY};
use infer::SchemaInference;
pub use payload::PayloadEncoding;
use payload::{payload_text, PayloadReader};
use problem::{json_kind, InputProblem};
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read, Seek};
use std::path::PathBuf;

/// Where JSONL lines come from: something read from the start as often as needed.
#[derive(Debug)]
pub enum JsonlSource {
    /// A file, read afresh on each pass; relative payload paths start at its directory.
    File(PathBuf),
    /// Lines copied into an anonymous file (a stream read once, spooled by
    /// [`JsonlSource::spool`]); `name` is what messages call it.
    Spooled {
        /// The name messages use (`<stdin>`).
        name: String,
        /// The copy.
        file: File,
    },
    /// Lines held in memory (`dsrt demo`'s built-in set).
    Text {
        /// The name messages use.
        name: String,
        /// The lines.
        text: Cow<'static, str>,
    },
}

impl JsonlSource {
    /// Copies `reader` (standard input, say) into an anonymous temporary file, so it can be
    /// read twice without being held in memory.
    pub fn spool(name: impl Into<String>, mut reader: impl Read) -> Result<Self, PackError> {
        let name = name.into();
        let io = |action| {
            let path = PathBuf::from(&name);
            move |source| PackError::Io {
                path,
                action,
                source,
            }
        };
        let mut file = tempfile::tempfile().map_err(|source| PackError::Io {
            path: std::env::temp_dir(),
            action: "create spool file for stdin",
            source,
        })?;
        io::copy(&mut reader, &mut file).map_err(io("copy to spool file"))?;
        Ok(Self::Spooled { name, file })
    }

    /// The name error messages use for this input.
    fn origin(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Spooled { name, .. } | Self::Text { name, .. } => name.clone(),
        }
    }

    /// The directory relative payload paths start from: the file's own directory, the
    /// current directory otherwise.
    fn base_dir(&self) -> PathBuf {
        match self {
            Self::File(path) => match path.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
                _ => PathBuf::from("."),
            },
            _ => PathBuf::from("."),
        }
    }

    /// Bytes `start..end` of the input.
    fn range(&self, start: u64, end: u64) -> io::Result<Vec<u8>> {
        let len = usize::try_from(end - start).map_err(io::Error::other)?;
        match self {
            Self::File(path) => read_range(&File::open(path)?, start, len),
            Self::Spooled { file, .. } => read_range(file, start, len),
            Self::Text { text, .. } => text
                .as_bytes()
                .get(usize::try_from(start).map_err(io::Error::other)?..)
                .and_then(|rest| rest.get(..len))
                .map(<[u8]>::to_vec)
                .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof)),
        }
    }

    /// A reader from the first line.
    fn open(&mut self) -> Result<Box<dyn BufRead + '_>, PackError> {
        match self {
            Self::File(path) => {
                let file = File::open(&*path).map_err(|source| PackError::Io {
                    path: path.clone(),
                    action: "open JSONL input",
                    source,
                })?;
                Ok(Box::new(BufReader::new(file)))
            }
            Self::Spooled { name, file } => {
                file.rewind().map_err(|source| PackError::Io {
                    path: PathBuf::from(&*name),
                    action: "rewind spool file",
                    source,
                })?;
                Ok(Box::new(BufReader::new(&*file)))
            }
            Self::Text { text, .. } => Ok(Box::new(Cursor::new(text.as_bytes()))),
        }
    }
}

/// `len` bytes of `file` from `start`, without moving its offset (workers share the file).
fn read_range(file: &File, start: u64, len: usize) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut out = vec![0; len];
    file.read_exact_at(&mut out, start)?;
    Ok(out)
}

/// One JSONL line: an object's fields in the order written, so inferred columns keep the
/// input's order (serde_json's own map sorts keys).
#[derive(Debug, Default)]
pub(crate) struct JsonRecord {
    fields: Vec<(String, serde_json::Value)>,
}

impl JsonRecord {
    /// The value of field `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&serde_json::Value> {
        self.fields
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value)
    }
}

impl<'de> Deserialize<'de> for JsonRecord {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(RecordVisitor)
    }
}

struct RecordVisitor;

impl<'de> Visitor<'de> for RecordVisitor {
    type Value = JsonRecord;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonRecord, A::Error> {
        let mut record = JsonRecord::default();
        while let Some((key, value)) = map.next_entry::<String, serde_json::Value>()? {
            // serde_json would keep the last of two equal keys; a silent pick hides a bug in
            // whatever produced the file.
            if record.get(&key).is_some() {
                return Err(de::Error::custom(format_args!(
                    "field {key:?} appears more than once"
                )));
            }
            record.fields.push((key, value));
        }
        Ok(record)
    }
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Reads JSONL lines one at a time, skipping blank ones, holding one line in memory.
struct Records<R> {
    reader: R,
    origin: String,
    line: Vec<u8>,
    line_number: u64,
}

impl<R: BufRead> Records<R> {
    fn new(reader: R, origin: String) -> Self {
        Self {
            reader,
            origin,
            line: Vec::new(),
            line_number: 0,
        }
    }

    /// The next non-blank line as `(line number, record)`, or `None` at the end.
    fn next_record(&mut self) -> Result<Option<(u64, JsonRecord)>, PackError> {
        loop {
            self.line.clear();
            self.line_number += 1;
            let read = self.reader.read_until(b'\n', &mut self.line);
            match read {
                Ok(0) => return Ok(None),
                Ok(_) if self.line.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(_) => {}
                Err(e) => return Err(self.error(InputProblem::Read(e))),
            }
            // Editors on some systems start UTF-8 files with a byte order mark; JSON has none.
            let text = match self.line_number {
                1 => self.line.strip_prefix(UTF8_BOM).unwrap_or(&self.line),
                _ => &self.line,
            };
            return match serde_json::from_slice::<JsonRecord>(text) {
                Ok(record) => Ok(Some((self.line_number, record))),
                Err(e) => Err(self.error(InputProblem::Json(describe_json_error(&e)))),
            };
        }
    }

    fn error(&self, problem: InputProblem) -> PackError {
        input_error(&self.origin, self.line_number, &problem)
    }
}

/// serde_json's message with its "at line 1 column N" replaced by "at column N": each
/// document is one line, and "line 1" next to the real line number would mislead.
fn describe_json_error(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match text.strip_suffix(&position) {
        Some(message) => format!("{message} at column {}", error.column()),
        None => text,
    }
}

/// What [`Jsonl::scan`] reads: the payload field, how it is read, and the metadata schema
/// (inferred from the input when not given).
#[derive(Debug, Clone)]
pub struct JsonlOptions {
    payload_field: String,
    encoding: PayloadEncoding,
    schema: Option<Schema>,
    tokens: Option<TokenColumn>,
}

impl JsonlOptions {
    /// Payloads in `payload_field`, given as paths ([`PayloadEncoding::Path`]), metadata typed
    /// by inference.
    pub fn new(payload_field: impl Into<String>) -> Self {
        Self {
            payload_field: payload_field.into(),
            encoding: PayloadEncoding::default(),
            schema: None,
            tokens: None,
        }
    }

    /// How the payload field is read.
    pub fn encoding(mut self, encoding: PayloadEncoding) -> Self {
        self.encoding = encoding;
        self
    }

    /// The metadata schema, instead of inferring one (a line with a field it lacks, or a value
    /// that does not fit its column, is refused naming the line).
    pub fn schema(mut self, schema: Schema) -> Self {
        self.schema = Some(schema);
        self
    }

    /// A token cache instead: the payload field holds each document's ids (a JSON array of
    /// integers; without a stated width they are uint32) or its text, as `column` says; the
    /// cache's metadata gets `n_tokens` first and its manifest the `tokens` key.
    pub fn tokens(mut self, column: TokenColumn) -> Self {
        self.tokens = Some(column);
        self
    }
}

/// JSONL input scanned and ready to pack: one unit of work per run of lines.
///
/// Inference rules: `true`/`false` is bool, integers int64, other numbers float64, strings
/// utf8; int64 and float64 on different lines widen to float64; any other mix, a nested value,
/// or an integer past int64 is refused naming the line and the field. A column null or missing
/// on some line is nullable; columns keep the order fields first appear in. Blank lines are
/// skipped; a UTF-8 byte order mark on the first line is ignored.
#[derive(Debug)]
pub struct Jsonl {
    source: JsonlSource,
    origin: String,
    base_dir: PathBuf,
    encoding: PayloadEncoding,
    payload_field: String,
    /// The metadata schema (inferred or given).
    metadata: Schema,
    /// The cache's schema: `metadata`, after `n_tokens` for a token cache.
    schema: Schema,
    /// A token cache's column and token info.
    tokens: Option<(TokenColumn, TokenInfo)>,
    chunks: Vec<LineChunk>,
    records: Option<u64>,
}

impl Jsonl {
    /// Reads `source` to infer its schema (unless `options` gives one; `progress` is told the
    /// lines read so far), then again to find where every run of lines starts.
    pub fn scan(
        mut source: JsonlSource,
        options: JsonlOptions,
        progress: &dyn Fn(u64),
    ) -> Result<Self, PackError> {
        let JsonlOptions {
            payload_field,
            encoding,
            schema,
            tokens,
        } = options;
        let origin = source.origin();
        let (schema, records) = match schema {
            Some(schema) if schema.position(&payload_field).is_some() => {
                return Err(PackError::Column {
                    input: origin,
                    column: payload_field,
                    reason: "is the payload field; metadata columns are the other fields".into(),
                })
            }
            Some(schema) => (schema, None),
            None => {
                let token_arrays = matches!(tokens, Some(TokenColumn::Ids(_)));
                let (schema, records) =
                    infer_schema(&mut source, &origin, &payload_field, token_arrays, progress)?;
                (schema, Some(records))
            }
        };
        let chunks = line_chunks(&mut source, &origin)?;
        // A token cache: `n_tokens` before the metadata; ids of no stated width are uint32.
        let tokens = tokens.map(|column| {
            let info = match &column {
                TokenColumn::Ids(info) => {
                    (info.clone()).unwrap_or_else(|| TokenInfo::new(TokenDtype::U32))
                }
                TokenColumn::Text(tokenizer) => tokenizer.info().clone(),
            };
            (column, info)
        });
        let cache_schema = match &tokens {
            Some(_) => token_schema(&schema, &origin)?,
            None => schema.clone(),
        };
        Ok(Self {
            base_dir: source.base_dir(),
            source,
            origin,
            encoding,
            payload_field,
            metadata: schema,
            schema: cache_schema,
            tokens,
            chunks,
            records,
        })
    }

    /// The cache's schema: the metadata schema, inferred or given (after `n_tokens` for a
    /// token cache).
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The samples it holds, when inference counted them.
    pub fn len(&self) -> Option<u64> {
        self.records
    }

    /// Whether inference counted no sample.
    pub fn is_empty(&self) -> bool {
        self.records == Some(0)
    }
}

/// Lines per unit of parallel work: enough that a unit's hand-off is small against its
/// parsing, few enough that two units per job in flight hold little memory.
const CHUNK_LINES: u64 = 256;

/// A run of lines: bytes `start..end` of the input, the first of them line `first_line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineChunk {
    start: u64,
    end: u64,
    first_line: u64,
}

/// Where each run of [`CHUNK_LINES`] lines starts (blank lines counted), in one read of the
/// input that keeps nothing else.
fn line_chunks(source: &mut JsonlSource, origin: &str) -> Result<Vec<LineChunk>, PackError> {
    let mut reader = source.open()?;
    let mut chunks = Vec::new();
    let (mut offset, mut line, mut chunk_start, mut chunk_line) = (0u64, 0u64, 0u64, 1u64);
    loop {
        let buf = reader.fill_buf().map_err(|source| PackError::Io {
            path: PathBuf::from(origin),
            action: "read JSONL input",
            source,
        })?;
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        for (at, _) in buf.iter().enumerate().filter(|(_, &b)| b == b'\n') {
            line += 1;
            if line % CHUNK_LINES == 0 {
                let end = offset + at as u64 + 1;
                chunks.push(LineChunk {
                    start: chunk_start,
                    end,
                    first_line: chunk_line,
                });
                (chunk_start, chunk_line) = (end, line + 1);
            }
        }
        reader.consume(len);
        offset += len as u64;
    }
    if offset > chunk_start {
        chunks.push(LineChunk {
            start: chunk_start,
            end: offset,
            first_line: chunk_line,
        });
    }
    Ok(chunks)
}

impl Convert for Jsonl {
    type Unit = LineChunk;

    fn cache_schema(&self) -> Schema {
        self.schema().clone()
    }

    fn units(&self) -> &[LineChunk] {
        &self.chunks
    }

    fn manifest_keys(&self) -> Vec<(String, serde_json::Value)> {
        (self.tokens.iter())
            .map(|(_, info)| (TOKENS_KEY.to_owned(), info.to_json()))
            .collect()
    }

    fn convert(&self, chunk: &LineChunk, emit: &mut Emit<'_>) -> Result<(), PackError> {
        let bytes = self
            .source
            .range(chunk.start, chunk.end)
            .map_err(|source| PackError::Io {
                path: PathBuf::from(&self.origin),
                action: "read JSONL input",
                source,
            })?;
        let mut records = Records::new(Cursor::new(bytes), self.origin.clone());
        records.line_number = chunk.first_line - 1;
        let mut payloads = PayloadReader::new(self.encoding, self.base_dir.clone());
        while let Some((line, record)) = records.next_record()? {
            let at_line = |problem| input_error(&self.origin, line, &problem);
            let values: Vec<Value> = metadata_values(&self.metadata, &self.payload_field, &record)
                .map_err(at_line)?
                .iter()
                .map(|v| v.to_owned())
                .collect();
            if let Some((column, info)) = &self.tokens {
                let input = || format!("{}, line {line}", self.origin);
                let (payload, n_tokens) = token_payload(&record, &self.payload_field, column, info)
                    .map_err(|problem| match problem {
                        TokenProblem::Line(problem) => at_line(problem),
                        TokenProblem::Bad(bad) => PackError::token_out_of_range(input(), bad, info),
                        TokenProblem::Tokenizer(reason) => PackError::Tokenizer {
                            input: input(),
                            reason,
                        },
                    })?;
                let mut all = Vec::with_capacity(values.len() + 1);
                all.push(Value::Int64(n_tokens));
                all.extend(values);
                emit.sample(input, payload, all)?;
                continue;
            }
            let text = payload_text(&record, &self.payload_field).map_err(at_line)?;
            let payload = payloads
                .load(&self.payload_field, text)
                .map_err(at_line)?
                .to_vec();
            emit.sample(|| format!("{}, line {line}", self.origin), payload, values)?;
        }
        Ok(())
    }
}

/// Why a line's document cannot become a token cache's.
enum TokenProblem {
    Line(InputProblem),
    Bad(BadTokenId),
    Tokenizer(String),
}

/// The payload of a line's document and its `n_tokens`: the field's JSON array of integers,
/// or its text tokenized.
fn token_payload(
    record: &JsonRecord,
    field: &str,
    column: &TokenColumn,
    info: &TokenInfo,
) -> Result<(Vec<u8>, i64), TokenProblem> {
    let encoder = TokenEncoder::new(info);
    let mut payload = Vec::new();
    let count = match column {
        TokenColumn::Ids(_) => {
            let Some(serde_json::Value::Array(items)) = record.get(field) else {
                return Err(TokenProblem::Line(InputProblem::Tokens {
                    field: field.to_owned(),
                    reason: "must be an array of token ids".into(),
                }));
            };
            let mut ids = Vec::with_capacity(items.len());
            for (position, item) in items.iter().enumerate() {
                // Beyond i64 either way: refused below as beyond the width.
                let id = match item {
                    serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => {
                        n.as_i64().unwrap_or(i64::MAX)
                    }
                    other => {
                        return Err(TokenProblem::Line(InputProblem::Tokens {
                            field: field.to_owned(),
                            reason: format!("holds {other} at token {position}, not an integer"),
                        }))
                    }
                };
                ids.push(id);
            }
            (encoder.encode(&ids, &mut payload)).map_err(TokenProblem::Bad)?;
            ids.len()
        }
        TokenColumn::Text(tokenizer) => {
            let text = payload_text(record, field).map_err(TokenProblem::Line)?;
            let mut ids = Vec::new();
            (tokenizer.encode(text, &mut ids)).map_err(TokenProblem::Tokenizer)?;
            (encoder.encode(&ids, &mut payload)).map_err(TokenProblem::Bad)?;
            ids.len()
        }
    };
    Ok((payload, i64::try_from(count).unwrap_or(i64::MAX)))
}

/// The cache schema of a token cache whose metadata is `schema`: `n_tokens` first.
fn token_schema(schema: &Schema, origin: &str) -> Result<Schema, PackError> {
    if schema.position(N_TOKENS_COLUMN).is_some() {
        return Err(PackError::Column {
            input: origin.to_owned(),
            column: N_TOKENS_COLUMN.to_owned(),
            reason: "is a token cache's own column; rename the field".into(),
        });
    }
    let columns = std::iter::once(Column::new(N_TOKENS_COLUMN, ColumnType::Int64, false))
        .chain(schema.columns().iter().cloned())
        .collect();
    Schema::new(columns).map_err(|e| PackError::Input {
        input: origin.to_owned(),
        reason: e.to_string(),
    })
}

/// A line's refusal as the packer carries it: `<input>, line <n>: <what is wrong>`.
fn input_error(origin: &str, line: u64, problem: &InputProblem) -> PackError {
    PackError::Input {
        input: format!("{origin}, line {line}"),
        reason: problem.to_string(),
    }
}

/// The first pass: every line read once, nothing kept but per-column state.
fn infer_schema(
    source: &mut JsonlSource,
    origin: &str,
    payload_field: &str,
    token_arrays: bool,
    progress: &dyn Fn(u64),
) -> Result<(Schema, u64), PackError> {
    let mut records = Records::new(source.open()?, origin.to_owned());
    let mut inference = SchemaInference::new(payload_field);
    if token_arrays {
        inference = inference.token_arrays();
    }
    while let Some((line, record)) = records.next_record()? {
        (inference.observe(line, &record))
            .map_err(|problem| input_error(origin, line, &problem))?;
        progress(inference.records());
    }
    let count = inference.records();
    Ok((inference.finish(origin)?, count))
}

/// The record's metadata in schema order, each value checked against its column so the
/// error names the line and field rather than only the sample number.
fn metadata_values<'r>(
    schema: &Schema,
    payload_field: &str,
    record: &'r JsonRecord,
) -> Result<Vec<ValueRef<'r>>, InputProblem> {
    if let Some((extra, _)) = record
        .fields
        .iter()
        .find(|(key, _)| key != payload_field && schema.position(key).is_none())
    {
        return Err(InputProblem::NotInSchema {
            field: extra.clone(),
        });
    }
    schema
        .columns()
        .iter()
        .map(|column| {
            let value = match record.get(&column.name) {
                None | Some(serde_json::Value::Null) if column.nullable => {
                    return Ok(ValueRef::Null)
                }
                None => {
                    return Err(InputProblem::NullNotAllowed {
                        field: column.name.clone(),
                        found: "missing",
                    })
                }
                Some(value) => value,
            };
            to_value(&column.name, column.ty, value)
        })
        .collect()
}

/// A JSON value as a value of a column of type `ty`. Integers are accepted in float64
/// columns (that is how an int/float mix is inferred); nothing else converts.
fn to_value<'r>(
    field: &str,
    ty: ColumnType,
    value: &'r serde_json::Value,
) -> Result<ValueRef<'r>, InputProblem> {
    use serde_json::Value as J;
    let converted = match (ty, value) {
        (_, J::Null) => {
            return Err(InputProblem::NullNotAllowed {
                field: field.to_owned(),
                found: "null",
            })
        }
        (ColumnType::Bool, J::Bool(v)) => Some(ValueRef::Bool(*v)),
        (ColumnType::Int64, J::Number(n)) if n.is_i64() => n.as_i64().map(ValueRef::Int64),
        (ColumnType::Int64, J::Number(n)) if n.is_u64() => {
            return Err(InputProblem::IntOutOfRange {
                field: field.to_owned(),
                value: n.to_string(),
            })
        }
        (ColumnType::Float64, J::Number(n)) => n.as_f64().map(ValueRef::Float64),
        (ColumnType::Utf8, J::String(s)) => Some(ValueRef::Utf8(s)),
        _ => None,
    };
    converted.ok_or_else(|| InputProblem::WrongType {
        field: field.to_owned(),
        expected: ty,
        found: json_kind(value),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &'static str) -> Records<Cursor<&'static [u8]>> {
        Records::new(Cursor::new(text.as_bytes()), "t.jsonl".into())
    }

    #[test]
    fn keeps_field_order_and_skips_blank_lines() {
        let mut r = records("\n{\"b\": 1, \"a\": 2}\n  \n{\"c\": null}");
        let (line, first) = r.next_record().unwrap().unwrap();
        assert_eq!(line, 2);
        let keys: Vec<_> = first.fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(r.next_record().unwrap().unwrap().0, 4);
        assert!(r.next_record().unwrap().is_none());
    }

    #[test]
    fn ignores_a_byte_order_mark_on_the_first_line_only() {
        let mut r = records("\u{feff}{\"a\": 1}\n\u{feff}{}\n");
        assert!(r.next_record().unwrap().is_some());
        assert!(r.next_record().is_err());
    }

    #[test]
    fn names_the_line_of_bad_json() {
        let mut r = records("{}\n{\"a\": 1, \"a\": 2}\n");
        r.next_record().unwrap();
        let err = r.next_record().unwrap_err().to_string();
        assert!(err.starts_with("t.jsonl, line 2: "), "{err}");
        assert!(err.contains("\"a\" appears more than once"), "{err}");
        assert!(!err.contains("line 1"), "{err}");
        let err = records("[1, 2]\n").next_record().unwrap_err().to_string();
        assert!(
            err.contains("line 1") && err.contains("expected a JSON object"),
            "{err}"
        );
    }

    #[test]
    fn converts_values_by_column_type() {
        let v = serde_json::json!(3);
        assert_eq!(
            to_value("x", ColumnType::Float64, &v).unwrap(),
            ValueRef::Float64(3.0)
        );
        assert_eq!(
            to_value("x", ColumnType::Int64, &v).unwrap(),
            ValueRef::Int64(3)
        );
        let big = serde_json::json!(u64::MAX);
        assert!(matches!(
            to_value("x", ColumnType::Int64, &big),
            Err(InputProblem::IntOutOfRange { .. })
        ));
        let float = serde_json::json!(0.5);
        assert!(matches!(
            to_value("x", ColumnType::Int64, &float),
            Err(InputProblem::WrongType { .. })
        ));
    }
}
