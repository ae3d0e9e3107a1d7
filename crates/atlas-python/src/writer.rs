//! `Writer`: datasets of NumPy arrays in, one `data.atlas` out, published only by `finish`;
//! with `mode="append"`, one new part of a growing collection, committed only by `finish`
//! (`atlas::CollectionWriter`, which opens the location as the `atlas` command does).

use crate::errors::{enter, run, Error, Failure};
use crate::values::{attr_from_py, fill_from_py};
use atlas::ndarray::{ArrayD, IxDyn};
use atlas::{
    validate_name, ArraySpec, CollectionWriter, DatasetSpec, NameKind, TimestampNs, WriteMode,
    WriterOptions,
};
use numpy::{Element, PyReadonlyArrayDyn};
use object_access::StoreLocation;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::sync::{Mutex, PoisonError};

/// A collection being written (`atlas_collections._atlas.Writer`).
///
/// Nothing appears at the location until `finish` succeeds: the container is one multipart
/// upload completed last, so a writer that is aborted, dropped or fails leaves no `data.atlas`
/// (and a local directory it created is removed again when it is still empty).
#[pyclass(frozen, module = "atlas_collections._atlas")]
pub(crate) struct Writer {
    state: Mutex<Option<CollectionWriter>>,
    location: String,
}

fn numeric<T: Element + Clone>(data: &Bound<'_, PyAny>) -> PyResult<ArrayD<T>> {
    let array: PyReadonlyArrayDyn<'_, T> = data.extract()?;
    Ok(array.as_array().to_owned())
}

fn listed<T>(data: &Bound<'_, PyAny>, shape: &[usize]) -> PyResult<ArrayD<T>>
where
    for<'a, 'py> T: FromPyObject<'a, 'py>,
{
    let items: Vec<T> = data.extract()?;
    ArrayD::from_shape_vec(IxDyn(shape), items)
        .map_err(|e| PyValueError::new_err(format!("data does not fit shape {shape:?}: {e}")))
}

/// `(tag, value)` of an attribute or fill value.
type Tagged<'py> = (String, Bound<'py, PyAny>);

/// `(name, tag, data, shape, dims, chunks, fill, attrs)`.
type ArrayTuple<'py> = (
    String,
    String,
    Bound<'py, PyAny>,
    Vec<usize>,
    Vec<String>,
    Option<Vec<usize>>,
    Option<Tagged<'py>>,
    Vec<(String, Tagged<'py>)>,
);

/// One array handed over by the Python side:
/// `(name, tag, data, shape, dims, chunks, fill, attrs)`.
fn array_spec(item: &Bound<'_, PyAny>) -> PyResult<ArraySpec> {
    let (name, tag, data, shape, dims, chunks, fill, attrs): ArrayTuple<'_> = item.extract()?;
    let mut spec = match tag.as_str() {
        "int8" => ArraySpec::new(name, numeric::<i8>(&data)?),
        "int16" => ArraySpec::new(name, numeric::<i16>(&data)?),
        "int32" => ArraySpec::new(name, numeric::<i32>(&data)?),
        "int64" => ArraySpec::new(name, numeric::<i64>(&data)?),
        "uint8" => ArraySpec::new(name, numeric::<u8>(&data)?),
        "uint16" => ArraySpec::new(name, numeric::<u16>(&data)?),
        "uint32" => ArraySpec::new(name, numeric::<u32>(&data)?),
        "uint64" => ArraySpec::new(name, numeric::<u64>(&data)?),
        "float32" => ArraySpec::new(name, numeric::<f32>(&data)?),
        "float64" => ArraySpec::new(name, numeric::<f64>(&data)?),
        "timestamp_ns" => ArraySpec::new(name, numeric::<i64>(&data)?.mapv(TimestampNs::from)),
        "string" => ArraySpec::new(name, listed::<String>(&data, &shape)?),
        "binary" => ArraySpec::new(name, listed::<Vec<u8>>(&data, &shape)?),
        other => {
            return Err(PyTypeError::new_err(format!(
                "array '{name}': unknown element type tag {other:?}"
            )))
        }
    };
    if !dims.is_empty() {
        spec = spec.dims(dims);
    }
    if let Some(chunks) = chunks {
        spec = spec.chunks(chunks);
    }
    if let Some((tag, value)) = fill {
        spec = spec.fill(fill_from_py(&tag, &value)?);
    }
    for (key, (tag, value)) in attrs {
        spec = spec.attr(key, attr_from_py(&tag, &value)?);
    }
    Ok(spec)
}

/// Compacts the growing collection at `location` (`atlas_append::compact`): the live datasets
/// of every part of its latest version, in order, rewritten as one part committed as a new
/// version. Store `options` as `Collection.open` takes them. Returns the report as a dict.
#[pyfunction]
#[pyo3(signature = (location, options = None))]
pub(crate) fn compact<'py>(
    py: Python<'py>,
    location: String,
    options: Option<Vec<(String, String)>>,
) -> PyResult<Bound<'py, PyAny>> {
    let place = StoreLocation::parse_with_options(&location, &options.unwrap_or_default())
        .map_err(|e| Error::at(&location, Failure::Location(e.reason())))?;
    let report = run(py, &location, async move {
        atlas::compact(&place, &mut |_, _| {}).await
    })?;
    py_support::to_python(py, &report)
}

/// Checks a name against the naming rule; `kind` is `"dataset"`, `"array"` or `"attribute"`.
/// Raises `InvalidNameError` naming the value and the rule.
#[pyfunction]
pub(crate) fn check_name(kind: &str, name: &str) -> PyResult<()> {
    let kind: NameKind = kind.parse().map_err(value_error)?;
    Ok(validate_name(kind, name).map_err(|e| Error::at(name, e))?)
}

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pymethods]
impl Writer {
    /// A writer for a new collection at `location` (a directory, a `file://` URL or an
    /// object-store URL). Refused when the location already holds a `data.atlas`.
    ///
    /// `mode="append"` adds the datasets to the growing collection at `location` (created when
    /// empty) as one new part, committed by `finish` as a new version; a name the collection
    /// already holds live is refused before anything is written, unless `replace` is true:
    /// then the commit hides the old dataset of that name (`docs/format/growing.md`,
    /// "Replacing"). `replace` is refused outside `mode="append"`.
    #[new]
    #[pyo3(signature = (location, *, mode="create", codec="zstd", zstd_level=3, block_target_size=None, created_unix_ms=0, replace=false))]
    #[allow(clippy::too_many_arguments)] // the Python keyword arguments, one each
    fn new(
        py: Python<'_>,
        location: String,
        mode: &str,
        codec: &str,
        zstd_level: i32,
        block_target_size: Option<usize>,
        created_unix_ms: i64,
        replace: bool,
    ) -> PyResult<Self> {
        if replace && mode != "append" {
            return Err(PyValueError::new_err(
                "replace=True needs mode=\"append\": a new collection has nothing to replace",
            ));
        }
        let mut options = WriterOptions {
            codec: codec.parse().map_err(value_error)?,
            zstd_level,
            created_unix_ms,
            ..WriterOptions::default()
        };
        if let Some(size) = block_target_size {
            options.block_target_size = size;
        }
        let mode = match mode {
            "create" => WriteMode::Create,
            "append" => WriteMode::Append { replace },
            other => {
                let message = format!("mode must be 'create' or 'append', not {other:?}");
                return Err(PyValueError::new_err(message));
            }
        };
        let place = StoreLocation::parse(&location)
            .map_err(|e| Error::at(&location, Failure::Location(e.reason())))?;
        let writer = run(py, &location, async move {
            CollectionWriter::open(&place, mode, options).await
        })?;
        Ok(Self {
            state: Mutex::new(Some(writer)),
            location,
        })
    }

    /// The location being written.
    #[getter]
    fn location(&self) -> &str {
        &self.location
    }

    /// Writes one dataset: `arrays` as `(name, tag, data, shape, dims, chunks, fill, attrs)`
    /// tuples, `attrs` as `[(key, (tag, value))]`. Returns its ordinal. Every check runs before
    /// a byte is written, so a refused dataset leaves the writer as it was.
    fn write_dataset(
        &self,
        py: Python<'_>,
        name: String,
        arrays: Vec<Bound<'_, PyAny>>,
        attrs: Vec<(String, (String, Bound<'_, PyAny>))>,
    ) -> PyResult<u32> {
        let mut spec = DatasetSpec::new(name);
        for array in &arrays {
            spec = spec.array(array_spec(array)?);
        }
        for (key, (tag, value)) in attrs {
            spec = spec.attr(key, attr_from_py(&tag, &value)?);
        }
        let state = &self.state;
        enter(py, &self.location, move || {
            let mut guard = state.lock().unwrap_or_else(PoisonError::into_inner);
            let writer = guard.as_mut().ok_or_else(|| {
                Failure::Write(atlas::WriteError::Poisoned(
                    "the writer is finished or aborted".to_owned(),
                ))
            })?;
            writer.write_dataset(spec).map_err(Failure::from)
        })
    }

    /// Datasets written so far.
    fn dataset_count(&self) -> usize {
        self.lock()
            .as_ref()
            .map_or(0, CollectionWriter::dataset_count)
    }

    /// Writes the container and publishes it (for an append: commits the new version);
    /// returns what was written.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let writer = (self.lock().take())
            .ok_or_else(|| PyValueError::new_err("the writer is already finished or aborted"))?;
        let written = run(py, &self.location, writer.finish())?;
        py_support::to_python(py, &written)
    }

    /// Drops everything written so far; nothing is published. Idempotent.
    fn abort(&self) {
        if let Some(writer) = self.lock().take() {
            writer.abort();
        }
    }

    /// Whether `finish` or `abort` has run.
    #[getter]
    fn closed(&self) -> bool {
        self.lock().is_none()
    }

    fn __repr__(&self) -> String {
        format!(
            "<atlas_collections Writer {:?}: {} datasets>",
            self.location,
            self.dataset_count()
        )
    }
}

impl Writer {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<CollectionWriter>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
