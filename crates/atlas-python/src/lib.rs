//! The native half of the `atlas-collections` Python package (`atlas_collections._atlas`).
//!
//! What it is for: opening, reading, deleting from and writing Atlas collections from Python,
//! through the `atlas-collections` facade, as a thin, typed layer: locations are read by
//! object-access and opened by `Atlas::open_location_at` and written by
//! `atlas::CollectionWriter` (as the `atlas` command opens and writes them); reports cross as
//! their serde form (`py_support::to_python`); every request runs through `py_support::enter_async` on object-access's runtime, the GIL
//! released and Ctrl-C let through; each Rust error becomes its class of
//! `atlas_collections.errors` (`errors.rs`, the table), a panic `AtlasPanicError`; `tracing`
//! events of INFO and above go to Python's `logging`.
//!
//! What it is not for: NumPy dtype policy, indexing, xarray or NetCDF (the pure-Python half,
//! `python/atlas/src/atlas_collections`), or anything a Rust caller needs as well (reading by
//! type, `atlas::ArrayData`; lookups by name; where a writer may write): that belongs in the
//! library crates.
//!
//! Layering: above the `atlas-collections` facade, `object-access` and `py-support`.
#![forbid(unsafe_code)]
// The binding's one error type holds any error of the library as it is: it is made once per
// failed Python call and becomes an exception at once, so its size costs nothing.
#![allow(clippy::result_large_err)]

mod collection;
mod errors;
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
    m.add_function(wrap_pyfunction!(writer::compact, m)?)?;
    #[cfg(feature = "test-hooks")]
    testing::register(m)?;
    m.add("FORMAT_VERSION", atlas::format::FORMAT_VERSION)?;
    Ok(())
}
