//! Epoch planning for DatasetRT datasets: which sample every step of an epoch reads, on every
//! rank, reproducibly.
//!
//! What it is for: from the shape of each cache (its length and its runs of samples that share
//! a shard) and a [`PlanConfig`] (seed, per-cache weights, sampling with or without
//! replacement, shuffle mode), [`EpochPlan::build`] computes the epoch's global order as a
//! function of `(seed, epoch)` only. [`Partition`] splits the part of the order not yet
//! consumed among `world_size` ranks so that every rank gets exactly the same number of
//! samples ([`RemainderPolicy::Pad`] or [`RemainderPolicy::Drop`]), and [`IterState`] records
//! how far an epoch got so it can resume, also with another world size.
//!
//! What it is not for: reading samples. This crate does no I/O; the loader in `dsrt-dataset`
//! turns a plan into samples with worker threads.
//!
//! Layering: a leaf below `dsrt-dataset`; it depends on no other crate of the workspace.
#![forbid(unsafe_code)]

#[cfg(not(target_pointer_width = "64"))]
compile_error!(
    "dsrt-plan packs sample ids into 64-bit words indexed by usize: 64-bit targets only"
);

mod config;
mod mixing;
mod order;
mod partition;
mod report;
mod rng;
mod state;
mod stream;

pub use config::{PlanConfig, PlanError, Sampling, Shuffle};
pub use order::{CacheShape, EpochPlan, PlanCursor, PlannedSample};
pub use partition::{Partition, RemainderPolicy, Topology};
pub use report::{NodeReport, PlanReport, ReportOptions, ShuffleQuality};
pub use state::IterState;
