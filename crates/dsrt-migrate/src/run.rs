use crate::plan::{check_all, Target};
use crate::{
    ManifestUpdateEntry, ManifestUpdateError, ManifestUpdateReport, UpdateCause, UpdateOutcome,
};
use dsrt_manifest::{upgrade_v2_to_v3, Manifest, MANIFEST_TEMP_PREFIX};
use durable_fs::{publish_cancellable, CancelToken, FileSystem, PublishStep, Published};
use std::path::{Path, PathBuf};

/// Migrates the manifests of `caches` (a dataset's original ordered list) to `version`.
///
/// Every target is checked before any is replaced; then each v2 manifest is rewritten as v3
/// with its zero-based position as `cache_id` and every other byte kept, and each v3 manifest
/// is fsynced as it is. `cancel` is checked before each cache and before each rename; when it
/// fires, the temporary file in flight is removed and the error is `Interrupted`.
pub fn update_manifests(
    caches: &[PathBuf],
    version: u64,
    fs: &dyn FileSystem,
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
    let targets = check_all(fs, caches).map_err(|(failed, cause)| refuse(failed, cause))?;
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
        match apply(fs, &target, cancel) {
            Ok(outcome) => {
                tracing::info!(cache = %target.cache.display(), ?outcome, "manifest updated");
                report.entries.push(ManifestUpdateEntry {
                    cache: target.cache.clone(),
                    manifest: target.manifest.clone(),
                    cache_id: target.cache_id,
                    outcome,
                });
            }
            Err(cause) => return Err(failed(report.entries, cause)),
        }
    }
    Ok(report)
}

fn apply(
    fs: &dyn FileSystem,
    target: &Target,
    cancel: &CancelToken,
) -> Result<UpdateOutcome, UpdateCause> {
    match target.parsed {
        Manifest::V2(_) => {
            let upgraded = upgrade_v2_to_v3(&target.bytes, target.cache_id).map_err(|source| {
                UpdateCause::Manifest {
                    manifest: target.manifest.clone(),
                    source,
                }
            })?;
            match publish_cancellable(
                fs,
                &target.manifest,
                MANIFEST_TEMP_PREFIX,
                &upgraded,
                cancel,
            ) {
                Ok(published) => Ok(outcome(UpdateOutcome::Updated, published)),
                Err(e) if e.step == PublishStep::Cancelled => Err(UpdateCause::Interrupted),
                Err(e) => Err(UpdateCause::Publish(e)),
            }
        }
        Manifest::V3(_) => {
            let sync_error = |source| UpdateCause::Sync {
                manifest: target.manifest.clone(),
                source,
            };
            fs.sync_existing(&target.manifest).map_err(sync_error)?;
            let dir = target.manifest.parent().unwrap_or(Path::new("."));
            let published = match fs.sync_dir(dir) {
                Ok(()) => Published::Durable,
                Err(e) => Published::DurabilityUnknown(e),
            };
            Ok(outcome(UpdateOutcome::Unchanged, published))
        }
    }
}

fn outcome(done: UpdateOutcome, published: Published) -> UpdateOutcome {
    match published {
        Published::Durable => done,
        Published::DurabilityUnknown(e) => UpdateOutcome::DurabilityUnknown {
            error: e.to_string(),
        },
    }
}
