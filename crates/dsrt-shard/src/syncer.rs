//! Fsyncs on a background thread, so the disk flushes finished and half-written shards while
//! the writer goes on hashing and writing. `finish` waits for every sync and reports the first
//! failure, so durability is exactly what it would be with inline fsyncs.

use std::fs::File;
use std::io;
use std::sync::mpsc::{channel, Sender};
use std::thread::JoinHandle;

#[derive(Default)]
pub(crate) struct BackgroundSync {
    worker: Option<(Sender<File>, JoinHandle<io::Result<()>>)>,
}

impl BackgroundSync {
    /// Queues `file` (a handle or a duplicate of one) for `fdatasync`.
    pub(crate) fn submit(&mut self, file: File) -> io::Result<()> {
        let (sender, _) = self.worker.get_or_insert_with(spawn);
        if let Err(returned) = sender.send(file) {
            // The thread is gone (it cannot panic, but be exact): sync inline.
            returned.0.sync_data()?;
        }
        Ok(())
    }

    /// A sender other threads can queue files on.
    pub(crate) fn sender(&mut self) -> Sender<File> {
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

fn spawn() -> (Sender<File>, JoinHandle<io::Result<()>>) {
    let (sender, receiver) = channel::<File>();
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
