//! `_pack`, the one native call under `datasetrt.pack_dir`, `pack_imagefolder`,
//! `pack_parquet`, `pack_webdataset` and `pack_jsonl` (`datasetrt/_pack.py` gives each its
//! signature): a converter of `datasetrt::pack` scanned and run on its threads, the GIL
//! released for the whole run.

use crate::errors::enter;
use crate::options::Kwargs;
use crate::writer::{compression_arg, summary_dict};
use datasetrt::pack::{
    pack, Convert, FileTree, ImageFolder, Jsonl, JsonlOptions, JsonlSource, PackError, PackOptions,
    PayloadEncoding, TableOptions, Tables, WebDataset, WebDatasetOptions,
};
use datasetrt::{CacheSummary, CacheWriter, Schema, WriterOptions};
use pyo3::exceptions::PyValueError;
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
        let pack_options = match jobs {
            Some(jobs) => PackOptions::default().jobs(jobs),
            None => PackOptions::default(),
        };
        pack(convert, &mut writer, &pack_options)?;
        Ok(writer.finish()?)
    };
    let result = run();
    // A cache whose manifest was published but whose durability is unknown is whole.
    if let Err(error) = &result {
        let published = matches!(
            error,
            PackError::Write(datasetrt::WriteError::DurabilityUnknown { .. })
        );
        if !published {
            datasetrt::remove_unpublished(out, created);
        }
    }
    result
}

/// One path or a sequence of them.
fn paths_arg(paths: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    match paths.extract::<PathBuf>() {
        Ok(one) => Ok(vec![one]),
        Err(_) => paths.extract(),
    }
}

/// A scanned converter, its schema, and its skipped samples where it skips any.
trait Scanned: Convert + Send {
    fn schema(&self) -> Schema;
    fn skipped(&self) -> Option<usize> {
        None
    }
}

impl Scanned for FileTree {
    fn schema(&self) -> Schema {
        FileTree::schema()
    }
}

impl Scanned for ImageFolder {
    fn schema(&self) -> Schema {
        ImageFolder::schema()
    }
}

impl Scanned for Tables {
    fn schema(&self) -> Schema {
        Tables::schema(self).clone()
    }
}

impl Scanned for WebDataset {
    fn schema(&self) -> Schema {
        WebDataset::schema(self).clone()
    }
    fn skipped(&self) -> Option<usize> {
        Some(WebDataset::skipped(self).len())
    }
}

impl Scanned for Jsonl {
    fn schema(&self) -> Schema {
        Jsonl::schema(self).clone()
    }
}

/// Scans (GIL released) and packs; the summary dict of `CacheWriter.finish`, with `skipped`
/// for a converter that skips samples.
fn run<'py, C: Scanned>(
    py: Python<'py>,
    scan: impl FnOnce() -> Result<C, PackError> + Send,
    out: PathBuf,
    options: impl FnOnce(Schema) -> WriterOptions + Send,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let (summary, skipped) = enter(py, move || {
        let convert = scan()?;
        let summary = pack_into(&convert, &out, options(convert.schema()), jobs)?;
        Ok::<_, PackError>((summary, convert.skipped()))
    })?;
    let dict = summary_dict(py, &summary)?;
    if let Some(skipped) = skipped {
        dict.set_item("skipped", skipped)?;
    }
    Ok(dict)
}

/// `_pack(kind, inputs, out, **options)`: packs `inputs` (a path, or paths) into a new cache
/// at `out` with the converter `kind` ("dir", "imagefolder", "parquet", "webdataset",
/// "jsonl") and its options, the writer's (`source`, `compression`, `max_shard_bytes`) and
/// `jobs`. Returns the summary dict; on failure nothing is left at `out`.
#[pyfunction]
#[pyo3(signature = (kind, inputs, out, **options))]
pub(crate) fn _pack<'py>(
    py: Python<'py>,
    kind: &str,
    inputs: &Bound<'py, PyAny>,
    out: PathBuf,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut kwargs = Kwargs::new("_pack", options)?;
    let source: String = kwargs.get("source", String::new())?;
    let compression = compression_arg(&kwargs.get("compression", "none".to_owned())?)?;
    let max_shard_bytes = kwargs.get("max_shard_bytes", datasetrt::DEFAULT_MAX_SHARD_BYTES)?;
    let jobs: Option<usize> = kwargs.get("jobs", None)?;
    let writer = move |schema: Schema| {
        WriterOptions::new(source, schema)
            .compression(compression)
            .max_shard_bytes(max_shard_bytes)
    };
    let paths = paths_arg(inputs)?;
    let first = paths.first().cloned().unwrap_or_default();
    match kind {
        "dir" | "imagefolder" => {
            kwargs.finish()?;
            match kind {
                "dir" => run(py, move || FileTree::scan(&first), out, writer, jobs),
                _ => run(py, move || ImageFolder::scan(&first), out, writer, jobs),
            }
        }
        "parquet" => {
            let mut options = TableOptions::new(kwargs.get("payload_column", String::new())?);
            if let Some(columns) = kwargs.get::<Option<Vec<String>>>("metadata_columns", None)? {
                options = options.metadata_columns(columns);
            }
            kwargs.finish()?;
            run(
                py,
                move || Tables::scan(&paths, &options),
                out,
                writer,
                jobs,
            )
        }
        "webdataset" => {
            let extensions = match kwargs.take("payload_ext")? {
                Some(one) if one.extract::<String>().is_ok() => vec![one.extract()?],
                Some(many) => many.extract()?,
                None => Vec::new(),
            };
            let skip_bad = kwargs.get("skip_bad", false)?;
            let options = WebDatasetOptions::new(extensions).skip_bad(skip_bad);
            kwargs.finish()?;
            run(
                py,
                move || WebDataset::scan(&paths, options),
                out,
                writer,
                jobs,
            )
        }
        "jsonl" => {
            let mut options = JsonlOptions::new(kwargs.get("payload_field", String::new())?);
            options = options.encoding(match kwargs.get("payload_encoding", "path".to_owned())?.as_str() {
                "path" => PayloadEncoding::Path,
                "base64" => PayloadEncoding::Base64,
                "text" => PayloadEncoding::Text,
                other => {
                    let message = format!("payload_encoding must be \"path\", \"base64\" or \"text\", not {other:?}");
                    return Err(PyValueError::new_err(message));
                }
            });
            if let Some(schema) = kwargs.take("schema")? {
                options = options.schema(crate::values::schema_from_py(&schema)?);
            }
            kwargs.finish()?;
            let file = JsonlSource::File(first);
            run(
                py,
                move || Jsonl::scan(file, options, &|_| {}),
                out,
                writer,
                jobs,
            )
        }
        other => Err(PyValueError::new_err(format!("no converter {other:?}"))),
    }
}
