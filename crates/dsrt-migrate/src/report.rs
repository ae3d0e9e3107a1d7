use std::path::PathBuf;

/// What happened to one cache's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// Rewritten from v2 to v3, renamed into place, directory fsynced.
    Updated,
    /// Already v3; left as it was, and fsynced with its directory.
    Unchanged,
    /// Renamed into place (or already v3) but the directory fsync failed: readers see the
    /// manifest, a power loss might revert it. Retrying syncs it again.
    DurabilityUnknown {
        /// The fsync error.
        error: String,
    },
}

/// One cache of a migration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestUpdateEntry {
    /// The cache directory as given.
    pub cache: PathBuf,
    /// The manifest file actually written or synced (symlinks resolved).
    pub manifest: PathBuf,
    /// The cache id after migration.
    pub cache_id: u64,
    /// What happened.
    pub outcome: UpdateOutcome,
}

/// A completed migration: one entry per cache, in the order given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ManifestUpdateReport {
    /// The entries.
    pub entries: Vec<ManifestUpdateEntry>,
}

impl ManifestUpdateReport {
    /// Entries whose durability is unconfirmed.
    pub fn durability_unknown(&self) -> impl Iterator<Item = &ManifestUpdateEntry> {
        self.entries
            .iter()
            .filter(|e| matches!(e.outcome, UpdateOutcome::DurabilityUnknown { .. }))
    }
}
