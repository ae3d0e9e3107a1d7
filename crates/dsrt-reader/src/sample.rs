use crate::cache::Shard;
use crate::{Cache, CacheError, CacheFile};
use dsrt_index::IndexRow;
use dsrt_metadata::RowView;
use dsrt_schema::{Value, ValueRef};
use dsrt_shard::{load_payload, split_record, RecordError};
use std::os::unix::fs::FileExt;

/// Reusable buffers for [`Cache::read`]: reading many samples through one `SampleBuf`
/// allocates only when a record is larger than any before it.
#[derive(Debug, Default)]
pub struct SampleBuf {
    record: Vec<u8>,
    decoded: Vec<u8>,
}

impl SampleBuf {
    /// Empty buffers.
    pub fn new() -> Self {
        Self::default()
    }
}

/// A sample borrowed from a [`SampleBuf`] and its cache.
#[derive(Debug, Clone, Copy)]
pub struct SampleRef<'a> {
    /// Sample id within its cache.
    pub sample: u64,
    /// The payload bytes, decompressed.
    pub payload: &'a [u8],
    /// The metadata row (from metadata.arrow, checked equal to the embedded copy).
    pub metadata: RowView<'a>,
}

impl SampleRef<'_> {
    /// Copies the sample out of its buffers.
    pub fn to_owned(&self) -> Sample {
        Sample {
            sample: self.sample,
            payload: self.payload.to_vec(),
            metadata: self
                .metadata
                .values()
                .map(|v: ValueRef<'_>| v.to_owned())
                .collect(),
        }
    }
}

/// An owned sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Sample id within its cache.
    pub sample: u64,
    /// The payload bytes, decompressed.
    pub payload: Vec<u8>,
    /// Metadata values in schema order.
    pub metadata: Vec<Value>,
}

impl Cache {
    /// Reads sample `sample` into `buf`: one index lookup, one positional read, the embedded
    /// metadata checked against metadata.arrow, the payload decoded. Allocation-free once `buf`
    /// has grown to the largest record.
    pub fn read<'a>(
        &'a self,
        sample: u64,
        buf: &'a mut SampleBuf,
    ) -> Result<SampleRef<'a>, CacheError> {
        let (row, shard, len) = self.locate(sample)?;
        if buf.record.len() < len {
            buf.record.resize(len, 0);
        }
        let record = &mut buf.record[..len];
        let (stored, metadata) = self.read_checked_record(sample, &row, shard, record)?;
        let payload = load_payload(shard.algo, &record[stored], &mut buf.decoded)
            .map_err(|source| self.record_error(sample, &row, source))?;
        Ok(SampleRef {
            sample,
            payload,
            metadata,
        })
    }

    /// Reads sample `sample` like [`Cache::read`], appending its payload to `out`, and returns
    /// the payload's range in `out`. An uncompressed record is read straight into `out` (its
    /// header and metadata JSON stay in front of the payload), so a loader filling one buffer
    /// with many samples copies each payload once, from the page cache.
    pub fn read_append(
        &self,
        sample: u64,
        buf: &mut SampleBuf,
        out: &mut Vec<u8>,
    ) -> Result<std::ops::Range<usize>, CacheError> {
        let at = out.len();
        let read = self.read_at(sample, buf, out, at);
        out.truncate(read.as_ref().map_or(at, |range| range.end));
        read
    }

    /// Reads sample `sample` like [`Cache::read_append`], but into `out` from offset `at`, and
    /// returns the payload's range. `out[..at]` is never touched; from `at` on, `out` is scratch
    /// (the record is read there, then the payload's range is returned) and grows, zero-filled,
    /// only when the record does not fit. It is never shortened, so a loader that recycles its
    /// buffers at full length reads into memory that is already initialised, with no zero-fill
    /// per sample.
    pub fn read_at(
        &self,
        sample: u64,
        buf: &mut SampleBuf,
        out: &mut Vec<u8>,
        at: usize,
    ) -> Result<std::ops::Range<usize>, CacheError> {
        let (row, shard, len) = self.locate(sample)?;
        let end = at.saturating_add(len);
        if out.len() < end {
            out.resize(end, 0);
        }
        let (stored, _) = self.read_checked_record(sample, &row, shard, &mut out[at..end])?;
        let stored = at + stored.start..at + stored.end;
        if shard.algo == dsrt_manifest::CompressionAlgo::None {
            return Ok(stored);
        }
        // A compressed payload decodes through `buf`, then replaces the record in `out`.
        buf.record.clear();
        buf.record.extend_from_slice(&out[stored]);
        let payload = load_payload(shard.algo, &buf.record, &mut buf.decoded)
            .map_err(|source| self.record_error(sample, &row, source))?;
        let end = at + payload.len();
        if out.len() < end {
            out.resize(end, 0);
        }
        out[at..end].copy_from_slice(payload);
        Ok(at..end)
    }

    /// The index row of `sample`, its shard and the record's length.
    fn locate(&self, sample: u64) -> Result<(IndexRow, &Shard, usize), CacheError> {
        let row = self.index.row(sample).map_err(|source| CacheError::Index {
            path: self.path.clone(),
            source,
        })?;
        let len = usize::try_from(row.length).map_err(|_| {
            self.record_error(
                sample,
                &row,
                RecordError::Short {
                    record_len: row.length,
                },
            )
        })?;
        let shard = usize::try_from(row.shard_id)
            .ok()
            .and_then(|id| self.shards.get(id))
            .ok_or_else(|| CacheError::Index {
                path: self.path.clone(),
                source: dsrt_index::IndexError::UnknownShard {
                    sample,
                    shard_id: row.shard_id,
                    shard_count: self.shards.len(),
                },
            })?;
        Ok((row, shard, len))
    }

    /// Reads the whole record into `record` (exactly its length) and checks its envelope
    /// against metadata.arrow; returns the stored payload's range within `record` and the
    /// metadata row it was checked against.
    fn read_checked_record(
        &self,
        sample: u64,
        row: &IndexRow,
        shard: &Shard,
        record: &mut [u8],
    ) -> Result<(std::ops::Range<usize>, RowView<'_>), CacheError> {
        let record_error = |source| self.record_error(sample, row, source);
        let file = shard
            .file()
            .map_err(self.io_error(CacheFile::Shard(row.shard_id)))?;
        file.read_exact_at(record, row.offset)
            .map_err(self.io_error(CacheFile::Shard(row.shard_id)))?;
        let metadata = self.metadata_row(sample)?;
        let (json, stored) = split_record(record).map_err(record_error)?;
        self.envelope
            .check(json, self.schema(), |c| {
                metadata.get(c).unwrap_or(ValueRef::Null)
            })
            .map_err(|e| record_error(RecordError::Envelope(e)))?;
        Ok((record.len() - stored.len()..record.len(), metadata))
    }

    /// Reads sample `sample` into a new owned [`Sample`].
    pub fn sample(&self, sample: u64) -> Result<Sample, CacheError> {
        let mut buf = SampleBuf::new();
        Ok(self.read(sample, &mut buf)?.to_owned())
    }

    fn record_error(&self, sample: u64, row: &IndexRow, source: RecordError) -> CacheError {
        CacheError::Record {
            path: self.path.clone(),
            sample,
            shard: row.shard_id,
            offset: row.offset,
            source,
        }
    }
}
