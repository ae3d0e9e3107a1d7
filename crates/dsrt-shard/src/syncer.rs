//! Fsyncs on a background thread, so the disk flushes finished and half-written shards while
//! the writer goes on hashing and writing. `finish` waits for every sync and reports the first
//! failure, so durability is exactly what it would be with inline fsyncs.

use std::fs::File;
use std::io;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

/// Bytes written to a file after which its writeback starts early, on the sync thread: the
/// disk then flushes as the file grows instead of all at once at the final fsync.
pub(crate) const EARLY_SYNC_BYTES: u64 = 4 << 20;

/// Files queued for the sync thread at most: a writer that finishes shards faster than the
/// disk syncs them waits, so open handles stay bounded however many shards a cache has.
const QUEUED_SYNCS: usize = 16;

#[derive(Default)]
pub(crate) struct BackgroundSync {
    worker: Option<(SyncSender<File>, JoinHandle<io::Result<()>>)>,
}

impl BackgroundSync {
    /// Queues `file` (a handle or a duplicate of one) for `fdatasync`, waiting while the queue
    /// is full.
    pub(crate) fn submit(&mut self, file: File) -> io::Result<()> {
        let (sender, _) = self.worker.get_or_insert_with(spawn);
        if let Err(returned) = sender.send(file) {
            // The thread is gone (it cannot panic, but be exact): sync inline.
            returned.0.sync_data()?;
        }
        Ok(())
    }

    /// A sender other threads can queue files on; early (advisory) syncs use `try_send`, so a
    /// full queue drops them rather than stalling a writer.
    pub(crate) fn sender(&mut self) -> SyncSender<File> {
        self.worker.get_or_insert_with(spawn).0.clone()
    }

    /// Waits until every queued sync is done; the first error, if any.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        let Some((sender, handle)) = self.worker.take() else {
            return Ok(());
        };
        drop(sender);
        handle
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("background fsync thread panicked")))
    }
}

fn spawn() -> (SyncSender<File>, JoinHandle<io::Result<()>>) {
    let (sender, receiver) = sync_channel::<File>(QUEUED_SYNCS);
    let handle = std::thread::spawn(move || {
        let mut first_error = None;
        for file in receiver {
            // fdatasync: shards are new files, so their size is the only metadata a reader
            // needs, and fdatasync persists it.
            if let Err(e) = file.sync_data() {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    });
    (sender, handle)
}
