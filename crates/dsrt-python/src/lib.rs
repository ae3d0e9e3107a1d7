//! The native module of the `datasetrt` Python package (`datasetrt._native`).
//!
//! What it is for: exposing the `datasetrt` facade to Python: [`Cache`](datasetrt::Cache),
//! [`Dataset`](datasetrt::Dataset), [`CacheWriter`](datasetrt::CacheWriter),
//! [`Loader`](datasetrt::Loader) and manifest migration, with a Python exception hierarchy
//! that mirrors the Rust error types. Every read, validating open, write and loader wait runs
//! with the GIL released, and a Rust panic surfaces as `datasetrt.InternalError`.
//!
//! What it is not for: logic. Types are converted here; everything else is the facade's.
//! The pure-Python half of the package (`python/datasetrt/src/datasetrt/`) adds the PyTorch
//! `StreamingDataset`.
//!
//! Layering: on top of the `datasetrt` facade only; built by maturin (see
//! `python/datasetrt/pyproject.toml`), tested by pytest through `cargo xtask test`.
#![forbid(unsafe_code)]

mod cache;
mod dataset;
mod errors;
mod loader;
mod values;
mod writer;

use pyo3::prelude::*;
use std::path::PathBuf;

/// Migrates the manifests of `paths` (a dataset's ordered list of cache directories) to
/// `version` (only 3), with the same semantics as `Dataset.update_manifests`, without opening
/// the caches. Returns a ManifestUpdateReport or raises ManifestUpdateError.
#[pyfunction]
#[pyo3(signature = (paths, version = 3))]
fn update_manifests(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    version: u64,
) -> PyResult<dataset::PyUpdateReport> {
    let result = errors::detach(py, || {
        datasetrt::update_manifests(
            &paths,
            version,
            &datasetrt::StdFileSystem,
            &datasetrt::CancelToken::new(),
        )
    })?;
    match result {
        Ok(report) => dataset::PyUpdateReport::from_report(py, &report),
        Err(e) => Err(errors::manifest_update_error(py, &e)),
    }
}

/// The v3 cache id a writer derives from `source` (the same function as the Rust writer's).
#[pyfunction]
fn cache_id_for_source(source: &str) -> u64 {
    datasetrt::cache_id_for_source(source)
}

/// Benchmark baseline (not API): writes `lengths.len()` samples whose payloads are consecutive
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<cache::PyCache>()?;
    m.add_class::<cache::PySample>()?;
    m.add_class::<dataset::PyDataset>()?;
    m.add_class::<dataset::PySampleTable>()?;
    m.add_class::<dataset::PyUpdateReport>()?;
    m.add_class::<writer::PyCacheWriter>()?;
    m.add_class::<loader::PyLoader>()?;
    m.add_class::<loader::PyRankPlan>()?;
    m.add_function(wrap_pyfunction!(update_manifests, m)?)?;
    m.add_function(wrap_pyfunction!(cache_id_for_source, m)?)?;
    m.add_function(wrap_pyfunction!(_rust_write_benchmark, m)?)?;
    m.add(
        "DEFAULT_MAX_SHARD_BYTES",
        datasetrt::DEFAULT_MAX_SHARD_BYTES,
    )?;
    Ok(())
}
