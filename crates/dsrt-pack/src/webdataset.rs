//! WebDataset shards: uncompressed tar files whose consecutive members sharing a key are one
//! sample ([`WebDataset`]).
//!
//! A member's key is its path up to the first dot of its file name, its extension the rest
//! (`train/000017.seg.png`: key `train/000017`, extension `seg.png`), as the `webdataset`
//! package splits them. The payload is the member with the first of the payload extensions
//! the sample has; `.cls` (a decimal integer) becomes the int64 column `cls`, `.txt` (UTF-8)
//! the utf8 column `txt`, and a `.json` object's fields of primitive values (null, bool,
//! number, string) a column each (in the order fields first appear, those new in one object
//! by name); every sample also gets its `key` (utf8). Members with any
//! other extension, and entries that are not regular files, are ignored.
//!
//! The tars are read twice: once at scan, seeking past payloads, for the schema (a column is
//! nullable when some sample lacks it or has it null; integers and numbers with a fraction
//! in one field widen to float64, any other mix is refused), then by the workers.

use crate::{Convert, Emit, PackError};
use dsrt_schema::{Column, ColumnType, Schema, Value};
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// What a WebDataset's members become.
#[derive(Debug, Clone)]
pub struct WebDatasetOptions {
    payload_exts: Vec<String>,
    skip_bad: bool,
}

impl WebDatasetOptions {
    /// The payload is the member with the first of `payload_exts` (e.g. `["jpg", "png"]`)
    /// that a sample has.
    pub fn new(payload_exts: Vec<String>) -> Self {
        Self {
            payload_exts,
            skip_bad: false,
        }
    }

    /// Skip a sample that cannot become one (no payload member, a bad `.cls`, `.txt` or
    /// `.json`) instead of refusing the input; [`WebDataset::skipped`] lists them. A field
    /// typed differently from earlier samples is refused all the same.
    pub fn skip_bad(mut self, skip: bool) -> Self {
        self.skip_bad = skip;
        self
    }

    fn is_payload(&self, ext: &str) -> bool {
        self.payload_exts.iter().any(|e| e == ext)
    }

    /// Whether a member with `ext` becomes a column.
    fn is_column(&self, ext: &str) -> bool {
        matches!(ext, "cls" | "txt" | "json") && !self.is_payload(ext)
    }
}

/// A sample left out by [`WebDatasetOptions::skip_bad`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedSample {
    /// The tar file.
    pub input: String,
    /// The sample's key.
    pub key: String,
    /// Why it was left out.
    pub reason: String,
}

/// The columns the `.cls` and `.txt` members fill.
const CLS: &str = "cls";
const TXT: &str = "txt";
const KEY: &str = "key";

/// WebDataset tar shards, one sample per key, tars in the order given (one unit each), members
/// in tar order.
#[derive(Debug)]
pub struct WebDataset {
    tars: Vec<PathBuf>,
    options: WebDatasetOptions,
    schema: Schema,
    /// Position in the schema of each json field.
    json_columns: HashMap<String, usize>,
    skipped: Vec<SkippedSample>,
    samples: u64,
}

/// A primitive JSON value.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl Json {
    fn ty(&self) -> Option<ColumnType> {
        match self {
            Self::Null => None,
            Self::Bool(_) => Some(ColumnType::Bool),
            Self::Int(_) => Some(ColumnType::Int64),
            Self::Float(_) => Some(ColumnType::Float64),
            Self::Str(_) => Some(ColumnType::Utf8),
        }
    }

    fn into_value(self, ty: ColumnType) -> Value {
        match (self, ty) {
            (Self::Null, _) => Value::Null,
            (Self::Bool(v), _) => Value::Bool(v),
            #[allow(clippy::cast_precision_loss)] // the widening the column's type says
            (Self::Int(v), ColumnType::Float64) => Value::Float64(v as f64),
            (Self::Int(v), _) => Value::Int64(v),
            (Self::Float(v), _) => Value::Float64(v),
            (Self::Str(v), _) => Value::Utf8(v),
        }
    }
}

/// One sample's members, as read.
struct Group {
    key: String,
    /// (extension, bytes when the reader asked for them).
    members: Vec<(String, Option<Vec<u8>>)>,
    /// Why the sample cannot be whole: a member the tar was cut in (its last sample).
    truncated: Option<String>,
}

/// One sample, parsed.
struct Parsed {
    payload: Option<Vec<u8>>,
    cls: Option<i64>,
    txt: Option<String>,
    json: Vec<(String, Json)>,
}

impl Group {
    /// The sample, or why it is bad (a sample `skip_bad` leaves out).
    fn parse(self, options: &WebDatasetOptions) -> Result<Parsed, String> {
        let bad = |reason: String| Err(reason);
        if let Some(reason) = self.truncated {
            return bad(reason);
        }
        for (i, (ext, _)) in self.members.iter().enumerate() {
            if self.members[..i].iter().any(|(e, _)| e == ext) {
                return bad(format!("two members with extension {ext:?}"));
            }
        }
        let Some(chosen) = options
            .payload_exts
            .iter()
            .find(|want| self.members.iter().any(|(e, _)| e == *want))
        else {
            let have: Vec<&str> = self.members.iter().map(|(e, _)| e.as_str()).collect();
            return bad(format!(
                "no payload member (extension {}); its members: {}",
                options.payload_exts.join(" or "),
                if have.is_empty() {
                    "none".to_owned()
                } else {
                    have.join(", ")
                }
            ));
        };
        let mut parsed = Parsed {
            payload: None,
            cls: None,
            txt: None,
            json: Vec::new(),
        };
        for (ext, bytes) in self.members {
            if ext == *chosen {
                parsed.payload = bytes;
                continue;
            }
            let (true, Some(bytes)) = (options.is_column(&ext), bytes) else {
                continue;
            };
            let text = match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(_) => return bad(format!("the .{ext} member is not UTF-8")),
            };
            match ext.as_str() {
                CLS => match text.trim().parse::<i64>() {
                    Ok(cls) => parsed.cls = Some(cls),
                    Err(_) => {
                        return bad(format!(
                            "the .cls member {:?} is not an int64 integer",
                            shorten(text.trim())
                        ))
                    }
                },
                TXT => parsed.txt = Some(text),
                _ => parsed.json = parse_json(&text)?,
            }
        }
        Ok(parsed)
    }
}

fn shorten(text: &str) -> String {
    text.chars().take(40).collect()
}

fn parse_json(text: &str) -> Result<Vec<(String, Json)>, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("the .json member is not JSON: {e}"))?;
    let serde_json::Value::Object(object) = value else {
        return Err("the .json member is not a JSON object".into());
    };
    object
        .into_iter()
        .map(|(field, value)| {
            let value = match value {
                serde_json::Value::Null => Json::Null,
                serde_json::Value::Bool(v) => Json::Bool(v),
                serde_json::Value::Number(n) => match n.as_i64() {
                    Some(v) => Json::Int(v),
                    None => Json::Float(n.as_f64().unwrap_or(f64::NAN)),
                },
                serde_json::Value::String(s) => Json::Str(s),
                serde_json::Value::Array(_) | serde_json::Value::Object(_) => {
                    let what = if value.is_array() {
                        "an array"
                    } else {
                        "an object"
                    };
                    return Err(format!(
                        "json field {field:?} is {what}; only null, bool, number and string \
                         fields become columns"
                    ));
                }
            };
            Ok((field, value))
        })
        .collect::<Result<Vec<_>, String>>()
        .map(|mut fields| {
            // By name, whatever map serde_json was built with, so the column order never
            // depends on a feature another crate turns on.
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            fields
        })
}

/// Reads the tar at `path` and hands each sample's members to `each`, loading the bytes of
/// those whose extension `load` accepts and seeking past the others.
fn for_each_group(
    path: &Path,
    load: impl Fn(&str) -> bool,
    mut each: impl FnMut(Group) -> Result<(), PackError>,
) -> Result<(), PackError> {
    let read_error = PackError::io(path, "read tar");
    let mut file = File::open(path).map_err(PackError::io(path, "open"))?;
    let mut magic = [0u8; 2];
    let n = file
        .read(&mut magic)
        .map_err(PackError::io(path, "read tar"))?;
    if n == 2 && magic == [0x1f, 0x8b] {
        return Err(PackError::Input {
            input: path.display().to_string(),
            reason: "a gzip-compressed tar; WebDataset shards are read uncompressed \
                     (gunzip it first)"
                .into(),
        });
    }
    let file = File::open(path).map_err(PackError::io(path, "open"))?;
    // What the tar holds bounds every member: a header may declare any size.
    let tar_len = file.metadata().map_err(PackError::io(path, "open"))?.len();
    let mut archive = tar::Archive::new(file);
    let entries = archive.entries_with_seek().map_err(read_error)?;
    let mut current: Option<Group> = None;
    for entry in entries {
        let mut entry = entry.map_err(PackError::io(path, "read tar"))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let member = entry.path().map_err(PackError::io(path, "read tar"))?;
        let Some(name) = member.to_str().map(str::to_owned) else {
            return Err(PackError::Input {
                input: format!("{}: {}", path.display(), member.display()),
                reason: "the member's name is not valid UTF-8".into(),
            });
        };
        let base = name.rfind('/').map_or(0, |slash| slash + 1);
        let Some(dot) = name[base..].find('.') else {
            continue;
        };
        let (key, ext) = (&name[..base + dot], &name[base + dot + 1..]);
        if current.as_ref().is_some_and(|g| g.key != key) {
            if let Some(group) = current.take() {
                each(group)?;
            }
        }
        let group = current.get_or_insert_with(|| Group {
            key: key.to_owned(),
            members: Vec::new(),
            truncated: None,
        });
        // A member reaching past the end of the file was cut short (a copy interrupted, a
        // disk full): nothing of it is trusted, and nothing follows it.
        let size = entry.size();
        let end = entry.raw_file_position().saturating_add(size);
        if end > tar_len {
            group.truncated = Some(format!(
                "the tar ends inside member {name:?}: it declares {size} bytes, the file holds \
                 {} of them",
                tar_len.saturating_sub(entry.raw_file_position())
            ));
            break;
        }
        let bytes = if load(ext) {
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            entry
                .read_to_end(&mut bytes)
                .map_err(PackError::io(path, "read tar"))?;
            if bytes.len() as u64 != size {
                group.truncated = Some(format!(
                    "member {name:?} declares {size} bytes, {} could be read",
                    bytes.len()
                ));
                break;
            }
            Some(bytes)
        } else {
            None
        };
        group.members.push((ext.to_owned(), bytes));
    }
    match current {
        Some(group) => each(group),
        None => Ok(()),
    }
}

/// A column found at scan: (name, type, samples with a non-null value, the tar and key that
/// first typed it).
type ColumnGuess = (String, Option<ColumnType>, u64, (String, String));

/// The columns found so far at scan.
struct Inference {
    columns: Vec<ColumnGuess>,
    positions: HashMap<String, usize>,
    samples: u64,
}

impl Inference {
    fn observe(&mut self, tar: &Path, key: &str, parsed: &Parsed) -> Result<(), PackError> {
        let conflict = |reason: String| PackError::BadSample {
            input: tar.display().to_string(),
            key: key.to_owned(),
            reason,
        };
        let cls = parsed.cls.map(Json::Int);
        let txt = parsed.txt.clone().map(Json::Str);
        let fixed = [(CLS, cls.as_ref()), (TXT, txt.as_ref())];
        let fixed = fixed
            .iter()
            .filter_map(|(name, value)| value.map(|v| (*name, v)));
        for (field, _) in &parsed.json {
            if [KEY, CLS, TXT].contains(&field.as_str()) {
                return Err(conflict(format!(
                    "json field {field:?} has the name of the `{field}` column"
                )));
            }
        }
        let json = parsed.json.iter().map(|(f, v)| (f.as_str(), v));
        for (field, value) in fixed.chain(json) {
            let at = (tar.display().to_string(), key.to_owned());
            let position = *self.positions.entry(field.to_owned()).or_insert_with(|| {
                self.columns.push((field.to_owned(), None, 0, at.clone()));
                self.columns.len() - 1
            });
            let (_, ty, non_null, first) = &mut self.columns[position];
            let Some(found) = value.ty() else {
                continue;
            };
            *non_null += 1;
            *ty = match (*ty, found) {
                (None, found) => {
                    *first = at;
                    Some(found)
                }
                (Some(t), f) if t == f => Some(t),
                (Some(ColumnType::Int64), ColumnType::Float64)
                | (Some(ColumnType::Float64), ColumnType::Int64) => Some(ColumnType::Float64),
                (Some(t), f) => {
                    return Err(conflict(format!(
                        "field {field:?} is {} here but {} in {} sample {:?}",
                        f.as_str(),
                        t.as_str(),
                        first.0,
                        first.1
                    )))
                }
            };
        }
        self.samples += 1;
        Ok(())
    }
}

impl WebDataset {
    /// Reads every tar once (seeking past payloads) for the schema and the bad samples.
    pub fn scan(tars: &[PathBuf], options: WebDatasetOptions) -> Result<Self, PackError> {
        if options.payload_exts.is_empty() {
            return Err(PackError::Input {
                input: "the WebDataset options".into(),
                reason: "no payload extension given".into(),
            });
        }
        let mut inference = Inference {
            columns: Vec::new(),
            positions: HashMap::new(),
            samples: 0,
        };
        let mut skipped = Vec::new();
        for tar in tars {
            for_each_group(
                tar,
                |ext| options.is_column(ext),
                |group| {
                    let key = group.key.clone();
                    match group.parse(&options) {
                        Ok(parsed) => inference.observe(tar, &key, &parsed),
                        Err(reason) if options.skip_bad => {
                            skipped.push(SkippedSample {
                                input: tar.display().to_string(),
                                key,
                                reason,
                            });
                            Ok(())
                        }
                        Err(reason) => Err(PackError::BadSample {
                            input: tar.display().to_string(),
                            key,
                            reason,
                        }),
                    }
                },
            )?;
        }
        let mut columns = vec![Column::new(KEY, ColumnType::Utf8, false)];
        let mut json_columns = HashMap::new();
        // `cls` and `txt` lead, whichever sample first had them; json fields follow in the
        // order they first appear.
        let mut found = inference.columns;
        found.sort_by_key(|(name, ..)| match name.as_str() {
            CLS => 0,
            TXT => 1,
            _ => 2,
        });
        for (name, ty, non_null, first) in found {
            let Some(ty) = ty else {
                let (input, key) = first;
                return Err(PackError::BadSample {
                    input,
                    key,
                    reason: format!(
                        "field {name:?} is null in every sample, so it has no type; drop it"
                    ),
                });
            };
            if name != CLS && name != TXT {
                json_columns.insert(name.clone(), columns.len());
            }
            columns.push(Column::new(name, ty, non_null < inference.samples));
        }
        let schema = Schema::new(columns).map_err(|e| PackError::Input {
            input: "the WebDataset".into(),
            reason: e.to_string(),
        })?;
        Ok(Self {
            tars: tars.to_vec(),
            options,
            schema,
            json_columns,
            skipped,
            samples: inference.samples,
        })
    }

    /// The schema of its samples: `key`, then `cls` and `txt` if any sample has them, then
    /// the json fields in the order they first appear (those of one object by name).
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The samples it makes.
    pub fn len(&self) -> u64 {
        self.samples
    }

    /// Whether it makes no sample.
    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    /// The samples left out (with [`WebDatasetOptions::skip_bad`]), in input order.
    pub fn skipped(&self) -> &[SkippedSample] {
        &self.skipped
    }

    fn values(&self, key: String, parsed: Parsed) -> Vec<Value> {
        let mut values = vec![Value::Null; self.schema.len()];
        values[0] = Value::Utf8(key);
        let position = |name: &str| self.schema.columns().iter().position(|c| c.name == name);
        if let (Some(cls), Some(at)) = (parsed.cls, position(CLS)) {
            values[at] = Value::Int64(cls);
        }
        if let (Some(txt), Some(at)) = (parsed.txt, position(TXT)) {
            values[at] = Value::Utf8(txt);
        }
        for (field, value) in parsed.json {
            if let Some(&at) = self.json_columns.get(&field) {
                values[at] = value.into_value(self.schema.columns()[at].ty);
            }
        }
        values
    }
}

impl Convert for WebDataset {
    type Unit = PathBuf;

    fn cache_schema(&self) -> Schema {
        self.schema().clone()
    }

    fn skipped_count(&self) -> Option<usize> {
        Some(self.skipped().len())
    }

    fn units(&self) -> &[PathBuf] {
        &self.tars
    }

    fn convert(&self, tar: &PathBuf, emit: &mut Emit<'_>) -> Result<(), PackError> {
        let options = &self.options;
        for_each_group(
            tar,
            |ext| options.is_column(ext) || options.is_payload(ext),
            |group| {
                let key = group.key.clone();
                let mut parsed = match group.parse(options) {
                    Ok(parsed) => parsed,
                    // The scan found the same problem and recorded the skip (or refused).
                    Err(_) if options.skip_bad => return Ok(()),
                    Err(reason) => {
                        return Err(PackError::BadSample {
                            input: tar.display().to_string(),
                            key,
                            reason,
                        })
                    }
                };
                // Payload members are loaded in this pass, so the chosen one has its bytes.
                let payload = parsed.payload.take().unwrap_or_default();
                let values = self.values(key.clone(), parsed);
                emit.sample(
                    || format!("{}: sample {key:?}", tar.display()),
                    payload,
                    values,
                )
            },
        )
    }
}
