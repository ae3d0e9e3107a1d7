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

struct OpenShard {
    id: usize,
    out: HashingWriter<BufWriter<File>>,
    uncompressed_len: u64,
}

/// Appends records to `shards/000000.bin`, `000001.bin`, ..., rotating on `max_shard_bytes`.
///
/// A record never spans shards; a record larger than the target gets a shard of its own.
/// Finished shards are flushed and fsynced before the next one opens.
pub struct ShardSetWriter {
    dir: PathBuf,
    algo: CompressionAlgo,
    max_shard_bytes: u64,
    current: Option<OpenShard>,
    finished: Vec<ShardEntry>,
    record: Vec<u8>,
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
            record: Vec::new(),
        }
    }

    /// Appends one record and returns where it went.
    pub fn append(&mut self, envelope_json: &[u8], payload: &[u8]) -> io::Result<IndexRow> {
        self.record.clear();
        self.record.extend_from_slice(&(envelope_json.len() as u64).to_le_bytes());
        self.record.extend_from_slice(envelope_json);
        store_payload(self.algo, payload, &mut self.record);
        let record_len = self.record.len() as u64;
        let uncompressed_len = (RECORD_HEADER_LEN + envelope_json.len() + payload.len()) as u64;
        let must_rotate = self
            .current
            .as_ref()
            .is_some_and(|s| s.out.bytes_written() > 0 && s.out.bytes_written() + record_len > self.max_shard_bytes);
        if must_rotate {
            self.close_current()?;
        }
        if self.current.is_none() {
            self.current = Some(self.open_next()?);
        }
        let shard = self.current.as_mut().expect("a shard was opened above");
        let offset = shard.out.bytes_written();
        shard.out.write_all(&self.record)?;
        shard.uncompressed_len += uncompressed_len;
        Ok(IndexRow { shard_id: shard.id as u64, offset, length: record_len })
    }

    fn open_next(&self) -> io::Result<OpenShard> {
        let id = self.finished.len();
        let path = self.dir.join(shard_file_name(id));
        let file = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(OpenShard { id, out: HashingWriter::new(BufWriter::with_capacity(WRITE_BUFFER, file)), uncompressed_len: 0 })
    }

    fn close_current(&mut self) -> io::Result<()> {
        let Some(shard) = self.current.take() else { return Ok(()) };
        let (buffered, digest, byte_len) = shard.out.finish();
        let file = buffered.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        self.finished.push(ShardEntry::new(shard.id, self.algo, shard.uncompressed_len, byte_len, codec::to_hex(&digest)));
        Ok(())
    }

    /// Closes the last shard, fsyncs the shards directory and returns one entry per shard.
    pub fn finish(mut self) -> io::Result<Vec<ShardEntry>> {
        self.close_current()?;
        File::open(&self.dir)?.sync_all()?;
        Ok(self.finished)
    }
}
