//! Epoch planning for DatasetRT datasets: which sample every step of an epoch reads, on every
//! rank of every node, reproducibly, in memory that grows with shards and caches, never samples.
//!
//! What it is for: from the shape of each cache (its length and its runs of samples that share
//! a shard) and a `PlanConfig` (seed, per-cache weights or a `Schedule` of phases with weights
//! of their own, sampling with or without replacement, shuffle mode), `EpochPlan::build` gives
//! the epoch's order as a function of `(seed, epoch)`, evaluated per position through a
//! `PlanCursor` (never materialized). A schedule's phases follow one another, each mixing the
//! caches at its weights while every cache's own stream runs on across them (`PlanPhase`).
//! `Partition` splits the positions not yet consumed over a `Topology` (`world_size` ranks in
//! nodes of `ranks_per_node`): one contiguous span per node, so each shard is read by one node,
//! dealt round-robin to the node's ranks, every rank the same count (`RemainderPolicy::Pad` or
//! `RemainderPolicy::Drop`). `IterState` records what is consumed so an epoch resumes on any
//! topology, and the `Mixture` the epoch was planned with (each cache's length, shard runs and
//! id, the shares, the phases, the modes). A resume under another mixture (other weights or
//! phases, caches added, removed or moved) is followed from the consumed position: each
//! cache's draws are mapped past what its own stream consumed (a [`Continuation`] the state
//! then carries, reported as a [`MixtureChange`]), so nothing is served twice or skipped; one
//! it cannot follow (another seed or mode, a cache whose contents changed) is refused naming
//! what differs. `PlanReport` tells what each node reads (`dsrt plan`).
//!
//! Layers that weigh samples by their lengths (token streams, `dsrt-token-stream`) read one
//! cache's stream through the same plan: its pass layouts and segments
//! ([`EpochPlan::pass_layout`], [`EpochPlan::segment`], [`EpochPlan::stream_sample`]), its
//! shares of a total ([`weighted_shares`]), and seeds and permutations made as the plan makes
//! its own ([`mix`], [`Permutation`]).
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
mod continuation;
mod mixing;
mod order;
mod partition;
mod report;
mod rng;
mod state;
mod stream;

pub use config::{Phase, PlanConfig, PlanError, Sampling, Schedule, Shuffle, UnknownName};
pub use continuation::{ConsumedStream, Continuation, MixtureChange, RemovedCache};
pub use order::{
    phase_shares, weighted_shares, CacheShape, EpochPlan, PlanCursor, PlanPhase, PlannedSample,
};
pub use partition::{Partition, RemainderPolicy, Topology};
pub use report::{
    rank_correlation, NodeReport, PhaseReport, PlanReport, ReportOptions, ShuffleQuality,
    DEFAULT_PREFETCH_SHARDS,
};
pub use rng::{mix, Permutation};
pub use state::{IterState, Mixture, PlannedCache};
pub use stream::PassLayout;
