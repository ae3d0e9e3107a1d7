//! The process's tokio runtime, for synchronous callers.

use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

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
            // The one place a runtime is built (clippy.toml's disallowed-methods).
            #[allow(clippy::disallowed_methods)]
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

/// Runs `future` as [`block_on`] does, asking `stop` on the calling thread at least every
/// `poll` while it waits: `Ok(None)` when `stop` said `true`, the future then dropped
/// unfinished (its requests cancelled). How a synchronous caller lets a signal end a long
/// request: the Python bindings check for Ctrl-C here, on the thread Python delivers signals
/// to.
pub fn block_on_until<F: Future>(
    future: F,
    poll: Duration,
    mut stop: impl FnMut() -> bool,
) -> Result<Option<F::Output>, RuntimeUnavailable> {
    Ok(runtime()?.block_on(async move {
        let mut future = std::pin::pin!(future);
        loop {
            if let Ok(output) = tokio::time::timeout(poll, future.as_mut()).await {
                return Some(output);
            }
            if stop() {
                return None;
            }
        }
    }))
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

    #[test]
    fn a_stopped_wait_returns_between_polls_and_a_finished_one_its_output() {
        let poll = Duration::from_millis(20);
        let started = std::time::Instant::now();
        let mut asked = 0;
        let never = std::future::pending::<()>();
        let stopped = block_on_until(never, poll, || {
            asked += 1;
            asked == 3
        });
        assert_eq!(stopped.unwrap(), None);
        assert_eq!(asked, 3);
        assert!(started.elapsed() < Duration::from_secs(2));
        let done = block_on_until(async { 9 }, poll, || panic!("not asked: it finished"));
        assert_eq!(done.unwrap(), Some(9));
    }
}
