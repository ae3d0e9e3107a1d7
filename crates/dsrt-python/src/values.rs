//! Conversions between metadata values, schemas and Python objects.

use datasetrt::{Column, ColumnType, Row, Schema, Value, ValueRef};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple, PyType};
use pyo3::IntoPyObjectExt;

/// A metadata value as a Python object (None, bool, int, float or str).
pub(crate) fn value_to_py<'py>(
    py: Python<'py>,
    value: ValueRef<'_>,
) -> PyResult<Bound<'py, PyAny>> {
    match value {
        ValueRef::Null => Ok(py.None().into_bound(py)),
        ValueRef::Bool(v) => v.into_bound_py_any(py),
        ValueRef::Int64(v) => v.into_bound_py_any(py),
        ValueRef::Float64(v) => v.into_bound_py_any(py),
        ValueRef::Utf8(v) => v.into_bound_py_any(py),
    }
}

/// A Python object as a value of column type `ty` (ints are accepted for float columns).
pub(crate) fn py_to_value(value: &Bound<'_, PyAny>, ty: ColumnType) -> PyResult<Value> {
    if value.is_none() {
        return Ok(Value::Null);
    }
    let wrong = |what: &str| {
        PyTypeError::new_err(format!(
            "expected {what} for a {} column, got {}",
            ty.as_str(),
            value
                .get_type()
                .name()
                .map_or_else(|_| "?".to_owned(), |n| n.to_string())
        ))
    };
    match ty {
        ColumnType::Bool => {
            if value.is_instance_of::<PyBool>() {
                Ok(Value::Bool(value.extract()?))
            } else {
                Err(wrong("a bool"))
            }
        }
        ColumnType::Int64 => {
            if value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>() {
                Ok(Value::Int64(value.extract()?))
            } else if value.hasattr("__index__")? && !value.is_instance_of::<PyBool>() {
                Ok(Value::Int64(value.call_method0("__index__")?.extract()?))
            } else {
                Err(wrong("an int"))
            }
        }
        ColumnType::Float64 => {
            if value.is_instance_of::<PyFloat>()
                || (value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>())
            {
                Ok(Value::Float64(value.extract()?))
            } else if value.hasattr("__float__")? && !value.is_instance_of::<PyBool>() {
                Ok(Value::Float64(value.call_method0("__float__")?.extract()?))
            } else {
                Err(wrong("a float"))
            }
        }
        ColumnType::Utf8 => {
            if value.is_instance_of::<PyString>() {
                Ok(Value::Utf8(value.extract()?))
            } else {
                Err(wrong("a str"))
            }
        }
    }
}

/// The metadata dict of one row.
pub(crate) fn row_dict<'py, 'a>(
    py: Python<'py>,
    schema: &Schema,
    values: impl Iterator<Item = ValueRef<'a>>,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (column, value) in schema.columns().iter().zip(values) {
        dict.set_item(&column.name, value_to_py(py, value)?)?;
    }
    Ok(dict)
}

/// The row a writer's `add(payload, metadata=None, **fields)` gives: the dict and the
/// keywords together (a keyword wins over the dict's entry of the same name).
pub(crate) fn row_from_args(
    py: Python<'_>,
    schema: &Schema,
    metadata: Option<&Bound<'_, PyDict>>,
    fields: Option<&Bound<'_, PyDict>>,
) -> PyResult<Row> {
    match (metadata, fields) {
        (Some(m), Some(f)) => {
            let merged = m.copy()?;
            merged.update(f.as_mapping())?;
            row_from_dict(schema, &merged)
        }
        (Some(d), None) | (None, Some(d)) => row_from_dict(schema, d),
        (None, None) => row_from_dict(schema, &PyDict::new(py)),
    }
}

/// Builds a [`Row`] from a metadata mapping, converting each value to its column's type.
pub(crate) fn row_from_dict(schema: &Schema, dict: &Bound<'_, PyDict>) -> PyResult<Row> {
    let mut row = Row::new();
    for (key, value) in dict.iter() {
        let name: String = key
            .extract()
            .map_err(|_| PyTypeError::new_err("metadata keys must be str"))?;
        let value = match schema.position(&name) {
            Some(i) => py_to_value(&value, schema.columns()[i].ty)
                .map_err(|e| PyTypeError::new_err(format!("column {name:?}: {e}")))?,
            // Not in the schema: the writer's check names it.
            None => Value::Null,
        };
        row.push(name, value);
    }
    Ok(row)
}

/// A column type given as a name ("int64", "float64", "bool", "utf8"/"string"/"str", a
/// trailing "?" for nullable), a Python type (int, float, bool, str), a pyarrow type, or a
/// `(type, nullable)` tuple. Returns the type and nullability.
fn column_type(spec: &Bound<'_, PyAny>) -> PyResult<(ColumnType, bool)> {
    if let Ok(tuple) = spec.cast::<PyTuple>() {
        if tuple.len() == 2 {
            let (ty, _) = column_type(&tuple.get_item(0)?)?;
            return Ok((ty, tuple.get_item(1)?.is_truthy()?));
        }
    }
    if let Ok(ty) = spec.cast::<PyType>() {
        let name = ty.name()?.to_string();
        return ColumnType::from_name(&name)
            .map(|t| (t, false))
            .ok_or_else(|| PyValueError::new_err(format!("unsupported column type {name}")));
    }
    let text = spec.str()?.to_string();
    Column::parse_spec(&text).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unsupported column type {text:?}: use int64, float64, bool or utf8 (a trailing ? makes it nullable)"
        ))
    })
}

/// A schema from a dict of column types or a `pyarrow.Schema`.
pub(crate) fn schema_from_py(spec: &Bound<'_, PyAny>) -> PyResult<Schema> {
    let mut columns = Vec::new();
    if let Ok(dict) = spec.cast::<PyDict>() {
        for (name, ty) in dict.iter() {
            let name: String = name.extract()?;
            let (ty, nullable) = column_type(&ty)?;
            columns.push(Column::new(name, ty, nullable));
        }
    } else if spec.hasattr("names")? && spec.hasattr("field")? {
        // A pyarrow.Schema.
        for field in spec.try_iter()? {
            let field = field?;
            let name: String = field.getattr("name")?.extract()?;
            let (ty, _) = column_type(&field.getattr("type")?)?;
            let nullable = field.getattr("nullable")?.is_truthy()?;
            columns.push(Column::new(name, ty, nullable));
        }
    } else {
        return Err(PyTypeError::new_err(
            "schema must be a dict of column types or a pyarrow.Schema",
        ));
    }
    Schema::new(columns).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A schema as a `pyarrow.Schema`.
pub(crate) fn schema_to_arrow<'py>(
    py: Python<'py>,
    schema: &Schema,
) -> PyResult<Bound<'py, PyAny>> {
    let pa = py.import("pyarrow")?;
    let fields = schema
        .columns()
        .iter()
        .map(|c| {
            let ty = arrow_type(&pa, c.ty)?;
            pa.call_method1("field", (&c.name, ty, c.nullable))
        })
        .collect::<PyResult<Vec<_>>>()?;
    pa.call_method1("schema", (fields,))
}

pub(crate) fn arrow_type<'py>(
    pa: &Bound<'py, PyModule>,
    ty: ColumnType,
) -> PyResult<Bound<'py, PyAny>> {
    pa.call_method0(match ty {
        ColumnType::Bool => "bool_",
        ColumnType::Int64 => "int64",
        ColumnType::Float64 => "float64",
        ColumnType::Utf8 => "string",
    })
}
