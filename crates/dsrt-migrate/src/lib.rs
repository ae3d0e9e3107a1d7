//! Migrates DatasetRT manifests from format_version 2 to 3.
//!
//! What it is for: [`update_manifests`] takes a dataset's original ordered cache list, checks
//! every target first (parses, supported version, writable directory, ids unique after
//! migration), then rewrites each v2 manifest as v3 with its positional id, crash-safely
//! (temp file beside the resolved target, fsync, rename, directory fsync), and fsyncs v3
//! manifests unchanged. It reports each cache as `updated`, `unchanged` or
//! `durability_unknown`, or fails with the entries already done, the failing cache and the
//! cause. Every file operation goes through `durable_fs::FileSystem`, so tests inject faults.
//!
//! What it is not for: opening caches or datasets (it reads manifests only), or locking: the
//! caller owns the manifests exclusively while this runs.
//!
//! Layering: above `dsrt-manifest` and `durable-fs`; used by `dsrt-dataset` and the CLI.
#![forbid(unsafe_code)]

mod error;
mod plan;
mod report;
mod run;

pub use error::{ManifestUpdateError, UpdateCause};
pub use report::{ManifestUpdateEntry, ManifestUpdateReport, UpdateOutcome};
pub use run::update_manifests;
