//! Rust `tracing` events as Python `logging` records.

use pyo3::prelude::*;

/// Forwards the library crates' `tracing` events of INFO and above to Python's `logging`: with
/// `tracing`'s `log` feature and no subscriber, each event is also a `log` record, which
/// pyo3-log hands to the logger named after the Rust module path (`dsrt_remote.…`). Debug
/// events stay in Rust: a record takes the GIL, and they fire on background threads
/// (downloads, retries) where taking it could stall the Python thread that holds it. Called by
/// each module's init (each extension module has its own `log` logger).
pub fn forward_logs(py: Python<'_>) -> PyResult<()> {
    let logger =
        pyo3_log::Logger::new(py, pyo3_log::Caching::Loggers)?.filter(log::LevelFilter::Info);
    // A logger already installed (the module imported twice in one interpreter) keeps working.
    let _ = logger.install();
    Ok(())
}
