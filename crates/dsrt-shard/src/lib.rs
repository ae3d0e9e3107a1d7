//! DatasetRT shard records.
//!
//! What it is for: the bytes of one record (`u64` LE JSON length, the sample's metadata as a
//! JSON object, the stored payload): encoding the envelope ([`encode_envelope`]), splitting a
//! record ([`split_record`]), checking an embedded envelope against the metadata.arrow row
//! without allocating ([`check_envelope`]), payload compression ([`store_payload`],
//! [`load_payload`]), and the writer that appends records to `shards/NNNNNN.bin` files with
//! rotation on `max_shard_bytes` ([`ShardSetWriter`]; the rule itself is [`starts_new_shard`]), and
//! the one that writes a single shard on the calling thread ([`ShardFileWriter`]) for shards
//! planned ahead and written side by side.
//!
//! What it is not for: deciding which record to read (the index) or validating whole caches
//! (the reader).
//!
//! Layering: above `dsrt-schema`, `dsrt-manifest`, `dsrt-index` and `dsrt-atlas-codec`; used
//! by the writer and the reader.
#![forbid(unsafe_code)]

mod envelope;
mod error;
mod inline;
mod payload;
mod pipeline;
mod record;
mod syncer;
mod writer;

pub use envelope::{check_envelope, encode_envelope, parse_envelope, EnvelopeCodec, EnvelopeError};
pub use error::RecordError;
pub use inline::{FinishedShard, ShardFileWriter};
pub use payload::{load_payload, store_payload};
pub use record::{split_record, RECORD_HEADER_LEN};
pub use writer::{starts_new_shard, MaxShardBytes, ShardSetWriter, SHARDS_DIR_NAME};
