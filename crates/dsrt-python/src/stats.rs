//! A loader's stats as the dict `stats()` returns (keys and units in docs/python.md,
//! "Loader stats").

use datasetrt::StatsSnapshot;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `stats` as a dict: counts, seconds, bytes, and what follows from them.
pub(crate) fn stats_dict<'py>(
    py: Python<'py>,
    stats: &StatsSnapshot,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("elapsed_s", stats.elapsed.as_secs_f64())?;
    dict.set_item(
        "time_to_first_batch_s",
        stats.time_to_first_batch.map(|t| t.as_secs_f64()),
    )?;
    dict.set_item("batches", stats.batches)?;
    dict.set_item("samples", stats.samples)?;
    dict.set_item("tokens", stats.tokens)?;
    dict.set_item("batches_per_s", stats.batches_per_second())?;
    dict.set_item("samples_per_s", stats.samples_per_second())?;
    dict.set_item("tokens_per_s", stats.tokens_per_second())?;
    dict.set_item("wait_s", stats.wait.as_secs_f64())?;
    dict.set_item("wall_s", stats.wall.as_secs_f64())?;
    dict.set_item("stall_share", stats.stall_share())?;
    dict.set_item("bytes_read", stats.bytes_read)?;
    dict.set_item("bytes_downloaded", stats.fetch.fetched_bytes)?;
    dict.set_item("downloads", stats.fetch.downloads)?;
    dict.set_item("downloads_in_flight", stats.fetch.in_flight)?;
    dict.set_item("shard_cache_hits", stats.fetch.hits)?;
    dict.set_item("source_counts", stats.per_source.clone())?;
    dict.set_item("source_shares", stats.source_shares())?;
    dict.set_item("plan_s", stats.plan.as_secs_f64())?;
    dict.set_item("download_s", stats.download.as_secs_f64())?;
    dict.set_item("read_s", stats.read.as_secs_f64())?;
    dict.set_item("assemble_s", stats.assemble.as_secs_f64())?;
    Ok(dict)
}
