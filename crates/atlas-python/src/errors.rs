//! The exception classes of `atlas_collections.errors` (made here, re-exported there), and
//! the table from every Rust error variant to its class and attributes (see `py_support` for
//! the pattern).

use atlas::{AppendError, AtlasError, NameError, TargetError, WriteError};
use py_support::{BindingError, ErrorFields, ExceptionClass, Fields};
use pyo3::prelude::*;
use std::future::Future;

// The classes say they belong to `atlas_collections.errors`, the module users import them
// from and pickle finds them in, in the order of its `__all__`.
py_support::exception_classes! {
    CLASSES in "atlas_collections.errors" {
        ATLAS_ERROR = "AtlasError" (Exception): "Base class of every error this package raises.";
        NOT_A_COLLECTION = "NotACollectionError" (ATLAS_ERROR):
            "Nothing at the location is an Atlas container (Rust: ``NotAnAtlasCollection``).";
        UNSUPPORTED_VERSION = "UnsupportedVersionError" (ATLAS_ERROR):
            "An Atlas container of another format version (``found``, ``expected``).";
        CORRUPT_COLLECTION = "CorruptCollectionError" (ATLAS_ERROR):
            "The container, a segment or the mask is damaged; ``field`` names where.";
        STORAGE = "StorageError" (ATLAS_ERROR):
            "The store or the transport failed. ``retryable`` says whether the same call may succeed\nif made again (Rust: ``AtlasError::is_retryable``).";
        DATASET_NOT_FOUND = "DatasetNotFoundError" (ATLAS_ERROR, KeyError):
            "No live dataset of this ``name``.";
        ARRAY_NOT_FOUND = "ArrayNotFoundError" (ATLAS_ERROR, KeyError):
            "The ``dataset`` declares no array ``name``.";
        SELECTION = "SelectionError" (ATLAS_ERROR, IndexError):
            "An index or selection that does not fit the array.";
        QUERY = "QueryError" (ATLAS_ERROR, ValueError):
            "A selection (``Collection.select``) the collection cannot answer; ``field`` names the\ncondition (``attrs[\"key\"]``, ``where[i] (...)``).";
        INVALID_NAME = "InvalidNameError" (ATLAS_ERROR, ValueError):
            "A name broke the naming rule (non-empty, no leading ``_``); ``kind`` says what it names.";
        DUPLICATE_NAME = "DuplicateNameError" (ATLAS_ERROR, ValueError):
            "A dataset name, an array name of one dataset, or an attribute key was given twice.";
        LAYOUT = "LayoutError" (ATLAS_ERROR, ValueError):
            "An array's layout (chunks, dimension names) does not fit its shape.";
        UNSUPPORTED_DTYPE = "UnsupportedDTypeError" (ATLAS_ERROR, TypeError):
            "A value of a type the format cannot hold (see the dtype mapping in the docs).";
        COLLECTION_EXISTS = "CollectionExistsError" (ATLAS_ERROR):
            "The writer's location already holds a ``data.atlas``: collections are write-once.";
        WRITE = "WriteError" (ATLAS_ERROR):
            "A write failed (array-format, the footer, or a writer stopped by an earlier failure).";
        IMPORT_REFUSED = "ImportRefusedError" (ATLAS_ERROR, ValueError):
            "A NetCDF import refused a ``file`` (and ``variable``, when one is at fault).";
        PANIC = "AtlasPanicError" (ATLAS_ERROR):
            "A bug: the Rust side panicked. The call had no effect that a retry could rely on.";
    }
}

/// The class of a read, open or delete error.
fn atlas_class(error: &AtlasError) -> &'static ExceptionClass {
    match error {
        AtlasError::NotAnAtlasCollection { .. } => &NOT_A_COLLECTION,
        AtlasError::UnsupportedVersion { .. } => &UNSUPPORTED_VERSION,
        AtlasError::CorruptCollection { .. } | AtlasError::Mask { .. } => &CORRUPT_COLLECTION,
        AtlasError::DatasetNotFound(_) => &DATASET_NOT_FOUND,
        AtlasError::ArrayNotFound { .. } => &ARRAY_NOT_FOUND,
        AtlasError::InvalidSelection { .. } => &SELECTION,
        AtlasError::InvalidQuery { .. } => &QUERY,
        AtlasError::UnsupportedDType { .. } => &UNSUPPORTED_DTYPE,
        // A version the collection does not have, an operation not offered on a growing
        // collection: the base class, as `kind` ("growing") and the message say which.
        AtlasError::Growing { .. } => &ATLAS_ERROR,
        AtlasError::Store(_)
        | AtlasError::Segment { .. }
        | AtlasError::Io { .. }
        | AtlasError::DeleteConflict { .. } => &STORAGE,
        // The enum is `#[non_exhaustive]`: a variant added later is the base class until it
        // is given one. `test_error_mapping.py` lists every variant's class, so it fails then.
        AtlasError::NoSuchArray(_) | AtlasError::TypeMismatch { .. } | _ => &ATLAS_ERROR,
    }
}

/// The class of a write error.
fn write_class(error: &WriteError) -> &'static ExceptionClass {
    match error {
        WriteError::InvalidName(_) => &INVALID_NAME,
        WriteError::DuplicateDataset(_)
        | WriteError::DuplicateArray { .. }
        | WriteError::DuplicateAttribute { .. } => &DUPLICATE_NAME,
        WriteError::InvalidLayout { .. } => &LAYOUT,
        WriteError::Store(_) => &STORAGE,
        // The enum is `#[non_exhaustive]`: a variant added later is a `WriteError` until it is
        // given a class. `test_error_mapping.py` lists every variant's class, so it fails then.
        WriteError::Segment { .. } | WriteError::Footer(_) | WriteError::Poisoned(_) | _ => &WRITE,
    }
}

/// A failure on the Rust side, before it is named after its collection.
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
    /// An append was refused or lost its races (reads and writes inside it convert to
    /// `Atlas` and `Write`).
    Append(AppendError),
    /// The location could not be understood or reached before any Atlas call.
    Location(String),
    /// A Rust panic.
    Panicked(String),
}

impl From<AtlasError> for Failure {
    fn from(e: AtlasError) -> Self {
        Self::Atlas(e)
    }
}

impl From<WriteError> for Failure {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::InvalidName(name) => Self::Name(name),
            e => Self::Write(e),
        }
    }
}

impl From<AppendError> for Failure {
    fn from(e: AppendError) -> Self {
        match e {
            AppendError::Read(e) => Self::Atlas(e),
            AppendError::Write(e) => Self::from(e),
            AppendError::Target(e) => Self::from(e),
            e => Self::Append(e),
        }
    }
}

/// A location refused for a new collection, as the classes the writer always raised for it:
/// a collection there exists, a failed request is a store error, a directory that cannot be
/// made or served is the location's.
impl From<TargetError> for Failure {
    fn from(e: TargetError) -> Self {
        match e {
            TargetError::Exists { reason, .. } => Self::Exists(reason),
            TargetError::Io { source, .. } => {
                Self::Location(format!("cannot create the directory: {source}"))
            }
            TargetError::Store { source, .. } => Self::Write(source.into()),
            TargetError::LocalStore { source, .. } => Self::Location(source.to_string()),
            e => Self::Append(e.into()),
        }
    }
}

/// The class of an append's own refusals: a taken name is a duplicate name, a plain
/// collection where a growing one was asked for is a collection that exists.
fn append_class(error: &AppendError) -> &'static ExceptionClass {
    match error {
        AppendError::NameTaken { .. } => &DUPLICATE_NAME,
        AppendError::PlainCollection { .. } => &COLLECTION_EXISTS,
        AppendError::NotGrowing { .. } => &NOT_A_COLLECTION,
        AppendError::Uncopyable { .. } => &WRITE,
        AppendError::Read(e) => atlas_class(e),
        AppendError::Write(e) => write_class(e),
        AppendError::CommitConflict { .. }
        | AppendError::CompactConflict { .. }
        | AppendError::Io { .. }
        | AppendError::Store(_)
        | _ => &STORAGE,
    }
}

impl From<NameError> for Failure {
    fn from(e: NameError) -> Self {
        Self::Name(e)
    }
}

/// A failure and the collection it concerns (a location as given; empty for a panic).
#[derive(Debug)]
pub(crate) struct Error {
    collection: String,
    failure: Failure,
}

impl Error {
    /// `failure` of the collection at `collection`; an error about an object of the store
    /// names that object under the collection's location.
    pub(crate) fn at(collection: &str, failure: impl Into<Failure>) -> Self {
        let failure = match failure.into() {
            Failure::Atlas(e) => Failure::Atlas(e.named_under(collection)),
            other => other,
        };
        Self {
            collection: collection.to_owned(),
            failure,
        }
    }
}

impl BindingError for Error {
    fn panicked(message: String) -> Self {
        Self {
            collection: String::new(),
            failure: Failure::Panicked(message),
        }
    }
}

impl From<Error> for PyErr {
    fn from(error: Error) -> Self {
        Python::attach(|py| py_support::raise(py, &error))
    }
}

/// Runs `work` with the GIL released, its failure raised as its class, naming `collection`.
pub(crate) fn enter<T: Send, F: Into<Failure> + Send>(
    py: Python<'_>,
    collection: &str,
    work: impl FnOnce() -> Result<T, F> + Send,
) -> PyResult<T> {
    py_support::enter(py, || work().map_err(|f| Error::at(collection, f)))
}

/// Runs `future` on object-access's runtime with the GIL released, stopped by Ctrl-C between
/// polls; its failure raised as its class, naming `collection`.
pub(crate) fn run<T: Send, F: Into<Failure>>(
    py: Python<'_>,
    collection: &str,
    future: impl Future<Output = Result<T, F>> + Send,
) -> PyResult<T> {
    py_support::enter_async(py, async move {
        future.await.map_err(|f| Error::at(collection, f))
    })
}

impl ErrorFields for Error {
    fn class(&self) -> &'static ExceptionClass {
        match &self.failure {
            Failure::Atlas(e) => atlas_class(e),
            Failure::Write(e) => write_class(e),
            Failure::Name(_) => &INVALID_NAME,
            Failure::Exists(_) => &COLLECTION_EXISTS,
            Failure::Append(e) => append_class(e),
            Failure::Location(_) => &STORAGE,
            Failure::Panicked(_) => &PANIC,
        }
    }

    fn message(&self) -> String {
        let collection = &self.collection;
        match &self.failure {
            Failure::Atlas(e) if e.path().is_some() => e.to_string(),
            Failure::Name(e) => e.to_string(),
            Failure::Atlas(e) => format!("{collection}: {e}"),
            Failure::Write(e) => format!("{collection}: {e}"),
            // An append's refusals name the collection themselves.
            Failure::Append(e) => e.to_string(),
            Failure::Exists(reason) | Failure::Location(reason) => {
                format!("{collection}: {reason}")
            }
            Failure::Panicked(message) if collection.is_empty() => {
                format!("internal error (Rust panic): {message}")
            }
            Failure::Panicked(message) => {
                format!("{collection}: internal error (Rust panic): {message}")
            }
        }
    }

    fn fields(&self, f: &mut Fields<'_>) {
        let (reason, kind, retryable) = match &self.failure {
            Failure::Atlas(e) => (e.reason(), e.kind(), e.is_retryable()),
            // A naming error's `kind` is what the name names, as `InvalidNameError`'s is.
            Failure::Write(e) => {
                let kind = e.name().map_or(e.kind(), |(kind, _)| kind.as_str());
                (e.reason(), kind, e.is_retryable())
            }
            Failure::Name(e) => (e.reason.to_owned(), e.kind.as_str(), false),
            Failure::Exists(reason) => (reason.clone(), "collection_exists", false),
            Failure::Append(e) => (e.to_string(), e.kind(), e.is_retryable()),
            Failure::Location(reason) => (reason.clone(), "location", false),
            Failure::Panicked(message) => (message.clone(), "panic", false),
        };
        // A panic caught by `py_support::enter` knows no collection.
        let path = match &self.failure {
            Failure::Atlas(e) => e.path().or(Some(&self.collection)),
            _ => Some(self.collection.as_str()).filter(|c| !c.is_empty()),
        };
        f.set("path", path)
            .set("reason", reason)
            .set("kind", kind)
            .set("retryable", retryable);
        match &self.failure {
            Failure::Atlas(e) => {
                let (name, dataset) = looked_up(e.dataset(), e.array());
                f.set_some("field", e.field())
                    .set_some("name", name)
                    .set_some("dataset", dataset);
                if let AtlasError::UnsupportedVersion {
                    found, expected, ..
                } = e
                {
                    f.set("found", found).set("expected", expected);
                }
            }
            Failure::Write(e) => {
                let (array_or_dataset, dataset) = looked_up(e.dataset(), e.array());
                let name = e.name().map(|(_, name)| name).or(array_or_dataset);
                f.set_some("name", name).set_some("dataset", dataset);
            }
            Failure::Name(e) => {
                f.set("name", e.name.as_str());
            }
            _ => {}
        }
    }
}

/// Makes every class and registers it on the native module, with the class defaults:
/// `retryable` is False unless a conversion says otherwise, and the classes that stand for one
/// Rust variant carry its `kind` also when Python code raised them. (`atlas_collections.errors`
/// gives the base its constructor and `str()`.)
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    ExceptionClass::register_all(m, &CLASSES)?;
    ATLAS_ERROR.get(py)?.setattr("retryable", false)?;
    let (name, reason) = (String::new(), String::new());
    let kinds = [
        AtlasError::DatasetNotFound(name.clone()),
        AtlasError::ArrayNotFound {
            dataset: name.clone(),
            array: name.clone(),
        },
        AtlasError::InvalidSelection {
            array: name.clone(),
            reason: reason.clone(),
        },
        AtlasError::InvalidQuery {
            condition: name,
            reason,
        },
    ];
    for error in kinds {
        atlas_class(&error).get(py)?.setattr("kind", error.kind())?;
    }
    Ok(())
}

/// `(name, dataset)` of an error about a dataset and an array: `name` is the array when there
/// is one, else the dataset, and `dataset` is set only beside an array.
fn looked_up<'a>(
    dataset: Option<&'a str>,
    array: Option<&'a str>,
) -> (Option<&'a str>, Option<&'a str>) {
    match array {
        Some(array) => (Some(array), dataset),
        None => (dataset, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_names_its_object_under_the_collection_and_carries_its_fields() {
        Python::initialize();
        Python::attach(|py| {
            let missing = AtlasError::NotAnAtlasCollection {
                path: "runs/data.atlas".into(),
                reason: "no such object".into(),
            };
            let error: PyErr = Error::at("s3://bucket/runs", missing).into();
            let value = error.value(py);
            assert!(error.get_type(py).is(NOT_A_COLLECTION.get(py).unwrap()));
            let path: String = value.getattr("path").unwrap().extract().unwrap();
            assert_eq!(path, "s3://bucket/runs/data.atlas");
            let retryable: bool = value.getattr("retryable").unwrap().extract().unwrap();
            assert!(!retryable);
            let lookup: PyErr = Error::at("/c", AtlasError::DatasetNotFound("jan".into())).into();
            assert!(lookup.is_instance_of::<pyo3::exceptions::PyKeyError>(py));
            let name: String = lookup.value(py).getattr("name").unwrap().extract().unwrap();
            assert_eq!(name, "jan");
            let panic: PyErr = Error::panicked("boom".into()).into();
            assert!(panic.value(py).getattr("path").unwrap().is_none());
        });
    }
}
