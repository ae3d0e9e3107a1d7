//! Recycled chunk buffers for the loader.
//!
//! The pool lives in the [`Dataset`](crate::Dataset), so consecutive loaders (one per epoch)
//! and all their workers share its warm buffers.

use std::sync::{Arc, Mutex, Weak};

/// Chunk payload buffers, recycled. A chunk's buffer comes back when the last payload slice of
/// that chunk is dropped, at full length, so a steady epoch reads into a few warm, initialised
/// buffers: no page faults, no growth copies and no zero-fill per chunk. Chunks of large
/// samples are tens of MiB, and faulting in and zeroing that much per chunk costs as much as
/// reading it, so the bound is on bytes: at most [`POOL_BUFFERS`] buffers and
/// [`POOL_IDLE_BYTES`] (128 MiB) stay allocated while idle.
#[derive(Default)]
pub(crate) struct BufferPool(Mutex<Vec<Vec<u8>>>);

/// Buffers the pool keeps: enough for every chunk in flight in a typical configuration.
const POOL_BUFFERS: usize = 8;
/// The most bytes idle buffers may hold together; a buffer that would exceed it is freed.
const POOL_IDLE_BYTES: usize = 128 << 20;

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (buffers, bytes) = self.0.lock().map_or((0, 0), |free| {
            (free.len(), free.iter().map(Vec::capacity).sum::<usize>())
        });
        f.debug_struct("BufferPool")
            .field("buffers", &buffers)
            .field("bytes", &bytes)
            .finish()
    }
}

impl BufferPool {
    /// A buffer to fill from offset 0: a recycled one (at its full, initialised length) or a
    /// new, empty one.
    pub(crate) fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .ok()
            .and_then(|mut free| free.pop())
            .unwrap_or_default()
    }

    fn give_back(&self, buffer: Vec<u8>) {
        if let Ok(mut free) = self.0.lock() {
            let idle: usize = free.iter().map(Vec::capacity).sum();
            if free.len() < POOL_BUFFERS
                && idle.saturating_add(buffer.capacity()) <= POOL_IDLE_BYTES
            {
                free.push(buffer);
            }
        }
    }
}

/// One chunk's payload bytes, `data[..used]`; returns `data` to its pool when dropped.
pub(crate) struct PooledBuffer {
    data: Vec<u8>,
    used: usize,
    pool: Weak<BufferPool>,
}

impl PooledBuffer {
    /// `data[..used]`, going back to `pool` when the last slice of it is dropped.
    pub(crate) fn new(data: Vec<u8>, used: usize, pool: &Arc<BufferPool>) -> Self {
        let used = used.min(data.len());
        Self {
            data,
            used,
            pool: Arc::downgrade(pool),
        }
    }
}

impl AsRef<[u8]> for PooledBuffer {
    fn as_ref(&self) -> &[u8] {
        &self.data[..self.used]
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.give_back(std::mem::take(&mut self.data));
        }
    }
}
