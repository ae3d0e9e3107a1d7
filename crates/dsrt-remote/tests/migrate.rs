//! Manifest migration v2 -> v3 of prefixes (`RemoteManifest` through
//! `dsrt_migrate::update_manifests`): conditional replacement, a concurrent change detected,
//! a store without conditional PUT reported as not atomic, the checks before any write, and
//! prefixes and directories in one list.
#![allow(clippy::unwrap_used)] // Test code.

mod write_support;

use dsrt_migrate::{
    update_manifests, CancelToken, LocalManifest, ManifestStore, ManifestUpdateError,
    ManifestUpdateReport, UpdateCause, UpdateOutcome,
};
use dsrt_remote::object_store::memory::InMemory;
use dsrt_remote::object_store::ObjectStore;
use dsrt_remote::{publish_cache, PublishOptions, RemoteManifest, RemotePrefix};
use dsrt_writer::ManifestVersion;
use std::sync::Arc;
use write_support::{make_cache, prefix, read_object, Behaviour, TestStore};

/// Migrates the caches under `prefixes`: the one migration over remote stores.
fn update_prefixes(
    prefixes: &[RemotePrefix],
    version: u64,
) -> Result<ManifestUpdateReport, ManifestUpdateError> {
    let stores: Vec<RemoteManifest> = prefixes.iter().cloned().map(RemoteManifest::new).collect();
    let stores: Vec<&dyn ManifestStore> = stores.iter().map(|s| s as &dyn ManifestStore).collect();
    update_manifests(&stores, version, &CancelToken::new())
}

/// Publishes a cache of `version` under `name` and returns its prefix and local manifest.
fn published(
    store: Arc<dyn ObjectStore>,
    name: &str,
    version: ManifestVersion,
) -> (RemotePrefix, Vec<u8>) {
    let cache = tempfile::tempdir().unwrap();
    make_cache(cache.path(), 3, 100, version);
    let to = prefix(store, name);
    publish_cache(cache.path(), &to, &PublishOptions::default()).unwrap();
    (
        to,
        std::fs::read(cache.path().join("manifest.json")).unwrap(),
    )
}

#[test]
fn v2_manifests_become_v3_with_their_positions_byte_for_byte() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (a, a_bytes) = published(store.clone(), "a", ManifestVersion::V2);
    let (b, b_bytes) = published(store.clone(), "b", ManifestVersion::V3);
    let (c, c_bytes) = published(store, "c", ManifestVersion::V2);
    let report = update_prefixes(&[a.clone(), b.clone(), c.clone()], 3).unwrap();
    let outcomes: Vec<_> = report
        .entries
        .iter()
        .map(|e| (e.outcome.clone(), e.atomic))
        .collect();
    assert_eq!(
        outcomes,
        [
            (UpdateOutcome::Updated, true),
            (UpdateOutcome::Unchanged, true),
            (UpdateOutcome::Updated, true),
        ]
    );
    assert_eq!(
        (report.entries[0].cache_id, report.entries[2].cache_id),
        (0, 2)
    );
    // Exactly what the local migration writes.
    let expected = dsrt_manifest::upgrade_v2_to_v3(&a_bytes, 0).unwrap();
    assert_eq!(read_object(&a, "manifest.json").unwrap(), expected);
    assert_eq!(read_object(&b, "manifest.json").unwrap(), b_bytes);
    let expected = dsrt_manifest::upgrade_v2_to_v3(&c_bytes, 2).unwrap();
    assert_eq!(read_object(&c, "manifest.json").unwrap(), expected);
    // A second run finds everything v3 and writes nothing.
    let again = update_prefixes(&[a, b, c], 3).unwrap();
    assert!(again
        .entries
        .iter()
        .all(|e| e.outcome == UpdateOutcome::Unchanged));
}

#[test]
fn a_change_between_read_and_write_is_detected_and_not_overwritten() {
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (_, a_bytes) = published(inner.clone(), "a", ManifestVersion::V2);
    let mut changed = a_bytes.clone();
    changed.extend_from_slice(b" ");
    let behaviour = Behaviour {
        tamper_before_update: std::sync::Mutex::new(Some(changed.clone())),
        ..Behaviour::default()
    };
    let store = TestStore::new(inner, behaviour);
    let a = prefix(store, "a");
    let error = update_prefixes(std::slice::from_ref(&a), 3).unwrap_err();
    assert!(
        matches!(*error.cause, UpdateCause::ChangedConcurrently { .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("changed while migrating"),
        "{error}"
    );
    assert_eq!(read_object(&a, "manifest.json").unwrap(), changed);
}

#[test]
fn without_conditional_put_the_entry_is_not_atomic() {
    let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (_, a_bytes) = published(inner.clone(), "a", ManifestVersion::V2);
    let behaviour = Behaviour {
        no_conditional_put: true,
        ..Behaviour::default()
    };
    let a = prefix(TestStore::new(inner, behaviour), "a");
    let report = update_prefixes(std::slice::from_ref(&a), 3).unwrap();
    assert_eq!(report.entries[0].outcome, UpdateOutcome::Updated);
    assert!(!report.entries[0].atomic);
    assert_eq!(report.not_atomic().count(), 1);
    let expected = dsrt_manifest::upgrade_v2_to_v3(&a_bytes, 0).unwrap();
    assert_eq!(read_object(&a, "manifest.json").unwrap(), expected);
}

#[test]
fn local_file_system_stores_migrate_without_atomicity() {
    let dir = tempfile::tempdir().unwrap();
    let local = dsrt_remote::object_store::local::LocalFileSystem::new_with_prefix(dir.path());
    let (a, a_bytes) = published(Arc::new(local.unwrap()), "a", ManifestVersion::V2);
    let report = update_prefixes(std::slice::from_ref(&a), 3).unwrap();
    assert_eq!(report.entries[0].outcome, UpdateOutcome::Updated);
    assert!(
        !report.entries[0].atomic,
        "LocalFileSystem has no PutMode::Update"
    );
    let expected = dsrt_manifest::upgrade_v2_to_v3(&a_bytes, 0).unwrap();
    assert_eq!(read_object(&a, "manifest.json").unwrap(), expected);
}

#[test]
fn every_target_is_checked_before_any_write() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (a, a_bytes) = published(store.clone(), "a", ManifestVersion::V2);
    let missing = prefix(store.clone(), "missing");
    let error = update_prefixes(&[a.clone(), missing], 3).unwrap_err();
    assert_eq!(error.failed.as_deref(), Some("mem://caches/missing"));
    assert!(error.done.is_empty());
    assert_eq!(read_object(&a, "manifest.json").unwrap(), a_bytes);

    // Two v3 caches of one source name share its id.
    let (d, _) = published(store.clone(), "d", ManifestVersion::V3);
    let (e, _) = published(store.clone(), "e", ManifestVersion::V3);
    let clash = update_prefixes(&[a.clone(), d, e], 3).unwrap_err();
    assert!(
        matches!(*clash.cause, UpdateCause::DuplicateId { .. }),
        "{clash}"
    );
    let (b, _) = published(store, "b", ManifestVersion::V2);
    let twice = update_prefixes(&[a.clone(), b.clone(), a.clone()], 3).unwrap_err();
    assert!(
        matches!(*twice.cause, UpdateCause::DuplicateCache { .. }),
        "{twice}"
    );
    assert_eq!(read_object(&a, "manifest.json").unwrap(), a_bytes);
    let refused = update_prefixes(&[a], 2).unwrap_err();
    assert!(matches!(*refused.cause, UpdateCause::UnsupportedTarget(2)));
}

#[test]
fn prefixes_and_directories_migrate_in_one_list_with_their_positions() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (a, a_bytes) = published(store.clone(), "a", ManifestVersion::V2);
    let local = tempfile::tempdir().unwrap();
    make_cache(local.path(), 3, 100, ManifestVersion::V2);
    let local_bytes = std::fs::read(local.path().join("manifest.json")).unwrap();
    let (c, c_bytes) = published(store, "c", ManifestVersion::V2);
    let (a, c) = (RemoteManifest::new(a), RemoteManifest::new(c));
    let b = LocalManifest::new(local.path(), &durable_fs::StdFileSystem);
    let report = update_manifests(&[&a, &b, &c], 3, &CancelToken::new()).unwrap();
    let entries: Vec<_> = report
        .entries
        .iter()
        .map(|e| (e.cache.as_str(), e.cache_id, e.outcome.clone(), e.atomic))
        .collect();
    let local_name = local.path().display().to_string();
    assert_eq!(
        entries,
        [
            ("mem://caches/a", 0, UpdateOutcome::Updated, true),
            (local_name.as_str(), 1, UpdateOutcome::Updated, true),
            ("mem://caches/c", 2, UpdateOutcome::Updated, true),
        ]
    );
    assert_eq!(report.entries[0].manifest, "mem://caches/a/manifest.json");
    let expected = dsrt_manifest::upgrade_v2_to_v3(&a_bytes, 0).unwrap();
    assert_eq!(read_object(a.prefix(), "manifest.json").unwrap(), expected);
    let expected = dsrt_manifest::upgrade_v2_to_v3(&local_bytes, 1).unwrap();
    assert_eq!(
        std::fs::read(local.path().join("manifest.json")).unwrap(),
        expected
    );
    let expected = dsrt_manifest::upgrade_v2_to_v3(&c_bytes, 2).unwrap();
    assert_eq!(read_object(c.prefix(), "manifest.json").unwrap(), expected);
}

#[test]
fn a_store_failure_keeps_whether_a_retry_may_pass() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let missing = prefix(store, "missing");
    let error = update_prefixes(std::slice::from_ref(&missing), 3).unwrap_err();
    assert!(
        matches!(
            *error.cause,
            UpdateCause::Store {
                retryable: false,
                ..
            }
        ),
        "{error}"
    );
    assert!(!error.is_retryable(), "not found is never retryable");
    assert_eq!(error.cause.kind(), "store");
    assert!(
        error
            .to_string()
            .contains("mem://caches/missing/manifest.json"),
        "{error}"
    );
}
