//! `datasetrt.TokenWriter`: documents of token ids into a token cache (`datasetrt::tokens`).

use crate::errors::enter;
use crate::values::{row_from_args, schema_from_py};
use crate::writer::{compression_arg, summary_dict, WriterSlot};
use datasetrt::tokens::{TokenDtype, TokenIds, TokenInfo, TokenWriter};
use datasetrt::{Schema, WriterOptions};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyString};
use std::path::PathBuf;

/// Writes a token cache: each document's token ids (checked against the width and the
/// vocabulary) as its payload, their count as the metadata column `n_tokens`, and the token
/// info as the manifest's `tokens` key (docs/format/datasetrt.md, "Token caches").
///
/// `TokenWriter(path, *, source, token_dtype=None, vocab_size=None, bos_id=None, eos_id=None,
/// pad_id=None, tokenizer=None, schema=None, compression="none", max_shard_bytes=256 MiB,
/// io_threads=True)`: `token_dtype` is "uint16" or "uint32" (or the NumPy dtype); without it
/// the narrowest that holds `vocab_size` ids is taken, and with both the vocabulary must fit.
/// `schema` gives extra metadata columns as `CacheWriter` takes them. A context manager like
/// `CacheWriter`. Raises WriteError (kind `token_out_of_range` for an id that is negative or
/// too large, `bad_token_info` for token info that contradicts itself).
#[pyclass(module = "datasetrt", name = "TokenWriter", frozen)]
pub(crate) struct PyTokenWriter {
    slot: WriterSlot<TokenWriter>,
    schema: Schema,
}

/// The `token_dtype` argument's name: a name, a NumPy dtype or a NumPy scalar type.
fn dtype_name(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(name) = value.extract::<String>() {
        return Ok(name);
    }
    let name = value.getattr("name").and_then(|n| n.extract::<String>());
    name.or_else(|_| value.getattr("__name__")?.extract())
}

/// `tokens` as ids: a one-dimensional NumPy array of any integer dtype (copied once, as
/// little-endian), or any iterable of ints.
fn ids_from_py(tokens: &Bound<'_, PyAny>) -> PyResult<TokenIds> {
    if tokens.hasattr("dtype")? && tokens.hasattr("tobytes")? {
        let ndim: usize = tokens.getattr("ndim")?.extract()?;
        if ndim != 1 {
            return Err(PyValueError::new_err(format!(
                "tokens must be one-dimensional, not {ndim}-dimensional"
            )));
        }
        let dtype = tokens.getattr("dtype")?;
        let kind: String = dtype.getattr("kind")?.extract()?;
        let size: usize = dtype.getattr("itemsize")?.extract()?;
        if kind != "i" && kind != "u" {
            let name: String = dtype.getattr("name")?.extract()?;
            let message = format!("tokens must have an integer dtype, not {name}");
            return Err(PyTypeError::new_err(message));
        }
        let little = tokens.call_method1("astype", (format!("<{kind}{size}"),))?;
        let data = little.call_method0("tobytes")?;
        let bytes = data.cast::<PyBytes>()?.as_bytes();
        let ids = TokenIds::from_le_bytes(kind == "i", size, bytes).ok_or_else(|| {
            PyTypeError::new_err(format!("tokens have an integer dtype of {size} bytes"))
        })?;
        return Ok(ids);
    }
    if tokens.is_instance_of::<PyString>() || tokens.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(
            "tokens must be a NumPy integer array or a sequence of ints, not str or bytes",
        ));
    }
    let mut signed = Vec::new();
    for (position, item) in tokens.try_iter()?.enumerate() {
        let item = item?;
        match item.extract::<i64>() {
            Ok(v) => signed.push(v),
            Err(_) if item.is_instance_of::<PyInt>() => {
                let id = item.str()?.to_string();
                return Ok(TokenIds::Beyond { position, id });
            }
            Err(_) => {
                let message = format!("token {position} is not an int: {}", item.repr()?);
                return Err(PyTypeError::new_err(message));
            }
        }
    }
    Ok(TokenIds::I64(signed))
}

#[pymethods]
impl PyTokenWriter {
    #[new]
    #[pyo3(signature = (path, *, source, token_dtype = None, vocab_size = None, bos_id = None, eos_id = None, pad_id = None, tokenizer = None, schema = None, compression = "none", max_shard_bytes = datasetrt::DEFAULT_MAX_SHARD_BYTES, io_threads = true))]
    #[allow(clippy::too_many_arguments)] // the Python signature's keywords
    fn new(
        py: Python<'_>,
        path: PathBuf,
        source: String,
        token_dtype: Option<&Bound<'_, PyAny>>,
        vocab_size: Option<u64>,
        bos_id: Option<u32>,
        eos_id: Option<u32>,
        pad_id: Option<u32>,
        tokenizer: Option<String>,
        schema: Option<&Bound<'_, PyAny>>,
        compression: &str,
        max_shard_bytes: u64,
        io_threads: bool,
    ) -> PyResult<Self> {
        let schema = schema.map(schema_from_py).transpose()?.unwrap_or_default();
        let name = token_dtype.map(dtype_name).transpose()?;
        let dtype = TokenDtype::choose(name.as_deref(), vocab_size)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let info = TokenInfo {
            dtype,
            vocab_size,
            bos_id,
            eos_id,
            pad_id,
            tokenizer,
        };
        let options = WriterOptions::new(source, schema.clone())
            .compression(compression_arg(compression)?)
            .max_shard_bytes(max_shard_bytes)
            .io_threads(io_threads);
        let slot = WriterSlot::create(py, "TokenWriter", path, |path| {
            TokenWriter::create(path, options, info)
        })?;
        Ok(Self { slot, schema })
    }

    /// Adds one document and returns its sample id. `tokens` is a one-dimensional NumPy
    /// array of any integer dtype or a sequence of ints; every id is checked (a negative one,
    /// or one beyond the width or the vocabulary, raises WriteError naming its position and
    /// writes nothing). Metadata for the schema's columns as a dict and/or keywords.
    #[pyo3(signature = (tokens, metadata = None, **fields))]
    fn add(
        &self,
        py: Python<'_>,
        tokens: &Bound<'_, PyAny>,
        metadata: Option<&Bound<'_, PyDict>>,
        fields: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        let row = row_from_args(py, &self.schema, metadata, fields)?;
        let ids = ids_from_py(tokens)?;
        (self.slot).with(py, |writer| enter(py, || writer.add_ids(&ids, &row)))
    }

    /// Publishes the cache. Returns `CacheWriter.finish`'s summary dict with `tokens` (the
    /// total) and `token_dtype`.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let writer = self.slot.take(py)?;
        let summary = enter(py, move || writer.finish())?;
        let dict = summary_dict(py, &summary.cache)?;
        dict.set_item("tokens", summary.tokens)?;
        dict.set_item("token_dtype", summary.info.dtype.as_str())?;
        Ok(dict)
    }

    /// Stops without publishing; with `remove=True` the files written go too (see
    /// `CacheWriter.abort`).
    #[pyo3(signature = (*, remove = false))]
    fn abort(&self, py: Python<'_>, remove: bool) -> PyResult<()> {
        self.slot.abort(py, remove)
    }

    /// Documents added so far.
    #[getter]
    fn documents(&self, py: Python<'_>) -> PyResult<u64> {
        self.slot.with(py, |w| Ok(w.documents()))
    }

    /// Tokens added so far.
    #[getter]
    fn tokens(&self, py: Python<'_>) -> PyResult<u64> {
        self.slot.with(py, |w| Ok(w.tokens()))
    }

    /// The id width: "uint16" or "uint32".
    #[getter]
    fn token_dtype(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.slot.with(py, |w| Ok(w.info().dtype.as_str()))
    }

    /// The cache directory.
    #[getter]
    fn path(&self) -> String {
        self.slot.path()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.slot.exit(py, exc_type, || self.finish(py).map(drop))
    }
}
