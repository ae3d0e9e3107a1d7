//! The one call around a binding's Rust work: GIL released, panic caught, error converted by
//! type, Ctrl-C let through.

use crate::exceptions::{raise, ErrorFields};
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError};
use pyo3::prelude::*;
use std::any::Any;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// A binding's error type: how each of its values becomes an exception ([`ErrorFields`]),
/// and the value a Rust panic becomes (the binding's internal-error class).
pub trait BindingError: ErrorFields + Sized {
    /// The error of a Rust panic whose message is `message`.
    fn panicked(message: String) -> Self;
}

/// Runs `work` with the GIL released. A panic becomes `B::panicked`, an error its exception
/// (through [`ErrorFields`]); when a signal handler raised while `work` waited (the wait asked
/// the hook [`install_interrupt_hook`] sets, which ran the handler), that exception is raised
/// instead of whatever `work` returned.
pub fn enter<B, T>(py: Python<'_>, work: impl FnOnce() -> Result<T, B> + Send) -> PyResult<T>
where
    B: BindingError + Send,
    T: Send,
{
    detached::<B, _>(py, work)?.map_err(|error| raise(py, &error))
}

/// Runs `future` on object-access's runtime as [`enter`] runs a closure, asking Python between
/// polls (every `durable_fs::INTERRUPT_POLL`) whether a signal handler raised: if one did, the
/// future is dropped (its requests cancelled) and the handler's exception is raised.
pub fn enter_async<B, T>(
    py: Python<'_>,
    future: impl Future<Output = Result<T, B>> + Send,
) -> PyResult<T>
where
    B: BindingError + Send,
    T: Send,
{
    let polled = detached::<B, _>(py, || {
        object_access::block_on_until(
            future,
            durable_fs::INTERRUPT_POLL,
            durable_fs::wait_interrupted,
        )
    })?;
    match polled {
        Ok(Some(result)) => result.map_err(|error| raise(py, &error)),
        // Stopped by the hook, whose exception `detached` raised; a hook of another kind
        // (none is set by these bindings) stops as Ctrl-C does.
        Ok(None) => Err(PyKeyboardInterrupt::new_err("interrupted")),
        Err(unavailable) => Err(PyOSError::new_err(unavailable.to_string())),
    }
}

/// `work` without the GIL; a panic as `B::panicked`, a pending signal exception first.
fn detached<B: BindingError, R: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> R + Send,
) -> PyResult<R> {
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(work)));
    if let Some(raised) = PyErr::take(py) {
        return Err(raised);
    }
    outcome.map_err(|panic| raise(py, &B::panicked(panic_message(panic.as_ref()))))
}

/// The text a panic carried (`"a Rust panic"` when it carried no text).
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a Rust panic".to_owned())
}

/// The thread that installed the hook: Python runs signal handlers on its main thread only,
/// which is the one that imports an extension module in practice.
static MAIN: OnceLock<std::thread::ThreadId> = OnceLock::new();

/// Installs the process's wait-interrupt hook (`durable_fs::set_wait_interrupt`): long waits
/// (the shard cache's, a loader's, an async call's) ask it between polls, and on the main
/// thread it runs Python's pending signal handlers. Called by each module's init; the first
/// call wins.
pub fn install_interrupt_hook() {
    let _ = MAIN.set(std::thread::current().id());
    durable_fs::set_wait_interrupt(python_signal_pending);
}

/// Whether a Python signal handler raised, on the main thread; its exception is left set for
/// [`enter`] to raise. Other threads (prefetch workers) never take the GIL here.
fn python_signal_pending() -> bool {
    if MAIN.get() != Some(&std::thread::current().id()) {
        return false;
    }
    Python::attach(|py| match py.check_signals() {
        Ok(()) => false,
        Err(raised) => {
            raised.restore(py);
            true
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exceptions::{Base, ExceptionClass, Fields};

    static FAILED: ExceptionClass =
        ExceptionClass::new("tests", "Failed", &[Base::Exception], "A failure.");
    static BUG: ExceptionClass =
        ExceptionClass::new("tests", "Bug", &[Base::Of(&FAILED)], "A bug.");

    #[derive(Debug)]
    enum Error {
        Failed(&'static str),
        Panicked(String),
    }

    impl ErrorFields for Error {
        fn class(&self) -> &'static ExceptionClass {
            match self {
                Error::Failed(_) => &FAILED,
                Error::Panicked(_) => &BUG,
            }
        }
        fn message(&self) -> String {
            format!("{self:?}")
        }
        fn fields(&self, fields: &mut Fields<'_>) {
            let reason = match self {
                Error::Failed(reason) => (*reason).to_owned(),
                Error::Panicked(message) => message.clone(),
            };
            fields.set("reason", reason).set_some("path", None::<&str>);
        }
    }

    impl BindingError for Error {
        fn panicked(message: String) -> Self {
            Error::Panicked(message)
        }
    }

    #[test]
    fn enter_returns_the_value_raises_the_error_by_its_class_and_a_panic_as_the_bug() {
        Python::initialize();
        Python::attach(|py| {
            assert_eq!(enter(py, || Ok::<_, Error>(7)).unwrap(), 7);
            let failed = enter(py, || Err::<(), _>(Error::Failed("no room"))).unwrap_err();
            assert!(failed.get_type(py).is(FAILED.get(py).unwrap()));
            let reason = failed.value(py).getattr("reason").unwrap();
            assert_eq!(reason.extract::<String>().unwrap(), "no room");
            assert!(!failed.value(py).hasattr("path").unwrap());
            let bug = enter(py, || -> Result<(), Error> { panic!("boom {}", 1) }).unwrap_err();
            assert!(bug.is_instance(py, &FAILED.get(py).unwrap()));
            assert!(bug.to_string().contains("boom 1"), "{bug}");
        });
    }

    #[test]
    fn an_async_call_runs_on_the_runtime_and_its_error_converts_the_same_way() {
        Python::initialize();
        Python::attach(|py| {
            assert_eq!(enter_async(py, async { Ok::<_, Error>(3) }).unwrap(), 3);
            let failed = enter_async(py, async { Err::<(), _>(Error::Failed("gone")) });
            assert!(failed.unwrap_err().to_string().contains("gone"));
        });
    }
}
