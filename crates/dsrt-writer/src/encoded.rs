//! Samples made ready for a [`CacheWriter`] on other threads.
//!
//! Packing many inputs in parallel keeps the output identical to a serial run by appending in
//! input order on one thread; what may run anywhere is everything a sample costs before its
//! bytes are placed: checking its metadata against the schema, encoding its envelope and
//! compressing its payload. A [`SampleEncoder`] does that work; [`CacheWriter::add_encoded`]
//! only copies the result into the shard, the index and the metadata.

use crate::{CacheWriter, WriteError};
use dsrt_manifest::CompressionAlgo;
use dsrt_schema::{RowError, Schema, Value, ValueRef};
use dsrt_shard::{store_payload, EnvelopeCodec};
use std::sync::Arc;

/// Encodes samples for the writer it came from ([`CacheWriter::encoder`]); cheap to clone and
/// shared by threads.
#[derive(Debug, Clone)]
pub struct SampleEncoder {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    schema: Schema,
    codec: EnvelopeCodec,
    compression: CompressionAlgo,
}

/// One sample checked, with its envelope encoded and its payload in stored form: what
/// [`CacheWriter::add_encoded`] appends.
#[derive(Debug, Clone)]
pub struct EncodedSample {
    /// The encoder's settings, to refuse a sample of another writer.
    origin: Arc<Shared>,
    envelope: Vec<u8>,
    stored: Vec<u8>,
    payload_len: usize,
    values: Vec<Value>,
}

impl EncodedSample {
    /// The payload's length before compression.
    pub fn payload_len(&self) -> usize {
        self.payload_len
    }

    /// The metadata values, in schema order.
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// The bytes this sample takes in a shard (header, envelope and stored payload), which
    /// decides where shards are cut.
    pub fn record_len(&self) -> usize {
        dsrt_shard::RECORD_HEADER_LEN + self.envelope.len() + self.stored.len()
    }
}

/// Why a sample could not be encoded.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// Its metadata does not fit the schema.
    #[error(transparent)]
    Row(#[from] RowError),
    /// Its payload is too large for the writer's compression (an LZ4 block holds at most
    /// `u32::MAX` bytes).
    #[error("a payload of {len} bytes is too large for LZ4 (at most 4 GiB - 1)")]
    PayloadTooLarge {
        /// The payload's length.
        len: usize,
    },
}

impl SampleEncoder {
    pub(crate) fn new(schema: &Schema, compression: CompressionAlgo) -> Self {
        Self {
            shared: Arc::new(Shared {
                schema: schema.clone(),
                codec: EnvelopeCodec::new(schema),
                compression,
            }),
        }
    }

    /// The schema samples are checked against.
    pub fn schema(&self) -> &Schema {
        &self.shared.schema
    }

    /// Checks `values` (schema order) and makes `payload` ready to append. An uncompressed
    /// payload is kept as given, not copied.
    pub fn encode(
        &self,
        payload: Vec<u8>,
        values: Vec<Value>,
    ) -> Result<EncodedSample, EncodeError> {
        let shared = &*self.shared;
        let refs: smallvec::SmallVec<[ValueRef<'_>; 16]> =
            values.iter().map(Value::as_ref).collect();
        shared.schema.check_values(&refs)?;
        let mut envelope = Vec::with_capacity(64);
        shared.codec.encode(|i| refs[i], &mut envelope);
        drop(refs);
        let payload_len = payload.len();
        let stored = match shared.compression {
            CompressionAlgo::None => payload,
            CompressionAlgo::Lz4 => {
                let mut stored = Vec::with_capacity(payload_len / 2 + 16);
                store_payload(CompressionAlgo::Lz4, &payload, &mut stored)
                    .map_err(|_| EncodeError::PayloadTooLarge { len: payload_len })?;
                stored
            }
        };
        Ok(EncodedSample {
            origin: Arc::clone(&self.shared),
            envelope,
            stored,
            payload_len,
            values,
        })
    }
}

impl CacheWriter {
    /// An encoder for this writer's schema and compression, for other threads.
    pub fn encoder(&self) -> SampleEncoder {
        self.encoder.clone()
    }

    /// Appends a sample an [`encoder`](Self::encoder) of this writer made; returns its sample
    /// id. The cache is byte for byte what [`CacheWriter::add_values`] writes for the same
    /// payload and values.
    pub fn add_encoded(&mut self, sample: &EncodedSample) -> Result<u64, WriteError> {
        if !Arc::ptr_eq(&sample.origin, &self.encoder.shared) {
            return Err(WriteError::InvalidOption {
                path: self.path().to_path_buf(),
                option: "encoded sample",
                reason: "it was encoded by another writer's encoder".into(),
            });
        }
        let refs: smallvec::SmallVec<[ValueRef<'_>; 16]> =
            sample.values.iter().map(Value::as_ref).collect();
        self.append_stored(&sample.envelope, &sample.stored, sample.payload_len, &refs)
    }
}
