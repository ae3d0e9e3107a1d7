//! `datasetrt.pack_dir` and `datasetrt.pack_imagefolder`: the parallel converters of
//! `datasetrt::pack`, the GIL released for the whole run.

use crate::errors::{detach, pack_error};
use crate::writer::{compression_arg, summary_dict};
use datasetrt::pack::{pack, Convert, FileTree, ImageFolder, PackError, PackOptions};
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

/// What the two tree converters share: options, the run with the GIL released, the summary.
#[allow(clippy::too_many_arguments)]
fn run_tree<'py, C: Convert + Send>(
    py: Python<'py>,
    scan: impl FnOnce() -> Result<C, PackError> + Send,
    schema: Schema,
    out: PathBuf,
    source: String,
    compression: &str,
    max_shard_bytes: u64,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let options = WriterOptions::new(source, schema.clone())
        .compression(compression_arg(compression)?)
        .max_shard_bytes(max_shard_bytes);
    let result = detach(py, move || {
        let convert = scan()?;
        pack_into(&convert, &out, options, jobs)
    })?;
    match result {
        Ok(summary) => summary_dict(py, &summary),
        Err(error) => Err(pack_error(py, &error)),
    }
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
        FileTree::schema(),
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
        ImageFolder::schema(),
        out,
        source,
        compression,
        max_shard_bytes,
        jobs,
    )
}
