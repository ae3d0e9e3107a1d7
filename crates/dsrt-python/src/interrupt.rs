//! Ctrl-C during a long wait: the shard cache's waits (for room, for another process's
//! download, up to `wait_for_room`) ask this module's hook between polls whether Python has a
//! signal to deliver; when it has, the wait fails and the handler's exception
//! (`KeyboardInterrupt` for Ctrl-C) is what the call raises.

use pyo3::prelude::*;
use std::sync::OnceLock;

/// The thread that imported the module: Python runs signal handlers only on its main thread,
/// which is the one that imports in practice.
static MAIN: OnceLock<std::thread::ThreadId> = OnceLock::new();

/// Installs the hook (once per process).
pub(crate) fn install() {
    let _ = MAIN.set(std::thread::current().id());
    dsrt_remote::set_wait_interrupt(python_signal_pending);
}

/// Whether a Python signal handler raised, on the main thread; its exception is left set for
/// [`pending`] to take. Other threads (prefetch workers) never take the GIL here.
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

/// The exception a signal handler raised during the call that just failed, if one did: it
/// replaces the Rust error (an interrupted wait) the call returned.
pub(crate) fn pending(py: Python<'_>) -> Option<PyErr> {
    PyErr::take(py)
}
