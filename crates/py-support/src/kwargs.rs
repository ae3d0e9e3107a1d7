//! The keywords of a signature that takes its options as `**options`, each taken by name
//! with its check, and a keyword no option took refused as Python refuses an unexpected one.
//!
//! Why not pyo3's own arguments: a group of options several classes share (a cache's remote
//! options, an epoch's settings) is then declared once, and each check (an int that is not a
//! bool, seconds that are finite, ...) says which option it refused in Python's words.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyString};
use std::time::Duration;

/// The keyword arguments of one call, taken by name.
pub struct Kwargs<'py> {
    callee: &'static str,
    left: Option<Bound<'py, PyDict>>,
}

/// The name of `value`'s type, for a message that refuses it.
pub fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

impl<'py> Kwargs<'py> {
    /// The keywords `options` passed to `callee` (named in the error for a stray keyword).
    pub fn new(callee: &'static str, options: Option<&Bound<'py, PyDict>>) -> PyResult<Self> {
        let left = options.map(|o| o.copy()).transpose()?;
        Ok(Self { callee, left })
    }

    /// Option `name`, or None when it was not given or given as None (its default).
    pub fn take(&mut self, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(left) = &self.left else {
            return Ok(None);
        };
        let value = left.get_item(name)?;
        if value.is_some() {
            left.del_item(name)?;
        }
        Ok(value.filter(|v| !v.is_none()))
    }

    /// Option `name` extracted as `T` (pyo3's conversion and its error, naming the option).
    pub fn get<T>(&mut self, name: &str, default: T) -> PyResult<T>
    where
        T: for<'a> FromPyObject<'a, 'py>,
        for<'a> <T as FromPyObject<'a, 'py>>::Error: Into<PyErr>,
    {
        match self.take(name)? {
            Some(value) => value.extract::<T>().map_err(|e| {
                let e: PyErr = e.into();
                let py = value.py();
                PyErr::from_type(
                    e.get_type(py),
                    format!("argument '{name}': {}", e.value(py)),
                )
            }),
            None => Ok(default),
        }
    }

    /// An int option: an `int` (or an object with `__index__`), not a bool or a float, at
    /// least `min`.
    pub fn int(&mut self, name: &str, min: i128) -> PyResult<Option<i128>> {
        let Some(value) = self.take(name)? else {
            return Ok(None);
        };
        let wrong =
            || PyTypeError::new_err(format!("{name} must be an int, not {}", type_name(&value)));
        if value.is_instance_of::<PyBool>() || value.is_instance_of::<PyFloat>() {
            return Err(wrong());
        }
        let n: i128 = value.extract().map_err(|_| wrong())?;
        if n < min {
            return Err(PyValueError::new_err(format!(
                "{name} must be >= {min}, not {n}"
            )));
        }
        Ok(Some(n))
    }

    /// A bool option: `True` or `False` (not an int or any other truthy object).
    pub fn boolean(&mut self, name: &str) -> PyResult<Option<bool>> {
        let Some(value) = self.take(name)? else {
            return Ok(None);
        };
        let b = value.cast::<PyBool>().map_err(|_| {
            PyTypeError::new_err(format!("{name} must be a bool, not {}", type_name(&value)))
        })?;
        Ok(Some(b.is_true()))
    }

    /// A duration in seconds: an int or a float (not a bool or a string), finite, >= 0 and
    /// representable as a `Duration`; a negative zero is zero.
    pub fn seconds(&mut self, name: &str) -> PyResult<Option<f64>> {
        let Some(value) = self.take(name)? else {
            return Ok(None);
        };
        let not_a_number = || {
            PyTypeError::new_err(format!(
                "{name} must be a number of seconds (int or float), not {}",
                type_name(&value)
            ))
        };
        if value.is_instance_of::<PyBool>() || value.is_instance_of::<PyString>() {
            return Err(not_a_number());
        }
        let seconds = value.extract::<f64>().map_err(|_| not_a_number())? + 0.0;
        if !seconds.is_finite() || seconds < 0.0 {
            let what = if seconds.is_finite() {
                ">= 0"
            } else {
                "a finite number of"
            };
            return Err(PyValueError::new_err(format!(
                "{name} must be {what} seconds, not {seconds}"
            )));
        }
        Duration::try_from_secs_f64(seconds).map_err(|_| {
            PyValueError::new_err(format!("{name} is too large: {seconds} seconds"))
        })?;
        Ok(Some(seconds))
    }

    /// Refuses a keyword no option took.
    pub fn finish(self) -> PyResult<()> {
        match self.left.and_then(|left| left.keys().iter().next()) {
            Some(stray) => Err(PyTypeError::new_err(format!(
                "{}() got an unexpected keyword argument {}",
                self.callee,
                stray.repr()?
            ))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kwargs<'py>(py: Python<'py>, code: &str) -> Bound<'py, PyDict> {
        let code = std::ffi::CString::new(code).unwrap();
        py.eval(&code, None, None).unwrap().cast_into().unwrap()
    }

    #[test]
    fn options_are_taken_by_name_checked_and_a_stray_one_refused() {
        Python::initialize();
        Python::attach(|py| {
            let given = kwargs(py, "dict(n=3, flag=True, wait=0.5, name='x', unset=None)");
            let mut options = Kwargs::new("f", Some(&given)).unwrap();
            assert_eq!(options.int("n", 1).unwrap(), Some(3));
            assert_eq!(options.boolean("flag").unwrap(), Some(true));
            assert_eq!(options.seconds("wait").unwrap(), Some(0.5));
            assert_eq!(options.get("name", String::new()).unwrap(), "x");
            assert_eq!(
                options.get("unset", 7u32).unwrap(),
                7,
                "None is the default"
            );
            assert_eq!(options.int("absent", 0).unwrap(), None);
            options.finish().unwrap();
            assert!(Kwargs::new("f", None).unwrap().finish().is_ok());

            let stray = kwargs(py, "dict(n=1, nn=2)");
            let mut options = Kwargs::new("f", Some(&stray)).unwrap();
            options.int("n", 0).unwrap();
            assert_eq!(
                options.finish().unwrap_err().to_string(),
                "TypeError: f() got an unexpected keyword argument 'nn'"
            );
            for (bad, message) in [
                ("dict(v=True)", "TypeError: v must be an int, not bool"),
                ("dict(v=1.0)", "TypeError: v must be an int, not float"),
                ("dict(v=0)", "ValueError: v must be >= 1, not 0"),
            ] {
                let mut options = Kwargs::new("f", Some(&kwargs(py, bad))).unwrap();
                assert_eq!(
                    options.int("v", 1).unwrap_err().to_string(),
                    message,
                    "{bad}"
                );
            }
            for (bad, message) in [
                ("dict(v=1)", "TypeError: v must be a bool, not int"),
                ("dict(v='yes')", "TypeError: v must be a bool, not str"),
            ] {
                let mut options = Kwargs::new("f", Some(&kwargs(py, bad))).unwrap();
                assert_eq!(
                    options.boolean("v").unwrap_err().to_string(),
                    message,
                    "{bad}"
                );
            }
            for (bad, message) in [
                ("dict(v=-1)", "ValueError: v must be >= 0 seconds, not -1"),
                (
                    "dict(v=float('inf'))",
                    "ValueError: v must be a finite number of seconds, not inf",
                ),
                ("dict(v=1e300)", "ValueError: v is too large: 1000000"),
                (
                    "dict(v='1')",
                    "TypeError: v must be a number of seconds (int or float), not str",
                ),
            ] {
                let mut options = Kwargs::new("f", Some(&kwargs(py, bad))).unwrap();
                let error = options.seconds("v").unwrap_err().to_string();
                assert!(error.starts_with(message), "{bad}: {error}");
            }
            let negative_zero = kwargs(py, "dict(v=-0.0)");
            let mut options = Kwargs::new("f", Some(&negative_zero)).unwrap();
            assert_eq!(
                options.seconds("v").unwrap().map(f64::is_sign_negative),
                Some(false)
            );
            let wrong = kwargs(py, "dict(v='x')");
            let mut options = Kwargs::new("f", Some(&wrong)).unwrap();
            let error = options.get::<u32>("v", 0).unwrap_err().to_string();
            assert!(error.starts_with("TypeError: argument 'v': "), "{error}");
        });
    }
}
