//! One shard file hashed and written on the calling thread.
//!
//! [`ShardSetWriter`](crate::ShardSetWriter) hands its bytes to a hasher and a writer thread,
//! which suits one appending thread. Where shards are written side by side, one thread each
//! (shards planned ahead, see [`starts_new_shard`](crate::starts_new_shard)), every core is
//! already busy and a hand-off only moves each byte to a cold cache: this writer hashes a
//! record and writes it while the caller still holds it in its cache. Small pieces (headers,
//! envelopes, small payloads) are staged and go out together, so a record costs few system
//! calls; a large payload goes straight from the caller's buffer.

use crate::syncer::EARLY_SYNC_BYTES;
use crate::RECORD_HEADER_LEN;
use dsrt_manifest::{shard_file_name, CompressionAlgo, ShardEntry};
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc::SyncSender;

/// Bytes staged before they are hashed and written together.
const STAGE_BYTES: usize = 256 << 10;

/// A stored payload at least this long skips the stage.
const WRITE_THROUGH_BYTES: usize = 16 << 10;

/// Writes one shard file, hashing it as it goes, on the calling thread.
pub struct ShardFileWriter {
    id: usize,
    algo: CompressionAlgo,
    file: File,
    sha: Sha256,
    staged: Vec<u8>,
    /// Bytes hashed and written (the staged ones follow them).
    written: u64,
    uncompressed_len: u64,
    since_sync: u64,
    early_sync: SyncSender<File>,
}

impl std::fmt::Debug for ShardFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardFileWriter")
            .field("id", &self.id)
            .field("bytes", &self.bytes_written())
            .finish_non_exhaustive()
    }
}

/// A shard a [`ShardFileWriter`] finished: its file (every byte written, not yet fsynced) and
/// its manifest entry.
#[derive(Debug)]
pub struct FinishedShard {
    pub(crate) file: File,
    pub(crate) entry: ShardEntry,
}

impl FinishedShard {
    /// Its manifest entry.
    pub fn entry(&self) -> &ShardEntry {
        &self.entry
    }
}

impl ShardFileWriter {
    /// Creates `dir/<shard id's file name>`, which must not exist; `early_sync` receives
    /// duplicates of its handle for early writeback as it grows.
    pub(crate) fn create(
        dir: &Path,
        id: usize,
        algo: CompressionAlgo,
        early_sync: SyncSender<File>,
    ) -> io::Result<Self> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(shard_file_name(id)))?;
        Ok(Self {
            id,
            algo,
            file,
            sha: Sha256::new(),
            staged: Vec::with_capacity(STAGE_BYTES),
            written: 0,
            uncompressed_len: 0,
            since_sync: 0,
            early_sync,
        })
    }

    /// The shard's id.
    pub fn id(&self) -> usize {
        self.id
    }

    /// Bytes appended so far.
    pub fn bytes_written(&self) -> u64 {
        self.written + self.staged.len() as u64
    }

    /// Appends one record whose payload is in stored form (`payload_len` bytes before
    /// compression): the bytes [`ShardSetWriter::append_stored`](crate::ShardSetWriter::append_stored)
    /// writes for it.
    pub fn append_stored(
        &mut self,
        envelope_json: &[u8],
        stored: &[u8],
        payload_len: usize,
    ) -> io::Result<()> {
        self.stage(&(envelope_json.len() as u64).to_le_bytes())?;
        self.stage(envelope_json)?;
        if stored.len() >= WRITE_THROUGH_BYTES {
            self.flush_staged()?;
            self.write_out(stored)?;
        } else {
            self.stage(stored)?;
        }
        self.uncompressed_len += (RECORD_HEADER_LEN + envelope_json.len() + payload_len) as u64;
        Ok(())
    }

    fn stage(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.staged.len() + bytes.len() > STAGE_BYTES {
            self.flush_staged()?;
        }
        if bytes.len() > STAGE_BYTES {
            return self.write_out(bytes);
        }
        self.staged.extend_from_slice(bytes);
        Ok(())
    }

    fn flush_staged(&mut self) -> io::Result<()> {
        if self.staged.is_empty() {
            return Ok(());
        }
        let staged = std::mem::take(&mut self.staged);
        let written = self.write_out(&staged);
        self.staged = staged;
        self.staged.clear();
        written
    }

    /// Hashes and writes `bytes`, which follow everything staged before them.
    fn write_out(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.sha.update(bytes);
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        self.since_sync += bytes.len() as u64;
        if self.since_sync >= EARLY_SYNC_BYTES {
            self.since_sync = 0;
            // Advisory: the final fsync is what makes the file durable.
            let _ = self
                .file
                .try_clone()
                .map(|dup| self.early_sync.try_send(dup));
        }
        Ok(())
    }

    /// Writes what is staged; the file (not yet fsynced) with its manifest entry.
    pub fn finish(mut self) -> io::Result<FinishedShard> {
        self.flush_staged()?;
        let digest: [u8; 32] = self.sha.finalize().into();
        let entry = ShardEntry::new(
            self.id,
            self.algo,
            self.uncompressed_len,
            self.written,
            dsrt_atlas_codec::to_hex(&digest),
        );
        Ok(FinishedShard {
            file: self.file,
            entry,
        })
    }
}
