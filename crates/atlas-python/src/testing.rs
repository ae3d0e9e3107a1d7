//! Hooks for the test suite, built only with the `test-hooks` feature (the wheel
//! `cargo xtask test` builds): `atlas_collections._atlas._testing`, never in a release wheel.

use crate::errors;
use pyo3::prelude::*;

/// Sets `m._testing` (an attribute, not an entry of `__all__`: the module's public surface is
/// the same with or without the hooks).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let testing = PyModule::new(m.py(), "_testing")?;
    testing.add_function(wrap_pyfunction!(panic_for_tests, &testing)?)?;
    m.setattr("_testing", testing)
}

/// Panics inside the GIL-free call path, so the tests can check that a Rust panic surfaces as
/// `atlas_collections.errors.AtlasPanicError` and leaves the interpreter working.
#[pyfunction]
fn panic_for_tests(py: Python<'_>, message: String) -> PyResult<()> {
    errors::detached(
        py,
        "panic_for_tests",
        move || -> Result<(), errors::Failure> { panic!("{message}") },
    )
}
