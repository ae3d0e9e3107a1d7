use crate::cache::Shard;
use crate::{Cache, CacheError, CacheFile};
use dsrt_index::IndexRow;
use dsrt_metadata::RowView;
use dsrt_schema::{Value, ValueRef};
use dsrt_shard::{load_payload, split_record, RecordError};
use handle_pool::FileMap;

/// Reusable buffers for [`Cache::read`]: reading many samples through one `SampleBuf`
/// allocates only when a record is larger than any before it.
#[derive(Debug, Default)]
pub struct SampleBuf {
    record: Vec<u8>,
    decoded: Vec<u8>,
    /// The mapping the last [`Cache::read_mapped`] payload lies in: held here, so the shard
    /// stays mapped while the payload is borrowed even if the handle pool releases it.
    mapping: Option<FileMap>,
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
#[derive(Debug, Clone)]
pub enum MappedPayload<'a> {
    /// Stored uncompressed: `len` bytes at byte `offset` of shard `shard`'s file
    /// ([`Cache::shard_path`]), which `map` maps whole (holding it keeps the bytes readable,
    /// whatever the handle pool releases meanwhile).
    InShard {
        /// Shard id.
        shard: u64,
        /// Offset of the payload's first byte in the shard file.
        offset: u64,
        /// Payload length.
        len: usize,
        /// The whole shard file, mapped.
        map: FileMap,
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
        let (stored, metadata) = self.read_checked_record(sample, &row, record)?;
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
        let (stored, _) = self.read_checked_record(sample, &row, &mut out[at..end])?;
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
        record: &mut [u8],
    ) -> Result<(std::ops::Range<usize>, RowView<'_>), CacheError> {
        let file = CacheFile::Shard(row.shard_id);
        match &self.source {
            None => {
                // `locate` found the shard id among the manifest's shards.
                let index = usize::try_from(row.shard_id).unwrap_or(usize::MAX);
                (self.files.read_exact_at(index, record, row.offset))
                    .map_err(self.io_error(file))?;
            }
            Some(source) => (source.read_at(row.shard_id, row.offset, record))
                .map_err(self.source_error(file))?,
        }
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
    /// The shard is mapped on its first mapped read and stays mapped until the process's
    /// handle pool releases it (the least recently used idle shard beyond
    /// [`HandlePool::capacity`](handle_pool::HandlePool::capacity)); `buf` holds the mapping
    /// of the payload it returns, so the payload stays valid while it is borrowed.
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
        let (row, algo, map, range, stored_at, metadata) = self.mapped_record(sample)?;
        let SampleBuf {
            decoded, mapping, ..
        } = buf;
        let record = &mapping.insert(map)[range];
        let payload = load_payload(algo, &record[stored_at..], decoded)
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
        let (row, algo, map, range, stored_at, _) = self.mapped_record(sample)?;
        if algo == dsrt_manifest::CompressionAlgo::None {
            return Ok(MappedPayload::InShard {
                shard: row.shard_id,
                offset: row.offset + stored_at as u64,
                len: range.len() - stored_at,
                map,
            });
        }
        let SampleBuf {
            decoded, mapping, ..
        } = buf;
        load_payload(algo, &mapping.insert(map)[range][stored_at..], decoded)
            .map(MappedPayload::Decoded)
            .map_err(|source| self.record_error(sample, &row, source))
    }

    /// The mapped record of `sample`, checked against metadata.arrow: its index row, its
    /// shard's compression, the shard's mapping, the record's range in it, the stored
    /// payload's start within the record, and the metadata row.
    #[allow(clippy::type_complexity)]
    fn mapped_record(
        &self,
        sample: u64,
    ) -> Result<
        (
            IndexRow,
            dsrt_manifest::CompressionAlgo,
            FileMap,
            std::ops::Range<usize>,
            usize,
            RowView<'_>,
        ),
        CacheError,
    > {
        let (row, shard, len) = self.locate(sample)?;
        let map = self.mapped_shard(row.shard_id)?;
        let (start, record) = self.record_in(&row, len, &map)?;
        let (stored_at, metadata) = self.check_record(sample, &row, record)?;
        let range = start..start + record.len();
        Ok((row, shard.algo, map, range, stored_at, metadata))
    }

    /// Shard `shard`'s file, mapped read-only whole: the mapping the process's handle pool
    /// keeps for it, or a new one. Holding the [`FileMap`] keeps it valid. A cache whose shards
    /// come from a [`ShardSource`](crate::ShardSource) has no file to map: an I/O error.
    pub fn mapped_shard(&self, shard: u64) -> Result<FileMap, CacheError> {
        let file = CacheFile::Shard(shard);
        if self.source.is_some() {
            return Err(self.io_error(file)(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "the shards of this cache come from a shard source, not files to map",
            )));
        }
        let index = usize::try_from(shard).unwrap_or(usize::MAX);
        self.files.map(index).map_err(self.io_error(file))
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
        // Memory running out decoding a payload is the process's limit, not a bad record.
        if let RecordError::Lz4(dsrt_atlas_codec::lz4::Lz4Error::OutOfMemory { needed }) = &source {
            return CacheError::Resource {
                path: self.path.clone(),
                file: CacheFile::Shard(row.shard_id),
                resource: handle_pool::Exhausted::Memory,
                source: std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    format!("decoding sample {sample}'s payload needs {needed} bytes"),
                ),
            };
        }
        CacheError::Record {
            path: self.path.clone(),
            sample,
            shard: row.shard_id,
            offset: row.offset,
            source,
        }
    }
}
