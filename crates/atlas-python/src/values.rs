//! Attribute values, statistics, fill values and dtypes as plain Python values.
//!
//! Each typed value crosses as a `(tag, value)` pair: the tag names the Atlas type
//! (`"Int16"`, `"Float32List"`, ...) and the value is a plain `int`, `float`, `bool`, `str`,
//! `bytes` or a list of them. The Python side turns the tag into the NumPy type, so a value
//! keeps its exact width both ways.

use atlas::{Attr, FillValue, StatValue};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::IntoPyObjectExt;

fn pair<'py, V: IntoPyObject<'py>>(
    py: Python<'py>,
    tag: &str,
    value: V,
) -> PyResult<Bound<'py, PyTuple>> {
    let value = value.into_bound_py_any(py)?;
    PyTuple::new(py, [tag.into_pyobject(py)?.into_any(), value])
}

/// `attr_to_py` and `attr_from_py` over every variant of [`Attr`], each tagged with its name.
macro_rules! attr_conversions {
    ($($variant:ident),*) => {
        /// An attribute value as `(tag, value)`.
        pub(crate) fn attr_to_py<'py>(py: Python<'py>, attr: &Attr) -> PyResult<Bound<'py, PyTuple>> {
            match attr {
                // A `Vec<u8>` would cross as `bytes`; a list of ints keeps it a list.
                Attr::UInt8List(v) => pair(py, "UInt8List", v.iter().map(|&b| u16::from(b)).collect::<Vec<_>>()),
                $(Attr::$variant(v) => pair(py, stringify!($variant), v),)*
            }
        }

        /// An attribute value from `(tag, value)`.
        pub(crate) fn attr_from_py(tag: &str, value: &Bound<'_, PyAny>) -> PyResult<Attr> {
            Ok(match tag {
                "UInt8List" => Attr::UInt8List(value.extract()?),
                $(stringify!($variant) => Attr::$variant(value.extract()?),)*
                other => {
                    return Err(PyTypeError::new_err(format!("unknown attribute tag {other:?}")))
                }
            })
        }
    };
}

attr_conversions!(
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Float32,
    Float64,
    String,
    Binary,
    BoolList,
    Int8List,
    Int16List,
    Int32List,
    Int64List,
    UInt16List,
    UInt32List,
    UInt64List,
    Float32List,
    Float64List,
    StringList,
    BinaryList
);

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attribute_type_crosses_and_comes_back_with_its_width() {
        Python::initialize();
        Python::attach(|py| {
            let values = [
                Attr::Bool(true),
                Attr::Int8(-3),
                Attr::UInt64(u64::MAX),
                Attr::Float32(0.5),
                Attr::String("K".into()),
                Attr::Binary(vec![0, 255]),
                Attr::UInt8List(vec![1, 2]),
                Attr::Int16List(vec![-1, 300]),
                Attr::StringList(vec!["a".into()]),
                Attr::BinaryList(vec![vec![7]]),
            ];
            for attr in values {
                let tagged = attr_to_py(py, &attr).unwrap();
                let (tag, value): (String, Bound<'_, PyAny>) = tagged.extract().unwrap();
                assert_eq!(attr_from_py(&tag, &value).unwrap(), attr, "{tag}");
                let kind = value.get_type().name().unwrap().to_string();
                match attr {
                    Attr::Binary(_) => assert_eq!(kind, "bytes"),
                    Attr::UInt8List(_) => assert_eq!(kind, "list"),
                    _ => {}
                }
            }
            let unknown = attr_from_py("Complex", &py.None().into_bound(py)).unwrap_err();
            assert!(unknown.to_string().contains("unknown attribute tag"));
        });
    }
}
