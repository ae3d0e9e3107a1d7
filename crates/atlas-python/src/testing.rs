//! Hooks for the test suite, built only with the `test-hooks` feature (the wheel
//! `cargo xtask test` builds): `atlas_collections._atlas._testing`, never in a release wheel.

use crate::errors::{self, Failure};
use pyo3::prelude::*;

/// Sets `m._testing` (an attribute, not an entry of `__all__`: the module's public surface is
/// the same with or without the hooks).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let testing = PyModule::new(m.py(), "_testing")?;
    testing.add_function(wrap_pyfunction!(panic_for_tests, &testing)?)?;
    testing.add_function(wrap_pyfunction!(error_examples, &testing)?)?;
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

/// The collection the examples are converted for: a URL, so that an error about one of its
/// objects shows that object under it.
const EXAMPLE_COLLECTION: &str = "s3://bucket/runs";

/// One Rust error of every variant of every error type the module raises (and of the
/// binding's own failures), each converted as a failing call converts it:
/// `[("AtlasError::DatasetNotFound", exception), ...]`. The test that checks each one's class,
/// `kind` and `retryable` fails when a variant is added without its mapping. A variant that
/// comes twice names what tells the two apart: `AtlasError::Store(Generic)`.
#[pyfunction]
fn error_examples(py: Python<'_>) -> Vec<(String, Py<PyAny>)> {
    let mut out = Vec::new();
    let mut push =
        |name: String, error: PyErr| out.push((name, error.value(py).clone().into_any().unbind()));
    for error in atlas::AtlasError::examples() {
        let detail = match &error {
            atlas::AtlasError::Store(source) => Some(leading_word(source)),
            atlas::AtlasError::Segment { source, .. } => Some(leading_word(source)),
            atlas::AtlasError::Io { source, .. } => Some(format!("{:?}", source.kind())),
            _ => None,
        };
        let name = named("AtlasError", &error, detail);
        push(name, errors::atlas_error(py, EXAMPLE_COLLECTION, error));
    }
    for error in atlas::WriteError::examples() {
        let detail = match &error {
            atlas::WriteError::Store(source) => Some(leading_word(source)),
            atlas::WriteError::Segment { source, .. } => Some(leading_word(source)),
            _ => None,
        };
        let name = named("WriteError", &error, detail);
        push(name, errors::write_error(py, EXAMPLE_COLLECTION, &error));
    }
    for error in atlas::NameError::examples() {
        let name = format!("NameError({:?})", error.kind);
        push(name, errors::name_error(py, EXAMPLE_COLLECTION, &error));
    }
    for failure in failure_examples() {
        let name = named("Failure", &failure, None);
        push(name, errors::to_py(py, EXAMPLE_COLLECTION, failure));
    }
    out
}

/// `Type::Variant`, or `Type::Variant(detail)`, from the error's `Debug`.
fn named(type_name: &str, error: &impl std::fmt::Debug, detail: Option<String>) -> String {
    let variant = leading_word(error);
    match detail {
        Some(detail) => format!("{type_name}::{variant}({detail})"),
        None => format!("{type_name}::{variant}"),
    }
}

/// The first word of a value's `Debug`: an enum's variant.
fn leading_word(value: &impl std::fmt::Debug) -> String {
    format!("{value:?}")
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// One failure of every variant the binding makes itself; those wrapping a Rust error type
/// carry one example of it (the type's own examples cover the rest).
fn failure_examples() -> Vec<Failure> {
    let all = vec![
        Failure::Atlas(atlas::AtlasError::DatasetNotFound("jan".to_owned())),
        Failure::Write(atlas::WriteError::Poisoned("an earlier failure".to_owned())),
        Failure::Name(atlas::NameError {
            kind: atlas::NameKind::Dataset,
            name: String::new(),
            reason: "must not be empty",
        }),
        Failure::Exists("already holds data.atlas; a collection is write-once".to_owned()),
        Failure::Location("unknown scheme 'nosuch'".to_owned()),
        Failure::Unsupported("array 'c' holds Complex64".to_owned()),
    ];
    for failure in &all {
        match failure {
            Failure::Atlas(_)
            | Failure::Write(_)
            | Failure::Name(_)
            | Failure::Exists(_)
            | Failure::Location(_)
            | Failure::Unsupported(_) => {}
        }
    }
    all
}
