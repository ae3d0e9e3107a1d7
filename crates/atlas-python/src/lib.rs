//! The native half of the `atlas-collections` Python package (`atlas_collections._atlas`).
//!
//! What it is for: opening, reading, deleting from and writing Atlas collections from Python,
//! through the `atlas-rust` facade. The pure-Python half (`python/atlas/atlas_collections`)
//! wraps these functions in the user-facing classes, the xarray backend and the NetCDF
//! importer; this crate stays a thin, typed layer:
//!
//! - requests on object-access's runtime, one per process (rebuilt in a forked child, where
//!   the parent's worker threads do not exist), and locations parsed by object-access as the
//!   `atlas` command and the `datasetrt` package parse theirs;
//! - `tracing` events of INFO and above forwarded to Python's `logging`;
//! - every request and every decode runs with the GIL released (`Python::detach`);
//! - the exception classes of `atlas_collections.errors` are made here (that module
//!   re-exports them); every `AtlasError`, `WriteError` and `NameError` becomes an instance of
//!   the matching class, carrying the path, the reason, the variant's `kind` and whether a
//!   retry may help, each from the error's own accessors; a Rust panic becomes
//!   `AtlasPanicError` instead of tearing the interpreter down.
//!
//! What it is not for: NumPy dtype policy, indexing, xarray or NetCDF (all in Python).
//!
//! Layering: above the `atlas-collections` facade and `object-access`.
#![forbid(unsafe_code)]
// The binding's one error type holds any error of the library as it is: it is made once per
// failed Python call and becomes an exception at once, so its size costs nothing.
#![allow(clippy::result_large_err)]

mod collection;
mod errors;
mod location;
mod run;
mod select;
#[cfg(feature = "test-hooks")]
mod testing;
mod values;
mod writer;

use pyo3::prelude::*;

/// The extension module `atlas_collections._atlas`.
#[pymodule]
fn _atlas(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    py_support::forward_logs(m.py())?;
    py_support::install_interrupt_hook();
    m.add_class::<collection::Collection>()?;
    m.add_class::<writer::Writer>()?;
    m.add_function(wrap_pyfunction!(writer::check_name, m)?)?;
    #[cfg(feature = "test-hooks")]
    testing::register(m)?;
    m.add("FORMAT_VERSION", atlas::format::FORMAT_VERSION)?;
    Ok(())
}
