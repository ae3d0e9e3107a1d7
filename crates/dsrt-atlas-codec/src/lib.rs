//! Raw codecs shared by both storage formats of this workspace.
//!
//! What it is for: the byte-level building blocks that DatasetRT caches and Atlas collections
//! have in common: LZ4 blocks with a `u32` LE size prefix ([`lz4`]), zstd frames with a bounded
//! decoder ([`zstd_frame`]), SHA-256 computed while bytes go to disk ([`sha`]), and checked
//! little-endian field access ([`le`]).
//!
//! What it is not for: anything that knows a file layout. Envelopes, manifests, footers and
//! masks live in the format crates above this one.
//!
//! Layering: the bottom layer. It depends on no crate of this workspace.
#![forbid(unsafe_code)]

pub mod le;
pub mod lz4;
pub mod sha;
pub mod zstd_frame;

pub use sha::{parse_sha256_hex, to_hex, HashingWriter, Sha256Digest};
