//! Hooks for the test suite and benchmarks, built only with the `test-hooks` feature (the
//! wheel `cargo xtask test` builds): `datasetrt._native._testing`, never in a release wheel.

use crate::errors::{enter, Error};
use py_support::{variant_name, ErrorExamples};
use pyo3::prelude::*;
use std::path::PathBuf;

/// Sets `m._testing`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    py_support::add_testing(m, |testing| {
        testing.add_function(wrap_pyfunction!(_rust_write_benchmark, testing)?)?;
        testing.add_function(wrap_pyfunction!(error_examples, testing)?)
    })
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
    let algo = CompressionAlgo::from_name(compression).unwrap_or(CompressionAlgo::None);
    enter(py, || {
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
    })
}

/// One Rust error of every variant of every error type the module raises, each converted as a
/// failing call converts it: `[("CacheError::Incomplete", exception), ...]`. The test that
/// checks each one's class and `kind` fails when a variant is added without its mapping.
#[pyfunction]
fn error_examples(py: Python<'_>) -> Vec<(String, Py<PyAny>)> {
    let mut out = ErrorExamples::new(py);
    macro_rules! each_variant {
        ($($ty:ty => $name:literal),*) => {$(
            for error in <$ty>::examples() {
                out.push(variant_name($name, &error, None), &Error::from(error));
            }
        )*};
    }
    each_variant!(
        datasetrt::CacheError => "CacheError",
        datasetrt::WriteError => "WriteError",
        datasetrt::DatasetError => "DatasetError",
        datasetrt::pack::PackError => "PackError"
    );
    for error in dsrt_remote::RemoteError::examples() {
        let detail = match &error {
            dsrt_remote::RemoteError::Store { .. } => Some(error.kind()),
            _ => None,
        };
        out.push(
            variant_name("RemoteError", &error, detail),
            &Error::from(error),
        );
    }
    out.finish()
}
