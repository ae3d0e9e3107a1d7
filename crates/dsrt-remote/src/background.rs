//! The threads a remote cache runs beside its readers (prefetch, and the downloads early reads
//! start), counted so that closing the cache can wait for them, within a bound.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Background threads still running, and a signal when one ends.
#[derive(Default)]
pub(crate) struct Background {
    running: Mutex<usize>,
    ended: Condvar,
}

impl Background {
    /// Runs `work` on a new thread named `name`; `false` if the OS refused one.
    pub(crate) fn spawn(
        self: &Arc<Self>,
        name: &str,
        work: impl FnOnce() + Send + 'static,
    ) -> bool {
        *self.lock() += 1;
        let counted = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                // Counted out also if `work` panics.
                let _ended = Ended(&counted);
                work();
            });
        if spawned.is_err() {
            self.end_one();
        }
        spawned.is_ok()
    }

    /// Waits until every thread has ended, for at most `timeout`; whether they all did.
    pub(crate) fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut running = self.lock();
        while *running > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            running = self
                .ended
                .wait_timeout(running, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, usize> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn end_one(&self) {
        let mut running = self.lock();
        *running = running.saturating_sub(1);
        self.ended.notify_all();
    }
}

/// Counts its thread out when dropped.
struct Ended<'a>(&'a Background);

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        self.0.end_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_returns_when_every_thread_ended_or_at_the_timeout() {
        let background = Arc::new(Background::default());
        let (release, hold) = std::sync::mpsc::channel::<()>();
        assert!(background.spawn("held", move || {
            let _ = hold.recv();
        }));
        assert!(background.spawn("quick", || {}));
        assert!(!background.wait(Duration::from_millis(50)), "one is held");
        drop(release);
        assert!(background.wait(Duration::from_secs(60)));
        assert!(background.spawn("panics", || panic!("counted out anyway")));
        assert!(background.wait(Duration::from_secs(60)));
    }
}
