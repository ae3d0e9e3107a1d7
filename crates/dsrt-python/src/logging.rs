//! Rust `tracing` events as Python `logging` records.
//!
//! The library crates report through `tracing`; with its `log` feature and no subscriber, each
//! event is also a `log` record, which pyo3-log hands to the `logging` logger named after the
//! Rust module path (`dsrt_remote.…`). Only INFO and above cross: a record takes the GIL, and the
//! debug events fire on background threads (downloads, retries) where taking it could stall
//! the Python thread that holds it.

use pyo3::prelude::*;

/// Installs the bridge for this extension module (each module has its own `log` logger).
pub(crate) fn forward_to_python(py: Python<'_>) -> PyResult<()> {
    let logger =
        pyo3_log::Logger::new(py, pyo3_log::Caching::Loggers)?.filter(log::LevelFilter::Info);
    // A logger already installed (the module imported twice in one interpreter) keeps working.
    let _ = logger.install();
    Ok(())
}
