//! `Collection.select`'s arguments, from the tagged values the Python side sends, into the
//! reader's typed [`Selection`].

use crate::errors::Error;
use atlas::{SelectValue, Selection};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A condition value from `(tag, value)`: the Python side has already told `bool` from `int`
/// and turned NumPy scalars and datetimes into these tags.
fn value_from_py((tag, value): &(String, Bound<'_, PyAny>)) -> PyResult<SelectValue> {
    Ok(match tag.as_str() {
        "bool" => SelectValue::Bool(value.extract()?),
        "int" => SelectValue::Int(value.extract()?),
        "float" => SelectValue::Float(value.extract()?),
        "str" => SelectValue::String(value.extract()?),
        "bytes" => SelectValue::Binary(value.extract()?),
        "timestamp_ns" => SelectValue::TimestampNs(value.extract()?),
        other => {
            let message = format!("unknown select value tag {other:?}");
            return Err(PyTypeError::new_err(message));
        }
    })
}

/// The attribute conditions `[(key, [(tag, value)])]` and the statistic conditions
/// `[(array, stat, op, (tag, value))]` as one selection of the collection at `location`; an
/// unknown statistic or operator is the reader's `InvalidQuery`.
#[allow(clippy::type_complexity)]
pub(crate) fn selection(
    location: &str,
    attrs: Vec<(String, Vec<(String, Bound<'_, PyAny>)>)>,
    stats: Vec<(String, String, String, (String, Bound<'_, PyAny>))>,
) -> PyResult<Selection> {
    let mut selection = Selection::new();
    for (key, values) in attrs {
        let accepted = values
            .iter()
            .map(value_from_py)
            .collect::<PyResult<Vec<_>>>()?;
        selection = selection.attr_in(key, accepted);
    }
    for (array, stat, op, value) in stats {
        let value = value_from_py(&value)?;
        selection =
            (selection.stat_named(array, &stat, &op, value)).map_err(|e| Error::at(location, e))?;
    }
    Ok(selection)
}
