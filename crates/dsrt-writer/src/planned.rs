//! Samples placed before their payloads are read, and shards written side by side.
//!
//! A streaming writer learns where a shard ends only as records arrive, so one thread appends
//! every byte in order. Where each payload's length is known up front (a file's size, stored
//! uncompressed), the rotation rule can run ahead of the bytes: [`CacheWriter::plan_sample`]
//! places a sample (its index row and metadata row are written then) and says when it starts a
//! new shard; each planned shard is then written whole on a thread of its own through a
//! [`PlannedShardWriter`] and handed back, in order, with [`CacheWriter::adopt_shard`]. The
//! cache is byte for byte the one [`CacheWriter::add_values`] writes for the same samples.

use crate::writer::io_error;
use crate::{CacheWriter, WriteError};
use dsrt_index::IndexRow;
use dsrt_manifest::CompressionAlgo;
use dsrt_schema::ValueRef;
use dsrt_shard::{
    starts_new_shard, EnvelopeCodec, FinishedShard, ShardFileWriter, RECORD_HEADER_LEN,
};
use std::path::PathBuf;

/// Where [`CacheWriter::plan_sample`] placed a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedSample {
    /// Its sample id.
    pub sample: u64,
    /// The shard it goes into.
    pub shard: u64,
    /// Whether it is that shard's first record (so every shard before it is complete).
    pub starts_shard: bool,
}

/// The byte length of every shard planned so far (the last one may still grow).
#[derive(Debug, Default)]
pub(crate) struct Plan {
    shard_lens: Vec<u64>,
}

impl Plan {
    /// Shards planned so far.
    pub(crate) fn shards(&self) -> usize {
        self.shard_lens.len()
    }
}

/// Writes one planned shard, record by record in plan order, on any thread: each record is
/// hashed and written by the calling thread while its bytes are still in that thread's cache.
#[derive(Debug)]
pub struct PlannedShardWriter {
    path: PathBuf,
    file: ShardFileWriter,
    codec: EnvelopeCodec,
    envelope: Vec<u8>,
}

impl PlannedShardWriter {
    /// The shard's id.
    pub fn shard(&self) -> u64 {
        self.file.id() as u64
    }

    /// Appends the next sample of the shard: the payload and metadata values (schema order)
    /// [`CacheWriter::plan_sample`] was given for it.
    pub fn append(&mut self, payload: &[u8], values: &[ValueRef<'_>]) -> Result<(), WriteError> {
        self.envelope.clear();
        self.codec.encode(|i| values[i], &mut self.envelope);
        self.file
            .append_stored(&self.envelope, payload, payload.len())
            .map_err(io_error(&self.path, "write shard"))
    }

    /// The shard, written (not yet fsynced), for [`CacheWriter::adopt_shard`].
    pub fn finish(self) -> Result<FinishedShard, WriteError> {
        self.file
            .finish()
            .map_err(io_error(&self.path, "write shard"))
    }
}

impl CacheWriter {
    /// Whether [`Self::plan_sample`] takes samples: the cache is uncompressed and no sample was
    /// appended.
    pub fn can_plan(&self) -> bool {
        self.options.compression == CompressionAlgo::None
            && (self.plan.is_some() || self.samples == 0)
    }

    /// Shards finished so far: closed by appending, or planned and adopted.
    pub fn shards_written(&self) -> usize {
        self.shards.finished_shards()
    }

    /// Places a sample whose payload of `payload_len` bytes will be written later, by the
    /// [`PlannedShardWriter`] of its shard: checks `values` (schema order) and writes its index
    /// row and metadata row now. Only an uncompressed cache plans ahead (a compressed length
    /// is known only once compressed), and planned samples cannot follow appended ones.
    pub fn plan_sample(
        &mut self,
        payload_len: usize,
        values: &[ValueRef<'_>],
    ) -> Result<PlannedSample, WriteError> {
        if self.options.compression != CompressionAlgo::None {
            return Err(
                self.plan_misuse("only an uncompressed cache plans its shards ahead".into())
            );
        }
        if self.plan.is_none() && self.samples > 0 {
            return Err(self.plan_misuse(
                "samples were appended already; planned samples cannot follow them".into(),
            ));
        }
        self.options
            .schema
            .check_values(values)
            .map_err(|source| self.row_error(source))?;
        if self.poisoned {
            return Err(WriteError::Poisoned {
                path: self.path.clone(),
            });
        }
        let mut envelope = std::mem::take(&mut self.envelope);
        envelope.clear();
        self.codec.encode(|i| values[i], &mut envelope);
        let record_len = (RECORD_HEADER_LEN + envelope.len() + payload_len) as u64;
        self.envelope = envelope;
        let max_shard_bytes = self.options.max_shard_bytes;
        let plan = self.plan.get_or_insert_with(Plan::default);
        let starts_shard = match plan.shard_lens.last() {
            None => true,
            Some(&bytes) => starts_new_shard(bytes, record_len, max_shard_bytes),
        };
        if starts_shard {
            plan.shard_lens.push(0);
        }
        let shard = plan.shard_lens.len() - 1;
        let offset = plan.shard_lens[shard];
        plan.shard_lens[shard] += record_len;
        let sample = self.samples;
        let location = IndexRow {
            shard_id: shard as u64,
            offset,
            length: record_len,
        };
        self.record_row(location, payload_len, values)?;
        Ok(PlannedSample {
            sample,
            shard: shard as u64,
            starts_shard,
        })
    }

    /// Creates the file of planned shard `shard` and a writer for it, to run on any thread.
    pub fn planned_shard_writer(&mut self, shard: u64) -> Result<PlannedShardWriter, WriteError> {
        let planned = self.plan.as_ref().map_or(0, Plan::shards);
        let id = usize::try_from(shard)
            .ok()
            .filter(|id| *id < planned)
            .ok_or_else(|| {
                self.plan_misuse(format!("shard {shard} is not planned ({planned} are)"))
            })?;
        let path = self.path.join(dsrt_shard::SHARDS_DIR_NAME);
        let file = self
            .shards
            .create_shard_file(id)
            .map_err(io_error(&path, "create shard"))?;
        Ok(PlannedShardWriter {
            path,
            file,
            codec: self.codec.clone(),
            envelope: Vec::with_capacity(64),
        })
    }

    /// Takes a planned shard a [`PlannedShardWriter`] finished, as the cache's next shard
    /// (shards are adopted in order), after checking it holds exactly the planned bytes.
    pub fn adopt_shard(&mut self, shard: FinishedShard) -> Result<(), WriteError> {
        let next = self.shards.finished_shards();
        let planned = self
            .plan
            .as_ref()
            .and_then(|plan| plan.shard_lens.get(next).copied());
        let written = shard.entry().byte_len;
        if planned != Some(written) || shard.entry().name != dsrt_manifest::shard_file_name(next) {
            return Err(self.plan_misuse(format!(
                "shard {} ({written} bytes) is not the next planned shard {next} ({} bytes)",
                shard.entry().name,
                planned.map_or_else(|| "none".to_owned(), |p| p.to_string()),
            )));
        }
        let path = self.path.join(dsrt_shard::SHARDS_DIR_NAME);
        self.shards
            .adopt(shard)
            .map_err(io_error(&path, "queue shard fsync"))
    }

    fn plan_misuse(&self, reason: String) -> WriteError {
        WriteError::InvalidOption {
            path: self.path.clone(),
            option: "planned shards",
            reason,
        }
    }
}
