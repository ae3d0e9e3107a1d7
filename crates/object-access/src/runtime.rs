//! The process's tokio runtime, for synchronous callers.

use std::future::Future;
use std::sync::{Mutex, PoisonError};

/// Worker threads of the runtime: store requests are I/O-bound, so a few suffice.
const WORKER_THREADS: usize = 4;

/// The runtime could not be built: the OS refused a thread or a timer. A resource running out,
/// never a store or data error.
#[derive(Debug, thiserror::Error)]
#[error("cannot start the tokio runtime for object-store requests: {0}")]
pub struct RuntimeUnavailable(#[source] pub std::io::Error);

/// The runtime of this process, built on first use. A forked child (a PyTorch `DataLoader`
/// worker) inherits its parent's runtime without the threads that drive it, so a request there
/// would wait forever: each process builds its own, and a child leaks the inherited one
/// (dropping it would wait for threads that do not exist in the child).
pub fn runtime() -> Result<&'static tokio::runtime::Runtime, RuntimeUnavailable> {
    static RUNTIME: Mutex<Option<(u32, &'static tokio::runtime::Runtime)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    match *slot {
        Some((owner, runtime)) if owner == pid => Ok(runtime),
        _ => {
            let built = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(WORKER_THREADS)
                .thread_name("object-access")
                .enable_all()
                .build()
                .map_err(RuntimeUnavailable)?;
            let runtime: &'static tokio::runtime::Runtime = Box::leak(Box::new(built));
            *slot = Some((pid, runtime));
            Ok(runtime)
        }
    }
}

/// Runs `future` to completion on the process's runtime, blocking the calling thread. Must
/// not be called from inside a tokio runtime (it is for synchronous callers).
pub fn block_on<F: Future>(future: F) -> Result<F::Output, RuntimeUnavailable> {
    Ok(runtime()?.block_on(future))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_runtime_serves_every_caller_of_a_process() {
        let first = runtime().unwrap() as *const _;
        let second = runtime().unwrap() as *const _;
        assert_eq!(first, second);
        assert_eq!(block_on(async { 7 }).unwrap(), 7);
        let threads = std::thread::spawn(|| block_on(async { 8 }).unwrap());
        assert_eq!(threads.join().unwrap(), 8);
    }
}
