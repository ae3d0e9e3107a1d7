use crate::inline::{FinishedShard, ShardFileWriter};
use crate::pipeline::PipelinedFile;
use crate::syncer::BackgroundSync;
use crate::{store_payload, RECORD_HEADER_LEN};
use dsrt_index::IndexRow;
use dsrt_manifest::{shard_file_name, CompressionAlgo, ShardEntry};
use std::fs::{File, OpenOptions};
use std::io;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};

/// The shards directory's name inside a cache directory.
pub const SHARDS_DIR_NAME: &str = "shards";

/// The validated shard-rotation target: a shard is closed before a record would push it past
/// this many bytes.
pub type MaxShardBytes = NonZeroU64;

struct OpenShard {
    id: usize,
    out: ShardOut,
    uncompressed_len: u64,
}

/// Where an open shard's bytes are hashed and written.
enum ShardOut {
    /// On two background threads (the default: one appending thread keeps three busy).
    Threads(PipelinedFile),
    /// On the appending thread (where every core already runs a writer of its own).
    Caller(ShardFileWriter),
}

impl ShardOut {
    fn bytes_written(&self) -> u64 {
        match self {
            Self::Threads(out) => out.bytes_written(),
            Self::Caller(out) => out.bytes_written(),
        }
    }
}

/// Appends records to `shards/000000.bin`, `000001.bin`, ..., rotating on `max_shard_bytes`.
///
/// A record never spans shards; a record larger than the target gets a shard of its own.
/// Each open shard is hashed and written on two background threads (see `pipeline.rs`; or on
/// the appending thread, see [`Self::io_threads`]), and fsynced on a third (early writeback while it grows, a final sync when it closes);
/// [`ShardSetWriter::finish`] waits for all of them.
pub struct ShardSetWriter {
    dir: PathBuf,
    algo: CompressionAlgo,
    max_shard_bytes: u64,
    current: Option<OpenShard>,
    finished: Vec<ShardEntry>,
    compressed: Vec<u8>,
    syncer: BackgroundSync,
    io_threads: bool,
}

impl ShardSetWriter {
    /// Writes shards into `dir` (which must exist and be empty of shard names).
    pub fn new(dir: &Path, algo: CompressionAlgo, max_shard_bytes: MaxShardBytes) -> Self {
        Self {
            dir: dir.to_path_buf(),
            algo,
            max_shard_bytes: max_shard_bytes.get(),
            current: None,
            finished: Vec::new(),
            compressed: Vec::new(),
            syncer: BackgroundSync::default(),
            io_threads: true,
        }
    }

    /// Whether each shard is hashed and written on two background threads (`true`, the
    /// default) or on the thread that appends (`false`: less work in all and no hand-off
    /// between cores, the better choice where every core already runs a writer, as in a pool
    /// of worker processes each writing a cache). The bytes are the same.
    pub fn io_threads(mut self, threads: bool) -> Self {
        self.io_threads = threads;
        self
    }

    /// Appends one record and returns where it went.
    pub fn append(&mut self, envelope_json: &[u8], payload: &[u8]) -> io::Result<IndexRow> {
        // Only a compressed payload needs a staging copy; a plain one goes straight to the
        // shard's buffer.
        let mut compressed = std::mem::take(&mut self.compressed);
        let stored: &[u8] = match self.algo {
            CompressionAlgo::None => payload,
            CompressionAlgo::Lz4 => {
                compressed.clear();
                store_payload(self.algo, payload, &mut compressed)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                &compressed
            }
        };
        let row = self.append_stored(envelope_json, stored, payload.len());
        self.compressed = compressed;
        row
    }

    /// The algorithm payloads are stored with (what [`Self::append_stored`] expects).
    pub fn compression(&self) -> CompressionAlgo {
        self.algo
    }

    /// Appends one record whose payload is already in its stored form (compressed by
    /// [`store_payload`] with this writer's algorithm, on any thread) and was `payload_len`
    /// bytes before; returns where it went. The bytes written are those [`Self::append`]
    /// writes for the same payload.
    pub fn append_stored(
        &mut self,
        envelope_json: &[u8],
        stored: &[u8],
        payload_len: usize,
    ) -> io::Result<IndexRow> {
        let header = (envelope_json.len() as u64).to_le_bytes();
        let record_len = (header.len() + envelope_json.len() + stored.len()) as u64;
        let uncompressed_len = (RECORD_HEADER_LEN + envelope_json.len() + payload_len) as u64;
        let must_rotate = self.current.as_ref().is_some_and(|s| {
            starts_new_shard(s.out.bytes_written(), record_len, self.max_shard_bytes)
        });
        if must_rotate {
            close_shard(
                &mut self.current,
                self.algo,
                &mut self.finished,
                &mut self.syncer,
            )?;
        }
        if self.current.is_none() {
            self.current = Some(self.open_shard()?);
        }
        let shard = self.current.as_mut().expect("a shard was opened above");
        let offset = shard.out.bytes_written();
        match &mut shard.out {
            ShardOut::Threads(out) => {
                out.append(&header)?;
                out.append(envelope_json)?;
                out.append(stored)?;
            }
            ShardOut::Caller(out) => out.append_stored(envelope_json, stored, payload_len)?,
        }
        shard.uncompressed_len += uncompressed_len;
        Ok(IndexRow {
            shard_id: shard.id as u64,
            offset,
            length: record_len,
        })
    }

    /// Creates shard `id` for a [`ShardFileWriter`], to be written on any thread and handed
    /// back with [`Self::adopt`]: the way to write shards whose boundaries were planned ahead
    /// (with [`starts_new_shard`]) side by side. Fails if a shard is open for appending.
    pub fn create_shard_file(&mut self, id: usize) -> io::Result<ShardFileWriter> {
        if self.current.is_some() {
            return Err(io::Error::other(
                "a shard is open for appending; planned shards cannot be mixed in",
            ));
        }
        ShardFileWriter::create(&self.dir, id, self.algo, self.syncer.sender())
    }

    /// Takes a shard a [`ShardFileWriter`] finished as the next shard of the set (shards are
    /// adopted in id order) and queues its final fsync.
    pub fn adopt(&mut self, shard: FinishedShard) -> io::Result<()> {
        let expected = self.finished.len();
        if self.current.is_some() || shard.entry.name != shard_file_name(expected) {
            return Err(io::Error::other(format!(
                "shard {} adopted out of order: shard {expected} comes next",
                shard.entry.name
            )));
        }
        self.syncer.submit(shard.file)?;
        self.finished.push(shard.entry);
        Ok(())
    }

    /// Shards closed or adopted so far.
    pub fn finished_shards(&self) -> usize {
        self.finished.len()
    }

    /// Closes the last shard, waits until every shard is fsynced, fsyncs the shards directory
    /// and returns one entry per shard.
    pub fn finish(mut self) -> io::Result<Vec<ShardEntry>> {
        close_shard(
            &mut self.current,
            self.algo,
            &mut self.finished,
            &mut self.syncer,
        )?;
        self.syncer.finish()?;
        File::open(&self.dir)?.sync_all()?;
        Ok(self.finished)
    }
}

/// The rotation rule: a record of `record_len` bytes starts a new shard when the current one
/// already holds `shard_bytes` (more than none) and the record would take it past
/// `max_shard_bytes`. A record never spans shards, so one larger than the limit gets a shard
/// of its own.
pub fn starts_new_shard(shard_bytes: u64, record_len: u64, max_shard_bytes: u64) -> bool {
    shard_bytes > 0 && shard_bytes + record_len > max_shard_bytes
}

impl ShardSetWriter {
    fn open_shard(&mut self) -> io::Result<OpenShard> {
        let id = self.finished.len();
        let early_sync = self.syncer.sender();
        let out = if self.io_threads {
            let path = self.dir.join(shard_file_name(id));
            let file = OpenOptions::new().write(true).create_new(true).open(path)?;
            ShardOut::Threads(PipelinedFile::new(file, early_sync))
        } else {
            ShardOut::Caller(ShardFileWriter::create(
                &self.dir, id, self.algo, early_sync,
            )?)
        };
        Ok(OpenShard {
            id,
            out,
            uncompressed_len: 0,
        })
    }
}

/// Flushes the open shard, queues its final fsync and records its manifest entry.
fn close_shard(
    current: &mut Option<OpenShard>,
    algo: CompressionAlgo,
    finished: &mut Vec<ShardEntry>,
    syncer: &mut BackgroundSync,
) -> io::Result<()> {
    let Some(shard) = current.take() else {
        return Ok(());
    };
    match shard.out {
        ShardOut::Threads(out) => {
            let (file, digest, byte_len) = out.finish()?;
            syncer.submit(file)?;
            finished.push(ShardEntry::new(
                shard.id,
                algo,
                shard.uncompressed_len,
                byte_len,
                dsrt_atlas_codec::to_hex(&digest),
            ));
        }
        ShardOut::Caller(out) => {
            let done = out.finish()?;
            syncer.submit(done.file)?;
            finished.push(done.entry);
        }
    }
    Ok(())
}
