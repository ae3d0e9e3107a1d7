//! `datasetrt.pack_dir`, `pack_imagefolder`, `pack_parquet` and `pack_webdataset`: the
//! parallel converters of `datasetrt::pack`, the GIL released for the whole run.

use crate::errors::{detach, pack_error};
use crate::writer::{compression_arg, summary_dict};
use datasetrt::pack::{
    pack, Convert, FileTree, ImageFolder, Megatron, PackError, PackOptions, TableOptions, Tables,
    TextOptions, TextTokenizer, TokenColumn, WebDataset, WebDatasetOptions,
};
use datasetrt::tokens::{TokenDtype, TokenInfo};
use datasetrt::{CacheSummary, CacheWriter, Schema, WriterOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    let result = detach(py, move || {
        let convert = scan()?;
        let mut options = WriterOptions::new(source, schema(&convert))
            .compression(compression)
            .max_shard_bytes(max_shard_bytes);
        for (key, value) in convert.manifest_keys() {
            options = options.manifest_key(key, value);
        }
        let summary = pack_into(&convert, &out, options, jobs)?;
        Ok((summary, skipped.map(|count| count(&convert))))
    })?;
    match result {
        Ok((summary, skipped)) => {
            let dict = summary_dict(py, &summary)?;
            if let Some(skipped) = skipped {
                dict.set_item("skipped", skipped)?;
            }
            Ok(dict)
        }
        Err(error) => Err(pack_error(py, &error)),
    }
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
///
/// A token cache instead (docs/format/datasetrt.md, "Token caches") with `tokens_column` (a
/// list of integers per row: the document's ids, each checked against the width and
/// `vocab_size`; `token_dtype`, default from `vocab_size` or else the list's integer type) or
/// `text_column` with `tokenizer` (a tokenizer.json; ids as the `tokenizers` package's
/// `encode_batch(texts, add_special_tokens=...)` gives them, the EOS id appended with
/// `append_eos`).
#[pyfunction]
#[pyo3(signature = (paths, out, *, source, payload_column = None, metadata_columns = None, compression = "none", max_shard_bytes = datasetrt::DEFAULT_MAX_SHARD_BYTES, jobs = None, tokens_column = None, text_column = None, tokenizer = None, add_special_tokens = false, append_eos = false, token_dtype = None, vocab_size = None, bos_id = None, eos_id = None, pad_id = None, tokenizer_name = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn pack_parquet<'py>(
    py: Python<'py>,
    paths: &Bound<'py, PyAny>,
    out: PathBuf,
    source: String,
    payload_column: Option<String>,
    metadata_columns: Option<Vec<String>>,
    compression: &str,
    max_shard_bytes: u64,
    jobs: Option<usize>,
    tokens_column: Option<String>,
    text_column: Option<String>,
    tokenizer: Option<PathBuf>,
    add_special_tokens: bool,
    append_eos: bool,
    token_dtype: Option<&str>,
    vocab_size: Option<u64>,
    bos_id: Option<u32>,
    eos_id: Option<u32>,
    pad_id: Option<u32>,
    tokenizer_name: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let paths = paths_arg(paths)?;
    let given = TokenArgs {
        token_dtype,
        vocab_size,
        bos_id,
        eos_id,
        pad_id,
        tokenizer_name,
    };
    let mut options = match (payload_column, tokens_column, text_column, tokenizer) {
        (Some(column), None, None, None) => TableOptions::new(column),
        (None, Some(column), None, None) => {
            TableOptions::tokens(column, TokenColumn::Ids(given.info()?))
        }
        (None, None, Some(column), Some(tokenizer)) => {
            let text = TextOptions {
                add_special_tokens,
                append_eos,
                bos_id,
                eos_id,
                pad_id,
            };
            let tokenizer = detach(py, || TextTokenizer::from_file(&tokenizer, text))?
                .map_err(|e| pack_error(py, &e))?;
            TableOptions::tokens(column, TokenColumn::Text(Arc::new(tokenizer)))
        }
        _ => {
            return Err(PyValueError::new_err(
                "give one of payload_column, tokens_column, or text_column with tokenizer",
            ))
        }
    };
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

/// The token info arguments of the token converters.
struct TokenArgs<'a> {
    token_dtype: Option<&'a str>,
    vocab_size: Option<u64>,
    bos_id: Option<u32>,
    eos_id: Option<u32>,
    pad_id: Option<u32>,
    tokenizer_name: Option<String>,
}

impl TokenArgs<'_> {
    /// The token info given, or `None` when neither a width nor a vocabulary size is (the
    /// input's integer type then sets the width).
    fn info(self) -> PyResult<Option<TokenInfo>> {
        let dtype = match (self.token_dtype, self.vocab_size) {
            (Some(name), _) => TokenDtype::parse(name).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "token_dtype must be \"uint16\" or \"uint32\", not {name:?}"
                ))
            })?,
            (None, Some(size)) => TokenDtype::for_vocab(size),
            (None, None) => {
                let other = self.bos_id.is_some()
                    || self.eos_id.is_some()
                    || self.pad_id.is_some()
                    || self.tokenizer_name.is_some();
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
            vocab_size: self.vocab_size,
            bos_id: self.bos_id,
            eos_id: self.eos_id,
            pad_id: self.pad_id,
            tokenizer: self.tokenizer_name,
        }))
    }
}

/// Imports a Megatron-LM indexed dataset (`prefix + ".idx"` and `prefix + ".bin"`, the
/// `MMIDIDX` format megatron-core's `IndexedDatasetBuilder` writes) into a new token cache at
/// `out`: one sample per document (a document's sequences concatenated), the ids identical,
/// `n_tokens` their count. The width is `token_dtype`, else from `vocab_size`, else from the
/// dataset's element type. A hostile or damaged index is refused naming the file or the
/// document; on failure nothing is left at `out`. Returns a summary dict.
#[pyfunction]
#[pyo3(signature = (prefix, out, *, source, token_dtype = None, vocab_size = None, bos_id = None, eos_id = None, pad_id = None, tokenizer_name = None, compression = "none", max_shard_bytes = datasetrt::DEFAULT_MAX_SHARD_BYTES, jobs = None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn pack_megatron<'py>(
    py: Python<'py>,
    prefix: PathBuf,
    out: PathBuf,
    source: String,
    token_dtype: Option<&str>,
    vocab_size: Option<u64>,
    bos_id: Option<u32>,
    eos_id: Option<u32>,
    pad_id: Option<u32>,
    tokenizer_name: Option<String>,
    compression: &str,
    max_shard_bytes: u64,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let info = TokenArgs {
        token_dtype,
        vocab_size,
        bos_id,
        eos_id,
        pad_id,
        tokenizer_name,
    }
    .info()?;
    let scan = move || Megatron::open(&prefix, info);
    run_tree(
        py,
        scan,
        |megatron| megatron.schema().clone(),
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
