//! `Collection.select`'s arguments, from the tagged values the Python side sends, into the
//! reader's typed [`Selection`].

use crate::errors::Failure;
use atlas::{SelectValue, Selection};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A condition value from `(tag, value)`: the Python side has already told `bool` from `int`
/// and turned NumPy scalars and datetimes into these tags.
pub(crate) fn value_from_py(tag: &str, value: &Bound<'_, PyAny>) -> PyResult<SelectValue> {
    Ok(match tag {
        "bool" => SelectValue::Bool(value.extract()?),
        "int" => SelectValue::Int(value.extract()?),
        "float" => SelectValue::Float(value.extract()?),
        "str" => SelectValue::String(value.extract()?),
        "bytes" => SelectValue::Binary(value.extract()?),
        "timestamp_ns" => SelectValue::TimestampNs(value.extract()?),
        other => {
            return Err(PyTypeError::new_err(format!(
                "unknown select value tag {other:?}"
            )))
        }
    })
}

/// The attribute conditions `[(key, [value])]` and the statistic conditions
/// `[(array, stat, op, value)]` as one selection; an unknown statistic or operator is the
/// reader's `InvalidQuery`.
pub(crate) fn selection(
    attrs: Vec<(String, Vec<SelectValue>)>,
    stats: Vec<(String, String, String, SelectValue)>,
) -> Result<Selection, Failure> {
    let mut selection = attrs
        .into_iter()
        .fold(Selection::new(), |s, (key, accepted)| {
            s.attr_in(key, accepted)
        });
    for (array, stat, op, value) in stats {
        selection = selection.stat_named(array, &stat, &op, value)?;
    }
    Ok(selection)
}
