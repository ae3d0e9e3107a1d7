//! Remote manifest migration v2 -> v3: conditional replacement, a concurrent change detected,
//! a store without conditional PUT reported as not atomic, and the checks before any write.
#![allow(clippy::unwrap_used)] // Test code.

mod write_support;

use dsrt_remote::object_store::memory::InMemory;
use dsrt_remote::object_store::ObjectStore;
use dsrt_remote::{
    publish_cache, update_remote_manifests, PublishOptions, RemotePrefix, RemoteUpdateCause,
    RemoteUpdateOutcome,
};
use dsrt_writer::ManifestVersion;
use std::sync::Arc;
use write_support::{make_cache, prefix, read_object, Behaviour, TestStore};

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
    let report = update_remote_manifests(&[a.clone(), b.clone(), c.clone()], 3).unwrap();
    let outcomes: Vec<_> = report
        .entries
        .iter()
        .map(|e| (e.outcome, e.atomic))
        .collect();
    assert_eq!(
        outcomes,
        [
            (RemoteUpdateOutcome::Updated, true),
            (RemoteUpdateOutcome::Unchanged, true),
            (RemoteUpdateOutcome::Updated, true),
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
    let again = update_remote_manifests(&[a, b, c], 3).unwrap();
    assert!(again
        .entries
        .iter()
        .all(|e| e.outcome == RemoteUpdateOutcome::Unchanged));
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
    let error = update_remote_manifests(std::slice::from_ref(&a), 3).unwrap_err();
    assert!(
        matches!(*error.cause, RemoteUpdateCause::ChangedConcurrently { .. }),
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
    let report = update_remote_manifests(std::slice::from_ref(&a), 3).unwrap();
    assert_eq!(report.entries[0].outcome, RemoteUpdateOutcome::Updated);
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
    let report = update_remote_manifests(std::slice::from_ref(&a), 3).unwrap();
    assert_eq!(report.entries[0].outcome, RemoteUpdateOutcome::Updated);
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
    let error = update_remote_manifests(&[a.clone(), missing], 3).unwrap_err();
    assert_eq!(error.failed.as_deref(), Some("mem://caches/missing"));
    assert!(error.done.is_empty());
    assert_eq!(read_object(&a, "manifest.json").unwrap(), a_bytes);

    // Two v3 caches of one source name share its id.
    let (d, _) = published(store.clone(), "d", ManifestVersion::V3);
    let (e, _) = published(store.clone(), "e", ManifestVersion::V3);
    let clash = update_remote_manifests(&[a.clone(), d, e], 3).unwrap_err();
    assert!(
        matches!(*clash.cause, RemoteUpdateCause::DuplicateId { .. }),
        "{clash}"
    );
    let (b, _) = published(store, "b", ManifestVersion::V2);
    let twice = update_remote_manifests(&[a.clone(), b.clone(), a.clone()], 3).unwrap_err();
    assert!(
        matches!(*twice.cause, RemoteUpdateCause::DuplicateCache { .. }),
        "{twice}"
    );
    assert_eq!(read_object(&a, "manifest.json").unwrap(), a_bytes);
    let refused = update_remote_manifests(&[a], 2).unwrap_err();
    assert!(matches!(
        *refused.cause,
        RemoteUpdateCause::UnsupportedTarget(2)
    ));
}
