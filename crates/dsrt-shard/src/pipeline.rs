//! A shard file written and hashed on two background threads.
//!
//! Hashing (SHA-256) and the write system calls each cost about as much as the other, and both
//! only read the bytes, so they run side by side on their own threads while the caller goes on
//! encoding records: the caller copies records into 1 MiB chunks and hands each chunk, shared,
//! to both threads. Bounded channels keep at most a few chunks in flight.

use crate::syncer::EARLY_SYNC_BYTES;
use bytes::Bytes;
use dsrt_atlas_codec::Sha256Digest;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

/// Bytes collected before a chunk is handed to the threads.
const CHUNK_BYTES: usize = 1 << 20;

/// Chunks each thread may have queued.
const CHUNKS_IN_FLIGHT: usize = 4;

pub(crate) struct PipelinedFile {
    chunk: Vec<u8>,
    written: u64,
    to_hasher: Option<SyncSender<Bytes>>,
    to_writer: Option<SyncSender<Bytes>>,
    hasher: Option<JoinHandle<Sha256Digest>>,
    writer: Option<JoinHandle<io::Result<File>>>,
}

impl PipelinedFile {
    /// Starts writing `file`; `early_sync` receives duplicates of the file's handle for early
    /// writeback as it grows.
    pub(crate) fn new(file: File, early_sync: SyncSender<File>) -> Self {
        let (to_hasher, hasher_rx) = sync_channel::<Bytes>(CHUNKS_IN_FLIGHT);
        let (to_writer, writer_rx) = sync_channel::<Bytes>(CHUNKS_IN_FLIGHT);
        let hasher = std::thread::spawn(move || {
            let mut sha = Sha256::new();
            for chunk in hasher_rx {
                sha.update(&chunk);
            }
            sha.finalize().into()
        });
        let writer = std::thread::spawn(move || {
            let mut file = file;
            let mut since_sync = 0u64;
            for chunk in writer_rx {
                file.write_all(&chunk)?;
                since_sync += chunk.len() as u64;
                if since_sync >= EARLY_SYNC_BYTES {
                    since_sync = 0;
                    // Advisory: the final fsync is what makes the file durable.
                    let _ = file.try_clone().map(|dup| early_sync.try_send(dup));
                }
            }
            Ok(file)
        });
        Self {
            chunk: Vec::with_capacity(CHUNK_BYTES),
            written: 0,
            to_hasher: Some(to_hasher),
            to_writer: Some(to_writer),
            hasher: Some(hasher),
            writer: Some(writer),
        }
    }

    /// Bytes appended so far.
    pub(crate) fn bytes_written(&self) -> u64 {
        self.written
    }

    /// Appends `bytes`.
    pub(crate) fn append(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        self.written += bytes.len() as u64;
        while !bytes.is_empty() {
            let room = CHUNK_BYTES - self.chunk.len();
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            self.chunk.extend_from_slice(now);
            bytes = later;
            if self.chunk.len() == CHUNK_BYTES {
                self.hand_off()?;
            }
        }
        Ok(())
    }

    fn hand_off(&mut self) -> io::Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.chunk,
            Vec::with_capacity(CHUNK_BYTES),
        ));
        let delivered = self
            .to_hasher
            .as_ref()
            .is_some_and(|tx| tx.send(chunk.clone()).is_ok())
            && self
                .to_writer
                .as_ref()
                .is_some_and(|tx| tx.send(chunk).is_ok());
        if delivered {
            Ok(())
        } else {
            // A thread stopped: its error (or panic) is reported by `finish`.
            Err(self
                .stop()
                .err()
                .unwrap_or_else(|| io::Error::other("shard writer thread stopped")))
        }
    }

    /// Waits for both threads; the file (all bytes written, not yet fsynced), its SHA-256 and
    /// its length.
    pub(crate) fn finish(mut self) -> io::Result<(File, Sha256Digest, u64)> {
        self.hand_off()?;
        let (file, digest) = self.stop()?;
        Ok((file, digest, self.written))
    }

    fn stop(&mut self) -> io::Result<(File, Sha256Digest)> {
        self.to_hasher = None;
        self.to_writer = None;
        let stopped = || io::Error::other("shard writer thread stopped");
        let file = match self.writer.take().map(JoinHandle::join) {
            Some(Ok(result)) => result?,
            _ => return Err(stopped()),
        };
        let digest = match self.hasher.take().map(JoinHandle::join) {
            Some(Ok(digest)) => digest,
            _ => return Err(stopped()),
        };
        Ok((file, digest))
    }
}

impl Drop for PipelinedFile {
    fn drop(&mut self) {
        // Close the channels so the threads end; an unfinished shard is not published anyway.
        self.to_hasher = None;
        self.to_writer = None;
    }
}
