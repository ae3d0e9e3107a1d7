//! The `_testing` submodule of a wheel built with a binding's `test-hooks` feature, and the
//! list of converted errors each package's error-mapping test checks.

use crate::exceptions::{raise, ErrorFields};
use pyo3::prelude::*;
use pyo3::types::PyModule;

/// Sets `module._testing`, filled by `fill` (an attribute, not an entry of `__all__`: the
/// module's public surface is the same with or without the hooks).
pub fn add_testing(
    module: &Bound<'_, PyModule>,
    fill: impl FnOnce(&Bound<'_, PyModule>) -> PyResult<()>,
) -> PyResult<()> {
    let testing = PyModule::new(module.py(), "_testing")?;
    fill(&testing)?;
    module.setattr("_testing", testing)
}

/// `Type::Variant` of an enum value, from its `Debug` (the leading word), with
/// `(detail)` appended when a variant comes twice and `detail` tells them apart.
pub fn variant_name(type_name: &str, error: &impl std::fmt::Debug, detail: Option<&str>) -> String {
    let debug = format!("{error:?}");
    let variant = debug
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or_default();
    match detail {
        Some(detail) => format!("{type_name}::{variant}({detail})"),
        None => format!("{type_name}::{variant}"),
    }
}

/// One converted error per variant, as `[(name, exception)]`: what `_testing.error_examples()`
/// returns, so a variant added in Rust without its row in the table fails the test that
/// lists every variant's class.
pub struct ErrorExamples<'py> {
    py: Python<'py>,
    examples: Vec<(String, Py<PyAny>)>,
}

impl<'py> ErrorExamples<'py> {
    /// An empty list.
    pub fn new(py: Python<'py>) -> Self {
        Self {
            py,
            examples: Vec::new(),
        }
    }

    /// Adds `error`, converted as a failing call converts it, under `name`.
    pub fn push(&mut self, name: String, error: &impl ErrorFields) {
        let exception = raise(self.py, error).value(self.py).clone();
        self.examples.push((name, exception.into_any().unbind()));
    }

    /// The list.
    pub fn finish(self) -> Vec<(String, Py<PyAny>)> {
        self.examples
    }
}
