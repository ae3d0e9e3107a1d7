//! Metadata schema inference over a whole JSONL input, one record at a time.
//!
//! Rules: `true`/`false` -> bool, integers -> int64, other numbers -> float64, strings -> utf8;
//! int64 and float64 on different lines widen to float64; any other mix, an array or an
//! object is an error naming the line and field. A column is nullable when some record has
//! it null or lacks it. Columns keep the order in which fields first appear.

use super::payload::payload_text;
use super::problem::{json_kind, InputProblem};
use super::JsonRecord;
use crate::PackError;
use dsrt_schema::{Column, ColumnType, Schema};
use std::collections::HashMap;

/// What the records seen so far say about the columns.
#[derive(Debug)]
pub(crate) struct SchemaInference {
    payload_field: String,
    /// Whether the payload field must be a string (not so for a token array).
    payload_is_text: bool,
    columns: Vec<ColumnGuess>,
    positions: HashMap<String, usize>,
    records: u64,
}

#[derive(Debug)]
struct ColumnGuess {
    name: String,
    /// The type so far and the line that first gave a value of it.
    ty: Option<(ColumnType, u64)>,
    /// Records holding a non-null value; fewer than all records means nullable.
    non_null: u64,
}

impl SchemaInference {
    /// Nothing seen yet; `payload_field` is not a metadata column.
    pub(crate) fn new(payload_field: &str) -> Self {
        Self {
            payload_field: payload_field.to_owned(),
            payload_is_text: true,
            columns: Vec::new(),
            positions: HashMap::new(),
            records: 0,
        }
    }

    /// The payload field holds token arrays (checked when the line is packed), not a string.
    pub(crate) fn token_arrays(mut self) -> Self {
        self.payload_is_text = false;
        self
    }

    /// Records observed so far.
    pub(crate) fn records(&self) -> u64 {
        self.records
    }

    /// Takes one record (from line `line`) into account.
    pub(crate) fn observe(&mut self, line: u64, record: &JsonRecord) -> Result<(), InputProblem> {
        // The payload is checked here too, so a bad line fails before anything is written.
        if self.payload_is_text {
            payload_text(record, &self.payload_field)?;
        }
        for (field, value) in &record.fields {
            if *field == self.payload_field {
                continue;
            }
            let ty = value_type(field, value)?;
            // Registered even when null, so a column that is never anything else is reported
            // rather than silently dropped.
            let column = self.column(field);
            let Some(ty) = ty else { continue };
            column.ty = Some(widen(column, ty, line, json_kind(value))?);
            column.non_null += 1;
        }
        self.records += 1;
        Ok(())
    }

    fn column(&mut self, name: &str) -> &mut ColumnGuess {
        let next = self.columns.len();
        let position = *self.positions.entry(name.to_owned()).or_insert(next);
        if position == next {
            self.columns.push(ColumnGuess {
                name: name.to_owned(),
                ty: None,
                non_null: 0,
            });
        }
        &mut self.columns[position]
    }

    /// The schema; a column that never held a value has no type to infer.
    pub(crate) fn finish(self, origin: &str) -> Result<Schema, PackError> {
        let records = self.records;
        let columns = self
            .columns
            .into_iter()
            .map(|guess| match guess.ty {
                Some((ty, _)) => Ok(Column::new(guess.name, ty, guess.non_null < records)),
                None => Err(PackError::Input {
                    input: origin.to_owned(),
                    reason: format!(
                        "field {:?} is null or missing on every line, so its type cannot be \
                         inferred; give it with --schema",
                        guess.name
                    ),
                }),
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Names come from distinct JSON keys, so the only possible complaint is an empty name.
        Schema::new(columns).map_err(|e| PackError::Input {
            input: origin.to_owned(),
            reason: e.to_string(),
        })
    }
}

/// The column type a JSON value asks for; `None` for null.
fn value_type(field: &str, value: &serde_json::Value) -> Result<Option<ColumnType>, InputProblem> {
    use serde_json::Value as J;
    Ok(Some(match value {
        J::Null => return Ok(None),
        J::Bool(_) => ColumnType::Bool,
        J::Number(n) if n.is_i64() => ColumnType::Int64,
        J::Number(n) if n.is_u64() => {
            return Err(InputProblem::IntOutOfRange {
                field: field.to_owned(),
                value: n.to_string(),
            })
        }
        J::Number(_) => ColumnType::Float64,
        J::String(_) => ColumnType::Utf8,
        J::Array(_) | J::Object(_) => {
            return Err(InputProblem::Nested {
                field: field.to_owned(),
                found: json_kind(value),
            })
        }
    }))
}

/// The column's type after also seeing a value of type `ty` on line `line`.
fn widen(
    column: &ColumnGuess,
    ty: ColumnType,
    line: u64,
    found: &'static str,
) -> Result<(ColumnType, u64), InputProblem> {
    use ColumnType::{Float64, Int64};
    match column.ty {
        None => Ok((ty, line)),
        Some((established, first_line)) => match (established, ty) {
            (a, b) if a == b => Ok((a, first_line)),
            (Int64, Float64) | (Float64, Int64) => Ok((Float64, first_line)),
            _ => Err(InputProblem::TypeConflict {
                field: column.name.clone(),
                found,
                established,
                first_line,
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(value: serde_json::Value) -> JsonRecord {
        let serde_json::Value::Object(map) = value else {
            panic!("an object")
        };
        JsonRecord {
            fields: map.into_iter().collect(),
        }
    }

    fn infer(lines: &[serde_json::Value]) -> Result<Schema, String> {
        let mut inference = SchemaInference::new("p");
        for (i, line) in lines.iter().enumerate() {
            inference
                .observe(i as u64 + 1, &record(line.clone()))
                .map_err(|e| e.to_string())?;
        }
        inference.finish("t").map_err(|e| e.to_string())
    }

    #[test]
    fn infers_types_and_nullability() {
        let schema = infer(&[
            json!({"p": "a", "b": true, "i": 1, "f": 1, "s": "x", "n": null}),
            json!({"p": "b", "b": false, "i": -5, "f": 2.5, "s": "ü", "n": 3}),
            json!({"p": "c", "i": 7, "f": 3, "s": "y", "n": null}),
        ])
        .unwrap();
        let by_name = |n: &str| schema.columns()[schema.position(n).unwrap()].clone();
        assert_eq!(by_name("b"), Column::new("b", ColumnType::Bool, true));
        assert_eq!(by_name("i"), Column::new("i", ColumnType::Int64, false));
        assert_eq!(by_name("f"), Column::new("f", ColumnType::Float64, false));
        assert_eq!(by_name("s"), Column::new("s", ColumnType::Utf8, false));
        assert_eq!(by_name("n"), Column::new("n", ColumnType::Int64, true));
        assert!(schema.position("p").is_none());
    }

    #[test]
    fn refuses_mixes_nesting_and_typeless_columns() {
        let err = infer(&[json!({"p": "a", "x": 1}), json!({"p": "b", "x": "1"})]).unwrap_err();
        assert!(
            err.contains("\"x\" is a string")
                && err.contains("from line 1 on it held int64 values"),
            "{err}"
        );
        let err = infer(&[json!({"p": "a", "x": {"y": 1}})]).unwrap_err();
        assert!(err.contains("\"x\" is an object"), "{err}");
        let err = infer(&[json!({"p": "a", "x": null})]).unwrap_err();
        assert!(err.contains("--schema"), "{err}");
        let err = infer(&[json!({"x": 1})]).unwrap_err();
        assert!(err.contains("payload field \"p\" is missing"), "{err}");
        let err = infer(&[json!({"p": "a", "x": u64::MAX})]).unwrap_err();
        assert!(err.contains("outside the int64 range"), "{err}");
    }
}
