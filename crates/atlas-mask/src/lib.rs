//! The deletion mask of an Atlas collection: `deleted.mask`.
//!
//! What it is for: the mask's bytes (version 1) and their reading rules. [`encode`] writes them,
//! [`decode`] reads them leniently as the pinned page says (a wrong magic is the only error), and
//! [`DeletedSet`] answers "is this ordinal hidden?" in constant time and merges new ordinals in.
//!
//! What it is not for: I/O, or deciding how a delete commits against a store; the read-merge-commit
//! loop lives in `atlas-reader`.
//!
//! Layering: a bottom Atlas layer beside `atlas-footer`; it depends only on `codec`.
//!
//! ```text
//! b"ATLM"  u32 LE version = 1  u32 LE count  count x u32 LE ordinals (strictly increasing)
//! ```
#![forbid(unsafe_code)]

mod bytes;
mod set;

pub use bytes::{decode, encode, MaskError, MASK_HEADER_SIZE, MASK_MAGIC, MASK_VERSION};
pub use set::DeletedSet;
