//! The Atlas collection footer and container framing.
//!
//! What it is for: the bytes of `data.atlas` that are Atlas's own, as pinned by format version 8:
//! the 8-byte header, the 16-byte trailer and the tail probe that finds the footer
//! ([`trailer`]); the [`CollectionFooter`] with its string, dtype and schema pools ([`footer`]),
//! its msgpack+zstd wire form ([`wire`]), the memory a footer may cost a reader ([`budget`]),
//! the checks a decoded footer passes before use ([`validate`]), and the interning a writer
//! uses to build one ([`builder`]).
//!
//! What it is not for: segments (those are array-format files, handled by `atlas-writer` and
//! `atlas-reader`), the deletion mask (`atlas-mask`), or any I/O. Everything here works on byte
//! slices, so it can be tested and fuzzed without a store.
//!
//! Layering: the bottom Atlas layer. It depends only on the shared `dsrt-atlas-codec` crate;
//! every other `atlas-*` crate may depend on it, and it depends on none of them.
#![forbid(unsafe_code)]

pub mod budget;
pub mod builder;
pub mod consts;
pub mod datasets;
pub mod dtype;
pub mod error;
pub mod footer;
mod inline_list;
pub mod trailer;
pub mod validate;
pub mod wire;

pub use budget::{FooterBudget, FOOTER_BUDGET_BASE, FOOTER_BUDGET_PER_STORED_BYTE};
pub use builder::FooterBuilder;
pub use consts::*;
pub use datasets::InsertError;
pub use dtype::{Codec, DType, UnknownCodec};
pub use error::FooterError;
pub use footer::{CollectionFooter, DatasetMap, IndexPairs, InternedSchema, VariableEntry};
pub use inline_list::InlineList;
pub use trailer::{FooterLocation, Trailer};
