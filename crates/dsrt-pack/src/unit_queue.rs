//! One unit's queue from its worker to the appending thread, bounded by samples and by bytes.
//!
//! A bound in samples alone fits neither end of what gets packed: 64 images are megabytes, 64
//! token documents a few kilobytes, and a queue that small makes the worker of the next unit
//! wait for the appending thread after its first 64 documents, so two jobs pack no faster than
//! one. The worker may go on while the queue holds fewer than `samples` samples *or* fewer
//! than `bytes` bytes: large samples are held to the count, small ones to the bytes.

use std::collections::VecDeque;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

struct State<T> {
    items: VecDeque<(T, usize)>,
    bytes: usize,
    sender_alive: bool,
    receiver_alive: bool,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    changed: Condvar,
    samples: usize,
    bytes: usize,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The worker's end.
pub(crate) struct QueueSender<T>(Arc<Shared<T>>);

/// The appending thread's end.
pub(crate) struct QueueReceiver<T>(Arc<Shared<T>>);

/// A queue that holds at least `samples` items (at least 1) and, below that, items up to
/// `bytes` bytes in all.
pub(crate) fn unit_queue<T>(samples: usize, bytes: usize) -> (QueueSender<T>, QueueReceiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            items: VecDeque::new(),
            bytes: 0,
            sender_alive: true,
            receiver_alive: true,
        }),
        changed: Condvar::new(),
        samples: samples.max(1),
        bytes,
    });
    (QueueSender(Arc::clone(&shared)), QueueReceiver(shared))
}

impl<T> QueueSender<T> {
    /// Queues `item` of `bytes` bytes, waiting while the queue is full; gives it back when the
    /// receiver is gone.
    pub(crate) fn send(&self, item: T, bytes: usize) -> Result<(), T> {
        let shared = &self.0;
        let state = shared.lock();
        let mut state = shared
            .changed
            .wait_while(state, |s| {
                s.receiver_alive && s.items.len() >= shared.samples && s.bytes >= shared.bytes
            })
            .unwrap_or_else(PoisonError::into_inner);
        if !state.receiver_alive {
            return Err(item);
        }
        state.items.push_back((item, bytes));
        state.bytes += bytes;
        drop(state);
        shared.changed.notify_all();
        Ok(())
    }
}

impl<T> Drop for QueueSender<T> {
    fn drop(&mut self) {
        self.0.lock().sender_alive = false;
        self.0.changed.notify_all();
    }
}

impl<T> QueueReceiver<T> {
    /// The next item, waiting at most `timeout`; `Disconnected` once the queue is empty and
    /// its sender gone.
    pub(crate) fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        let shared = &self.0;
        let deadline = Instant::now() + timeout;
        let mut state = shared.lock();
        loop {
            if let Some((item, bytes)) = state.items.pop_front() {
                let was_full =
                    state.items.len() + 1 >= shared.samples && state.bytes >= shared.bytes;
                state.bytes -= bytes;
                drop(state);
                // Only a full queue has a worker waiting on it.
                if was_full {
                    shared.changed.notify_all();
                }
                return Ok(item);
            }
            if !state.sender_alive {
                return Err(RecvTimeoutError::Disconnected);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RecvTimeoutError::Timeout);
            }
            state = shared
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl<T> Drop for QueueReceiver<T> {
    fn drop(&mut self) {
        self.0.lock().receiver_alive = false;
        self.0.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Duration = Duration::from_millis(0);

    #[test]
    fn small_items_fill_the_bytes_large_ones_the_count() {
        let (tx, rx) = unit_queue::<u32>(2, 100);
        // Small items: past the count of 2, up to the 100 bytes.
        for i in 0..10 {
            tx.send(i, 10).unwrap();
        }
        let full = std::thread::scope(|scope| {
            let sender = scope.spawn(|| tx.send(10, 10));
            std::thread::sleep(Duration::from_millis(50));
            let waiting = !sender.is_finished();
            assert_eq!(rx.recv_timeout(NOW), Ok(0));
            sender.join().unwrap().unwrap();
            waiting
        });
        assert!(full, "the sender waits once 100 bytes are queued");
        for expected in 1..=10 {
            assert_eq!(rx.recv_timeout(NOW), Ok(expected));
        }
        // Large items: two are queued whatever their size.
        tx.send(11, 1_000).unwrap();
        tx.send(12, 1_000).unwrap();
        let third_waits = std::thread::scope(|scope| {
            let sender = scope.spawn(|| tx.send(13, 1));
            std::thread::sleep(Duration::from_millis(50));
            let waiting = !sender.is_finished();
            assert_eq!(rx.recv_timeout(NOW), Ok(11));
            sender.join().unwrap().unwrap();
            waiting
        });
        assert!(third_waits);
    }

    #[test]
    fn each_end_sees_the_other_go() {
        let (tx, rx) = unit_queue::<u32>(1, 0);
        tx.send(1, 5).unwrap();
        assert_eq!(rx.recv_timeout(NOW), Ok(1));
        assert_eq!(rx.recv_timeout(NOW), Err(RecvTimeoutError::Timeout));
        tx.send(2, 5).unwrap();
        drop(tx);
        assert_eq!(
            rx.recv_timeout(NOW),
            Ok(2),
            "what was sent is still received"
        );
        assert_eq!(rx.recv_timeout(NOW), Err(RecvTimeoutError::Disconnected));
        let (tx, rx) = unit_queue::<u32>(1, 0);
        tx.send(1, 5).unwrap();
        // A sender waiting on a full queue is released when the receiver goes.
        std::thread::scope(|scope| {
            let sender = scope.spawn(|| tx.send(2, 5));
            std::thread::sleep(Duration::from_millis(20));
            drop(rx);
            assert_eq!(sender.join().unwrap(), Err(2));
        });
    }
}
