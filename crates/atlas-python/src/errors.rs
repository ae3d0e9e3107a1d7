//! The exception classes of `atlas_collections.errors` (made here, re-exported there), and
//! the table from every Rust error variant to its class and attributes (see `py_support` for
//! the pattern).

use atlas::{AtlasError, NameError, WriteError};
use py_support::{Base, BindingError, ErrorFields, ExceptionClass, Fields};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PySuper, PyType};
use std::future::Future;

/// The module users import the classes from, and pickle finds them in.
const MODULE: &str = "atlas_collections.errors";

static ATLAS_ERROR: ExceptionClass = ExceptionClass::new(
    MODULE,
    "AtlasError",
    &[Base::Exception],
    "Base class of every error this package raises.",
);
static BASE: [Base; 1] = [Base::Of(&ATLAS_ERROR)];
static NOT_A_COLLECTION: ExceptionClass = ExceptionClass::new(
    MODULE,
    "NotACollectionError",
    &BASE,
    "Nothing at the location is an Atlas container (Rust: ``NotAnAtlasCollection``).",
);
static UNSUPPORTED_VERSION: ExceptionClass = ExceptionClass::new(
    MODULE,
    "UnsupportedVersionError",
    &BASE,
    "An Atlas container of another format version (``found``, ``expected``).",
);
static CORRUPT_COLLECTION: ExceptionClass = ExceptionClass::new(
    MODULE,
    "CorruptCollectionError",
    &BASE,
    "The container, a segment or the mask is damaged; ``field`` names where.",
);
static STORAGE: ExceptionClass = ExceptionClass::new(MODULE, "StorageError", &BASE,
    "The store or the transport failed. ``retryable`` says whether the same call may succeed\nif made again (Rust: ``AtlasError::is_retryable``).");
static DATASET_NOT_FOUND: ExceptionClass = ExceptionClass::new(
    MODULE,
    "DatasetNotFoundError",
    &[Base::Of(&ATLAS_ERROR), Base::KeyError],
    "No live dataset of this ``name``.",
);
static ARRAY_NOT_FOUND: ExceptionClass = ExceptionClass::new(
    MODULE,
    "ArrayNotFoundError",
    &[Base::Of(&ATLAS_ERROR), Base::KeyError],
    "The ``dataset`` declares no array ``name``.",
);
static SELECTION: ExceptionClass = ExceptionClass::new(
    MODULE,
    "SelectionError",
    &[Base::Of(&ATLAS_ERROR), Base::IndexError],
    "An index or selection that does not fit the array.",
);
static QUERY: ExceptionClass = ExceptionClass::new(MODULE, "QueryError", &[Base::Of(&ATLAS_ERROR), Base::ValueError],
    "A selection (``Collection.select``) the collection cannot answer; ``field`` names the\ncondition (``attrs[\"key\"]``, ``where[i] (...)``).");
static INVALID_NAME: ExceptionClass = ExceptionClass::new(
    MODULE,
    "InvalidNameError",
    &[Base::Of(&ATLAS_ERROR), Base::ValueError],
    "A name broke the naming rule (non-empty, no leading ``_``); ``kind`` says what it names.",
);
static DUPLICATE_NAME: ExceptionClass = ExceptionClass::new(
    MODULE,
    "DuplicateNameError",
    &[Base::Of(&ATLAS_ERROR), Base::ValueError],
    "A dataset name, an array name of one dataset, or an attribute key was given twice.",
);
static LAYOUT: ExceptionClass = ExceptionClass::new(
    MODULE,
    "LayoutError",
    &[Base::Of(&ATLAS_ERROR), Base::ValueError],
    "An array's layout (chunks, dimension names) does not fit its shape.",
);
static UNSUPPORTED_DTYPE: ExceptionClass = ExceptionClass::new(
    MODULE,
    "UnsupportedDTypeError",
    &[Base::Of(&ATLAS_ERROR), Base::TypeError],
    "A value of a type the format cannot hold (see the dtype mapping in the docs).",
);
static COLLECTION_EXISTS: ExceptionClass = ExceptionClass::new(
    MODULE,
    "CollectionExistsError",
    &BASE,
    "The writer's location already holds a ``data.atlas``: collections are write-once.",
);
static WRITE: ExceptionClass = ExceptionClass::new(
    MODULE,
    "WriteError",
    &BASE,
    "A write failed (array-format, the footer, or a writer stopped by an earlier failure).",
);
static IMPORT_REFUSED: ExceptionClass = ExceptionClass::new(
    MODULE,
    "ImportRefusedError",
    &[Base::Of(&ATLAS_ERROR), Base::ValueError],
    "A NetCDF import refused a ``file`` (and ``variable``, when one is at fault).",
);
static PANIC: ExceptionClass = ExceptionClass::new(
    MODULE,
    "AtlasPanicError",
    &BASE,
    "A bug: the Rust side panicked. The call had no effect that a retry could rely on.",
);

/// Every class, in the order of `atlas_collections.errors.__all__`.
const CLASSES: [&ExceptionClass; 17] = [
    &ATLAS_ERROR,
    &NOT_A_COLLECTION,
    &UNSUPPORTED_VERSION,
    &CORRUPT_COLLECTION,
    &STORAGE,
    &DATASET_NOT_FOUND,
    &ARRAY_NOT_FOUND,
    &SELECTION,
    &QUERY,
    &INVALID_NAME,
    &DUPLICATE_NAME,
    &LAYOUT,
    &UNSUPPORTED_DTYPE,
    &COLLECTION_EXISTS,
    &WRITE,
    &IMPORT_REFUSED,
    &PANIC,
];

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
    /// The location could not be understood or reached before any Atlas call.
    Location(String),
    /// A value this package cannot carry (an element type, a selection).
    Unsupported(String),
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
            Failure::Atlas(e) => {
                Failure::Atlas(e.with_object_named(|object| object_under(collection, object)))
            }
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
            Failure::Location(_) => &STORAGE,
            Failure::Unsupported(_) => &UNSUPPORTED_DTYPE,
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
            Failure::Exists(reason) | Failure::Location(reason) | Failure::Unsupported(reason) => {
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
            Failure::Location(reason) => (reason.clone(), "location", false),
            Failure::Unsupported(reason) => (reason.clone(), "unsupported_dtype", false),
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

/// `AtlasError.__init__(message, *, path=None, reason=None, **fields)`: the message is the
/// exception's one argument (and `str()`), `reason` defaults to it, and every other keyword
/// becomes an attribute, so Python code raises these classes with the fields it knows.
#[pyfunction]
#[pyo3(
    signature = (this, message, *, path = None, reason = None, **fields),
    text_signature = "(self, message, *, path=None, reason=None, **fields)"
)]
fn atlas_error_init(
    this: &Bound<'_, PyAny>,
    message: Bound<'_, PyAny>,
    path: Option<Bound<'_, PyAny>>,
    reason: Option<Bound<'_, PyAny>>,
    fields: Option<Bound<'_, PyDict>>,
) -> PyResult<()> {
    let base = ATLAS_ERROR.get(this.py())?;
    // The next class in the instance's order (`KeyError` for `DatasetNotFoundError`) sets
    // `args`, as a subclass's `super().__init__` would.
    PySuper::new(&base, this)?.call_method1("__init__", (&message,))?;
    this.setattr("message", &message)?;
    this.setattr("path", path)?;
    this.setattr("reason", reason.unwrap_or(message))?;
    if let Some(fields) = fields {
        for (key, value) in fields.iter() {
            this.setattr(key.cast_into::<PyString>()?, value)?;
        }
    }
    Ok(())
}

/// `AtlasError.__str__`: the message as given, where `KeyError` would print its repr.
#[pyfunction]
#[pyo3(text_signature = "(self)")]
fn atlas_error_str<'py>(this: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    this.getattr("message")
}

/// A function of this module as a method of a class. Only Python functions bind to the
/// instance they are looked up on; the exception classes are not written in Python, so their
/// methods bind through this, as a function's `__get__` would.
#[pyclass(frozen, module = "atlas_collections._atlas")]
struct Method(Py<PyAny>);

#[pymethods]
impl Method {
    fn __get__(
        &self,
        py: Python<'_>,
        instance: &Bound<'_, PyAny>,
        _owner: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if instance.is_none() {
            return Ok(self.0.clone_ref(py));
        }
        static METHOD_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
        let method_type = METHOD_TYPE.import(py, "types", "MethodType")?;
        Ok(method_type.call1((&self.0, instance))?.unbind())
    }
}

/// Gives `AtlasError` its constructor and `__str__`, and the class defaults: `retryable` is
/// False unless a conversion says otherwise, and the classes that stand for one Rust variant
/// carry its `kind` also when Python code raised them.
fn install_methods(py: Python<'_>) -> PyResult<()> {
    let base = ATLAS_ERROR.get(py)?;
    let init = wrap_pyfunction!(atlas_error_init, py)?;
    base.setattr("__init__", Method(init.into_any().unbind()))?;
    let str_ = wrap_pyfunction!(atlas_error_str, py)?;
    base.setattr("__str__", Method(str_.into_any().unbind()))?;
    base.setattr("retryable", false)?;
    let kinds = [
        AtlasError::DatasetNotFound(String::new()),
        AtlasError::ArrayNotFound {
            dataset: String::new(),
            array: String::new(),
        },
        AtlasError::InvalidSelection {
            array: String::new(),
            reason: String::new(),
        },
        AtlasError::InvalidQuery {
            condition: String::new(),
            reason: String::new(),
        },
    ];
    for error in kinds {
        atlas_class(&error).get(py)?.setattr("kind", error.kind())?;
    }
    Ok(())
}

/// Makes every class, registers it on the native module, and gives the base its methods.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    install_methods(m.py())?;
    ExceptionClass::register_all(m, &CLASSES)
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

/// `collection/<object>` for a store path such as `prefix/data.atlas`.
fn object_under(collection: &str, path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    format!("{}/{name}", collection.trim_end_matches('/'))
}
