//! Appends to growing Atlas collections.
//!
//! What it is for: [`Appender`] adds datasets to a growing collection (`docs/format/growing.md`)
//! without touching what is there. It reads the manifest and the names of every dataset of the
//! latest version, refuses a name already held live before anything is written (or, with
//! [`Appender::with_replace`], hides the dataset it replaces in the same commit), writes the new
//! datasets with an [`AtlasWriter`](atlas_writer::AtlasWriter) as one new part (a complete
//! plain collection under `parts/<id>/`), and then commits the next manifest version with a
//! conditional write: `PutMode::Create`/`Update` on an object store, the directory `flock` and
//! a crash-safe publication on local disk (the [`MaskCommitter`](atlas_reader::MaskCommitter)
//! primitives deletes use). A commit that finds the manifest moved checks the parts committed
//! meanwhile for a clashing name and tries again, so concurrent appenders lose nothing. Until
//! the commit nothing is visible: a failed or interrupted append leaves the collection as it
//! was (at most an unreferenced part, which no reader opens).
//!
//! [`collect_garbage`] (`atlas gc`) is the other half of an append's life: it removes the parts
//! that failed or killed appends left, which no version names, once they are older than a grace
//! period that an append in progress is given to commit.
//!
//! [`create_tag`] (`atlas tag`) names one version, once; readers open it by name.
//!
//! [`compact`] (`atlas compact`) rewrites the live datasets of every part as one part, byte for
//! byte what a fresh write of them makes ([`copy_dataset`]), committed as a version whose only
//! part it is; older versions read their parts until `gc` removes them.
//!
//! [`CollectionWriter`] opens a location for writing, as the CLI and the Python package take
//! one: a new plain collection where [`Target::open`] finds room for it (nothing there, or no
//! collection, by [`Occupancy`]), or a new part of a growing collection through an
//! [`Appender`].
//!
//! What it is not for: reading (`atlas-reader` opens a growing collection as one), writing a
//! plain collection (`atlas-writer`), deletes (`atlas-reader`'s `Atlas::delete`).
//!
//! Layering: above `atlas-reader` (the manifest, the parts' names, the commit primitives) and
//! `atlas-writer` (the part's container), `durable-fs` (fsync of a local part) and
//! `object-access` (locations, the retryable rule); below the `atlas` facade and the CLI.
#![forbid(unsafe_code)]

mod appender;
mod compact;
mod error;
mod gc;
mod tag;
mod target;

pub use appender::{AppendReport, Appender};
pub use compact::{compact, copy_dataset, CompactReport};
pub use error::AppendError;
pub use gc::{collect_garbage, GcError, GcOptions, GcReport, DEFAULT_GRACE};
pub use tag::{create_tag, TagReport};
pub use target::{CollectionWriter, Occupancy, Target, TargetError, WriteMode, Written};
