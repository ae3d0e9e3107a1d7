//! Exception classes declared as data, and errors raised as instances of them with their
//! attributes.

use pyo3::exceptions::{PyException, PyIndexError, PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule, PyTuple, PyType};
use pyo3::IntoPyObjectExt;

/// One base of an [`ExceptionClass`].
#[derive(Clone, Copy)]
pub enum Base {
    /// Another class of the binding.
    Of(&'static ExceptionClass),
    /// `Exception`.
    Exception,
    /// `KeyError`: what a caller of a mapping catches.
    KeyError,
    /// `IndexError`: what a caller of a sequence catches.
    IndexError,
    /// `ValueError`.
    ValueError,
    /// `TypeError`.
    TypeError,
}

impl Base {
    fn get<'py>(self, py: Python<'py>) -> PyResult<Bound<'py, PyType>> {
        Ok(match self {
            Base::Of(class) => class.get(py)?,
            Base::Exception => py.get_type::<PyException>(),
            Base::KeyError => py.get_type::<PyKeyError>(),
            Base::IndexError => py.get_type::<PyIndexError>(),
            Base::ValueError => py.get_type::<PyValueError>(),
            Base::TypeError => py.get_type::<PyTypeError>(),
        })
    }
}

/// A Python exception class: its module (where users import it from and pickle finds it),
/// name, bases and docstring, made with `type(name, bases, namespace)` on first use. PyO3's
/// `create_exception!` takes one base; a lookup error is the package's error and the
/// built-in one (`except KeyError` catches it), so every class is declared this one way.
pub struct ExceptionClass {
    module: &'static str,
    name: &'static str,
    bases: &'static [Base],
    doc: &'static str,
    made: PyOnceLock<Py<PyType>>,
}

impl ExceptionClass {
    /// A class `module.name` deriving from `bases`, documented by `doc`.
    pub const fn new(
        module: &'static str,
        name: &'static str,
        bases: &'static [Base],
        doc: &'static str,
    ) -> Self {
        Self {
            module,
            name,
            bases,
            doc,
            made: PyOnceLock::new(),
        }
    }

    /// The class's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The class, made on first use.
    pub fn get<'py>(&'static self, py: Python<'py>) -> PyResult<Bound<'py, PyType>> {
        let made = self.made.get_or_try_init(py, || {
            let bases = self
                .bases
                .iter()
                .map(|base| base.get(py))
                .collect::<PyResult<Vec<_>>>()?;
            let namespace = PyDict::new(py);
            namespace.set_item("__doc__", self.doc)?;
            namespace.set_item("__module__", self.module)?;
            let made =
                py.get_type::<PyType>()
                    .call1((self.name, PyTuple::new(py, bases)?, namespace))?;
            Ok::<_, PyErr>(made.cast_into::<PyType>()?.unbind())
        })?;
        Ok(made.bind(py).clone())
    }

    /// Adds every class of `classes` to `module` under its name.
    pub fn register_all(module: &Bound<'_, PyModule>, classes: &[&'static Self]) -> PyResult<()> {
        for class in classes {
            module.add(class.name, class.get(module.py())?)?;
        }
        Ok(())
    }
}

/// How one error becomes an exception: a table from the error's variant to its class, its
/// message (`str()` of the exception) and its attributes. A binding's error type implements
/// it; [`raise`] (and [`enter`](crate::enter)) build the exception from it.
pub trait ErrorFields {
    /// The exception's class.
    fn class(&self) -> &'static ExceptionClass;
    /// The exception's message.
    fn message(&self) -> String;
    /// Sets the exception's attributes.
    fn fields(&self, fields: &mut Fields<'_>);
}

/// The attributes of one exception being raised. Setting one that cannot be converted
/// records the failure, which is raised instead of the exception.
pub struct Fields<'py> {
    exception: Bound<'py, PyAny>,
    failed: Option<PyErr>,
}

impl<'py> Fields<'py> {
    /// The interpreter, for attributes built from Python objects (lists, dicts).
    pub fn py(&self) -> Python<'py> {
        self.exception.py()
    }

    /// Sets attribute `name` to `value` (`None` for `Option::None`).
    pub fn set<T: IntoPyObject<'py>>(&mut self, name: &str, value: T) -> &mut Self {
        if self.failed.is_none() {
            let set = value
                .into_bound_py_any(self.py())
                .and_then(|value| self.exception.setattr(name, value));
            self.failed = set.err();
        }
        self
    }

    /// Sets attribute `name` only when `value` is `Some`.
    pub fn set_some<T: IntoPyObject<'py>>(&mut self, name: &str, value: Option<T>) -> &mut Self {
        match value {
            Some(value) => self.set(name, value),
            None => self,
        }
    }
}

/// `error` as an exception: `class(message)`, then each attribute [`ErrorFields::fields`]
/// sets. A failure building it is raised instead.
pub fn raise<E: ErrorFields + ?Sized>(py: Python<'_>, error: &E) -> PyErr {
    let made = error
        .class()
        .get(py)
        .and_then(|class| class.call1((error.message(),)));
    let exception = match made {
        Ok(exception) => exception,
        Err(failed) => return failed,
    };
    let mut fields = Fields {
        exception,
        failed: None,
    };
    error.fields(&mut fields);
    match fields.failed {
        Some(failed) => failed,
        None => PyErr::from_value(fields.exception),
    }
}

/// Declares a module's exception classes, each a static [`ExceptionClass`], and `$all`, the
/// array of every one in order (what [`ExceptionClass::register_all`] takes):
///
/// ```ignore
/// py_support::exception_classes! {
///     pub(crate) CLASSES in "pkg.errors" {
///         ERROR = "Error" (Exception): "Base class of every error.";
///         MISSING = "MissingError" (ERROR, KeyError): "A lookup that missed.";
///     }
/// }
/// ```
///
/// A base is `Exception`, `KeyError`, `IndexError`, `ValueError`, `TypeError`, or another
/// class of the list.
#[macro_export]
macro_rules! exception_classes {
    (@base Exception) => { $crate::Base::Exception };
    (@base KeyError) => { $crate::Base::KeyError };
    (@base IndexError) => { $crate::Base::IndexError };
    (@base ValueError) => { $crate::Base::ValueError };
    (@base TypeError) => { $crate::Base::TypeError };
    (@base $class:ident) => { $crate::Base::Of(&$class) };
    (@count) => { 0 };
    (@count $first:ident $($rest:ident)*) => { 1 + $crate::exception_classes!(@count $($rest)*) };
    ($vis:vis $all:ident in $module:literal {
        $($class:ident = $name:literal ($($base:ident),+): $doc:literal;)*
    }) => {
        $(
            #[doc = $doc]
            $vis static $class: $crate::ExceptionClass = $crate::ExceptionClass::new(
                $module,
                $name,
                &[$($crate::exception_classes!(@base $base)),+],
                $doc,
            );
        )*
        /// Every class, in the order the module exports them.
        $vis const $all: [&$crate::ExceptionClass; $crate::exception_classes!(@count $($class)*)] =
            [$(&$class),*];
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    static ERROR: ExceptionClass = ExceptionClass::new("pkg", "Error", &[Base::Exception], "Base.");
    static MISSING: ExceptionClass = ExceptionClass::new(
        "pkg",
        "MissingError",
        &[Base::Of(&ERROR), Base::KeyError],
        "A lookup that missed.",
    );

    #[test]
    fn a_class_of_two_bases_is_both_and_says_where_it_lives() {
        Python::initialize();
        Python::attach(|py| {
            let missing = MISSING.get(py).unwrap();
            assert!(missing.is_subclass(&ERROR.get(py).unwrap()).unwrap());
            assert!(missing.is_subclass(&py.get_type::<PyKeyError>()).unwrap());
            assert!(missing.is(MISSING.get(py).unwrap()), "made once");
            let module: String = missing.getattr("__module__").unwrap().extract().unwrap();
            assert_eq!(module, "pkg");
            let doc: String = missing.getattr("__doc__").unwrap().extract().unwrap();
            assert_eq!(doc, "A lookup that missed.");
        });
    }
}
