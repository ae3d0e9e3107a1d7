//! What both Python bindings (`dsrt-python`, `atlas-python`) share, written once.
//!
//! What it is for: the machinery every binding needs and must get the same way:
//!
//! - [`enter`] (and [`enter_async`] for a future): the one call around every piece of Rust
//!   work a binding does. It releases the GIL, runs the closure, turns a panic into the
//!   binding's internal error, converts an error by its type into the binding's exception, and
//!   lets Ctrl-C through: a wait that a signal handler interrupted raises the handler's
//!   exception (`KeyboardInterrupt`) instead of the error the wait returned. An async call is
//!   polled on object-access's runtime and stopped between polls when Python has a signal to
//!   deliver.
//! - [`ExceptionClass`]: an exception class declared as data (name, bases, docstring), made
//!   on first use, with any number of bases (`UnknownCacheError` is a `DatasetError` and a
//!   `KeyError`).
//! - [`ErrorFields`]: how one error becomes an exception: its class, its message and its
//!   attributes (`path`, `reason`, `kind`, `retryable`, ...), set through [`Fields`].
//! - [`Kwargs`]: the options of a signature that takes them as `**options`, each by name
//!   with its check, a stray keyword refused as Python refuses it.
//! - [`to_python`] and [`from_python`]: plain data (reports, states) crossing as its serde
//!   form, one conversion for every type that has one.
//! - [`forward_logs`]: `tracing` events of INFO and above to Python's `logging`.
//! - [`add_testing`] and [`ErrorExamples`]: the `_testing` submodule of a wheel built with
//!   the `test-hooks` feature, and the list of one converted error per variant that each
//!   package's error-mapping test checks.
//!
//! What it is not for: anything about either format, or any Python class of a package.
//!
//! Layering: used by the two binding crates only; above `durable-fs` (the wait-interrupt
//! hook) and `object-access` (the runtime).
//!
//! # The pattern a binding follows
//!
//! A binding has one error type (an enum with a `From` for each Rust error it meets) that
//! implements [`ErrorFields`] (a table from variant to class and attributes) and
//! [`BindingError`], a one-line `enter` of its own that converts into it, and nothing else
//! between a Python call and the library:
//!
//! ```ignore
//! // errors.rs: the table.
//! impl ErrorFields for Error {
//!     fn class(&self) -> &'static ExceptionClass {
//!         match self {
//!             Error::Cache(CacheError::Checksum { .. }) => &CHECKSUM_ERROR,
//!             // ...
//!         }
//!     }
//!     fn message(&self) -> String { self.to_string() }
//!     fn fields(&self, fields: &mut Fields<'_>) {
//!         fields.set("path", self.path()).set("kind", self.kind());
//!     }
//! }
//!
//! pub(crate) fn enter<T: Send, E: Into<Error> + Send>(
//!     py: Python<'_>,
//!     work: impl FnOnce() -> Result<T, E> + Send,
//! ) -> PyResult<T> {
//!     py_support::enter(py, || work().map_err(Into::into))
//! }
//!
//! // Every method: convert the arguments, `enter`, convert the result.
//! fn read(&self, py: Python<'_>, i: u64) -> PyResult<Vec<u8>> {
//!     enter(py, || self.cache.read_vec(i))
//! }
//! ```
//!
//! A new error variant gets its row in the table; a new method gets `enter`. Nothing else
//! releases the GIL, catches a panic or checks for signals.
#![forbid(unsafe_code)]

mod enter;
mod exceptions;
mod kwargs;
mod logging;
mod serialized;
mod testing;

pub use enter::{enter, enter_async, install_interrupt_hook, panic_message, BindingError};
pub use exceptions::{raise, Base, ErrorFields, ExceptionClass, Fields};
pub use kwargs::{type_name, Kwargs};
pub use logging::forward_logs;
pub use serialized::{from_python, to_python};
pub use testing::{add_testing, variant_name, ErrorExamples};
