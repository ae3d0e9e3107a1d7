//! Hooks for the test suite, built only with the `test-hooks` feature (the wheel
//! `cargo xtask test` builds): `atlas_collections._atlas._testing`, never in a release wheel.

use crate::errors::{enter, Error, Failure};
use atlas::{AtlasError, NameError, WriteError};
use py_support::{variant_name, ErrorExamples};
use pyo3::prelude::*;

/// Sets `m._testing`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    py_support::add_testing(m, |testing| {
        testing.add_function(wrap_pyfunction!(panic_for_tests, testing)?)?;
        testing.add_function(wrap_pyfunction!(error_examples, testing)?)
    })
}

/// Panics inside the GIL-free call path, so the tests can check that a Rust panic surfaces as
/// `atlas_collections.errors.AtlasPanicError` and leaves the interpreter working.
#[pyfunction]
fn panic_for_tests(py: Python<'_>, message: String) -> PyResult<()> {
    enter(py, "panic_for_tests", move || -> Result<(), Failure> {
        panic!("{message}")
    })
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
    let mut out = ErrorExamples::new(py);
    let mut push = |name, failure| out.push(name, &Error::at(EXAMPLE_COLLECTION, failure));
    for error in AtlasError::examples() {
        let detail = match &error {
            AtlasError::Store(source) => Some(leading_word(source)),
            AtlasError::Segment { source, .. } => Some(leading_word(source)),
            AtlasError::Io { source, .. } => Some(format!("{:?}", source.kind())),
            _ => None,
        };
        let name = variant_name("AtlasError", &error, detail.as_deref());
        push(name, Failure::Atlas(error));
    }
    for error in WriteError::examples() {
        let detail = match &error {
            WriteError::Store(source) => Some(leading_word(source)),
            WriteError::Segment { source, .. } => Some(leading_word(source)),
            _ => None,
        };
        push(
            variant_name("WriteError", &error, detail.as_deref()),
            error.into(),
        );
    }
    for error in NameError::examples() {
        push(format!("NameError({:?})", error.kind), Failure::Name(error));
    }
    for failure in failure_examples() {
        push(variant_name("Failure", &failure, None), failure);
    }
    out.finish()
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
        Failure::Atlas(AtlasError::DatasetNotFound("jan".to_owned())),
        Failure::Write(WriteError::Poisoned("an earlier failure".to_owned())),
        Failure::Name(NameError::examples().swap_remove(0)),
        Failure::Exists("already holds data.atlas; a collection is write-once".to_owned()),
        Failure::Append(atlas::AppendError::NameTaken {
            collection: "s3://bucket/runs".to_owned(),
            name: "jan".to_owned(),
            held_by: "part 0a1b (version 3)".to_owned(),
        }),
        Failure::Location("unknown scheme 'nosuch'".to_owned()),
        Failure::Panicked("index out of bounds".to_owned()),
    ];
    for failure in &all {
        match failure {
            Failure::Atlas(_)
            | Failure::Write(_)
            | Failure::Name(_)
            | Failure::Exists(_)
            | Failure::Append(_)
            | Failure::Location(_)
            | Failure::Panicked(_) => {}
        }
    }
    all
}
