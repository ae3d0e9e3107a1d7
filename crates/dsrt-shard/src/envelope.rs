//! The metadata JSON object embedded in every record.

use dsrt_schema::{ColumnType, Schema, Value, ValueRef};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use std::fmt;
use thiserror::Error;

/// Why an embedded envelope is unusable or differs from metadata.arrow.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum EnvelopeError {
    /// Not a single JSON object of primitive values.
    #[error("embedded metadata is not a valid JSON object: {0}")]
    Malformed(String),
    /// A key the schema does not have.
    #[error("embedded metadata has key {0:?}, which is not a schema column")]
    UnknownKey(String),
    /// A key that appears twice.
    #[error("embedded metadata repeats key {0:?}")]
    RepeatedKey(String),
    /// A schema column the object lacks.
    #[error("embedded metadata lacks column {0:?}")]
    MissingColumn(String),
    /// A value that differs from metadata.arrow's.
    #[error("embedded metadata column {column:?} is {embedded}, metadata.arrow has {expected}")]
    Mismatch {
        /// Column name.
        column: String,
        /// The embedded value as JSON text.
        embedded: String,
        /// metadata.arrow's value.
        expected: String,
    },
}

/// Appends the envelope JSON of one row (values in schema order) to `out`: a compact object
/// with keys in schema order, floats in shortest round-trip form.
pub fn encode_envelope(schema: &Schema, values: &[ValueRef<'_>], out: &mut Vec<u8>) {
    EnvelopeCodec::new(schema).encode(|i| values[i], out);
}

fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    serde_json::to_writer(out, value).expect("writing JSON to a Vec does not fail");
}

/// The envelope layout of one schema, prepared once: each column's `{"name":` or `,"name":`
/// fragment, already escaped. Encoding and the fast check then touch only the values.
#[derive(Debug, Clone)]
pub struct EnvelopeCodec {
    fragments: Vec<Vec<u8>>,
}

impl EnvelopeCodec {
    /// Prepares the fragments of `schema`.
    pub fn new(schema: &Schema) -> Self {
        let fragments = schema
            .columns()
            .iter()
            .enumerate()
            .map(|(i, column)| {
                let mut fragment = vec![if i == 0 { b'{' } else { b',' }];
                write_json(&mut fragment, &column.name);
                fragment.push(b':');
                fragment
            })
            .collect();
        Self { fragments }
    }

    /// Appends the envelope of a row (`value(i)` for column `i`) to `out`, exactly as
    /// [`encode_envelope`] writes it.
    pub fn encode<'v>(&self, value: impl Fn(usize) -> ValueRef<'v>, out: &mut Vec<u8>) {
        if self.fragments.is_empty() {
            out.push(b'{');
        }
        for (i, fragment) in self.fragments.iter().enumerate() {
            out.extend_from_slice(fragment);
            write_value(out, value(i));
        }
        out.push(b'}');
    }

    /// [`check_envelope`] with a fast path: when `json` is byte for byte what this crate's
    /// writer would encode for the expected row, it matches (the encoding is injective), and
    /// that is decided by walking `json` once without writing anything. Any other spelling
    /// (another writer's whitespace, key order or number form) takes the full parse.
    pub fn check<'v>(
        &self,
        json: &[u8],
        schema: &Schema,
        expected: impl Fn(usize) -> ValueRef<'v>,
    ) -> Result<(), EnvelopeError> {
        if self.is_canonical(json, &expected) {
            return Ok(());
        }
        check_envelope(json, schema, expected)
    }

    fn is_canonical<'v>(&self, json: &[u8], expected: &impl Fn(usize) -> ValueRef<'v>) -> bool {
        let mut rest = json;
        if self.fragments.is_empty() {
            return rest == b"{}";
        }
        for (i, fragment) in self.fragments.iter().enumerate() {
            let Some(after_key) = rest.strip_prefix(fragment.as_slice()) else {
                return false;
            };
            match strip_canonical_value(after_key, expected(i)) {
                Some(after_value) => rest = after_value,
                None => return false,
            }
        }
        rest == b"}"
    }
}

/// `bytes` without the canonical encoding of `value` at its front, or `None` if it is not there
/// (or the value needs escaping, which the full check handles).
fn strip_canonical_value<'a>(bytes: &'a [u8], value: ValueRef<'_>) -> Option<&'a [u8]> {
    match value {
        ValueRef::Null => bytes.strip_prefix(b"null"),
        ValueRef::Bool(true) => bytes.strip_prefix(b"true"),
        ValueRef::Bool(false) => bytes.strip_prefix(b"false"),
        ValueRef::Utf8(text) => {
            let needs_escape = text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
            if needs_escape {
                return None;
            }
            bytes
                .strip_prefix(b"\"")?
                .strip_prefix(text.as_bytes())?
                .strip_prefix(b"\"")
        }
        number => {
            let mut buffer = [0u8; 40];
            let mut cursor = std::io::Cursor::new(&mut buffer[..]);
            match number {
                ValueRef::Int64(v) => serde_json::to_writer(&mut cursor, &v).ok()?,
                ValueRef::Float64(v) => serde_json::to_writer(&mut cursor, &v).ok()?,
                _ => return None,
            }
            let len = usize::try_from(cursor.position()).ok()?;
            bytes.strip_prefix(&buffer[..len])
        }
    }
}

fn write_value(out: &mut Vec<u8>, value: ValueRef<'_>) {
    match value {
        ValueRef::Null => out.extend_from_slice(b"null"),
        ValueRef::Bool(v) => out.extend_from_slice(if v { b"true" } else { b"false" }),
        ValueRef::Int64(v) => write_json(out, &v),
        ValueRef::Float64(v) => write_json(out, &v),
        ValueRef::Utf8(v) => write_json(out, v),
    }
}

/// Checks an embedded envelope against the row metadata.arrow holds, `expected(column)` giving
/// the value of each schema column. Allocates nothing unless a key carries escapes.
pub fn check_envelope<'v>(
    json: &[u8],
    schema: &Schema,
    expected: impl Fn(usize) -> ValueRef<'v>,
) -> Result<(), EnvelopeError> {
    let mut problem = None;
    let mut seen = SeenColumns::new(schema.len());
    let visitor = CheckVisitor {
        schema,
        expected: &expected,
        seen: &mut seen,
        problem: &mut problem,
    };
    let mut de = serde_json::Deserializer::from_slice(json);
    let outcome = de::Deserializer::deserialize_map(&mut de, visitor).and_then(|()| de.end());
    if let Some(problem) = problem {
        return Err(problem);
    }
    outcome.map_err(|e| EnvelopeError::Malformed(e.to_string()))?;
    match seen.first_missing() {
        Some(column) => Err(EnvelopeError::MissingColumn(
            schema.columns()[column].name.clone(),
        )),
        None => Ok(()),
    }
}

/// Parses an envelope into owned values in schema order, checking keys and types.
pub fn parse_envelope(json: &[u8], schema: &Schema) -> Result<Vec<Value>, EnvelopeError> {
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(json).map_err(|e| EnvelopeError::Malformed(e.to_string()))?;
    if let Some(key) = map.keys().find(|k| schema.position(k).is_none()) {
        return Err(EnvelopeError::UnknownKey(key.clone()));
    }
    schema
        .columns()
        .iter()
        .map(|column| {
            let json = map
                .get(&column.name)
                .ok_or_else(|| EnvelopeError::MissingColumn(column.name.clone()))?;
            json_to_value(json, column.ty).ok_or_else(|| {
                EnvelopeError::Malformed(format!(
                    "column {:?} holds {json}, not {}",
                    column.name, column.ty
                ))
            })
        })
        .collect()
}

fn json_to_value(json: &serde_json::Value, ty: ColumnType) -> Option<Value> {
    use serde_json::Value as J;
    Some(match (json, ty) {
        (J::Null, _) => Value::Null,
        (J::Bool(v), ColumnType::Bool) => Value::Bool(*v),
        (J::Number(n), ColumnType::Int64) => Value::Int64(n.as_i64()?),
        (J::Number(n), ColumnType::Float64) => Value::Float64(n.as_f64()?),
        (J::String(s), ColumnType::Utf8) => Value::Utf8(s.clone()),
        _ => return None,
    })
}

/// Which schema columns a key has named, without allocating for up to 128 columns.
struct SeenColumns {
    small: u128,
    large: Vec<bool>,
    count: usize,
}

impl SeenColumns {
    fn new(count: usize) -> Self {
        let large = if count > 128 {
            vec![false; count]
        } else {
            Vec::new()
        };
        Self {
            small: 0,
            large,
            count,
        }
    }

    /// Marks `column`; `false` if it was already marked.
    fn mark(&mut self, column: usize) -> bool {
        if self.count > 128 {
            !std::mem::replace(&mut self.large[column], true)
        } else {
            let bit = 1u128 << column;
            let fresh = self.small & bit == 0;
            self.small |= bit;
            fresh
        }
    }

    fn first_missing(&self) -> Option<usize> {
        if self.count > 128 {
            self.large.iter().position(|seen| !seen)
        } else {
            (0..self.count).find(|c| self.small & (1u128 << c) == 0)
        }
    }
}

struct CheckVisitor<'s, 'e, F> {
    schema: &'s Schema,
    expected: &'e F,
    seen: &'s mut SeenColumns,
    problem: &'s mut Option<EnvelopeError>,
}

impl<'s, 'e, 'v, 'de, F: Fn(usize) -> ValueRef<'v>> Visitor<'de> for CheckVisitor<'s, 'e, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(KeySeed {
            schema: self.schema,
        })? {
            let column = match key {
                Key::Column(column) => column,
                Key::Unknown(name) => return Err(self.stop(EnvelopeError::UnknownKey(name))),
            };
            if !self.seen.mark(column) {
                let name = self.schema.columns()[column].name.clone();
                return Err(self.stop(EnvelopeError::RepeatedKey(name)));
            }
            let wanted = (self.expected)(column);
            let seed = CompareSeed {
                wanted,
                ty: self.schema.columns()[column].ty,
            };
            if let Err(embedded) = map.next_value_seed(seed)? {
                let column = self.schema.columns()[column].name.clone();
                let mismatch = EnvelopeError::Mismatch {
                    column,
                    embedded,
                    expected: wanted.to_string(),
                };
                return Err(self.stop(mismatch));
            }
        }
        Ok(())
    }
}

impl<F> CheckVisitor<'_, '_, F> {
    fn stop<E: de::Error>(&mut self, problem: EnvelopeError) -> E {
        *self.problem = Some(problem);
        E::custom("embedded metadata check failed")
    }
}

/// Compares an embedded JSON scalar with metadata.arrow's value under the column's type.
fn matches_embedded(embedded: Scalar<'_>, wanted: ValueRef<'_>, ty: ColumnType) -> bool {
    let as_value = match (embedded, ty) {
        (Scalar::Null, _) => ValueRef::Null,
        (Scalar::Bool(v), ColumnType::Bool) => ValueRef::Bool(v),
        (Scalar::I64(v), ColumnType::Int64) => ValueRef::Int64(v),
        (Scalar::U64(v), ColumnType::Int64) => match i64::try_from(v) {
            Ok(v) => ValueRef::Int64(v),
            Err(_) => return false,
        },
        // A float column accepts any JSON number; integers convert exactly where they can.
        #[allow(clippy::cast_precision_loss)]
        (Scalar::I64(v), ColumnType::Float64) => ValueRef::Float64(v as f64),
        #[allow(clippy::cast_precision_loss)]
        (Scalar::U64(v), ColumnType::Float64) => ValueRef::Float64(v as f64),
        (Scalar::F64(v), ColumnType::Float64) => ValueRef::Float64(v),
        (Scalar::Str(v), ColumnType::Utf8) => ValueRef::Utf8(v),
        _ => return false,
    };
    as_value.same_as(&wanted)
}

enum Key {
    Column(usize),
    Unknown(String),
}

struct KeySeed<'s> {
    schema: &'s Schema,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Key;
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a column name")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match self.schema.position(key) {
            Some(column) => Key::Column(column),
            None => Key::Unknown(key.to_owned()),
        })
    }
}

/// A JSON scalar as it was embedded, alive only while it is compared.
#[derive(Debug, Clone, Copy)]
enum Scalar<'a> {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(&'a str),
}

impl fmt::Display for Scalar<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Null => f.write_str("null"),
            Self::Bool(v) => write!(f, "{v}"),
            Self::I64(v) => write!(f, "{v}"),
            Self::U64(v) => write!(f, "{v}"),
            Self::F64(v) => write!(f, "{v:?}"),
            Self::Str(v) => write!(f, "{v:?}"),
        }
    }
}

/// Deserializes one value and compares it on the spot, so an escaped string (which lives in
/// the parser's scratch buffer only during the call) needs no copy. Yields the embedded value
/// as text on a mismatch, the only case that allocates.
struct CompareSeed<'v> {
    wanted: ValueRef<'v>,
    ty: ColumnType,
}

impl CompareSeed<'_> {
    fn compare(&self, embedded: Scalar<'_>) -> Result<(), String> {
        if matches_embedded(embedded, self.wanted, self.ty) {
            Ok(())
        } else {
            Err(embedded.to_string())
        }
    }
}

impl<'de> DeserializeSeed<'de> for CompareSeed<'_> {
    type Value = Result<(), String>;
    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CompareSeed<'_> {
    type Value = Result<(), String>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("null, a boolean, a number or a string")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(self.compare(Scalar::Null))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(self.compare(Scalar::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(self.compare(Scalar::I64(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(self.compare(Scalar::U64(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(self.compare(Scalar::F64(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.compare(Scalar::Str(v)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Err(de::Error::custom("nested objects are not metadata values"))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, _seq: A) -> Result<Self::Value, A::Error> {
        Err(de::Error::custom("arrays are not metadata values"))
    }
}
