//! The crate's tokio runtime: its public API is synchronous, and every request runs here.

use std::future::Future;
use std::sync::{Mutex, PoisonError};

/// Worker threads of the shared runtime: requests are I/O-bound, so a few suffice.
const WORKER_THREADS: usize = 4;

/// The runtime of this process. A forked child (a PyTorch `DataLoader` worker, say) inherits
/// the parent's runtime without its threads, so a request there would wait forever: each
/// process builds its own on first use, and a child leaks the inherited one (dropping it
/// would wait for threads that do not exist in the child).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: Mutex<Option<(u32, &'static tokio::runtime::Runtime)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    match *slot {
        Some((owner, runtime)) if owner == pid => runtime,
        _ => {
            let runtime: &'static tokio::runtime::Runtime = Box::leak(Box::new(build()));
            *slot = Some((pid, runtime));
            runtime
        }
    }
}

fn build() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .thread_name("dsrt-remote")
        .enable_all()
        .build()
        // Building a runtime fails only when the OS refuses threads or a timer: nothing
        // this crate can serve any request without.
        .unwrap_or_else(|e| panic!("dsrt-remote: cannot start its tokio runtime: {e}"))
}

/// Runs `future` to completion on the shared runtime, blocking the calling thread. Must not be
/// called from inside a tokio runtime (the crate's API is for synchronous callers).
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    runtime().block_on(future)
}

/// Starts `future` on the shared runtime without waiting for it.
#[allow(dead_code)] // Used by the publishing side.
pub(crate) fn spawn<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    runtime().spawn(future)
}
