//! Attribute values, statistics, fill values and dtypes as plain Python values.
//!
//! Each typed value crosses as a `(tag, value)` pair: the tag names the Atlas type
//! (`"Int16"`, `"Float32List"`, ...) and the value is a plain `int`, `float`, `bool`, `str`,
//! `bytes` or a list of them. The Python side turns the tag into the NumPy type, so a value
//! keeps its exact width both ways.

use atlas::format::DType;
use atlas::{Attr, FillValue, StatValue};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::IntoPyObjectExt;

/// The tag of an array element type, as `atlas_collections` spells it.
pub(crate) fn dtype_tag(dtype: &DType) -> String {
    match dtype {
        DType::Bool => "bool".to_owned(),
        DType::Int8 => "int8".to_owned(),
        DType::Int16 => "int16".to_owned(),
        DType::Int32 => "int32".to_owned(),
        DType::Int64 => "int64".to_owned(),
        DType::UInt8 => "uint8".to_owned(),
        DType::UInt16 => "uint16".to_owned(),
        DType::UInt32 => "uint32".to_owned(),
        DType::UInt64 => "uint64".to_owned(),
        DType::Float32 => "float32".to_owned(),
        DType::Float64 => "float64".to_owned(),
        DType::String => "string".to_owned(),
        DType::Binary => "binary".to_owned(),
        DType::TimestampNs => "timestamp_ns".to_owned(),
        other => other.to_string(),
    }
}

fn pair<'py, V: IntoPyObject<'py>>(
    py: Python<'py>,
    tag: &str,
    value: V,
) -> PyResult<Bound<'py, PyTuple>> {
    let value = value.into_bound_py_any(py)?;
    PyTuple::new(py, [tag.into_pyobject(py)?.into_any(), value])
}

/// An attribute value as `(tag, value)`.
pub(crate) fn attr_to_py<'py>(py: Python<'py>, attr: &Attr) -> PyResult<Bound<'py, PyTuple>> {
    match attr {
        Attr::Bool(v) => pair(py, "Bool", *v),
        Attr::Int8(v) => pair(py, "Int8", *v),
        Attr::Int16(v) => pair(py, "Int16", *v),
        Attr::Int32(v) => pair(py, "Int32", *v),
        Attr::Int64(v) => pair(py, "Int64", *v),
        Attr::UInt8(v) => pair(py, "UInt8", *v),
        Attr::UInt16(v) => pair(py, "UInt16", *v),
        Attr::UInt32(v) => pair(py, "UInt32", *v),
        Attr::UInt64(v) => pair(py, "UInt64", *v),
        Attr::Float32(v) => pair(py, "Float32", *v),
        Attr::Float64(v) => pair(py, "Float64", *v),
        Attr::String(v) => pair(py, "String", v.as_str()),
        Attr::Binary(v) => pair(py, "Binary", pyo3::types::PyBytes::new(py, v)),
        Attr::BoolList(v) => pair(py, "BoolList", v.clone()),
        Attr::Int8List(v) => pair(py, "Int8List", v.clone()),
        Attr::Int16List(v) => pair(py, "Int16List", v.clone()),
        Attr::Int32List(v) => pair(py, "Int32List", v.clone()),
        Attr::Int64List(v) => pair(py, "Int64List", v.clone()),
        // A `Vec<u8>` would cross as `bytes`; a list of ints keeps it a list.
        Attr::UInt8List(v) => pair(
            py,
            "UInt8List",
            v.iter().map(|&b| u16::from(b)).collect::<Vec<_>>(),
        ),
        Attr::UInt16List(v) => pair(py, "UInt16List", v.clone()),
        Attr::UInt32List(v) => pair(py, "UInt32List", v.clone()),
        Attr::UInt64List(v) => pair(py, "UInt64List", v.clone()),
        Attr::Float32List(v) => pair(py, "Float32List", v.clone()),
        Attr::Float64List(v) => pair(py, "Float64List", v.clone()),
        Attr::StringList(v) => pair(py, "StringList", v.clone()),
        Attr::BinaryList(v) => {
            let items: Vec<_> = v.iter().map(|b| pyo3::types::PyBytes::new(py, b)).collect();
            pair(py, "BinaryList", items)
        }
    }
}

/// An attribute value from `(tag, value)`.
pub(crate) fn attr_from_py(tag: &str, value: &Bound<'_, PyAny>) -> PyResult<Attr> {
    Ok(match tag {
        "Bool" => Attr::Bool(value.extract()?),
        "Int8" => Attr::Int8(value.extract()?),
        "Int16" => Attr::Int16(value.extract()?),
        "Int32" => Attr::Int32(value.extract()?),
        "Int64" => Attr::Int64(value.extract()?),
        "UInt8" => Attr::UInt8(value.extract()?),
        "UInt16" => Attr::UInt16(value.extract()?),
        "UInt32" => Attr::UInt32(value.extract()?),
        "UInt64" => Attr::UInt64(value.extract()?),
        "Float32" => Attr::Float32(value.extract()?),
        "Float64" => Attr::Float64(value.extract()?),
        "String" => Attr::String(value.extract()?),
        "Binary" => Attr::Binary(value.extract()?),
        "BoolList" => Attr::BoolList(value.extract()?),
        "Int8List" => Attr::Int8List(value.extract()?),
        "Int16List" => Attr::Int16List(value.extract()?),
        "Int32List" => Attr::Int32List(value.extract()?),
        "Int64List" => Attr::Int64List(value.extract()?),
        "UInt8List" => Attr::UInt8List(value.extract()?),
        "UInt16List" => Attr::UInt16List(value.extract()?),
        "UInt32List" => Attr::UInt32List(value.extract()?),
        "UInt64List" => Attr::UInt64List(value.extract()?),
        "Float32List" => Attr::Float32List(value.extract()?),
        "Float64List" => Attr::Float64List(value.extract()?),
        "StringList" => Attr::StringList(value.extract()?),
        "BinaryList" => Attr::BinaryList(value.extract()?),
        other => {
            return Err(PyTypeError::new_err(format!(
                "unknown attribute tag {other:?}"
            )))
        }
    })
}

/// A statistic as `(tag, value)`: `Int`, `UInt`, `Float`, `Bytes` or `TimestampNs`.
pub(crate) fn stat_to_py<'py>(
    py: Python<'py>,
    value: Option<&StatValue>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        None => py.None().into_bound(py),
        Some(StatValue::Int(v)) => pair(py, "Int", *v)?.into_any(),
        Some(StatValue::UInt(v)) => pair(py, "UInt", *v)?.into_any(),
        Some(StatValue::Float(v)) => pair(py, "Float", *v)?.into_any(),
        Some(StatValue::Bytes(v)) => {
            pair(py, "Bytes", pyo3::types::PyBytes::new(py, v))?.into_any()
        }
        Some(StatValue::TimestampNs(v)) => pair(py, "TimestampNs", *v)?.into_any(),
    })
}

/// A fill value as `(tag, value)`, or `None`.
pub(crate) fn fill_to_py<'py>(
    py: Python<'py>,
    value: Option<&FillValue>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        None => py.None().into_bound(py),
        Some(FillValue::Bool(v)) => pair(py, "Bool", *v)?.into_any(),
        Some(FillValue::Int(v)) => pair(py, "Int", *v)?.into_any(),
        Some(FillValue::UInt(v)) => pair(py, "UInt", *v)?.into_any(),
        Some(FillValue::Float(v)) => pair(py, "Float", *v)?.into_any(),
        Some(FillValue::String(v)) => pair(py, "String", v.as_str())?.into_any(),
        Some(FillValue::TimestampNs(v)) => pair(py, "TimestampNs", *v)?.into_any(),
    })
}

/// A fill value from `(tag, value)`.
pub(crate) fn fill_from_py(tag: &str, value: &Bound<'_, PyAny>) -> PyResult<FillValue> {
    Ok(match tag {
        "Bool" => FillValue::Bool(value.extract()?),
        "Int" => FillValue::Int(value.extract()?),
        "UInt" => FillValue::UInt(value.extract()?),
        "Float" => FillValue::Float(value.extract()?),
        "String" => FillValue::String(value.extract()?),
        "TimestampNs" => FillValue::TimestampNs(value.extract()?),
        other => {
            return Err(PyTypeError::new_err(format!(
                "unknown fill value tag {other:?}"
            )))
        }
    })
}
