//! Migrating manifests under object-store prefixes from format_version 2 to 3, with the
//! checks of `dsrt_migrate::update_manifests` and a conditional PUT where the store has one.

use crate::error::block_on;
use crate::error::RemoteError;
use crate::migrate_report::{
    RemoteUpdateCause, RemoteUpdateEntry, RemoteUpdateError, RemoteUpdateOutcome,
    RemoteUpdateReport,
};
use crate::RemotePrefix;
use dsrt_manifest::{upgrade_v2_to_v3, Manifest, MANIFEST_FILE_NAME};
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use std::collections::HashMap;

/// One checked target: the manifest as read, and the version that read saw.
struct Target<'a> {
    cache: &'a RemotePrefix,
    bytes: Vec<u8>,
    parsed: Manifest,
    cache_id: u64,
    version: UpdateVersion,
}

/// Migrates the manifests of `caches` (a dataset's original ordered list) to `version`.
///
/// Every manifest is read and checked first (parses, supported version, prefixes distinct,
/// ids unique after migration); then each v2 manifest is replaced by its v3 form (its
/// position as `cache_id`, every other byte kept, as the local migration writes it) with a
/// PUT conditional on the version read. If the manifest changed in between, nothing is
/// overwritten and the error says so. A store without conditional PUT gets a plain PUT after
/// re-reading the manifest unchanged, and the entry says `atomic: false`.
pub fn update_remote_manifests(
    caches: &[RemotePrefix],
    version: u64,
) -> Result<RemoteUpdateReport, RemoteUpdateError> {
    let refuse = |failed, cause| RemoteUpdateError {
        done: Vec::new(),
        failed,
        cause: Box::new(cause),
    };
    if version != 3 {
        return Err(refuse(None, RemoteUpdateCause::UnsupportedTarget(version)));
    }
    block_on(async {
        let targets = check_all(caches)
            .await
            .map_err(|(failed, cause)| refuse(failed, cause))?;
        apply_all(targets).await
    })
}

async fn apply_all(targets: Vec<Target<'_>>) -> Result<RemoteUpdateReport, RemoteUpdateError> {
    let mut report = RemoteUpdateReport::default();
    for target in targets {
        let url = target.cache.url().to_owned();
        match apply(&target).await {
            Ok((outcome, atomic)) => report.entries.push(RemoteUpdateEntry {
                url,
                cache_id: target.cache_id,
                outcome,
                atomic,
            }),
            Err(cause) => {
                return Err(RemoteUpdateError {
                    done: report.entries,
                    failed: Some(url),
                    cause: Box::new(cause),
                })
            }
        }
    }
    Ok(report)
}

type CheckFailure = (Option<String>, RemoteUpdateCause);

async fn check_all(caches: &[RemotePrefix]) -> Result<Vec<Target<'_>>, CheckFailure> {
    let mut targets = Vec::with_capacity(caches.len());
    let mut ids: HashMap<u64, usize> = HashMap::new();
    let mut urls: HashMap<&str, usize> = HashMap::new();
    for (position, cache) in caches.iter().enumerate() {
        let fail = |cause| (Some(cache.url().to_owned()), cause);
        if let Some(&earlier) = urls.get(cache.url()) {
            return Err(fail(RemoteUpdateCause::DuplicateCache {
                first: caches[earlier].url().to_owned(),
                second: cache.url().to_owned(),
            }));
        }
        let target = check_one(cache, position).await.map_err(fail)?;
        if let Some(&earlier) = ids.get(&target.cache_id) {
            return Err(fail(RemoteUpdateCause::DuplicateId {
                id: target.cache_id,
                first: caches[earlier].url().to_owned(),
                second: cache.url().to_owned(),
            }));
        }
        urls.insert(cache.url(), position);
        ids.insert(target.cache_id, position);
        targets.push(target);
    }
    Ok(targets)
}

async fn check_one(cache: &RemotePrefix, position: usize) -> Result<Target<'_>, RemoteUpdateCause> {
    let (bytes, version) = read_manifest(cache).await?;
    let parsed = Manifest::parse(&bytes).map_err(|source| RemoteUpdateCause::Manifest {
        url: cache.object_url(MANIFEST_FILE_NAME),
        source,
    })?;
    let cache_id = parsed.resolved_cache_id(position);
    Ok(Target {
        cache,
        bytes,
        parsed,
        cache_id,
        version,
    })
}

async fn read_manifest(cache: &RemotePrefix) -> Result<(Vec<u8>, UpdateVersion), RemoteError> {
    let location = cache.object(MANIFEST_FILE_NAME);
    let read = async {
        let got = cache.store().get(&location).await?;
        let version = UpdateVersion {
            e_tag: got.meta.e_tag.clone(),
            version: got.meta.version.clone(),
        };
        Ok((got.bytes().await?.to_vec(), version))
    };
    read.await.map_err(|source| RemoteError::Store {
        url: cache.object_url(MANIFEST_FILE_NAME),
        source,
    })
}

/// Writes one target; returns what happened and whether it was atomic.
async fn apply(target: &Target<'_>) -> Result<(RemoteUpdateOutcome, bool), RemoteUpdateCause> {
    if let Manifest::V3(_) = target.parsed {
        return Ok((RemoteUpdateOutcome::Unchanged, true));
    }
    let cache = target.cache;
    let url = cache.object_url(MANIFEST_FILE_NAME);
    let upgraded = upgrade_v2_to_v3(&target.bytes, target.cache_id).map_err(|source| {
        RemoteUpdateCause::Manifest {
            url: url.clone(),
            source,
        }
    })?;
    let location = cache.object(MANIFEST_FILE_NAME);
    let payload = PutPayload::from(upgraded);
    let conditional = PutOptions::from(PutMode::Update(target.version.clone()));
    match cache
        .store()
        .put_opts(&location, payload.clone(), conditional)
        .await
    {
        Ok(_) => Ok((RemoteUpdateOutcome::Updated, true)),
        Err(object_store::Error::Precondition { .. }) => {
            Err(RemoteUpdateCause::ChangedConcurrently { url })
        }
        Err(
            object_store::Error::NotImplemented { .. } | object_store::Error::NotSupported { .. },
        ) => {
            put_unconditionally(target, payload).await?;
            Ok((RemoteUpdateOutcome::Updated, false))
        }
        Err(source) => Err(RemoteError::Store { url, source }.into()),
    }
}

/// The store cannot make the replacement conditional: re-read, and PUT only if unchanged.
async fn put_unconditionally(
    target: &Target<'_>,
    payload: PutPayload,
) -> Result<(), RemoteUpdateCause> {
    let cache = target.cache;
    let url = cache.object_url(MANIFEST_FILE_NAME);
    let (now, _) = read_manifest(cache).await?;
    if now != target.bytes {
        return Err(RemoteUpdateCause::ChangedConcurrently { url });
    }
    cache
        .store()
        .put(&cache.object(MANIFEST_FILE_NAME), payload)
        .await
        .map(drop)
        .map_err(|source| RemoteError::Store { url, source }.into())
}
