use crate::syncer::BackgroundSync;
use crate::{store_payload, RECORD_HEADER_LEN};
use codec::HashingWriter;
use dsrt_index::IndexRow;
use dsrt_manifest::{shard_file_name, CompressionAlgo, ShardEntry};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};

/// The shards directory's name inside a cache directory.
pub const SHARDS_DIR_NAME: &str = "shards";

/// The validated shard-rotation target: a shard is closed before a record would push it past
/// this many bytes.
pub type MaxShardBytes = NonZeroU64;

/// Bytes buffered per open shard before a write reaches the file.
const WRITE_BUFFER: usize = 1 << 20;

/// Written bytes of an open shard after which its writeback starts in the background, so the
/// final fsync finds little left to flush.
const EARLY_SYNC_BYTES: u64 = 8 << 20;

struct OpenShard {
    id: usize,
    out: HashingWriter<BufWriter<File>>,
    uncompressed_len: u64,
    synced_up_to: u64,
}

/// Appends records to `shards/000000.bin`, `000001.bin`, ..., rotating on `max_shard_bytes`.
///
/// A record never spans shards; a record larger than the target gets a shard of its own.
/// Shards are fsynced on a background thread (early writeback while a shard grows, a final
/// sync when it closes); [`ShardSetWriter::finish`] waits for all of them.
pub struct ShardSetWriter {
    dir: PathBuf,
    algo: CompressionAlgo,
    max_shard_bytes: u64,
    current: Option<OpenShard>,
    finished: Vec<ShardEntry>,
    compressed: Vec<u8>,
    syncer: BackgroundSync,
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
        }
    }

    /// Appends one record and returns where it went.
    pub fn append(&mut self, envelope_json: &[u8], payload: &[u8]) -> io::Result<IndexRow> {
        // Only a compressed payload needs a staging copy; a plain one goes straight to the
        // shard's buffer.
        let stored: &[u8] = match self.algo {
            CompressionAlgo::None => payload,
            CompressionAlgo::Lz4 => {
                self.compressed.clear();
                store_payload(self.algo, payload, &mut self.compressed);
                &self.compressed
            }
        };
        let header = (envelope_json.len() as u64).to_le_bytes();
        let record_len = (header.len() + envelope_json.len() + stored.len()) as u64;
        let uncompressed_len = (RECORD_HEADER_LEN + envelope_json.len() + payload.len()) as u64;
        let must_rotate = self.current.as_ref().is_some_and(|s| {
            s.out.bytes_written() > 0 && s.out.bytes_written() + record_len > self.max_shard_bytes
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
            self.current = Some(open_shard(&self.dir, self.finished.len())?);
        }
        let shard = self.current.as_mut().expect("a shard was opened above");
        let offset = shard.out.bytes_written();
        shard.out.write_all(&header)?;
        shard.out.write_all(envelope_json)?;
        shard.out.write_all(stored)?;
        shard.uncompressed_len += uncompressed_len;
        let row = IndexRow {
            shard_id: shard.id as u64,
            offset,
            length: record_len,
        };
        if shard.out.bytes_written() - shard.synced_up_to >= EARLY_SYNC_BYTES {
            shard.out.flush()?;
            shard.synced_up_to = shard.out.bytes_written();
            let handle = shard.out.get_ref().get_ref().try_clone()?;
            self.syncer.submit(handle)?;
        }
        Ok(row)
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

fn open_shard(dir: &Path, id: usize) -> io::Result<OpenShard> {
    let path = dir.join(shard_file_name(id));
    let file = OpenOptions::new().write(true).create_new(true).open(path)?;
    Ok(OpenShard {
        id,
        out: HashingWriter::new(BufWriter::with_capacity(WRITE_BUFFER, file)),
        uncompressed_len: 0,
        synced_up_to: 0,
    })
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
    let (buffered, digest, byte_len) = shard.out.finish();
    let file = buffered
        .into_inner()
        .map_err(io::IntoInnerError::into_error)?;
    syncer.submit(file)?;
    finished.push(ShardEntry::new(
        shard.id,
        algo,
        shard.uncompressed_len,
        byte_len,
        codec::to_hex(&digest),
    ));
    Ok(())
}
