//! `datasetrt.pack_dir`, `pack_imagefolder`, `pack_parquet` and `pack_webdataset`: the
//! parallel converters of `datasetrt::pack`, the GIL released for the whole run.

use crate::errors::enter;
use crate::writer::{compression_arg, summary_dict};
use datasetrt::pack::{
    pack, Convert, FileTree, ImageFolder, PackError, PackOptions, TableOptions, Tables, WebDataset,
    WebDatasetOptions,
};
use datasetrt::{CacheSummary, CacheWriter, Schema, WriterOptions};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};

/// Writes `convert` into a new cache at `out` on `jobs` threads; on any failure removes what
/// it wrote.
fn pack_into<C: Convert>(
    convert: &C,
    out: &Path,
    options: WriterOptions,
    jobs: Option<usize>,
) -> Result<CacheSummary, PackError> {
    let created = !out.exists();
    let options = options.io_threads(datasetrt::pack::writer_io_threads(jobs));
    let run = || -> Result<CacheSummary, PackError> {
        let mut writer = CacheWriter::create(out, options)?;
        let mut pack_options = PackOptions::default();
        if let Some(jobs) = jobs {
            pack_options = pack_options.jobs(jobs);
        }
        pack(convert, &mut writer, &pack_options)?;
        Ok(writer.finish()?)
    };
    let result = run();
    if let Err(error) = &result {
        // A cache whose manifest was published but whose durability is unknown is whole.
        if !matches!(
            error,
            PackError::Write(datasetrt::WriteError::DurabilityUnknown { .. })
        ) {
            datasetrt::remove_unpublished(out, created);
        }
    }
    result
}

/// What the converters share: options, the run with the GIL released, the summary.
/// `schema` reads the scanned converter's schema; `skipped` its skipped samples, for the
/// converters that skip (a `skipped` entry of the summary).
#[allow(clippy::too_many_arguments)]
fn run_tree<'py, C: Convert + Send>(
    py: Python<'py>,
    scan: impl FnOnce() -> Result<C, PackError> + Send,
    schema: impl FnOnce(&C) -> Schema + Send,
    skipped: Option<fn(&C) -> usize>,
    out: PathBuf,
    source: String,
    compression: &str,
    max_shard_bytes: u64,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let compression = compression_arg(compression)?;
    let (summary, skipped) = enter(py, move || {
        let convert = scan()?;
        let options = WriterOptions::new(source, schema(&convert))
            .compression(compression)
            .max_shard_bytes(max_shard_bytes);
        let summary = pack_into(&convert, &out, options, jobs)?;
        Ok::<_, PackError>((summary, skipped.map(|count| count(&convert))))
    })?;
    let dict = summary_dict(py, &summary)?;
    if let Some(skipped) = skipped {
        dict.set_item("skipped", skipped)?;
    }
    Ok(dict)
}

/// One path or a sequence of them.
fn paths_arg(paths: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    if let Ok(one) = paths.extract::<PathBuf>() {
        return Ok(vec![one]);
    }
    paths.extract::<Vec<PathBuf>>()
}

/// One string or a sequence of them.
fn strings_arg(strings: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if let Ok(one) = strings.extract::<String>() {
        return Ok(vec![one]);
    }
    strings.extract::<Vec<String>>()
}

/// Packs every regular file below `root` (sorted relative-path order; symbolic links
/// skipped) into a new cache at `out`, one sample per file with metadata `path` (relative)
/// and `size`, reading and encoding on `jobs` threads (default: the CPUs available); the
/// cache is byte for byte the same for every `jobs`. Returns a summary dict. On failure
/// nothing is left at `out`.
#[pyfunction]
#[pyo3(signature = (root, out, *, source, compression = "none", max_shard_bytes = datasetrt::DEFAULT_MAX_SHARD_BYTES, jobs = None))]
pub(crate) fn pack_dir<'py>(
    py: Python<'py>,
    root: PathBuf,
    out: PathBuf,
    source: String,
    compression: &str,
    max_shard_bytes: u64,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let scan = move || FileTree::scan(&root);
    run_tree(
        py,
        scan,
        |_| FileTree::schema(),
        None,
        out,
        source,
        compression,
        max_shard_bytes,
        jobs,
    )
}

/// Packs an ImageFolder tree (`root/<class>/<file>`, torchvision's layout) into a new cache at
/// `out`: one sample per file, classes in sorted order, with metadata `label` (the class's
/// position), `class` and `path` (relative to `root`), on `jobs` threads (default: the CPUs
/// available); the cache is byte for byte the same for every `jobs`. Returns a summary dict.
/// On failure nothing is left at `out`.
#[pyfunction]
#[pyo3(signature = (root, out, *, source, compression = "none", max_shard_bytes = datasetrt::DEFAULT_MAX_SHARD_BYTES, jobs = None))]
pub(crate) fn pack_imagefolder<'py>(
    py: Python<'py>,
    root: PathBuf,
    out: PathBuf,
    source: String,
    compression: &str,
    max_shard_bytes: u64,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let scan = move || ImageFolder::scan(&root);
    run_tree(
        py,
        scan,
        |_| ImageFolder::schema(),
        None,
        out,
        source,
        compression,
        max_shard_bytes,
        jobs,
    )
}

/// Packs Parquet files (a path, a directory of `*.parquet` files in name order, or a list of
/// them) or a Hugging Face `save_to_disk` directory (one holding `state.json`) into a new
/// cache at `out`, one sample per row: `payload_column` (binary or string, or a struct with a
/// binary `bytes` field such as the `Image` feature) is the payload, the other columns (or
/// `metadata_columns`, in that order) metadata, widened to bool, int64, float64 or utf8; any
/// other column type is refused naming the file and column before anything is written. Row
/// groups are read one at a time on `jobs` threads; the cache is byte for byte the same for
/// every `jobs`. Returns a summary dict. On failure nothing is left at `out`.
#[pyfunction]
#[pyo3(signature = (paths, out, *, source, payload_column, metadata_columns = None, compression = "none", max_shard_bytes = datasetrt::DEFAULT_MAX_SHARD_BYTES, jobs = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn pack_parquet<'py>(
    py: Python<'py>,
    paths: &Bound<'py, PyAny>,
    out: PathBuf,
    source: String,
    payload_column: String,
    metadata_columns: Option<Vec<String>>,
    compression: &str,
    max_shard_bytes: u64,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let paths = paths_arg(paths)?;
    let mut options = TableOptions::new(payload_column);
    if let Some(columns) = metadata_columns {
        options = options.metadata_columns(columns);
    }
    let scan = move || Tables::scan(&paths, &options);
    run_tree(
        py,
        scan,
        |tables| tables.schema().clone(),
        None,
        out,
        source,
        compression,
        max_shard_bytes,
        jobs,
    )
}

/// Packs WebDataset tar shards (a path or a list, in that order) into a new cache at `out`,
/// one sample per key: the member with the first of `payload_ext` (an extension or a list)
/// is the payload; metadata `key`, `cls` (int64, from `.cls`), `txt` (from `.txt`) and the
/// primitive fields of `.json`. A sample without a payload member or with a bad `.cls` or
/// `.json` is refused naming the tar and key, or left out with `skip_bad` (the summary's
/// `skipped`). One tar per unit on `jobs` threads; the cache is byte for byte the same for
/// every `jobs`. On failure nothing is left at `out`.
#[pyfunction]
#[pyo3(signature = (tars, out, *, source, payload_ext, skip_bad = false, compression = "none", max_shard_bytes = datasetrt::DEFAULT_MAX_SHARD_BYTES, jobs = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn pack_webdataset<'py>(
    py: Python<'py>,
    tars: &Bound<'py, PyAny>,
    out: PathBuf,
    source: String,
    payload_ext: &Bound<'py, PyAny>,
    skip_bad: bool,
    compression: &str,
    max_shard_bytes: u64,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let tars = paths_arg(tars)?;
    let options = WebDatasetOptions::new(strings_arg(payload_ext)?).skip_bad(skip_bad);
    let scan = move || WebDataset::scan(&tars, options);
    run_tree(
        py,
        scan,
        |shards| shards.schema().clone(),
        Some(|shards: &WebDataset| shards.skipped().len()),
        out,
        source,
        compression,
        max_shard_bytes,
        jobs,
    )
}
