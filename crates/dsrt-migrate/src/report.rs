/// What happened to one cache's manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// Rewritten from v2 to v3 (renamed into place and the directory fsynced, or put on the
    /// store).
    Updated,
    /// Already v3; left as it was (a local one fsynced with its directory).
    Unchanged,
    /// Renamed into place (or already v3) but the directory fsync failed: readers see the
    /// manifest, a power loss might revert it. Retrying syncs it again.
    DurabilityUnknown {
        /// The fsync error.
        error: String,
    },
}

impl UpdateOutcome {
    /// The outcome's name in reports (`dsrt migrate --json`, Python's report entries):
    /// `"updated"`, `"unchanged"` or `"durability_unknown"`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Updated => "updated",
            Self::Unchanged => "unchanged",
            Self::DurabilityUnknown { .. } => "durability_unknown",
        }
    }

    /// The fsync error of a `DurabilityUnknown` outcome.
    pub fn error(&self) -> Option<&str> {
        match self {
            Self::DurabilityUnknown { error } => Some(error),
            Self::Updated | Self::Unchanged => None,
        }
    }
}

/// One cache of a migration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestUpdateEntry {
    /// The cache as given: a directory or a prefix URL.
    pub cache: String,
    /// The manifest actually written or synced: the file with symlinks resolved, or the
    /// object's URL.
    pub manifest: String,
    /// The cache id after migration.
    pub cache_id: u64,
    /// What happened.
    pub outcome: UpdateOutcome,
    /// `false` when the store has no conditional replacement, so the manifest was replaced
    /// by a plain write after checking it unchanged: a change made between that check and
    /// the write would be lost. `true` for a rename, a conditional replacement and an
    /// unchanged manifest.
    pub atomic: bool,
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

    /// Entries replaced without a conditional write.
    pub fn not_atomic(&self) -> impl Iterator<Item = &ManifestUpdateEntry> {
        self.entries.iter().filter(|e| !e.atomic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_has_its_report_name_and_only_an_unsynced_one_an_error() {
        let unsynced = UpdateOutcome::DurabilityUnknown {
            error: "EIO".into(),
        };
        assert_eq!(
            (unsynced.name(), unsynced.error()),
            ("durability_unknown", Some("EIO"))
        );
        assert_eq!(
            (
                UpdateOutcome::Updated.name(),
                UpdateOutcome::Updated.error()
            ),
            ("updated", None)
        );
        assert_eq!(UpdateOutcome::Unchanged.name(), "unchanged");
    }
}
