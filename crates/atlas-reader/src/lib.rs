//! Reads Atlas collections.
//!
//! What it is for: [`Atlas::open`] reads a collection within the pinned request budget (one
//! suffix-range GET of the container's last 64 KiB, a second range only when the footer does not
//! fit, one GET of `deleted.mask`), validates the footer, and answers lookups by name in one
//! hash, iteration in ordinal order, schemas that borrow the footer, array reads, statistics and
//! attributes, all with deleted datasets hidden. [`Atlas::read_run`] reads one array of many
//! datasets together, their blocks fetched in few ranged requests. Segments are read in place through a byte-range
//! view of `data.atlas`, each opened at most once per [`Atlas`] and sharing one block cache.
//! [`Atlas::delete`] hides datasets through a [`MaskCommitter`]: a read-merge-commit loop that
//! loses nothing where the backend can commit conditionally (or, on local disk, under a
//! directory `flock`), and is last-writer-wins, with a warning, elsewhere.
//!
//! A growing collection (`docs/format/growing.md`: immutable parts named by
//! `collection.manifest`, whose bytes [`manifest`] reads and writes) opens as one collection:
//! the manifest, then every part of the version asked for at once, each part an `Atlas` of its
//! own behind the one that numbers their datasets one after the other and folds lookups,
//! statistics, selections, run reads and verification over them.
//!
//! What it is not for: writing containers (`atlas-writer`) or appending parts
//! (`atlas-append`); the byte layouts of the container and the mask (`atlas-footer`,
//! `atlas-mask`).
//!
//! Layering: above `atlas-footer`, `atlas-mask`, `atlas-model` and `atlas-store`; below the
//! `atlas` facade and the CLI.
#![forbid(unsafe_code)]

mod atlas;
mod attrs;
mod delete;
mod error;
mod growing;
pub use growing::{decode_manifest, manifest_path, part_prefix, read_manifest};
mod local;
pub mod manifest;
mod open;
mod run;
mod select;
mod stats;
pub mod tag;
mod typed; // reads typed by the declared element type: `ArrayData`
mod verify;
mod view;

pub use atlas::{At, Atlas, IntoAtlasStore};
pub use atlas_model::Attr;
pub use delete::{
    retry_pause, CommitOutcome, ConditionalPutCommitter, DeleteReport, MaskCommitter, MergeFn,
};
pub use error::{AtlasError, GrowingProblem};
pub use local::{check_local_collection, LocalFlockCommitter};
/// Test hooks: stop a local delete at a chosen step (the crash-safety tests). Only with the
/// `test-hooks` feature; not part of the supported API.
#[cfg(feature = "test-hooks")]
pub use local::{CommitStep, StepHook};
pub use run::Run;
pub use select::{AttrCondition, Comparison, SelectValue, Selection, Stat, StatCondition};
pub use stats::{CollectionStats, DatasetStats};
pub use typed::ArrayData;
pub use verify::{VerifyDepth, VerifyProblem, VerifyReport, MAX_VERIFY_CHUNK_ELEMENTS};
pub use view::{ArrayLayout, ArrayMeta, ArraySchema, DatasetSchema, DatasetView, SchemaView};
