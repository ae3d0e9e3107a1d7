//! The GIL-free call path on object-access's runtime, and Rust errors as
//! `atlas_collections.errors` classes.

use atlas::{AtlasError, NameError, WriteError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A failure on the Rust side, before it becomes a Python exception.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A read, open or delete failed.
    Atlas(AtlasError),
    /// A write was refused or failed.
    Write(WriteError),
    /// A name broke the naming rule.
    Name(NameError),
    /// A collection already exists where a writer was asked to create one.
    Exists(String),
    /// The location could not be understood or reached before any Atlas call.
    Location(String),
    /// A value this package cannot carry (an element type, a selection).
    Unsupported(String),
}

impl From<AtlasError> for Failure {
    fn from(e: AtlasError) -> Self {
        Self::Atlas(e)
    }
}

impl From<WriteError> for Failure {
    fn from(e: WriteError) -> Self {
        Self::Write(e)
    }
}

impl From<NameError> for Failure {
    fn from(e: NameError) -> Self {
        Self::Name(e)
    }
}

/// Runs `work` with the GIL released; a panic inside becomes `AtlasPanicError` and a failure
/// the matching `atlas_collections.errors` exception, naming `path`.
pub(crate) fn detached<T, W>(py: Python<'_>, path: &str, work: W) -> PyResult<T>
where
    T: Send,
    W: FnOnce() -> Result<T, Failure> + Send,
{
    match py.detach(|| catch_unwind(AssertUnwindSafe(work))) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(failure)) => Err(to_py(py, path, failure)),
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a Rust panic".to_owned());
            Err(raise(
                py,
                "AtlasPanicError",
                format!("{path}: internal error (Rust panic): {message}"),
                &[("path", path.into()), ("reason", message.into())],
            ))
        }
    }
}

/// Runs `future` on the module's runtime with the GIL released; see [`detached`].
pub(crate) fn block_on<T, F>(py: Python<'_>, path: &str, future: F) -> PyResult<T>
where
    T: Send,
    F: Future<Output = Result<T, Failure>> + Send,
{
    let runtime = object_access::runtime()
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
    detached(py, path, move || runtime.block_on(future))
}

/// A keyword value of an exception: text, an integer or a flag.
pub(crate) enum Field {
    Text(String),
    Int(u64),
    Flag(bool),
}

impl From<&str> for Field {
    fn from(s: &str) -> Self {
        Self::Text(s.to_owned())
    }
}

impl From<String> for Field {
    fn from(s: String) -> Self {
        Self::Text(s)
    }
}

/// An instance of `atlas_collections.errors.<class>(message, **fields)` as a `PyErr`.
pub(crate) fn raise(
    py: Python<'_>,
    class: &str,
    message: String,
    fields: &[(&str, Field)],
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let module = py.import("atlas_collections.errors")?;
        let class = module.getattr(class)?;
        let kwargs = PyDict::new(py);
        for (key, value) in fields {
            match value {
                Field::Text(s) => kwargs.set_item(key, s)?,
                Field::Int(n) => kwargs.set_item(key, n)?,
                Field::Flag(b) => kwargs.set_item(key, b)?,
            }
        }
        Ok(PyErr::from_value(class.call((message,), Some(&kwargs))?))
    };
    build().unwrap_or_else(|e| e)
}

/// The Python exception for `failure` at collection `path`.
pub(crate) fn to_py(py: Python<'_>, path: &str, failure: Failure) -> PyErr {
    let at = |reason: String| vec![("path", Field::from(path)), ("reason", Field::Text(reason))];
    match failure {
        Failure::Atlas(e) => atlas_error(py, path, e),
        Failure::Write(e) => write_error(py, path, e),
        Failure::Name(e) => name_error(py, path, &e),
        Failure::Exists(reason) => raise(
            py,
            "CollectionExistsError",
            format!("{path}: {reason}"),
            &at(reason),
        ),
        Failure::Location(reason) => raise(
            py,
            "StorageError",
            format!("{path}: {reason}"),
            &[
                ("path", path.into()),
                ("reason", reason.into()),
                ("retryable", Field::Flag(false)),
            ],
        ),
        Failure::Unsupported(reason) => raise(
            py,
            "UnsupportedDTypeError",
            format!("{path}: {reason}"),
            &at(reason),
        ),
    }
}

fn name_error(py: Python<'_>, path: &str, e: &NameError) -> PyErr {
    raise(
        py,
        "InvalidNameError",
        e.to_string(),
        &[
            ("path", path.into()),
            ("reason", e.reason.into()),
            ("kind", e.kind.to_string().into()),
            ("name", e.name.as_str().into()),
        ],
    )
}

fn atlas_error(py: Python<'_>, collection: &str, e: AtlasError) -> PyErr {
    // These name an object inside the store (`prefix/data.atlas`): shown under the location
    // the user gave instead. The others get the collection's location.
    let (message, e) = match e {
        AtlasError::NotAnAtlasCollection { path, reason } => {
            let path = object(collection, &path);
            let e = AtlasError::NotAnAtlasCollection { path, reason };
            (e.to_string(), e)
        }
        AtlasError::UnsupportedVersion {
            path,
            found,
            expected,
        } => {
            let path = object(collection, &path);
            let e = AtlasError::UnsupportedVersion {
                path,
                found,
                expected,
            };
            (e.to_string(), e)
        }
        AtlasError::CorruptCollection {
            path,
            field,
            reason,
        } => {
            let path = object(collection, &path);
            let e = AtlasError::CorruptCollection {
                path,
                field,
                reason,
            };
            (e.to_string(), e)
        }
        AtlasError::Mask { path, source } => {
            let path = object(collection, &path);
            let e = AtlasError::Mask { path, source };
            (e.to_string(), e)
        }
        e @ AtlasError::Io { .. } => (e.to_string(), e),
        e => (format!("{collection}: {e}"), e),
    };
    let retryable = e.is_retryable();
    match e {
        AtlasError::NotAnAtlasCollection { path, reason } => raise(
            py,
            "NotACollectionError",
            message,
            &[("path", path.into()), ("reason", reason.into())],
        ),
        AtlasError::UnsupportedVersion {
            path,
            found,
            expected,
        } => raise(
            py,
            "UnsupportedVersionError",
            message,
            &[
                ("path", path.into()),
                (
                    "reason",
                    format!("format version {found}, this reader knows {expected}").into(),
                ),
                ("found", Field::Int(found.into())),
                ("expected", Field::Int(expected.into())),
            ],
        ),
        AtlasError::CorruptCollection {
            path,
            field,
            reason,
        } => raise(
            py,
            "CorruptCollectionError",
            message,
            &[
                ("path", path.into()),
                ("field", field.into()),
                ("reason", reason.into()),
            ],
        ),
        AtlasError::Mask { path, source } => raise(
            py,
            "CorruptCollectionError",
            message,
            &[
                ("path", path.into()),
                ("field", "deleted.mask".into()),
                ("reason", source.to_string().into()),
            ],
        ),
        AtlasError::DatasetNotFound(name) => raise(
            py,
            "DatasetNotFoundError",
            message,
            &[
                ("path", collection.into()),
                ("reason", "no live dataset of this name".into()),
                ("name", name.into()),
            ],
        ),
        AtlasError::ArrayNotFound { dataset, array } => raise(
            py,
            "ArrayNotFoundError",
            message,
            &[
                ("path", collection.into()),
                (
                    "reason",
                    format!("dataset '{dataset}' declares no such array").into(),
                ),
                ("dataset", dataset.into()),
                ("name", array.into()),
            ],
        ),
        AtlasError::InvalidSelection { array, reason } => raise(
            py,
            "SelectionError",
            message,
            &[
                ("path", collection.into()),
                ("reason", reason.into()),
                ("name", array.into()),
            ],
        ),
        other @ (AtlasError::Store(_)
        | AtlasError::Segment { .. }
        | AtlasError::Io { .. }
        | AtlasError::DeleteConflict { .. }) => {
            let path = match &other {
                AtlasError::Io { path, .. } => path.clone(),
                _ => collection.to_owned(),
            };
            raise(
                py,
                "StorageError",
                message,
                &[
                    ("path", path.into()),
                    ("reason", other.to_string().into()),
                    ("retryable", Field::Flag(retryable)),
                ],
            )
        }
        other => raise(
            py,
            "AtlasError",
            message,
            &[
                ("path", collection.into()),
                ("reason", other.to_string().into()),
            ],
        ),
    }
}

/// `collection/<object>` for a store path such as `prefix/data.atlas`.
fn object(collection: &str, path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    format!("{}/{name}", collection.trim_end_matches('/'))
}

fn write_error(py: Python<'_>, collection: &str, e: WriteError) -> PyErr {
    let message = format!("{collection}: {e}");
    let duplicate = |kind: &str, name: String, reason: String| {
        raise(
            py,
            "DuplicateNameError",
            message.clone(),
            &[
                ("path", collection.into()),
                ("reason", reason.into()),
                ("kind", kind.into()),
                ("name", name.into()),
            ],
        )
    };
    match e {
        WriteError::InvalidName(name) => name_error(py, collection, &name),
        WriteError::DuplicateDataset(name) => duplicate(
            "dataset name",
            name,
            "already written to this collection".to_owned(),
        ),
        WriteError::DuplicateArray { dataset, array } => duplicate(
            "array name",
            array,
            format!("declared twice in dataset '{dataset}'"),
        ),
        WriteError::DuplicateAttribute { owner, key } => {
            duplicate("attribute key", key, format!("set twice on {owner}"))
        }
        WriteError::InvalidLayout {
            dataset,
            array,
            reason,
        } => raise(
            py,
            "LayoutError",
            message,
            &[
                ("path", collection.into()),
                ("reason", reason.into()),
                ("dataset", dataset.into()),
                ("name", array.into()),
            ],
        ),
        WriteError::Store(store) => {
            let retryable = object_access::is_retryable_store_error(&store);
            raise(
                py,
                "StorageError",
                message,
                &[
                    ("path", collection.into()),
                    ("reason", store.to_string().into()),
                    ("retryable", Field::Flag(retryable)),
                ],
            )
        }
        other => raise(
            py,
            "WriteError",
            message,
            &[
                ("path", collection.into()),
                ("reason", other.to_string().into()),
            ],
        ),
    }
}
