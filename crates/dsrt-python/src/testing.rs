//! Hooks for the test suite and benchmarks, built only with the `test-hooks` feature (the
//! wheel `cargo xtask test` builds): `datasetrt._native._testing`, never in a release wheel.

use crate::errors;
use pyo3::prelude::*;
use std::path::PathBuf;

/// Sets `m._testing` (an attribute, not an entry of `__all__`: the module's public surface is
/// the same with or without the hooks).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let testing = PyModule::new(m.py(), "_testing")?;
    testing.add_function(wrap_pyfunction!(_rust_write_benchmark, &testing)?)?;
    testing.add_function(wrap_pyfunction!(error_examples, &testing)?)?;
    m.setattr("_testing", testing)
}

/// Benchmark baseline: writes `lengths.len()` samples whose payloads are consecutive
/// slices of `payloads` and whose one int64 column `label` is `labels`, with the Rust writer in
/// one Rust loop (GIL released), exactly as `CacheWriter.add` would from Python. Returns the
/// seconds the loop and `finish` took.
#[pyfunction]
#[pyo3(signature = (path, source, payloads, lengths, labels, compression = "none"))]
fn _rust_write_benchmark(
    py: Python<'_>,
    path: PathBuf,
    source: String,
    payloads: &[u8],
    lengths: Vec<usize>,
    labels: Vec<i64>,
    compression: &str,
) -> PyResult<f64> {
    use datasetrt::{Column, ColumnType, CompressionAlgo, Row, Schema, WriterOptions};
    let schema = Schema::new(vec![Column::new("label", ColumnType::Int64, false)])
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    let algo = if compression == "lz4" {
        CompressionAlgo::Lz4
    } else {
        CompressionAlgo::None
    };
    let result = errors::detach(py, || {
        let start = std::time::Instant::now();
        let options = WriterOptions::new(source, schema).compression(algo);
        let mut writer = datasetrt::CacheWriter::create(&path, options)?;
        let mut at = 0;
        for (len, label) in lengths.iter().zip(&labels) {
            let end = (at + len).min(payloads.len());
            writer.add(&payloads[at..end], &Row::new().with("label", *label))?;
            at = end;
        }
        writer.finish()?;
        Ok::<f64, datasetrt::WriteError>(start.elapsed().as_secs_f64())
    })?;
    result.map_err(|e| errors::write_error(py, &e))
}

/// One Rust error of every variant of every error type the module raises, each converted as a
/// failing call converts it: `[("CacheError::Incomplete", exception), ...]`. The test that
/// checks each one's class and `kind` fails when a variant is added without its mapping.
#[pyfunction]
fn error_examples(py: Python<'_>) -> Vec<(String, Py<PyAny>)> {
    fn named(type_name: &str, error: &impl std::fmt::Debug) -> String {
        let debug = format!("{error:?}");
        let variant = debug
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .next()
            .unwrap_or_default()
            .to_owned();
        format!("{type_name}::{variant}")
    }
    let mut out = Vec::new();
    let mut push =
        |name: String, error: PyErr| out.push((name, error.value(py).clone().into_any().unbind()));
    for error in datasetrt::CacheError::examples() {
        push(named("CacheError", &error), errors::cache_error(py, &error));
    }
    for error in datasetrt::WriteError::examples() {
        push(named("WriteError", &error), errors::write_error(py, &error));
    }
    for error in datasetrt::DatasetError::examples() {
        push(
            named("DatasetError", &error),
            errors::dataset_error(py, &error),
        );
    }
    for error in datasetrt::pack::PackError::examples() {
        push(named("PackError", &error), errors::pack_error(py, &error));
    }
    for error in dsrt_remote::RemoteError::examples() {
        let name = match &error {
            dsrt_remote::RemoteError::Store { .. } => {
                format!("RemoteError::Store({})", error.kind())
            }
            _ => named("RemoteError", &error),
        };
        push(name, errors::remote_error(py, &error));
    }
    out
}
