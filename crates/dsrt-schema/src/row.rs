use crate::{Schema, Value, ValueRef};
use std::fmt;
use thiserror::Error;

/// One sample's metadata as named values, in any order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    fields: Vec<(String, Value)>,
}

impl Row {
    /// An empty row.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a field; builder style.
    pub fn with(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        self.push(name, value);
        self
    }

    /// Adds a field.
    pub fn push(&mut self, name: impl Into<String>, value: impl Into<Value>) {
        self.fields.push((name.into(), value.into()));
    }

    /// The fields in insertion order.
    pub fn fields(&self) -> &[(String, Value)] {
        &self.fields
    }

    /// The value of the field called `name` (the first, if repeated).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Checks the row against `schema`: exactly the schema's keys, each once, with values of
    /// the column's type, finite floats, and nulls only where allowed.
    ///
    /// On success, `ordered` has received the values in schema order; on error it may hold
    /// some of them.
    pub fn check_into<'r, E: Extend<ValueRef<'r>>>(
        &'r self,
        schema: &Schema,
        ordered: &mut E,
    ) -> Result<(), RowError> {
        for (position, column) in schema.columns().iter().enumerate() {
            let mut matches = self.fields.iter().filter(|(n, _)| *n == column.name);
            let (_, value) = matches
                .next()
                .ok_or_else(|| RowError::new(&column.name, RowProblem::Missing))?;
            if matches.next().is_some() {
                return Err(RowError::new(&column.name, RowProblem::Repeated));
            }
            check_value(schema, position, value.as_ref())?;
            ordered.extend(std::iter::once(value.as_ref()));
        }
        if let Some((extra, _)) = self
            .fields
            .iter()
            .find(|(n, _)| schema.position(n).is_none())
        {
            return Err(RowError::new(extra, RowProblem::NotInSchema));
        }
        Ok(())
    }
}

impl Schema {
    /// Checks values given in schema order: one per column, of the column's type, finite
    /// floats, nulls only where allowed.
    pub fn check_values(&self, values: &[ValueRef<'_>]) -> Result<(), RowError> {
        if values.len() != self.len() {
            let problem = RowProblem::Count {
                expected: self.len(),
                found: values.len(),
            };
            return Err(RowError::new("", problem));
        }
        for (position, value) in values.iter().enumerate() {
            check_value(self, position, *value)?;
        }
        Ok(())
    }
}

/// Checks one value against column `position` of `schema`.
pub(crate) fn check_value(
    schema: &Schema,
    position: usize,
    value: ValueRef<'_>,
) -> Result<(), RowError> {
    let column = &schema.columns()[position];
    match value.column_type() {
        None if column.nullable => Ok(()),
        None => Err(RowError::new(&column.name, RowProblem::NullNotAllowed)),
        Some(ty) if ty != column.ty => Err(RowError::new(
            &column.name,
            RowProblem::WrongType {
                expected: column.ty,
                found: ty,
            },
        )),
        Some(_) => match value {
            ValueRef::Float64(v) if !v.is_finite() => {
                Err(RowError::new(&column.name, RowProblem::NonFinite(v)))
            }
            _ => Ok(()),
        },
    }
}

/// What is wrong with one field of a row.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RowProblem {
    /// The schema has the column, the row does not.
    Missing,
    /// The row names the column more than once.
    Repeated,
    /// The row has a key the schema does not.
    NotInSchema,
    /// The value's type is not the column's.
    WrongType {
        /// The column's type.
        expected: crate::ColumnType,
        /// The value's type.
        found: crate::ColumnType,
    },
    /// A null in a column that is not nullable.
    NullNotAllowed,
    /// NaN or an infinity, which JSON cannot carry.
    NonFinite(f64),
    /// A positional row with the wrong number of values.
    Count {
        /// Columns in the schema.
        expected: usize,
        /// Values given.
        found: usize,
    },
}

impl fmt::Display for RowProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("is missing from the row"),
            Self::Repeated => f.write_str("appears more than once in the row"),
            Self::NotInSchema => f.write_str("is not a column of the schema"),
            Self::WrongType { expected, found } => {
                write!(f, "holds a {found} value, the schema says {expected}")
            }
            Self::NullNotAllowed => f.write_str("is null but the column is not nullable"),
            Self::NonFinite(v) => write!(f, "holds {v}, which is not a finite float"),
            Self::Count { expected, found } => {
                write!(
                    f,
                    "row has {found} values, the schema has {expected} columns"
                )
            }
        }
    }
}

/// A row that does not fit its schema, naming the column.
#[derive(Debug, Clone, PartialEq, Error)]
pub struct RowError {
    /// The offending column or key.
    pub column: String,
    /// What is wrong with it.
    pub problem: RowProblem,
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.column.is_empty() {
            write!(f, "{}", self.problem)
        } else {
            write!(f, "column {:?} {}", self.column, self.problem)
        }
    }
}

impl RowError {
    fn new(column: &str, problem: RowProblem) -> Self {
        Self {
            column: column.to_owned(),
            problem,
        }
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;
    use crate::{Column, ColumnType};

    fn schema() -> Schema {
        Schema::new(vec![
            Column::new("label", ColumnType::Int64, false),
            Column::new("score", ColumnType::Float64, true),
        ])
        .unwrap()
    }

    #[test]
    fn positional_values_are_checked() {
        let schema = schema();
        schema
            .check_values(&[ValueRef::Int64(1), ValueRef::Null])
            .unwrap();
        let err = schema.check_values(&[ValueRef::Int64(1)]).unwrap_err();
        assert!(matches!(
            err.problem,
            RowProblem::Count {
                expected: 2,
                found: 1
            }
        ));
        let err = schema
            .check_values(&[ValueRef::Null, ValueRef::Null])
            .unwrap_err();
        assert_eq!(
            (err.column.as_str(), err.problem),
            ("label", RowProblem::NullNotAllowed)
        );
    }

    fn problem(row: Row) -> RowError {
        row.check_into(&schema(), &mut Vec::new()).unwrap_err()
    }

    #[test]
    fn orders_values_by_schema() {
        let row = Row::new().with("score", 0.5).with("label", 3i64);
        let mut ordered = Vec::new();
        row.check_into(&schema(), &mut ordered).unwrap();
        assert_eq!(ordered, vec![ValueRef::Int64(3), ValueRef::Float64(0.5)]);
    }

    #[test]
    fn names_every_kind_of_problem() {
        assert_eq!(
            problem(Row::new().with("score", 0.5)).problem,
            RowProblem::Missing
        );
        let extra = problem(
            Row::new()
                .with("label", 1i64)
                .with("score", 0.5)
                .with("x", true),
        );
        assert_eq!(
            (extra.column.as_str(), extra.problem),
            ("x", RowProblem::NotInSchema)
        );
        let wrong = problem(Row::new().with("label", 1.0).with("score", 0.5));
        assert!(matches!(wrong.problem, RowProblem::WrongType { .. }));
        let null = problem(Row::new().with("label", Value::Null).with("score", 0.5));
        assert_eq!(null.problem, RowProblem::NullNotAllowed);
        let nan = problem(Row::new().with("label", 1i64).with("score", f64::NAN));
        assert!(matches!(nan.problem, RowProblem::NonFinite(_)));
        let inf = problem(Row::new().with("label", 1i64).with("score", f64::INFINITY));
        assert_eq!(inf.column, "score");
        let rep = problem(
            Row::new()
                .with("label", 1i64)
                .with("label", 2i64)
                .with("score", 0.5),
        );
        assert_eq!(rep.problem, RowProblem::Repeated);
        assert!(Row::new()
            .with("label", 1i64)
            .with("score", Value::Null)
            .check_into(&schema(), &mut Vec::new())
            .is_ok());
    }
}
