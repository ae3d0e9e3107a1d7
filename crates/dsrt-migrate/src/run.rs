use crate::plan::{check_all, Target};
use crate::{
    ManifestStore, ManifestUpdateEntry, ManifestUpdateError, ManifestUpdateReport, Stored,
    UpdateCause, UpdateOutcome,
};
use dsrt_manifest::{upgrade_v2_to_v3, Manifest};
use durable_fs::CancelToken;

/// Migrates the manifests of `stores` (a dataset's original ordered list of caches, local
/// directories and store prefixes alike) to `version`.
///
/// Every target is read and checked before any is replaced (parses, supported version,
/// writable, caches distinct, ids unique after migration); then each v2 manifest is replaced
/// by its v3 form, with its zero-based position as `cache_id` and every other byte kept, on
/// the condition that it is still the manifest read, and each v3 manifest is kept as it is
/// (made durable where it may not be). `cancel` is checked before each cache and by the store
/// before its replacement; when it fires, nothing more is replaced and the error is
/// `Interrupted`.
pub fn update_manifests(
    stores: &[&dyn ManifestStore],
    version: u64,
    cancel: &CancelToken,
) -> Result<ManifestUpdateReport, ManifestUpdateError> {
    let refuse = |failed, cause| ManifestUpdateError {
        done: Vec::new(),
        failed,
        cause: Box::new(cause),
    };
    if version != 3 {
        return Err(refuse(None, UpdateCause::UnsupportedTarget(version)));
    }
    let targets = check_all(stores).map_err(|(failed, cause)| refuse(failed, cause))?;
    let mut report = ManifestUpdateReport::default();
    for target in targets {
        let failed = |done: Vec<ManifestUpdateEntry>, cause| ManifestUpdateError {
            done,
            failed: Some(target.cache.clone()),
            cause: Box::new(cause),
        };
        if cancel.is_cancelled() {
            return Err(failed(report.entries, UpdateCause::Interrupted));
        }
        match apply(&target, cancel) {
            Ok(entry) => {
                tracing::info!(cache = %entry.cache, outcome = ?entry.outcome, atomic = entry.atomic, "manifest updated");
                report.entries.push(entry);
            }
            Err(cause) => return Err(failed(report.entries, cause)),
        }
    }
    Ok(report)
}

fn apply(target: &Target<'_>, cancel: &CancelToken) -> Result<ManifestUpdateEntry, UpdateCause> {
    let (done, stored) = match target.parsed {
        Manifest::V2(_) => {
            let upgraded =
                upgrade_v2_to_v3(&target.read.bytes, target.cache_id).map_err(|source| {
                    UpdateCause::Manifest {
                        manifest: target.read.location.clone(),
                        source,
                    }
                })?;
            let stored = target.store.replace(&target.read, upgraded, cancel)?;
            (UpdateOutcome::Updated, stored)
        }
        Manifest::V3(_) => (UpdateOutcome::Unchanged, target.store.keep(&target.read)?),
    };
    let Stored {
        atomic,
        durability_unknown,
    } = stored;
    let outcome = match durability_unknown {
        None => done,
        Some(error) => UpdateOutcome::DurabilityUnknown { error },
    };
    Ok(ManifestUpdateEntry {
        cache: target.cache.clone(),
        manifest: target.read.location.clone(),
        cache_id: target.cache_id,
        outcome,
        atomic,
    })
}
