use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fmt;
use thiserror::Error;

/// A metadata column's value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    /// Arrow `Boolean`; JSON `true`/`false`.
    Bool,
    /// Arrow `Int64`; a JSON integer.
    Int64,
    /// Arrow `Float64`; a finite JSON number.
    Float64,
    /// Arrow `Utf8`; a JSON string.
    Utf8,
}

impl ColumnType {
    /// The name manifests use for this type.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bool => "bool",
            Self::Int64 => "int64",
            Self::Float64 => "float64",
            Self::Utf8 => "utf8",
        }
    }

    /// The type a name means: the manifest's own (`int64`, `float64`, `bool`, `utf8`) or a
    /// common alias (`int`, `i64`, `float`, `double`, `f64`, `boolean`, `string`, `str`, as
    /// Python's and Arrow's type names spell them).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "bool" | "boolean" => Some(Self::Bool),
            "int64" | "int" | "i64" => Some(Self::Int64),
            "float64" | "double" | "float" | "f64" => Some(Self::Float64),
            "utf8" | "string" | "str" => Some(Self::Utf8),
            _ => None,
        }
    }
}

impl fmt::Display for ColumnType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One metadata column: `{"name": str, "type": ..., "nullable": bool}` in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    /// Column name, unique within the schema and non-empty.
    pub name: String,
    /// Value type.
    #[serde(rename = "type")]
    pub ty: ColumnType,
    /// Whether the column may hold nulls.
    pub nullable: bool,
}

impl Column {
    /// A column.
    pub fn new(name: impl Into<String>, ty: ColumnType, nullable: bool) -> Self {
        Self {
            name: name.into(),
            ty,
            nullable,
        }
    }

    /// The column's type as a short spec: its name, with a trailing `?` when nullable
    /// (`"int64"`, `"utf8?"`), as [`Column::parse_spec`] reads it.
    pub fn spec(&self) -> String {
        let nullable = if self.nullable { "?" } else { "" };
        format!("{}{nullable}", self.ty.as_str())
    }

    /// The type and nullability a short spec names (a [`ColumnType::from_name`] name, a
    /// trailing `?` for nullable).
    pub fn parse_spec(spec: &str) -> Option<(ColumnType, bool)> {
        let (name, nullable) = match spec.strip_suffix('?') {
            Some(name) => (name, true),
            None => (spec, false),
        };
        ColumnType::from_name(name).map(|ty| (ty, nullable))
    }
}

/// Why a list of columns is not a schema.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaError {
    /// A column name is the empty string.
    #[error("metadata column {position} has an empty name")]
    EmptyName {
        /// Zero-based column position.
        position: usize,
    },
    /// Two columns share a name.
    #[error("metadata column name {name:?} appears more than once")]
    DuplicateName {
        /// The repeated name.
        name: String,
    },
}

/// An ordered list of columns with unique, non-empty names.
///
/// Column order is the Arrow field order of metadata.arrow.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct Schema {
    columns: Vec<Column>,
}

impl Schema {
    /// Validates `columns` into a schema.
    pub fn new(columns: Vec<Column>) -> Result<Self, SchemaError> {
        let mut seen = HashSet::with_capacity(columns.len());
        for (position, column) in columns.iter().enumerate() {
            if column.name.is_empty() {
                return Err(SchemaError::EmptyName { position });
            }
            if !seen.insert(column.name.as_str()) {
                return Err(SchemaError::DuplicateName {
                    name: column.name.clone(),
                });
            }
        }
        Ok(Self { columns })
    }

    /// The columns in order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// Whether the schema has no column.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Position of the column called `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let columns = Vec::<Column>::deserialize(deserializer)?;
        Schema::new(columns).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;

    #[test]
    fn a_column_spec_is_its_type_name_and_a_question_mark_for_nullable() {
        for (ty, nullable) in [(ColumnType::Int64, false), (ColumnType::Utf8, true)] {
            let spec = Column::new("c", ty, nullable).spec();
            assert_eq!(Column::parse_spec(&spec), Some((ty, nullable)));
        }
        assert_eq!(Column::new("c", ColumnType::Utf8, true).spec(), "utf8?");
        assert_eq!(
            Column::parse_spec("double"),
            Some((ColumnType::Float64, false))
        );
        assert_eq!(Column::parse_spec("str?"), Some((ColumnType::Utf8, true)));
        assert_eq!(Column::parse_spec("int32"), None);
        assert_eq!(Column::parse_spec("?"), None);
    }

    #[test]
    fn refuses_empty_and_duplicate_names() {
        let err = Schema::new(vec![Column::new("", ColumnType::Bool, false)]).unwrap_err();
        assert_eq!(err, SchemaError::EmptyName { position: 0 });
        let dup = vec![
            Column::new("a", ColumnType::Bool, false),
            Column::new("a", ColumnType::Int64, true),
        ];
        assert!(matches!(
            Schema::new(dup),
            Err(SchemaError::DuplicateName { .. })
        ));
    }

    #[test]
    fn json_form_matches_the_pinned_page() {
        let schema = Schema::new(vec![
            Column::new("label", ColumnType::Int64, false),
            Column::new("caption", ColumnType::Utf8, true),
        ])
        .unwrap();
        let json = serde_json::to_string(&schema).unwrap();
        assert_eq!(
            json,
            r#"[{"name":"label","type":"int64","nullable":false},{"name":"caption","type":"utf8","nullable":true}]"#
        );
        assert_eq!(serde_json::from_str::<Schema>(&json).unwrap(), schema);
        let bad = r#"[{"name":"a","type":"int32","nullable":false}]"#;
        assert!(serde_json::from_str::<Schema>(bad).is_err());
        let dup = r#"[{"name":"a","type":"bool","nullable":false},{"name":"a","type":"bool","nullable":false}]"#;
        assert!(serde_json::from_str::<Schema>(dup)
            .unwrap_err()
            .to_string()
            .contains("more than once"));
    }
}
