//! The native module of the `datasetrt` Python package (`datasetrt._native`).
//!
//! What it is for: exposing the `datasetrt` facade to Python: [`Cache`](datasetrt::Cache),
//! [`Dataset`](datasetrt::Dataset), [`CacheWriter`](datasetrt::CacheWriter),
//! [`Loader`](datasetrt::Loader) and manifest migration, with caches named by paths or
//! object-store URLs (opened through `dsrt_remote`, which also publishes caches), with a Python exception hierarchy
//! that mirrors the Rust error types. Every read, validating open, write and loader wait runs
//! with the GIL released, and a Rust panic surfaces as `datasetrt.InternalError`.
//!
//! What it is not for: logic. Types are converted here; everything else is the facade's.
//! The pure-Python half of the package (`python/datasetrt/src/datasetrt/`) adds the PyTorch
//! `StreamingDataset`.
//!
//! Layering: on top of the `datasetrt` facade and `dsrt-remote`; built by maturin (see
//! `python/datasetrt/pyproject.toml`), tested by pytest through `cargo xtask test`.
#![forbid(unsafe_code)]
// The binding's one error type holds any error of the library as it is: it is made once per
// failed Python call and becomes an exception at once, so its size costs nothing.
#![allow(clippy::result_large_err)]

mod arrow;
mod cache;
mod dataset;
mod errors;
mod loader;
mod options;
mod pack;
mod remote;
#[cfg(feature = "test-hooks")]
mod testing;
mod token_stream;
mod tokens;
mod values;
mod views;
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
    let report = errors::enter(py, || {
        let fs = datasetrt::StdFileSystem;
        datasetrt::update_local_manifests(&paths, version, &fs, &datasetrt::CancelToken::new())
    })?;
    dataset::PyUpdateReport::from_report(py, report)
}

/// The v3 cache id a writer derives from `source` (the same function as the Rust writer's).
#[pyfunction]
fn cache_id_for_source(source: &str) -> u64 {
    datasetrt::cache_id_for_source(source)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    py_support::forward_logs(m.py())?;
    py_support::install_interrupt_hook();
    py_support::ExceptionClass::register_all(m, &errors::CLASSES)?;
    #[cfg(feature = "test-hooks")]
    testing::register(m)?;
    m.add_class::<cache::PyCache>()?;
    m.add_class::<cache::PySample>()?;
    m.add_class::<dataset::PyDataset>()?;
    m.add_class::<dataset::PySampleTable>()?;
    m.add_class::<dataset::PyUpdateReport>()?;
    m.add_class::<writer::PyCacheWriter>()?;
    m.add_class::<tokens::PyTokenWriter>()?;
    m.add_class::<token_stream::PyTokenPlan>()?;
    m.add_class::<token_stream::PyTokenBatches>()?;
    m.add_class::<token_stream::PyTokenBatch>()?;
    m.add_class::<token_stream::PyColumnView>()?;
    m.add_function(wrap_pyfunction!(token_stream::_token_batch_from_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(token_stream::_token_batch_from_slot, m)?)?;
    m.add_function(wrap_pyfunction!(token_stream::_send_batches_in_slots, m)?)?;
    m.add_class::<loader::PyLoader>()?;
    m.add_class::<loader::PyRankPlan>()?;
    m.add_function(wrap_pyfunction!(update_manifests, m)?)?;
    m.add_function(wrap_pyfunction!(pack::_pack, m)?)?;
    m.add_function(wrap_pyfunction!(remote::_merge_parts, m)?)?;
    m.add_function(wrap_pyfunction!(writer::_cache_schema, m)?)?;
    m.add_function(wrap_pyfunction!(remote::_remove_unpublished, m)?)?;
    m.add_function(wrap_pyfunction!(cache_id_for_source, m)?)?;
    m.add_function(wrap_pyfunction!(remote::publish, m)?)?;
    m.add_function(wrap_pyfunction!(remote::_check_publish_target, m)?)?;
    m.add_function(wrap_pyfunction!(remote::_remove_remote_prefix, m)?)?;
    m.add_function(wrap_pyfunction!(remote::_parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(views::_located_payloads, m)?)?;
    m.add_class::<views::PayloadViews>()?;
    m.add_class::<arrow::ArrowBatch>()?;
    m.add_function(wrap_pyfunction!(arrow::_arrow_batch_from_ipc, m)?)?;
    m.add_class::<views::PyShardMapping>()?;
    m.add_function(wrap_pyfunction!(views::_shard_view, m)?)?;
    m.add_function(wrap_pyfunction!(views::_clear_shard_views, m)?)?;
    m.add_function(wrap_pyfunction!(views::max_open_shards, m)?)?;
    m.add_function(wrap_pyfunction!(views::set_max_open_shards, m)?)?;
    m.add_function(wrap_pyfunction!(views::open_shard_handles, m)?)?;
    m.add("REMOTE_DEFAULTS", remote_defaults(m.py())?)?;
    m.add(
        "DEFAULT_MAX_SHARD_BYTES",
        datasetrt::DEFAULT_MAX_SHARD_BYTES,
    )?;
    Ok(())
}

/// The defaults of the remote options `Cache` and `Dataset` take, from `RemoteOptions`
/// itself: the one definition the text signatures, the stubs, `datasetrt.torch` and the docs
/// are checked against (tests/test_defaults.py).
fn remote_defaults(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let defaults = dsrt_remote::RemoteOptions::new(PathBuf::new());
    let dict = pyo3::types::PyDict::new(py);
    dict.set_item("prefetch_shards", defaults.prefetch_shards)?;
    dict.set_item("read_while_downloading", defaults.read_while_downloading)?;
    dict.set_item("attempts", defaults.attempts)?;
    dict.set_item("first_backoff", defaults.first_backoff.as_secs_f64())?;
    dict.set_item("wait_for_room", defaults.wait_for_room.as_secs_f64())?;
    Ok(dict)
}
