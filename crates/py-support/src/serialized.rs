//! Reports, states and other plain data crossing as their serde form: one conversion for
//! every type that has one, through JSON and Python's `json` module (the same keys, numbers,
//! lists and `None`s a hand-built dict would hold), instead of a dict built field by field.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// `value` as the Python object its JSON form reads as (dicts, lists, str, int, float, bool,
/// None).
pub fn to_python<'py>(py: Python<'py>, value: &impl Serialize) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_string(value).map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (json,))
}

/// The `T` a Python object (as [`to_python`] gives) describes; `ValueError: not <what>: ...`
/// naming what is missing or wrong when it does not.
pub fn from_python<T: DeserializeOwned>(value: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let json: String = (value.py().import("json")?)
        .call_method1("dumps", (value,))?
        .extract()?;
    serde_json::from_str(&json).map_err(|e| PyValueError::new_err(format!("not {what}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Report {
        name: String,
        count: u64,
        parts: Vec<[u64; 2]>,
        missing: Option<f64>,
    }

    #[test]
    fn a_value_crosses_both_ways_and_a_wrong_object_is_named() {
        Python::initialize();
        Python::attach(|py| {
            let report = Report {
                name: "web".into(),
                count: u64::MAX,
                parts: vec![[0, 3], [5, 9]],
                missing: None,
            };
            let object = to_python(py, &report).unwrap();
            let repr = object.repr().unwrap().to_string();
            assert_eq!(
                repr,
                "{'name': 'web', 'count': 18446744073709551615, 'parts': [[0, 3], [5, 9]], \
                 'missing': None}"
            );
            assert_eq!(from_python::<Report>(&object, "a report").unwrap(), report);
            object.del_item("count").unwrap();
            let error = from_python::<Report>(&object, "a report").unwrap_err();
            assert!(
                error
                    .to_string()
                    .starts_with("ValueError: not a report: missing field `count`"),
                "{error}"
            );
        });
    }
}
