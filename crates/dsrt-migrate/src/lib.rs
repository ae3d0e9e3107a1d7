//! Migrates DatasetRT manifests from format_version 2 to 3.
//!
//! What it is for: [`update_manifests`] takes a dataset's original ordered cache list, checks
//! every target first (parses, supported version, writable, caches distinct, ids unique after
//! migration), then replaces each v2 manifest by its v3 form with its positional id, and keeps
//! v3 manifests unchanged. It reports each cache as `updated`, `unchanged` or
//! `durability_unknown` (and whether its replacement was atomic), or fails with the entries
//! already done, the failing cache and the cause.
//!
//! Where a manifest lives is a [`ManifestStore`]: read its bytes and version, replace them on
//! the condition that they are still that version. [`LocalManifest`] is a cache directory,
//! replaced crash-safely (temp file beside the resolved target, fsync, rename, directory
//! fsync; v3 manifests fsynced unchanged), every file operation through
//! `durable_fs::FileSystem` so tests inject faults; `dsrt-remote`'s `RemoteManifest` is a
//! store prefix, replaced by a conditional PUT. One list may mix them.
//!
//! What it is not for: opening caches or datasets (it reads manifests only), or locking: the
//! caller owns the manifests exclusively while this runs (a store's conditional replacement
//! still refuses to overwrite a manifest changed meanwhile).
//!
//! Layering: above `dsrt-manifest` and `durable-fs`; used by `dsrt-dataset`, `dsrt-remote`
//! (which implements the store for prefixes) and the CLI.
#![forbid(unsafe_code)]

mod error;
mod local; // a cache directory's manifest: temp, fsync, rename, directory fsync
mod plan; // every target read and checked before any is replaced
mod report;
mod run;
mod store; // the seam: read a manifest and its version, replace it on that condition

/// What a store's replacement checks before it replaces (re-exported: the trait names it).
pub use durable_fs::CancelToken;
pub use error::{ManifestUpdateError, UpdateCause};
pub use local::{update_local_manifests, LocalManifest};
pub use report::{ManifestUpdateEntry, ManifestUpdateReport, UpdateOutcome};
pub use run::update_manifests;
pub use store::{ManifestStore, ReadManifest, Stored, VersionToken};
