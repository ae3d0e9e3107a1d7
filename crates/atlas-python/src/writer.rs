//! `Writer`: datasets of NumPy arrays in, one `data.atlas` out, published only by `finish`;
//! with `mode="append"`, one new part of a growing collection, committed only by `finish`.

use crate::errors::{enter, run, Error, Failure};
use crate::values::{attr_from_py, fill_from_py};
use atlas::format::{Codec, CONTAINER_OBJECT};
use atlas::manifest::MANIFEST_OBJECT;
use atlas::ndarray::{ArrayD, IxDyn};
use atlas::object_store::local::LocalFileSystem;
use atlas::object_store::path::Path;
use atlas::object_store::{ObjectStore, ObjectStoreExt};
use atlas::{
    validate_name, Appender, ArraySpec, AtlasWriter, Attr, DatasetSpec, NameKind, TimestampNs,
    WriterOptions,
};
use numpy::{Element, PyReadonlyArrayDyn};
use object_access::StoreLocation;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// A collection being written (`atlas_collections._atlas.Writer`).
///
/// Nothing appears at the location until `finish` succeeds: the container is one multipart
/// upload completed last, so a writer that is aborted, dropped or fails leaves no `data.atlas`
/// (and a local directory it created is removed again when it is still empty).
#[pyclass(frozen, module = "atlas_collections._atlas")]
pub(crate) struct Writer {
    state: Mutex<Option<Target>>,
    location: String,
    /// A local directory this writer created, removed on abort while empty.
    created_dir: Option<PathBuf>,
}

/// What a writer writes: a new collection, or a new part of a growing one (each boxed: both
/// are hundreds of bytes and of different sizes, and a `Writer` holds one for its life).
enum Target {
    Create(Box<AtlasWriter>),
    Append(Box<Appender>),
}

impl Target {
    fn dataset_count(&self) -> usize {
        match self {
            Self::Create(writer) => writer.dataset_count(),
            Self::Append(appender) => appender.dataset_count(),
        }
    }
}

fn codec(name: &str) -> PyResult<Codec> {
    match name {
        "zstd" => Ok(Codec::Zstd),
        "lz4" => Ok(Codec::Lz4),
        "none" => Ok(Codec::None),
        other => Err(PyValueError::new_err(format!(
            "codec must be 'zstd', 'lz4' or 'none', not {other:?}"
        ))),
    }
}

/// The store and prefix to write at, refusing a location that already holds a container or
/// a growing collection's manifest (a root `data.atlas` would hide its parts from readers).
async fn target(location: &str) -> Result<(Arc<dyn ObjectStore>, Path, Option<PathBuf>), Failure> {
    let exists = || {
        Failure::Exists(format!(
            "already holds {CONTAINER_OBJECT}; a collection is write-once"
        ))
    };
    let growing = || {
        Failure::Exists(format!(
            "already holds a growing collection ({MANIFEST_OBJECT}); add to it with mode=\"append\""
        ))
    };
    match StoreLocation::parse(location).map_err(|e| Failure::Location(e.reason()))? {
        StoreLocation::Local(dir) => {
            let created = if dir.exists() {
                None
            } else {
                std::fs::create_dir_all(&dir)
                    .map_err(|e| Failure::Location(format!("cannot create the directory: {e}")))?;
                Some(dir.clone())
            };
            if dir.join(CONTAINER_OBJECT).exists() {
                return Err(exists());
            }
            if dir.join(MANIFEST_OBJECT).exists() {
                return Err(growing());
            }
            let store = LocalFileSystem::new_with_prefix(&dir)
                .map_err(|e| Failure::Location(e.to_string()))?;
            Ok((Arc::new(store), Path::default(), created))
        }
        StoreLocation::Remote(remote) => {
            let (store, prefix) = (remote.store(), remote.prefix().clone());
            let container = prefix.clone().join(CONTAINER_OBJECT);
            match store.head(&container).await {
                Ok(_) => return Err(exists()),
                Err(atlas::object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(Failure::Write(e.into())),
            }
            match store.head(&prefix.clone().join(MANIFEST_OBJECT)).await {
                Ok(_) => Err(growing()),
                Err(atlas::object_store::Error::NotFound { .. }) => Ok((store, prefix, None)),
                Err(e) => Err(Failure::Write(e.into())),
            }
        }
    }
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

fn attrs_from_py(
    attrs: Vec<(String, (String, Bound<'_, PyAny>))>,
) -> PyResult<Vec<(String, Attr)>> {
    attrs
        .into_iter()
        .map(|(key, (tag, value))| Ok((key, attr_from_py(&tag, &value)?)))
        .collect()
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
) -> PyResult<Bound<'py, PyDict>> {
    let place = StoreLocation::parse_with_options(&location, &options.unwrap_or_default())
        .map_err(|e| Error::at(&location, Failure::Location(e.reason())))?;
    let report = run(py, &location, async move {
        atlas::compact(&place, &mut |_, _| {}).await
    })?;
    let dict = PyDict::new(py);
    dict.set_item("version", report.version)?;
    dict.set_item("part", report.part)?;
    dict.set_item("datasets", report.datasets)?;
    dict.set_item("replaced_parts", report.replaced_parts)?;
    dict.set_item("container_bytes", report.container_bytes)?;
    dict.set_item("carried_deletes", report.carried_deletes)?;
    dict.set_item("attempts", report.attempts)?;
    Ok(dict)
}

/// Checks a name against the naming rule; `kind` is `"dataset"`, `"array"` or `"attribute"`.
/// Raises `InvalidNameError` naming the value and the rule.
#[pyfunction]
pub(crate) fn check_name(py: Python<'_>, kind: &str, name: &str) -> PyResult<()> {
    let kind = match kind {
        "dataset" => NameKind::Dataset,
        "array" => NameKind::Array,
        "attribute" => NameKind::AttributeKey,
        other => {
            return Err(PyValueError::new_err(format!(
                "kind must be 'dataset', 'array' or 'attribute', not {other:?}"
            )))
        }
    };
    let _ = py;
    Ok(validate_name(kind, name).map_err(|e| Error::at(name, e))?)
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
            codec: self::codec(codec)?,
            zstd_level,
            created_unix_ms,
            ..WriterOptions::default()
        };
        if let Some(size) = block_target_size {
            options.block_target_size = size;
        }
        let target_location = location.clone();
        match mode {
            "create" => {
                let (store, prefix, created_dir) =
                    run(py, &location, async move { target(&target_location).await })?;
                Ok(Self {
                    state: Mutex::new(Some(Target::Create(Box::new(AtlasWriter::new(
                        store, &prefix, options,
                    ))))),
                    location,
                    created_dir,
                })
            }
            "append" => {
                let place = StoreLocation::parse(&location)
                    .map_err(|e| Error::at(&location, Failure::Location(e.reason())))?;
                let created_dir = match &place {
                    StoreLocation::Local(dir) if !dir.exists() => Some(dir.clone()),
                    _ => None,
                };
                let appender = run(py, &location, async move {
                    Appender::open(&place, options).await
                })?
                .with_replace(replace);
                Ok(Self {
                    state: Mutex::new(Some(Target::Append(Box::new(appender)))),
                    location,
                    created_dir,
                })
            }
            other => Err(PyValueError::new_err(format!(
                "mode must be 'create' or 'append', not {other:?}"
            ))),
        }
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
        for (key, value) in attrs_from_py(attrs)? {
            spec = spec.attr(key, value);
        }
        let state = &self.state;
        enter(py, &self.location, move || {
            let mut guard = state.lock().unwrap_or_else(PoisonError::into_inner);
            let target = guard.as_mut().ok_or_else(|| {
                Failure::Write(atlas::WriteError::Poisoned(
                    "the writer is finished or aborted".to_owned(),
                ))
            })?;
            match target {
                Target::Create(writer) => writer.write_dataset(spec).map_err(Failure::from),
                Target::Append(appender) => appender.write_dataset(spec).map_err(Failure::from),
            }
        })
    }

    /// Datasets written so far.
    fn dataset_count(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map_or(0, Target::dataset_count)
    }

    /// Writes the container and publishes it (for an append: commits the new version);
    /// returns what was written.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let target = self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let target = target
            .ok_or_else(|| PyValueError::new_err("the writer is already finished or aborted"))?;
        let writer = match target {
            Target::Create(writer) => *writer,
            Target::Append(appender) => {
                let report = match run(py, &self.location, appender.commit()) {
                    Ok(report) => report,
                    Err(e) => {
                        self.remove_created_dir();
                        return Err(e);
                    }
                };
                let dict = PyDict::new(py);
                dict.set_item("datasets", report.datasets)?;
                dict.set_item("container_bytes", report.container_bytes)?;
                dict.set_item("version", report.version)?;
                dict.set_item("part", report.part)?;
                dict.set_item("attempts", report.attempts)?;
                dict.set_item("replaced", report.replaced)?;
                return Ok(dict);
            }
        };
        let summary = run(py, &self.location, writer.finish());
        let summary = match summary {
            Ok(summary) => summary,
            Err(e) => {
                self.remove_created_dir();
                return Err(e);
            }
        };
        let dict = PyDict::new(py);
        dict.set_item("datasets", summary.datasets)?;
        dict.set_item("segments", summary.segments)?;
        dict.set_item("container_bytes", summary.container_bytes)?;
        dict.set_item("footer_bytes", summary.footer_bytes)?;
        Ok(dict)
    }

    /// Drops everything written so far; nothing is published. Idempotent.
    fn abort(&self) {
        let writer = self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if writer.is_some() {
            drop(writer);
            self.remove_created_dir();
        }
    }

    /// Whether `finish` or `abort` has run.
    #[getter]
    fn closed(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
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
    fn remove_created_dir(&self) {
        if let Some(dir) = &self.created_dir {
            // Fails, as intended, when anything is in it.
            let _ = std::fs::remove_dir(dir);
        }
    }
}
