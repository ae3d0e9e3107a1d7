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

/// Where [`Cache::read_mapped_location`] found a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MappedPayload<'a> {
    /// Stored uncompressed: `len` bytes at byte `offset` of shard `shard`'s file
    /// ([`Cache::shard_path`]).
    InShard {
        /// Shard id.
        shard: u64,
        /// Offset of the payload's first byte in the shard file.
        offset: u64,
        /// Payload length.
        len: usize,
    },
    /// Stored compressed: the decoded bytes, in the caller's [`SampleBuf`].
    Decoded(&'a [u8]),
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
    pub(crate) fn locate(&self, sample: u64) -> Result<(IndexRow, &Shard, usize), CacheError> {
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
        let read = match &self.source {
            None => shard
                .file()
                .and_then(|file| file.read_exact_at(record, row.offset)),
            Some(source) => source.read_at(row.shard_id, row.offset, record),
        };
        read.map_err(self.io_error(CacheFile::Shard(row.shard_id)))?;
        let (stored_at, metadata) = self.check_record(sample, row, record)?;
        Ok((stored_at..record.len(), metadata))
    }

    /// Checks record `record` of `sample` (its envelope against metadata.arrow); returns where
    /// its stored payload starts within it and the metadata row it was checked against.
    pub(crate) fn check_record(
        &self,
        sample: u64,
        row: &IndexRow,
        record: &[u8],
    ) -> Result<(usize, RowView<'_>), CacheError> {
        let record_error = |source| self.record_error(sample, row, source);
        let metadata = self.metadata_row(sample)?;
        let (json, stored) = split_record(record).map_err(record_error)?;
        self.envelope
            .check(json, self.schema(), |c| {
                metadata.get(c).unwrap_or(ValueRef::Null)
            })
            .map_err(|e| record_error(RecordError::Envelope(e)))?;
        Ok((record.len() - stored.len(), metadata))
    }

    /// Reads sample `sample` like [`Cache::read`], but from a read-only memory map of its
    /// shard instead of a positional read: an uncompressed payload is returned as a slice of
    /// the mapping (no system call, no copy), an LZ4 payload is decoded into `buf`. The same
    /// checks run (index row, record envelope against metadata.arrow, payload decoding).
    ///
    /// The shard is mapped on its first mapped read and stays mapped while the cache is open.
    /// The format's rule that published caches are immutable while readers are alive matters
    /// more here than for [`Cache::read`]: a shard truncated behind the reader's back makes an
    /// access to the vanished part fault (`SIGBUS`) instead of returning an I/O error; a record
    /// lying past the end of the mapping is reported as [`CacheError::Io`].
    ///
    /// A cache opened with a [`ShardSource`](crate::ShardSource) has no file to map: this is
    /// [`Cache::read`] there.
    pub fn read_mapped<'a>(
        &'a self,
        sample: u64,
        buf: &'a mut SampleBuf,
    ) -> Result<SampleRef<'a>, CacheError> {
        if self.source.is_some() {
            return self.read(sample, buf);
        }
        let (row, shard, record, stored_at, metadata) = self.mapped_record(sample)?;
        let payload = load_payload(shard.algo, &record[stored_at..], &mut buf.decoded)
            .map_err(|source| self.record_error(sample, &row, source))?;
        Ok(SampleRef {
            sample,
            payload,
            metadata,
        })
    }

    /// Checks sample `sample` like [`Cache::read_mapped`] and says where its payload is,
    /// without touching the payload bytes when they are stored uncompressed: for zero-copy
    /// readers that map the shard file themselves ([`Cache::shard_path`]). An LZ4 payload is
    /// decoded into `buf`; so is every payload of a cache whose shards come from a
    /// [`ShardSource`](crate::ShardSource), read through it.
    pub fn read_mapped_location<'a>(
        &'a self,
        sample: u64,
        buf: &'a mut SampleBuf,
    ) -> Result<MappedPayload<'a>, CacheError> {
        if self.source.is_some() {
            // No file to map: the payload is read through the source.
            return Ok(MappedPayload::Decoded(self.read(sample, buf)?.payload));
        }
        let (row, shard, record, stored_at, _) = self.mapped_record(sample)?;
        if shard.algo == dsrt_manifest::CompressionAlgo::None {
            return Ok(MappedPayload::InShard {
                shard: row.shard_id,
                offset: row.offset + stored_at as u64,
                len: record.len() - stored_at,
            });
        }
        load_payload(shard.algo, &record[stored_at..], &mut buf.decoded)
            .map(MappedPayload::Decoded)
            .map_err(|source| self.record_error(sample, &row, source))
    }

    /// The mapped record of `sample`, checked against metadata.arrow: its index row, shard,
    /// bytes, the stored payload's start within them, and the metadata row.
    #[allow(clippy::type_complexity)]
    fn mapped_record(
        &self,
        sample: u64,
    ) -> Result<(IndexRow, &Shard, &[u8], usize, RowView<'_>), CacheError> {
        let (row, shard, len) = self.locate(sample)?;
        let map = shard
            .map()
            .map_err(self.io_error(CacheFile::Shard(row.shard_id)))?;
        let (_, record) = self.record_in(&row, len, map)?;
        let (stored_at, metadata) = self.check_record(sample, &row, record)?;
        Ok((row, shard, record, stored_at, metadata))
    }

    /// The `len` bytes of `row`'s record within `shard_bytes` (its whole shard, mapped or
    /// shared), with the offset they start at; an I/O error when they lie past its end.
    pub(crate) fn record_in<'b>(
        &self,
        row: &IndexRow,
        len: usize,
        shard_bytes: &'b [u8],
    ) -> Result<(usize, &'b [u8]), CacheError> {
        usize::try_from(row.offset)
            .ok()
            .and_then(|start| Some((start, shard_bytes.get(start..start.checked_add(len)?)?)))
            .ok_or_else(|| {
                self.io_error(CacheFile::Shard(row.shard_id))(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the record lies past the end of the shard",
                ))
            })
    }

    /// Reads sample `sample` into a new owned [`Sample`].
    pub fn sample(&self, sample: u64) -> Result<Sample, CacheError> {
        let mut buf = SampleBuf::new();
        Ok(self.read(sample, &mut buf)?.to_owned())
    }

    pub(crate) fn record_error(
        &self,
        sample: u64,
        row: &IndexRow,
        source: RecordError,
    ) -> CacheError {
        CacheError::Record {
            path: self.path.clone(),
            sample,
            shard: row.shard_id,
            offset: row.offset,
            source,
        }
    }
}
