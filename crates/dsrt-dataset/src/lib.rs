//! DatasetRT datasets: an ordered list of caches, each sample addressed as
//! `(cache_id, sample_id)`.
//!
//! What it is for: [`Dataset::open`] resolves every cache's identity (v2: its position in the
//! list; v3: its stored `cache_id`) and refuses two caches with one id or one directory listed
//! twice; [`Dataset::sample`] serves any sample by key; [`Dataset::select`] evaluates a
//! predicate on metadata.arrow alone (no shard is opened) into a [`SampleTable`], which saves
//! to and loads from an Arrow IPC file; [`Dataset::update_manifests`] migrates the list's v2
//! manifests to v3 in place without changing any id, so saved tables stay valid.
//!
//! [`Loader`] iterates one rank's share of an epoch planned by `dsrt-plan`, in the plan's
//! order whatever the number of prefetching workers, and saves a resumable state. The state
//! records the caches' ids along with the mixture the epoch was planned with
//! ([`Dataset::shapes`] gives the plan each cache's id), so a resume under other weights or
//! with caches added, removed, replaced or reordered is followed cache by cache (by id) from
//! where each stopped, the change reported by [`Loader::plan`]'s `mixture_change`.
//!
//! What it is not for: the planning itself (`dsrt-plan`, which does no I/O) or the bytes of
//! any file (the `dsrt-*` file crates below).
//!
//! Layering: above `dsrt-reader`, `dsrt-plan` and `dsrt-migrate`; re-exported by the `datasetrt` facade.
#![forbid(unsafe_code)]

mod batch; // many samples at once: payloads located or gathered, Arrow record batches
mod buffers;
mod dataset;
mod error;
mod hints;
mod loader;
mod rank_plan; // one rank's steps, read a few at a time in the caller's order
mod stats; // counters of what a loader did: its batches, the consumer's wait, its threads' time
mod table;

pub use batch::{
    read_arrow, read_copied, read_located, BatchRow, LocatedColumns, LocatedPayloads, PastEnd,
    PayloadAt, PayloadRange,
};
pub use dataset::{Dataset, DatasetCache, SelectRow};
pub use dsrt_reader::FetchTotals;
pub use error::DatasetError;
pub use hints::{ShardHints, HINT_SHARDS};
pub use loader::{LoadedSample, Loader, LoaderConfig, DEFAULT_PREFETCH_BYTES};
pub use rank_plan::RankPlan;
pub use stats::{LoaderStats, Stage, StatsReport, StatsSnapshot};
pub use table::{SampleKey, SampleTable};
