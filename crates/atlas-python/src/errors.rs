//! The GIL-free call path on object-access's runtime; the exception classes of
//! `atlas_collections.errors`, made here and re-exported there; and one conversion per Rust
//! error type into them, with each field taken from the error's own accessors.

use atlas::{AtlasError as RsAtlasError, NameError, WriteError as RsWriteError};
use pyo3::exceptions::{PyIndexError, PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PySuper, PyTuple, PyType};
use pyo3::IntoPyObjectExt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The classes with one base. They say they belong to `atlas_collections.errors`, the module
/// users import them from and pickle finds them in.
mod classes {
    use pyo3::exceptions::PyException;

    pyo3::create_exception!(
        atlas_collections.errors,
        AtlasError,
        PyException,
        "Base class of every error this package raises."
    );
    pyo3::create_exception!(
        atlas_collections.errors,
        NotACollectionError,
        AtlasError,
        "Nothing at the location is an Atlas container (Rust: ``NotAnAtlasCollection``)."
    );
    pyo3::create_exception!(
        atlas_collections.errors,
        UnsupportedVersionError,
        AtlasError,
        "An Atlas container of another format version (``found``, ``expected``)."
    );
    pyo3::create_exception!(
        atlas_collections.errors,
        CorruptCollectionError,
        AtlasError,
        "The container, a segment or the mask is damaged; ``field`` names where."
    );
    pyo3::create_exception!(
        atlas_collections.errors,
        StorageError,
        AtlasError,
        "The store or the transport failed. ``retryable`` says whether the same call may succeed\nif made again (Rust: ``AtlasError::is_retryable``)."
    );
    pyo3::create_exception!(
        atlas_collections.errors,
        CollectionExistsError,
        AtlasError,
        "The writer's location already holds a ``data.atlas``: collections are write-once."
    );
    pyo3::create_exception!(
        atlas_collections.errors,
        WriteError,
        AtlasError,
        "A write failed (array-format, the footer, or a writer stopped by an earlier failure)."
    );
    pyo3::create_exception!(
        atlas_collections.errors,
        AtlasPanicError,
        AtlasError,
        "A bug: the Rust side panicked. The call had no effect that a retry could rely on."
    );
}

/// Every class of `atlas_collections.errors`, as a value a conversion picks.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Class {
    AtlasError,
    NotACollection,
    UnsupportedVersion,
    CorruptCollection,
    Storage,
    DatasetNotFound,
    ArrayNotFound,
    Selection,
    Query,
    InvalidName,
    DuplicateName,
    Layout,
    UnsupportedDType,
    CollectionExists,
    Write,
    ImportRefused,
    Panic,
}

/// The built-in a class of two bases derives from beside `AtlasError`.
#[derive(Clone, Copy)]
enum Builtin {
    Key,
    Index,
    Value,
    Type,
}

/// A class of two bases: `AtlasError` and the built-in that ordinary handlers catch
/// (`except KeyError`). PyO3's exception macro takes one base, so these are made with `type`.
struct TwoBases {
    name: &'static str,
    doc: &'static str,
    builtin: Builtin,
    made: PyOnceLock<Py<PyType>>,
}

impl TwoBases {
    const fn new(name: &'static str, builtin: Builtin, doc: &'static str) -> Self {
        Self {
            name,
            doc,
            builtin,
            made: PyOnceLock::new(),
        }
    }

    fn get<'py>(&'static self, py: Python<'py>) -> PyResult<Bound<'py, PyType>> {
        let made = self.made.get_or_try_init(py, || {
            let builtin = match self.builtin {
                Builtin::Key => py.get_type::<PyKeyError>(),
                Builtin::Index => py.get_type::<PyIndexError>(),
                Builtin::Value => py.get_type::<PyValueError>(),
                Builtin::Type => py.get_type::<PyTypeError>(),
            };
            let bases = PyTuple::new(py, [py.get_type::<classes::AtlasError>(), builtin])?;
            let namespace = PyDict::new(py);
            namespace.set_item("__doc__", self.doc)?;
            namespace.set_item("__module__", "atlas_collections.errors")?;
            let made = py
                .get_type::<PyType>()
                .call1((self.name, bases, namespace))?;
            Ok::<_, PyErr>(made.cast_into::<PyType>()?.unbind())
        })?;
        Ok(made.bind(py).clone())
    }
}

static DATASET_NOT_FOUND: TwoBases = TwoBases::new(
    "DatasetNotFoundError",
    Builtin::Key,
    "No live dataset of this ``name``.",
);
static ARRAY_NOT_FOUND: TwoBases = TwoBases::new(
    "ArrayNotFoundError",
    Builtin::Key,
    "The ``dataset`` declares no array ``name``.",
);
static SELECTION: TwoBases = TwoBases::new(
    "SelectionError",
    Builtin::Index,
    "An index or selection that does not fit the array.",
);
static QUERY: TwoBases = TwoBases::new(
    "QueryError",
    Builtin::Value,
    "A selection (``Collection.select``) the collection cannot answer; ``field`` names the\ncondition (``attrs[\"key\"]``, ``where[i] (...)``).",
);
static INVALID_NAME: TwoBases = TwoBases::new(
    "InvalidNameError",
    Builtin::Value,
    "A name broke the naming rule (non-empty, no leading ``_``); ``kind`` says what it names.",
);
static DUPLICATE_NAME: TwoBases = TwoBases::new(
    "DuplicateNameError",
    Builtin::Value,
    "A dataset name, an array name of one dataset, or an attribute key was given twice.",
);
static LAYOUT: TwoBases = TwoBases::new(
    "LayoutError",
    Builtin::Value,
    "An array's layout (chunks, dimension names) does not fit its shape.",
);
static UNSUPPORTED_DTYPE: TwoBases = TwoBases::new(
    "UnsupportedDTypeError",
    Builtin::Type,
    "A value of a type the format cannot hold (see the dtype mapping in the docs).",
);
static IMPORT_REFUSED: TwoBases = TwoBases::new(
    "ImportRefusedError",
    Builtin::Value,
    "A NetCDF import refused a ``file`` (and ``variable``, when one is at fault).",
);

impl Class {
    /// Every class, in the order of `atlas_collections.errors.__all__`.
    const ALL: [Class; 17] = [
        Class::AtlasError,
        Class::NotACollection,
        Class::UnsupportedVersion,
        Class::CorruptCollection,
        Class::Storage,
        Class::DatasetNotFound,
        Class::ArrayNotFound,
        Class::Selection,
        Class::Query,
        Class::InvalidName,
        Class::DuplicateName,
        Class::Layout,
        Class::UnsupportedDType,
        Class::CollectionExists,
        Class::Write,
        Class::ImportRefused,
        Class::Panic,
    ];

    pub(crate) fn get<'py>(self, py: Python<'py>) -> PyResult<Bound<'py, PyType>> {
        Ok(match self {
            Class::AtlasError => py.get_type::<classes::AtlasError>(),
            Class::NotACollection => py.get_type::<classes::NotACollectionError>(),
            Class::UnsupportedVersion => py.get_type::<classes::UnsupportedVersionError>(),
            Class::CorruptCollection => py.get_type::<classes::CorruptCollectionError>(),
            Class::Storage => py.get_type::<classes::StorageError>(),
            Class::CollectionExists => py.get_type::<classes::CollectionExistsError>(),
            Class::Write => py.get_type::<classes::WriteError>(),
            Class::Panic => py.get_type::<classes::AtlasPanicError>(),
            Class::DatasetNotFound => DATASET_NOT_FOUND.get(py)?,
            Class::ArrayNotFound => ARRAY_NOT_FOUND.get(py)?,
            Class::Selection => SELECTION.get(py)?,
            Class::Query => QUERY.get(py)?,
            Class::InvalidName => INVALID_NAME.get(py)?,
            Class::DuplicateName => DUPLICATE_NAME.get(py)?,
            Class::Layout => LAYOUT.get(py)?,
            Class::UnsupportedDType => UNSUPPORTED_DTYPE.get(py)?,
            Class::ImportRefused => IMPORT_REFUSED.get(py)?,
        })
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
    let base = this.py().get_type::<classes::AtlasError>();
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
    let base = py.get_type::<classes::AtlasError>();
    let init = wrap_pyfunction!(atlas_error_init, py)?;
    base.setattr("__init__", Method(init.into_any().unbind()))?;
    let str_ = wrap_pyfunction!(atlas_error_str, py)?;
    base.setattr("__str__", Method(str_.into_any().unbind()))?;
    base.setattr("retryable", false)?;
    let kinds = [
        (
            Class::DatasetNotFound,
            RsAtlasError::DatasetNotFound(String::new()),
        ),
        (
            Class::ArrayNotFound,
            RsAtlasError::ArrayNotFound {
                dataset: String::new(),
                array: String::new(),
            },
        ),
        (
            Class::Selection,
            RsAtlasError::InvalidSelection {
                array: String::new(),
                reason: String::new(),
            },
        ),
        (
            Class::Query,
            RsAtlasError::InvalidQuery {
                condition: String::new(),
                reason: String::new(),
            },
        ),
    ];
    for (class, error) in kinds {
        class.get(py)?.setattr("kind", error.kind())?;
    }
    Ok(())
}

/// Makes every class, registers it on the native module, and gives the base its methods.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    install_methods(py)?;
    for class in Class::ALL {
        let class = class.get(py)?;
        m.add(class.name()?, class)?;
    }
    Ok(())
}

/// A failure on the Rust side, before it becomes a Python exception.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A read, open or delete failed.
    Atlas(RsAtlasError),
    /// A write was refused or failed.
    Write(RsWriteError),
    /// A name broke the naming rule.
    Name(NameError),
    /// A collection already exists where a writer was asked to create one.
    Exists(String),
    /// The location could not be understood or reached before any Atlas call.
    Location(String),
    /// A value this package cannot carry (an element type, a selection).
    Unsupported(String),
}

impl From<RsAtlasError> for Failure {
    fn from(e: RsAtlasError) -> Self {
        Self::Atlas(e)
    }
}

impl From<RsWriteError> for Failure {
    fn from(e: RsWriteError) -> Self {
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
            let fields = Fields::new(py, path, message.clone(), "panic", false);
            Err(fields.raise(
                Class::Panic,
                format!("{path}: internal error (Rust panic): {message}"),
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

/// The keyword arguments of one exception: `path`, `reason`, `kind` and `retryable`, which
/// every converted error has, then whatever its variant adds.
struct Fields<'py> {
    py: Python<'py>,
    kwargs: Bound<'py, PyDict>,
    /// The first failure setting an item, raised instead of the exception it was building.
    failed: Option<PyErr>,
}

impl<'py> Fields<'py> {
    fn new(py: Python<'py>, path: &str, reason: String, kind: &str, retryable: bool) -> Self {
        Self {
            py,
            kwargs: PyDict::new(py),
            failed: None,
        }
        .with("path", path)
        .with("reason", reason)
        .with("kind", kind)
        .with("retryable", retryable)
    }

    fn with<T: IntoPyObject<'py>>(mut self, key: &str, value: T) -> Self {
        if self.failed.is_none() {
            let set = value
                .into_py_any(self.py)
                .and_then(|value| self.kwargs.set_item(key, value));
            self.failed = set.err();
        }
        self
    }

    fn with_some<T: IntoPyObject<'py>>(self, key: &str, value: Option<T>) -> Self {
        match value {
            Some(value) => self.with(key, value),
            None => self,
        }
    }

    /// `class(message, **fields)` as the error to raise; an error building it is raised
    /// instead.
    fn raise(self, class: Class, message: String) -> PyErr {
        if let Some(failed) = self.failed {
            return failed;
        }
        let made = class
            .get(self.py)
            .and_then(|class| class.call((message,), Some(&self.kwargs)));
        match made {
            Ok(exception) => PyErr::from_value(exception),
            Err(error) => error,
        }
    }
}

/// The Python exception for `failure` at collection `path`.
pub(crate) fn to_py(py: Python<'_>, path: &str, failure: Failure) -> PyErr {
    let binding = |class: Class, kind: &str, reason: String| {
        let message = format!("{path}: {reason}");
        Fields::new(py, path, reason, kind, false).raise(class, message)
    };
    match failure {
        Failure::Atlas(e) => atlas_error(py, path, e),
        Failure::Write(e) => write_error(py, path, &e),
        Failure::Name(e) => name_error(py, path, &e),
        Failure::Exists(reason) => binding(Class::CollectionExists, "collection_exists", reason),
        Failure::Location(reason) => binding(Class::Storage, "location", reason),
        Failure::Unsupported(reason) => {
            binding(Class::UnsupportedDType, "unsupported_dtype", reason)
        }
    }
}

/// A name error as `InvalidNameError`, whose `kind` says what the name names.
pub(crate) fn name_error(py: Python<'_>, path: &str, e: &NameError) -> PyErr {
    Fields::new(py, path, e.reason.to_owned(), e.kind.as_str(), false)
        .with("name", e.name.as_str())
        .raise(Class::InvalidName, e.to_string())
}

/// A read, open or delete error, naming the collection at `collection`. An error about an
/// object of the store names it under the collection's location; the others name the
/// collection.
pub(crate) fn atlas_error(py: Python<'_>, collection: &str, e: RsAtlasError) -> PyErr {
    let e = e.with_object_named(|object| object_under(collection, object));
    let (message, path) = match e.path() {
        Some(path) => (e.to_string(), path),
        None => (format!("{collection}: {e}"), collection),
    };
    let (class, versions) = match &e {
        RsAtlasError::NotAnAtlasCollection { .. } => (Class::NotACollection, None),
        RsAtlasError::UnsupportedVersion {
            found, expected, ..
        } => (Class::UnsupportedVersion, Some((*found, *expected))),
        RsAtlasError::CorruptCollection { .. } | RsAtlasError::Mask { .. } => {
            (Class::CorruptCollection, None)
        }
        RsAtlasError::DatasetNotFound(_) => (Class::DatasetNotFound, None),
        RsAtlasError::ArrayNotFound { .. } => (Class::ArrayNotFound, None),
        RsAtlasError::InvalidSelection { .. } => (Class::Selection, None),
        RsAtlasError::InvalidQuery { .. } => (Class::Query, None),
        RsAtlasError::Store(_)
        | RsAtlasError::Segment { .. }
        | RsAtlasError::Io { .. }
        | RsAtlasError::DeleteConflict { .. } => (Class::Storage, None),
        // The enum is `#[non_exhaustive]`: a variant added later is the base class until it
        // is given one. `test_error_mapping.py` lists every variant's class, so it fails then.
        RsAtlasError::NoSuchArray(_) | RsAtlasError::TypeMismatch { .. } | _ => {
            (Class::AtlasError, None)
        }
    };
    let (name, dataset) = looked_up(e.dataset(), e.array());
    Fields::new(py, path, e.reason(), e.kind(), e.is_retryable())
        .with_some("field", e.field())
        .with_some("name", name)
        .with_some("dataset", dataset)
        .with_some("found", versions.map(|(found, _)| found))
        .with_some("expected", versions.map(|(_, expected)| expected))
        .raise(class, message)
}

/// A write error, naming the collection at `collection`.
pub(crate) fn write_error(py: Python<'_>, collection: &str, e: &RsWriteError) -> PyErr {
    let class = match e {
        RsWriteError::InvalidName(name) => return name_error(py, collection, name),
        RsWriteError::DuplicateDataset(_)
        | RsWriteError::DuplicateArray { .. }
        | RsWriteError::DuplicateAttribute { .. } => Class::DuplicateName,
        RsWriteError::InvalidLayout { .. } => Class::Layout,
        RsWriteError::Store(_) => Class::Storage,
        // The enum is `#[non_exhaustive]`: a variant added later is a `WriteError` until it is
        // given a class. `test_error_mapping.py` lists every variant's class, so it fails then.
        RsWriteError::Segment { .. } | RsWriteError::Footer(_) | RsWriteError::Poisoned(_) | _ => {
            Class::Write
        }
    };
    // A naming error's `kind` is what the name names, as `InvalidNameError`'s is.
    let kind = e.name().map_or(e.kind(), |(kind, _)| kind.as_str());
    let (array_or_dataset, dataset) = looked_up(e.dataset(), e.array());
    let name = e.name().map(|(_, name)| name).or(array_or_dataset);
    Fields::new(py, collection, e.reason(), kind, e.is_retryable())
        .with_some("name", name)
        .with_some("dataset", dataset)
        .raise(class, format!("{collection}: {e}"))
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
