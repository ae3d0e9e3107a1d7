//! Downloads ahead of the readers: the shards a reader's newest hint names, in its order,
//! `depth` at a time and without pause (a finished download starts the next one at once),
//! never further ahead than half the local cache's limit.

use crate::source::Shared;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// How long background downloads wait for the first read to be served before they start
/// anyway: a reader blocked on its first sample goes before speculative downloads.
const FIRST_READ_HEAD_START: Duration = Duration::from_millis(100);

/// The prefetch threads of one remote cache (counted in its `Shared::background`); dropping it
/// stops them after their current download, which a closing cache cuts short.
pub(crate) struct Prefetcher {
    queue: Arc<Queue>,
}

struct Queue {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// The newest hint: the shards a reader needs next, in the order it needs them.
    hint: Vec<u64>,
    /// Shards of `hint` found local (checked once per hint).
    present: Vec<u64>,
    /// Shards a prefetch thread is downloading or checking.
    in_flight: Vec<u64>,
    /// Shards whose download failed in a way trying again will not mend (not
    /// [`RemoteError::is_retryable`](crate::RemoteError::is_retryable): a SHA-256 that does
    /// not match, an object missing, ...): never fetched ahead again, whatever later hints
    /// say, so a bad object is not downloaded over and over; a reader that needs one fetches
    /// it itself and reports the failure.
    failed: Vec<u64>,
    closed: bool,
}

impl Prefetcher {
    /// Starts `depth` threads (fewer if the OS refuses some) serving `shared`'s hints.
    pub(crate) fn start(shared: &Arc<Shared>, depth: usize) -> Self {
        let queue = Arc::new(Queue {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        for _ in 0..depth {
            let (queue, inner) = (Arc::clone(&queue), Arc::clone(shared));
            if !shared
                .background
                .spawn("dsrt-prefetch", move || prefetch_loop(&queue, &inner))
            {
                tracing::warn!(
                    depth,
                    "the OS refused a prefetch thread; fewer downloads run ahead"
                );
            }
        }
        Self { queue }
    }

    /// Replaces the hint: what the reader needs next, in order.
    pub(crate) fn hint(&self, shards: &[u64]) {
        self.queue.hint(shards);
    }
}

impl Drop for Prefetcher {
    fn drop(&mut self) {
        self.queue.lock().closed = true;
        self.queue.changed.notify_all();
    }
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn hint(&self, shards: &[u64]) {
        let mut state = self.lock();
        if state.hint != shards {
            state.hint.clear();
            state.hint.extend_from_slice(shards);
        }
        state.present.clear();
        self.changed.notify_all();
    }

    /// The next shard to fetch: the first of the hint, within `ahead_limit` bytes of its
    /// start, that is neither local, nor being fetched, nor failed for good; waits for one.
    /// `None` once closed.
    fn next(&self, shard_len: impl Fn(u64) -> u64, ahead_limit: u64) -> Option<u64> {
        let mut state = self.lock();
        loop {
            if state.closed {
                return None;
            }
            let mut ahead = 0u64;
            let pick = state.hint.iter().copied().find(|&shard| {
                ahead = ahead.saturating_add(shard_len(shard));
                ahead <= ahead_limit
                    && !state.in_flight.contains(&shard)
                    && !state.present.contains(&shard)
                    && !state.failed.contains(&shard)
            });
            // `find` stops at the first match, so a pick past the limit is never returned.
            if let Some(shard) = pick.filter(|_| ahead <= ahead_limit) {
                state.in_flight.push(shard);
                return Some(shard);
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// `shard` is done with: fetched, or `failed` for good.
    fn finish(&self, shard: u64, failed: bool) {
        let mut state = self.lock();
        state.in_flight.retain(|&s| s != shard);
        if failed {
            state.failed.push(shard);
        } else if state.hint.contains(&shard) {
            state.present.push(shard);
        }
        self.changed.notify_all();
    }
}

/// Holds `shared` (and so the cache's files) until the queue closes.
fn prefetch_loop(queue: &Queue, shared: &Shared) {
    shared.wait_for_first_read(FIRST_READ_HEAD_START);
    let lens = shared.shard_lens();
    let shard_len = |shard: u64| {
        usize::try_from(shard)
            .ok()
            .and_then(|i| lens.get(i).copied())
            .unwrap_or(0)
    };
    while let Some(shard) = queue.next(shard_len, shared.cache_limit() / 2) {
        // A failure is reported when a reader needs the shard.
        let failed = !shared.is_local(shard)
            && shared
                .shard_file(shard)
                .is_err_and(|error| !error.is_retryable());
        queue.finish(shard, failed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> Queue {
        Queue {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        }
    }

    #[test]
    fn a_shard_that_failed_for_good_is_never_fetched_ahead_again() {
        let queue = queue();
        queue.hint(&[3, 4]);
        assert_eq!(queue.next(|_| 1, 10), Some(3));
        queue.finish(3, true);
        assert_eq!(queue.next(|_| 1, 10), Some(4));
        queue.finish(4, false);
        // A reader's next hint names both again: the fetched one is checked afresh (it may
        // have been evicted), the failed one is left to the reader.
        queue.hint(&[3, 4, 5]);
        assert_eq!(queue.next(|_| 1, 10), Some(4));
        assert_eq!(queue.next(|_| 1, 10), Some(5));
        queue.lock().closed = true;
        assert_eq!(queue.next(|_| 1, 10), None);
    }
}
