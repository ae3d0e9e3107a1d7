//! The native half of the `atlas-collections` Python package (`atlas_collections._atlas`).
//!
//! What it is for: opening, reading, deleting from and writing Atlas collections from Python,
//! through the `atlas-rust` facade. The pure-Python half (`python/atlas/atlas_collections`)
//! wraps these functions in the user-facing classes, the xarray backend and the NetCDF
//! importer; this crate stays a thin, typed layer:
//!
//! - one tokio runtime per process, owned by the module (rebuilt in a forked child, where the
//!   parent's worker threads do not exist);
//! - every request and every decode runs with the GIL released (`Python::detach`);
//! - every `AtlasError` and `WriteError` becomes an instance of the matching class in
//!   `atlas_collections.errors`, carrying the path and the reason; a Rust panic becomes
//!   `atlas_collections.errors.AtlasPanicError` instead of tearing the interpreter down.
//!
//! What it is not for: NumPy dtype policy, indexing, xarray or NetCDF (all in Python).
//!
//! Layering: above the `atlas-rust` facade only.
#![forbid(unsafe_code)]

mod collection;
mod errors;
mod location;
mod values;
mod writer;

use pyo3::prelude::*;

/// The extension module `atlas_collections._atlas`.
#[pymodule]
fn _atlas(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<collection::Collection>()?;
    m.add_class::<writer::Writer>()?;
    m.add_function(wrap_pyfunction!(writer::check_name, m)?)?;
    m.add_function(wrap_pyfunction!(panic_for_tests, m)?)?;
    m.add("FORMAT_VERSION", atlas::format::FORMAT_VERSION)?;
    Ok(())
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
