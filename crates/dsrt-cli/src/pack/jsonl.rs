//! JSONL input: where the lines come from, reading them one at a time as ordered JSON objects,
//! and the passes of `dsrt pack --jsonl` (infer the schema, find the runs of lines, then write
//! them on several threads).

use super::from_dir::Run;
use super::infer::SchemaInference;
use super::input_error::{json_kind, InputError, InputProblem};
use super::payload::{payload_text, PayloadEncoding, PayloadReader};
use super::target::OutputDir;
use super::PackTarget;
use crate::error::CliError;
use crate::progress::Progress;
use datasetrt::pack::{Convert, Emit, PackError, TokenColumn};
use datasetrt::tokens::{TokenDtype, TokenEncoder, TokenInfo, N_TOKENS_COLUMN, TOKENS_KEY};
use datasetrt::{CacheSummary, ColumnType, Schema, Value, ValueRef};
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Seek};
use std::path::{Path, PathBuf};

/// What `dsrt pack --jsonl` packs.
#[derive(Debug)]
pub(crate) struct JsonlJob {
    /// Where the lines come from.
    pub(crate) source: JsonlSource,
    /// The field holding the payload; every other field is metadata.
    pub(crate) payload_field: String,
    /// How the payload field is read.
    pub(crate) encoding: PayloadEncoding,
    /// The metadata schema; inferred from the input when `None`.
    pub(crate) schema: Option<Schema>,
    /// For a token cache: the payload field holds each document's ids (a JSON array of
    /// integers) or its text, as this says.
    pub(crate) tokens: Option<TokenColumn>,
}

/// Where JSONL lines come from. Every pass reads from the first line.
#[derive(Debug)]
pub(crate) enum JsonlSource {
    /// A file, read afresh on each pass.
    File(PathBuf),
    /// Standard input, not yet read.
    Stdin,
    /// Standard input copied to an anonymous temporary file, so it can be read twice without
    /// holding it in memory.
    Spooled(File),
    /// Text compiled into the binary (`dsrt demo`).
    Embedded {
        /// The name messages use.
        name: &'static str,
        /// The lines.
        text: &'static str,
    },
}

impl JsonlSource {
    /// A JSONL file.
    pub(crate) fn file(path: &Path) -> Self {
        Self::File(path.to_path_buf())
    }

    /// Standard input.
    pub(crate) fn stdin() -> Self {
        Self::Stdin
    }

    /// The name error messages use for this input.
    fn origin(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Stdin | Self::Spooled(_) => "<stdin>".to_owned(),
            Self::Embedded { name, .. } => (*name).to_owned(),
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

    /// Makes the input readable more than once: stdin is copied to a temporary file.
    fn make_rereadable(self) -> Result<Self, CliError> {
        if !matches!(self, Self::Stdin) {
            return Ok(self);
        }
        let mut spool = tempfile::tempfile().map_err(CliError::io(
            std::env::temp_dir(),
            "create spool file for stdin",
        ))?;
        io::copy(&mut io::stdin().lock(), &mut spool)
            .map_err(CliError::io("<stdin>", "copy to spool file"))?;
        Ok(Self::Spooled(spool))
    }

    /// Bytes `start..end` of a rereadable input (a file, a spooled stdin or embedded text).
    fn range(&self, start: u64, end: u64) -> io::Result<Vec<u8>> {
        let len = usize::try_from(end - start).map_err(io::Error::other)?;
        match self {
            Self::File(path) => read_range(&File::open(path)?, start, len),
            Self::Spooled(file) => read_range(file, start, len),
            Self::Embedded { text, .. } => text
                .as_bytes()
                .get(usize::try_from(start).map_err(io::Error::other)?..)
                .and_then(|rest| rest.get(..len))
                .map(<[u8]>::to_vec)
                .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof)),
            Self::Stdin => Err(io::Error::other("standard input is read once only")),
        }
    }

    /// A reader from the first line.
    fn open(&mut self) -> Result<Box<dyn BufRead + '_>, CliError> {
        match self {
            Self::File(path) => {
                let file =
                    File::open(&*path).map_err(CliError::io(path.clone(), "open JSONL input"))?;
                Ok(Box::new(BufReader::new(file)))
            }
            // Read once only: `pack` spools stdin first whenever it needs two passes.
            Self::Stdin => Ok(Box::new(io::stdin().lock())),
            Self::Spooled(file) => {
                file.rewind()
                    .map_err(CliError::io("<stdin>", "rewind spool file"))?;
                Ok(Box::new(BufReader::new(&*file)))
            }
            Self::Embedded { text, .. } => Ok(Box::new(Cursor::new(text.as_bytes()))),
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
    pub(crate) fields: Vec<(String, serde_json::Value)>,
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
pub(crate) struct Records<R> {
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
    fn next_record(&mut self) -> Result<Option<(u64, JsonRecord)>, InputError> {
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

    fn error(&self, problem: InputProblem) -> InputError {
        InputError {
            origin: self.origin.clone(),
            line: self.line_number,
            problem,
        }
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

/// Runs `dsrt pack --jsonl`: infers the schema in a first pass unless one is given, finds where
/// every run of [`CHUNK_LINES`] lines starts, then writes every line as a sample, on `jobs`
/// threads each reading its own runs of lines (loading payload files included), appended in
/// line order: the cache is the same for every `jobs`.
pub(crate) fn pack(
    job: JsonlJob,
    target: &PackTarget,
    out: OutputDir,
    jobs: Option<usize>,
) -> Result<CacheSummary, CliError> {
    let JsonlJob {
        source,
        payload_field,
        encoding,
        schema,
        tokens,
    } = job;
    let origin = source.origin();
    let base_dir = source.base_dir();
    // Workers read the input at their own offsets: stdin is spooled to a file first.
    let mut source = source.make_rereadable()?;
    let (schema, records) = match schema {
        Some(schema) => {
            check_schema_excludes_payload(&schema, &payload_field)?;
            (schema, None)
        }
        None => {
            let token_arrays = matches!(tokens, Some(TokenColumn::Ids(_)));
            let (schema, records) =
                infer_schema(&mut source, &origin, &payload_field, token_arrays)?;
            (schema, Some(records))
        }
    };
    let chunks = line_chunks(&mut source, &origin)?;
    // A token cache: `n_tokens` before the metadata; ids of no stated width are uint32.
    let tokens = tokens.map(|column| {
        let info = match &column {
            TokenColumn::Ids(info) => info
                .clone()
                .unwrap_or_else(|| TokenInfo::new(TokenDtype::U32)),
            TokenColumn::Text(tokenizer) => tokenizer.info().clone(),
        };
        (column, info)
    });
    let cache_schema = match &tokens {
        Some(_) => token_schema(&schema, &origin)?,
        None => schema.clone(),
    };
    let lines = JsonlLines {
        source: &source,
        origin,
        base_dir,
        encoding,
        payload_field,
        schema: schema.clone(),
        chunks,
        tokens,
    };
    Run::new(target, jobs)?.pack(&lines, cache_schema, records, out)
}

/// Lines per unit of parallel work: enough that a unit's hand-off is small against its
/// parsing, few enough that two units per job in flight hold little memory.
const CHUNK_LINES: u64 = 256;

/// A run of lines: bytes `start..end` of the input, the first of them line `first_line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineChunk {
    start: u64,
    end: u64,
    first_line: u64,
}

/// Where each run of [`CHUNK_LINES`] lines starts (blank lines counted), in one read of the
/// input that keeps nothing else.
fn line_chunks(source: &mut JsonlSource, origin: &str) -> Result<Vec<LineChunk>, CliError> {
    let mut reader = source.open()?;
    let mut chunks = Vec::new();
    let (mut offset, mut line, mut chunk_start, mut chunk_line) = (0u64, 0u64, 0u64, 1u64);
    loop {
        let buf = reader
            .fill_buf()
            .map_err(CliError::io(origin.to_owned(), "read JSONL input"))?;
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

/// JSONL lines as a parallel conversion: each unit a [`LineChunk`].
struct JsonlLines<'s> {
    source: &'s JsonlSource,
    origin: String,
    base_dir: PathBuf,
    encoding: PayloadEncoding,
    payload_field: String,
    schema: Schema,
    chunks: Vec<LineChunk>,
    tokens: Option<(TokenColumn, TokenInfo)>,
}

impl Convert for JsonlLines<'_> {
    type Unit = LineChunk;

    fn units(&self) -> &[LineChunk] {
        &self.chunks
    }

    fn manifest_keys(&self) -> Vec<(String, serde_json::Value)> {
        self.tokens
            .iter()
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
        while let Some((line, record)) = records.next_record().map_err(input_error)? {
            let at_line = |problem| {
                input_error(InputError {
                    origin: self.origin.clone(),
                    line,
                    problem,
                })
            };
            let values: Vec<Value> = metadata_values(&self.schema, &self.payload_field, &record)
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
    Bad(datasetrt::tokens::BadTokenId),
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
            encoder
                .encode(&ids, &mut payload)
                .map_err(TokenProblem::Bad)?;
            ids.len()
        }
        TokenColumn::Text(tokenizer) => {
            let text = payload_text(record, field).map_err(TokenProblem::Line)?;
            let mut ids = Vec::new();
            tokenizer
                .encode(text, &mut ids)
                .map_err(TokenProblem::Tokenizer)?;
            encoder
                .encode(&ids, &mut payload)
                .map_err(TokenProblem::Bad)?;
            ids.len()
        }
    };
    Ok((payload, i64::try_from(count).unwrap_or(i64::MAX)))
}

/// The cache schema of a token cache whose metadata is `schema`: `n_tokens` first.
fn token_schema(schema: &Schema, origin: &str) -> Result<Schema, CliError> {
    if schema.position(N_TOKENS_COLUMN).is_some() {
        return Err(CliError::Invalid(format!(
            "{origin}: field {N_TOKENS_COLUMN:?} is a token cache's own column; rename it"
        )));
    }
    let columns = std::iter::once(datasetrt::Column::new(
        N_TOKENS_COLUMN,
        ColumnType::Int64,
        false,
    ))
    .chain(schema.columns().iter().cloned())
    .collect();
    datasetrt::Schema::new(columns).map_err(|e| CliError::Invalid(format!("{origin}: {e}")))
}

/// A line's refusal as the packer carries it: its text is the line's own message.
fn input_error(error: InputError) -> PackError {
    PackError::Input {
        input: format!("{}, line {}", error.origin, error.line),
        reason: error.problem.to_string(),
    }
}

/// The first pass: every line read once, nothing kept but per-column state.
fn infer_schema(
    source: &mut JsonlSource,
    origin: &str,
    payload_field: &str,
    token_arrays: bool,
) -> Result<(Schema, u64), CliError> {
    let progress = Progress::samples("inferring schema", None);
    let mut records = Records::new(source.open()?, origin.to_owned());
    let mut inference = SchemaInference::new(payload_field);
    if token_arrays {
        inference = inference.token_arrays();
    }
    while let Some((line, record)) = records.next_record()? {
        inference
            .observe(line, &record)
            .map_err(|problem| InputError {
                origin: origin.to_owned(),
                line,
                problem,
            })?;
        progress.inc();
    }
    progress.finish();
    let count = inference.records();
    Ok((inference.finish(origin)?, count))
}

fn check_schema_excludes_payload(schema: &Schema, payload_field: &str) -> Result<(), CliError> {
    if schema.position(payload_field).is_some() {
        return Err(CliError::Invalid(format!(
            "the schema has a column {payload_field:?}, which is the payload field; metadata columns are the other fields"
        )));
    }
    Ok(())
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
