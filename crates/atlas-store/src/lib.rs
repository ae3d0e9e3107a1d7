//! Object-store plumbing for Atlas collections.
//!
//! What it is for: three [`object_store::ObjectStore`] adapters that let array-format, which
//! only knows whole objects, live inside one container object:
//! - [`SegmentView`] exposes one byte range of `data.atlas` as an object of its own, so
//!   `ArrayFile::open` reads a segment in place. Its size comes from the footer (no HEAD), the
//!   segment's tail is fetched once, so opening a small segment costs one request, and a large
//!   read (a block, a whole segment) is fetched in parts at once, so that it arrives at what the
//!   store serves a client rather than one connection.
//! - [`AppendSink`] is what an `ArrayWriter` finishes into: every byte it writes is appended to
//!   the container's one multipart upload, in order, so a segment streams straight into
//!   `data.atlas` and the container is never held in memory.
//! - [`CountingStore`] wraps any store and counts requests, for tests that hold the reader to
//!   its request budget.
//!
//! What it is not for: anything that knows the Atlas format; offsets and lengths come from the
//! caller.
//!
//! Layering: below `atlas-writer` and `atlas-reader`, beside `atlas-footer` and `atlas-mask`; it
//! depends on no other `atlas-*` crate.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::disallowed_methods))] // its unit tests run on runtimes of their own

mod counting;
mod segment_view;
mod sink;

pub use counting::{CountingStore, Request, RequestKind};
pub use segment_view::{fetch_parts, SegmentView, MAX_FETCH_PARTS, MIN_FETCH_PART};
pub use sink::{AppendSink, ContainerUpload};

use object_store::path::Path;

/// An error for an operation an adapter deliberately does not offer.
pub(crate) fn refused(operation: &str, implementer: &str) -> object_store::Error {
    object_store::Error::NotImplemented {
        operation: operation.to_owned(),
        implementer: implementer.to_owned(),
    }
}

/// The path a [`SegmentView`] or [`AppendSink`] answers to; any other path is not found.
pub fn segment_path() -> Path {
    Path::from("segment")
}
