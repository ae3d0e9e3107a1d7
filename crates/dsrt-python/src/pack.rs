//! `_pack`, the one native call under `datasetrt.pack_dir`, `pack_imagefolder`,
//! `pack_parquet`, `pack_webdataset`, `pack_jsonl` and `pack_megatron` (`datasetrt/_pack.py`
//! gives each its signature): a converter of `datasetrt::pack` scanned and run on its threads, the GIL
//! released for the whole run.

use crate::errors::enter;
use crate::options::Kwargs;
use crate::writer::{compression_arg, summary_dict};
use datasetrt::pack::{
    pack, Convert, FileTree, ImageFolder, Jsonl, JsonlOptions, JsonlSource, Megatron, PackError,
    PackOptions, PayloadEncoding, TableOptions, Tables, TextOptions, TextTokenizer, TokenColumn,
    WebDataset, WebDatasetOptions,
};
use datasetrt::tokens::{TokenDtype, TokenInfo};
use datasetrt::{write_new_cache, CacheSummary, Schema, WriterOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Writes `convert` into a new cache at `out` on `jobs` threads (nothing left there if it
/// fails).
fn pack_into<C: Convert>(
    convert: &C,
    out: &Path,
    options: WriterOptions,
    jobs: Option<usize>,
) -> Result<CacheSummary, PackError> {
    let options = options.io_threads(datasetrt::pack::writer_io_threads(jobs));
    let pack_options = match jobs {
        Some(jobs) => PackOptions::default().jobs(jobs),
        None => PackOptions::default(),
    };
    write_new_cache(out, options, |writer| {
        pack(convert, writer, &pack_options).map(drop)
    })
}

/// One path or a sequence of them.
fn paths_arg(paths: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    match paths.extract::<PathBuf>() {
        Ok(one) => Ok(vec![one]),
        Err(_) => paths.extract(),
    }
}

/// Scans (GIL released) and packs, the converter's manifest keys (a token cache's `tokens`)
/// given to the writer; the summary dict of `CacheWriter.finish`, with `skipped` for a
/// converter that skips samples.
fn run<'py, C: Convert + Send>(
    py: Python<'py>,
    scan: impl FnOnce() -> Result<C, PackError> + Send,
    out: PathBuf,
    options: impl FnOnce(Schema) -> WriterOptions + Send,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let (summary, skipped) = enter(py, move || {
        let convert = scan()?;
        let summary = pack_into(&convert, &out, convert.writer_options(options), jobs)?;
        Ok::<_, PackError>((summary, convert.skipped_count()))
    })?;
    let dict = summary_dict(py, &summary)?;
    if let Some(skipped) = skipped {
        dict.set_item("skipped", skipped)?;
    }
    Ok(dict)
}

/// `_pack(kind, inputs, out, **options)`: packs `inputs` (a path, or paths) into a new cache
/// at `out` with the converter `kind` ("dir", "imagefolder", "parquet", "webdataset",
/// "jsonl", "megatron") and its options (a token cache's: [`token_column`]), the writer's (`source`, `compression`, `max_shard_bytes`) and
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
            let payload_column: Option<String> = kwargs.get("payload_column", None)?;
            let mut options =
                match (payload_column, token_column(py, &mut kwargs)?) {
                    (Some(column), None) => TableOptions::new(column),
                    (None, Some((column, tokens))) => TableOptions::tokens(column, tokens),
                    _ => return Err(PyValueError::new_err(
                        "give one of payload_column, tokens_column, or text_column with tokenizer",
                    )),
                };
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
        "megatron" => {
            let info = token_info(&mut kwargs)?;
            kwargs.finish()?;
            run(py, move || Megatron::open(&first, info), out, writer, jobs)
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

/// A token cache's column, from `tokens_column` (the ids: a list of integers per row) or
/// `text_column` with `tokenizer` (a tokenizer.json, loaded with the GIL released;
/// `add_special_tokens`, `append_eos`), or None when neither is given.
fn token_column(
    py: Python<'_>,
    kwargs: &mut Kwargs<'_>,
) -> PyResult<Option<(String, TokenColumn)>> {
    let tokens: Option<String> = kwargs.get("tokens_column", None)?;
    let text: Option<String> = kwargs.get("text_column", None)?;
    let tokenizer: Option<PathBuf> = kwargs.get("tokenizer", None)?;
    let add_special_tokens = kwargs.get("add_special_tokens", false)?;
    let append_eos = kwargs.get("append_eos", false)?;
    match (tokens, text, tokenizer) {
        (None, None, None) => {
            token_info(kwargs)?;
            Ok(None)
        }
        (Some(column), None, None) => Ok(Some((column, TokenColumn::Ids(token_info(kwargs)?)))),
        (None, Some(column), Some(tokenizer)) => {
            let text = TextOptions {
                add_special_tokens,
                append_eos,
                bos_id: kwargs.get("bos_id", None)?,
                eos_id: kwargs.get("eos_id", None)?,
                pad_id: kwargs.get("pad_id", None)?,
            };
            // The tokenizer sets the width, the vocabulary and its name.
            for ignored in ["token_dtype", "vocab_size", "tokenizer_name"] {
                kwargs.take(ignored)?;
            }
            let tokenizer = enter(py, || TextTokenizer::from_file(&tokenizer, text))?;
            Ok(Some((column, TokenColumn::Text(Arc::new(tokenizer)))))
        }
        _ => Err(PyValueError::new_err(
            "give tokens_column, or text_column with tokenizer, not both",
        )),
    }
}

/// The token info the options give (`token_dtype`, `vocab_size`, `bos_id`, `eos_id`,
/// `pad_id`, `tokenizer_name`), or None when neither a width nor a vocabulary size is (the
/// input's integer type then sets the width; the other ids may not be given alone).
fn token_info(kwargs: &mut Kwargs<'_>) -> PyResult<Option<TokenInfo>> {
    let token_dtype: Option<String> = kwargs.get("token_dtype", None)?;
    let vocab_size: Option<u64> = kwargs.get("vocab_size", None)?;
    let bos_id: Option<u32> = kwargs.get("bos_id", None)?;
    let eos_id: Option<u32> = kwargs.get("eos_id", None)?;
    let pad_id: Option<u32> = kwargs.get("pad_id", None)?;
    let tokenizer: Option<String> = kwargs.get("tokenizer_name", None)?;
    let dtype = match (token_dtype, vocab_size) {
        (Some(name), _) => TokenDtype::parse(&name).ok_or_else(|| {
            PyValueError::new_err(format!(
                "token_dtype must be \"uint16\" or \"uint32\", not {name:?}"
            ))
        })?,
        (None, Some(size)) => TokenDtype::for_vocab(size),
        (None, None) => {
            let other =
                bos_id.is_some() || eos_id.is_some() || pad_id.is_some() || tokenizer.is_some();
            if other {
                return Err(PyValueError::new_err(
                    "give token_dtype or vocab_size with bos_id, eos_id, pad_id or \
                     tokenizer_name",
                ));
            }
            return Ok(None);
        }
    };
    Ok(Some(TokenInfo {
        dtype,
        vocab_size,
        bos_id,
        eos_id,
        pad_id,
        tokenizer,
    }))
}
