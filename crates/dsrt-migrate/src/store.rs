//! Where a cache's manifest lives: the one seam between the migration's checks and the
//! different ways a manifest is replaced (a local directory, a store prefix).

use crate::UpdateCause;
use durable_fs::CancelToken;
use std::ffi::OsString;

/// The version of a manifest one read saw: what a conditional replacement compares, so a
/// manifest changed after the checks is never overwritten.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionToken {
    /// The store's entity tag, where it gives one.
    pub e_tag: Option<String>,
    /// The store's object version, where it keeps versions.
    pub version: Option<String>,
}

/// One manifest as read, before any is replaced.
#[derive(Debug, Clone)]
pub struct ReadManifest {
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// The version read.
    pub token: VersionToken,
    /// Where the manifest is: the file with every symlink resolved, or the object's URL. What
    /// a report's `manifest` says.
    pub location: String,
    /// What makes two listings one cache: the directory the new manifest is written in, or the
    /// prefix. Two targets with the same key are refused.
    pub cache_key: OsString,
}

/// How a manifest was replaced or kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// `false` when the store has no conditional replacement, so the manifest was re-read
    /// unchanged and then overwritten: a change made in between would be lost.
    pub atomic: bool,
    /// The error that left the manifest in place but its durability unconfirmed (a failed
    /// directory fsync); `None` once it is durable.
    pub durability_unknown: Option<String>,
}

impl Stored {
    /// Replaced or kept atomically and durably.
    pub const DURABLE: Self = Self {
        atomic: true,
        durability_unknown: None,
    };
}

/// A cache's manifest that a migration reads and replaces.
///
/// The migration calls `read` and `check_writable` for every target before it calls
/// `replace` or `keep` for any, so a refusal leaves every manifest as it was.
pub trait ManifestStore {
    /// The cache as the caller named it (a directory or a URL): what reports and errors say.
    fn cache(&self) -> String;

    /// Reads the manifest and the version read.
    fn read(&self) -> Result<ReadManifest, UpdateCause>;

    /// Fails if the manifest could not be replaced, before anything is written.
    fn check_writable(&self, read: &ReadManifest) -> Result<(), UpdateCause>;

    /// Replaces the manifest `read` saw by `bytes`, only if it is still that version.
    /// `cancel` fired before the replacement is `UpdateCause::Interrupted`, nothing replaced.
    fn replace(
        &self,
        read: &ReadManifest,
        bytes: Vec<u8>,
        cancel: &CancelToken,
    ) -> Result<Stored, UpdateCause>;

    /// Leaves a manifest that needs no migration as it is, made durable where it may not be.
    fn keep(&self, read: &ReadManifest) -> Result<Stored, UpdateCause>;
}
