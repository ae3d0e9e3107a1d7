//! Writes Atlas collections.
//!
//! What it is for: [`AtlasWriter`] takes datasets one at a time as [`DatasetSpec`]s (arrays with
//! their dimension names, shape, chunk shape, fill value and data of any array-format element
//! type, plus per-array and dataset-level [`Attr`]ibutes), checks every name with
//! `validate_name`, and writes `data.atlas`: one array-format segment per array name in
//! first-seen order, each array inside named after its dataset, the `_datasets` segment only
//! when some dataset has dataset-level attributes, then the footer and trailer.
//!
//! Memory stays bounded: each variable has one open `ArrayWriter`, which spills finished blocks
//! to a temp file and keeps only its current block in memory; at [`AtlasWriter::finish`] each
//! segment streams into the container's one multipart upload, so the container is never held
//! whole. The same input and `created_unix_ms` give the same bytes.
//!
//! What it is not for: reading (`atlas-reader`), or deletes (a container is write-once; the
//! writer never creates `deleted.mask`).
//!
//! Layering: above `atlas-footer`, `atlas-model`, `atlas-store` and `object-access` (the
//! retryable rule); below the `atlas` facade.
#![forbid(unsafe_code)]

mod error;
mod spec;
mod writer;

pub use atlas_footer::Codec;
pub use atlas_model::Attr;
pub use error::WriteError;
pub use spec::{ArraySpec, DatasetSpec};
pub use writer::{AtlasWriter, WriteSummary, WriterOptions};
