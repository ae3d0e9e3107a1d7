//! Publishing a local cache to a prefix, on `InMemory` and on `LocalFileSystem`: the round
//! trip, manifest last, failures leaving no manifest, write-once, multipart, the writer API.
#![allow(clippy::unwrap_used)] // Test code.

mod write_support;

use dsrt_remote::object_store::local::LocalFileSystem;
use dsrt_remote::object_store::memory::InMemory;
use dsrt_remote::object_store::ObjectStore;
use dsrt_remote::{
    join_parts, merge_remote_parts, publish_cache, remove_unpublished_at, write_cache_at, JoinPart,
    LocationWriter, PublishOptions, RemoteError, RemotePart, RemotePrefix, RemoteWriterOptions,
    StoreLocation,
};
use dsrt_schema::{Column, ColumnType, Schema, ValueRef};
use dsrt_writer::{merge_parts, ManifestVersion, PartCache, WriterOptions};
use std::sync::Arc;
use std::time::Duration;
use write_support::{
    list_objects, local_files, make_cache, prefix, read_object, Behaviour, TestStore,
};

fn stores() -> Vec<(Arc<dyn ObjectStore>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let local = LocalFileSystem::new_with_prefix(dir.path()).unwrap();
    vec![
        (Arc::new(InMemory::new()), None),
        (Arc::new(local), Some(dir)),
    ]
}

fn quick() -> PublishOptions {
    PublishOptions {
        backoff: Duration::from_millis(1),
        ..PublishOptions::default()
    }
}

fn assert_same_files(local: &std::path::Path, to: &RemotePrefix) {
    let files = local_files(local);
    let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(list_objects(to), names);
    for (name, bytes) in files {
        assert_eq!(read_object(to, &name).unwrap(), bytes, "{name}");
    }
}

#[test]
fn every_object_equals_its_local_file_and_the_manifest_goes_last() {
    for (inner, _dir) in stores() {
        let cache = tempfile::tempdir().unwrap();
        make_cache(cache.path(), 20, 1000, ManifestVersion::V3);
        let store = TestStore::new(inner, Behaviour::default());
        let to = prefix(store.clone(), "one");
        let report = publish_cache(cache.path(), &to, &quick()).unwrap();
        assert_same_files(cache.path(), &to);
        let log = store.log();
        assert_eq!(log.last().unwrap(), "create caches/one/manifest.json");
        assert_eq!(log.iter().filter(|l| l.contains("manifest")).count(), 1);
        assert_eq!(report.files, local_files(cache.path()).len());
        assert!(report.manifest_atomic);
        assert_eq!((report.multipart_files, report.retries), (0, 0));
    }
}

#[test]
fn large_files_go_up_in_parts_and_arrive_whole() {
    for (inner, _dir) in stores() {
        let cache = tempfile::tempdir().unwrap();
        make_cache(cache.path(), 12, 5000, ManifestVersion::V3);
        let store = TestStore::new(inner, Behaviour::default());
        let to = prefix(store.clone(), "parts");
        let options = PublishOptions {
            multipart_threshold: 4096,
            part_size: 1500,
            part_concurrency: 2,
            ..quick()
        };
        let report = publish_cache(cache.path(), &to, &options).unwrap();
        assert_same_files(cache.path(), &to);
        let large = local_files(cache.path())
            .iter()
            .filter(|(_, bytes)| bytes.len() > 4096)
            .count();
        assert!(large >= 3);
        assert_eq!(report.multipart_files, large);
        assert!(store
            .log()
            .iter()
            .any(|l| l.starts_with("multipart caches/parts/shards/")));
    }
}

#[test]
fn a_failed_upload_leaves_no_manifest_and_names_the_file() {
    for (inner, _dir) in stores() {
        let cache = tempfile::tempdir().unwrap();
        make_cache(cache.path(), 20, 1000, ManifestVersion::V3);
        let behaviour = Behaviour {
            fail_put: Some(3),
            ..Behaviour::default()
        };
        let to = prefix(TestStore::new(inner, behaviour), "fail");
        let error = publish_cache(cache.path(), &to, &quick()).unwrap_err();
        assert!(matches!(error, RemoteError::Upload { .. }), "{error}");
        assert!(!error.is_retryable());
        let text = error.to_string();
        assert!(text.starts_with("uploading mem://caches/fail/"), "{text}");
        assert!(text.contains("not retryable"), "{text}");
        assert_eq!(read_object(&to, "manifest.json"), None);
        assert!(!list_objects(&to).is_empty(), "earlier files stay");
        // The leftovers block a plain publish; overwrite_partial replaces them.
        let again = publish_cache(cache.path(), &to, &quick()).unwrap_err();
        assert!(
            matches!(again, RemoteError::PrefixNotEmpty { .. }),
            "{again}"
        );
        let options = PublishOptions {
            overwrite_partial: true,
            ..quick()
        };
        publish_cache(cache.path(), &to, &options).unwrap();
        assert_same_files(cache.path(), &to);
    }
}

#[test]
fn transient_failures_are_retried_and_counted() {
    let cache = tempfile::tempdir().unwrap();
    make_cache(cache.path(), 8, 1000, ManifestVersion::V3);
    let behaviour = Behaviour {
        fail_put: Some(1),
        fail_transient: true,
        ..Behaviour::default()
    };
    let to = prefix(
        TestStore::new(Arc::new(InMemory::new()), behaviour),
        "retry",
    );
    let report = publish_cache(cache.path(), &to, &quick()).unwrap();
    assert_eq!(report.retries, 1);
    assert_same_files(cache.path(), &to);

    let behaviour = Behaviour {
        fail_put: Some(1),
        fail_transient: true,
        ..Behaviour::default()
    };
    let to = prefix(
        TestStore::new(Arc::new(InMemory::new()), behaviour),
        "no-retry",
    );
    let options = PublishOptions {
        retries: 0,
        ..quick()
    };
    let error = publish_cache(cache.path(), &to, &options).unwrap_err();
    assert!(error.is_retryable(), "{error}");
    assert!(error.to_string().contains("may be transient"), "{error}");
    assert_eq!(read_object(&to, "manifest.json"), None);
}

#[test]
fn a_prefix_with_a_manifest_is_refused() {
    for (inner, _dir) in stores() {
        let cache = tempfile::tempdir().unwrap();
        make_cache(cache.path(), 4, 100, ManifestVersion::V3);
        let to = prefix(inner, "twice");
        publish_cache(cache.path(), &to, &quick()).unwrap();
        let options = PublishOptions {
            overwrite_partial: true,
            ..quick()
        };
        let error = publish_cache(cache.path(), &to, &options).unwrap_err();
        assert!(
            matches!(error, RemoteError::AlreadyPublished { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("write-once"), "{error}");
    }
}

#[test]
fn without_conditional_put_the_manifest_is_checked_then_written() {
    let cache = tempfile::tempdir().unwrap();
    make_cache(cache.path(), 4, 100, ManifestVersion::V3);
    let behaviour = Behaviour {
        no_conditional_put: true,
        ..Behaviour::default()
    };
    let store = TestStore::new(Arc::new(InMemory::new()), behaviour);
    let to = prefix(store.clone(), "plain");
    let report = publish_cache(cache.path(), &to, &quick()).unwrap();
    assert!(!report.manifest_atomic);
    assert_eq!(
        store.log().last().unwrap(),
        "put caches/plain/manifest.json"
    );
    assert_same_files(cache.path(), &to);
}

#[test]
fn a_cache_without_its_files_is_refused_before_any_upload() {
    let cache = tempfile::tempdir().unwrap();
    make_cache(cache.path(), 4, 100, ManifestVersion::V3);
    std::fs::remove_file(cache.path().join("shards/000000.bin")).unwrap();
    let store = TestStore::new(Arc::new(InMemory::new()), Behaviour::default());
    let to = prefix(store.clone(), "broken");
    let error = publish_cache(cache.path(), &to, &quick()).unwrap_err();
    assert!(error.to_string().contains("000000.bin"), "{error}");
    assert!(store.log().is_empty());
}

fn schema() -> Schema {
    Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap()
}

#[test]
fn the_remote_writer_publishes_on_finish_and_cleans_its_staging() {
    let staging_root = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let to = prefix(store, "writer");
    let remote = RemoteWriterOptions {
        staging_root: Some(staging_root.path().to_path_buf()),
        publish: quick(),
    };
    let at = StoreLocation::Remote(to.clone());
    let mut writer =
        LocationWriter::create(&at, WriterOptions::new("w", schema()), remote).unwrap();
    for i in 0..5 {
        writer
            .add_values(b"payload", &[ValueRef::Int64(i)])
            .unwrap();
    }
    let done = writer.finish().unwrap();
    assert_eq!(done.cache.samples, 5);
    assert_eq!(done.location(), to.url());
    assert!(read_object(&to, "manifest.json").is_some());
    assert_eq!(std::fs::read_dir(staging_root.path()).unwrap().count(), 0);
}

#[test]
fn a_dropped_remote_writer_publishes_nothing() {
    let staging_root = tempfile::tempdir().unwrap();
    let to = prefix(Arc::new(InMemory::new()), "dropped");
    let remote = RemoteWriterOptions {
        staging_root: Some(staging_root.path().to_path_buf()),
        publish: quick(),
    };
    let at = StoreLocation::Remote(to.clone());
    let mut writer =
        LocationWriter::create(&at, WriterOptions::new("w", schema()), remote).unwrap();
    writer.add_values(b"x", &[ValueRef::Int64(1)]).unwrap();
    drop(writer);
    assert!(list_objects(&to).is_empty());
    assert_eq!(std::fs::read_dir(staging_root.path()).unwrap().count(), 0);
}

#[test]
fn one_writer_writes_a_directory_in_place_and_a_prefix_through_staging() {
    let dir = tempfile::tempdir().unwrap();
    let local = StoreLocation::Local(dir.path().join("c"));
    let mut writer = LocationWriter::create(
        &local,
        WriterOptions::new("w", schema()),
        RemoteWriterOptions::default(),
    )
    .unwrap();
    writer.add_values(b"x", &[ValueRef::Int64(1)]).unwrap();
    let done = writer.finish().unwrap();
    assert!(done.publish.is_none());
    assert_eq!(done.location(), dir.path().join("c").to_string_lossy());
    assert!(dir.path().join("c/manifest.json").exists());

    let to = prefix(Arc::new(InMemory::new()), "any");
    let remote = StoreLocation::Remote(to.clone());
    let mut writer = LocationWriter::create(
        &remote,
        WriterOptions::new("w", schema()),
        RemoteWriterOptions::default(),
    )
    .unwrap();
    writer.add_values(b"x", &[ValueRef::Int64(1)]).unwrap();
    let done = writer.finish().unwrap();
    assert_eq!(done.publish.unwrap().url, "mem://caches/any");
    assert!(read_object(&to, "manifest.json").is_some());
}

/// What a caller's own `fill` fails with, beside the library's errors.
#[derive(Debug)]
enum FillError {
    Remote,
    Write,
    Input,
}

impl From<RemoteError> for FillError {
    fn from(_: RemoteError) -> Self {
        Self::Remote
    }
}

impl From<dsrt_writer::WriteError> for FillError {
    fn from(_: dsrt_writer::WriteError) -> Self {
        Self::Write
    }
}

#[test]
fn a_failed_run_leaves_nothing_at_a_directory_a_prefix_or_in_staging() {
    let dir = tempfile::tempdir().unwrap();
    let staging_root = tempfile::tempdir().unwrap();
    let to = prefix(Arc::new(InMemory::new()), "failed");
    let remote = || RemoteWriterOptions {
        staging_root: Some(staging_root.path().to_path_buf()),
        publish: quick(),
    };
    let locations = [
        StoreLocation::Local(dir.path().join("c")),
        StoreLocation::Remote(to.clone()),
    ];
    for at in &locations {
        let error = write_cache_at(at, WriterOptions::new("w", schema()), remote(), |w| {
            for i in 0..50 {
                w.add_values(&[7u8; 100], &[ValueRef::Int64(i)])?;
            }
            Err(FillError::Input)
        })
        .unwrap_err();
        assert!(matches!(error, FillError::Input), "{error:?}");
    }
    assert!(!dir.path().join("c").exists());
    assert!(list_objects(&to).is_empty());
    assert_eq!(std::fs::read_dir(staging_root.path()).unwrap().count(), 0);
    for at in &locations {
        let done = write_cache_at(at, WriterOptions::new("w", schema()), remote(), |w| {
            w.add_values(b"x", &[ValueRef::Int64(1)])?;
            Ok::<_, FillError>(())
        })
        .unwrap();
        assert_eq!(done.cache.samples, 1);
    }
    assert!(read_object(&to, "manifest.json").is_some());
    let again = write_cache_at(
        &locations[1],
        WriterOptions::new("w", schema()),
        remote(),
        |_| Ok::<_, FillError>(()),
    );
    assert!(
        matches!(again, Err(FillError::Remote)),
        "a prefix is written once"
    );
}

#[test]
fn a_join_on_a_store_without_conditional_put_checks_then_writes_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let store = TestStore::new(
        Arc::new(InMemory::new()),
        Behaviour {
            no_conditional_put: true,
            ..Behaviour::default()
        },
    );
    let mut local = Vec::new();
    let mut remote = Vec::new();
    for k in 0..2u64 {
        let path = dir.path().join(k.to_string());
        make_cache(&path, 3 + k, 100, ManifestVersion::V3);
        let part = prefix(store.clone(), &format!("joined/.parts/{k}"));
        publish_cache(&path, &part, &quick()).unwrap();
        local.push(PartCache {
            path,
            payload_bytes: 0,
        });
        remote.push(RemotePart {
            prefix: part,
            payload_bytes: 0,
        });
    }
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let options = WriterOptions::new("remote-test", schema);
    let to = prefix(store.clone(), "joined");
    let joined = merge_remote_parts(&to, &remote, &options, &quick()).unwrap();
    assert!(!joined.manifest_atomic);
    assert_eq!(
        store.log().last().unwrap(),
        "put caches/joined/manifest.json"
    );
    let out = dir.path().join("local-join");
    merge_parts(&out, &local, &options).unwrap();
    // The parts are gone; what is left is the local join's files, byte for byte.
    assert_same_files(&out, &to);
    // A second join into the published prefix is refused before anything is copied.
    let error = merge_remote_parts(&to, &remote, &options, &quick()).unwrap_err();
    assert!(
        matches!(error, RemoteError::AlreadyPublished { .. }),
        "{error}"
    );
}

/// A small cache written with a `tokens` manifest key (what `dsrt-tokens` writes).
fn token_part(path: &std::path::Path, tokens: &serde_json::Value) {
    let options = WriterOptions::new("tok", schema()).manifest_key("tokens", tokens.clone());
    let mut writer = dsrt_writer::CacheWriter::create(path, options).unwrap();
    for i in 0..3 {
        writer
            .add_values(&[1, 0, 2, 0], &[ValueRef::Int64(i)])
            .unwrap();
    }
    writer.finish().unwrap();
}

fn manifest_tokens(bytes: &[u8]) -> Option<serde_json::Value> {
    dsrt_manifest::Manifest::parse(bytes)
        .unwrap()
        .extra_key("tokens")
        .cloned()
}

#[test]
fn the_tokens_key_survives_publish_and_both_joins() {
    let tokens = serde_json::json!({"dtype": "uint16", "vocab_size": 50257, "bos_id": null,
        "eos_id": 50256, "pad_id": null, "tokenizer": "gpt2"});
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (mut local, mut remote) = (Vec::new(), Vec::new());
    for k in 0..2 {
        let path = dir.path().join(k.to_string());
        token_part(&path, &tokens);
        let part = prefix(store.clone(), &format!("tok/.parts/{k}"));
        publish_cache(&path, &part, &quick()).unwrap();
        let published = read_object(&part, "manifest.json").unwrap();
        assert_eq!(manifest_tokens(&published), Some(tokens.clone()));
        local.push(PartCache {
            path,
            payload_bytes: 0,
        });
        remote.push(RemotePart {
            prefix: part,
            payload_bytes: 0,
        });
    }
    let options = WriterOptions::new("tok", schema()).manifest_key("tokens", tokens.clone());
    let to = prefix(store.clone(), "tok");
    merge_remote_parts(&to, &remote, &options, &quick()).unwrap();
    let joined = read_object(&to, "manifest.json").unwrap();
    assert_eq!(manifest_tokens(&joined), Some(tokens.clone()));
    let out = dir.path().join("joined");
    merge_parts(&out, &local, &options).unwrap();
    let joined = std::fs::read(out.join("manifest.json")).unwrap();
    assert_eq!(manifest_tokens(&joined), Some(tokens.clone()));

    // A join whose parts carry other tokens (or none) is refused, naming the part.
    let other = dir.path().join("other");
    token_part(&other, &serde_json::json!({"dtype": "uint32"}));
    let part = PartCache {
        path: other.clone(),
        payload_bytes: 0,
    };
    let error = merge_parts(&dir.path().join("refused"), &[part], &options).unwrap_err();
    assert!(
        error.to_string().contains("other") && error.to_string().contains("uint32"),
        "{error}"
    );
}

#[test]
fn one_join_takes_directories_into_a_directory_and_prefixes_into_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (mut local, mut remote) = (Vec::new(), Vec::new());
    for k in 0..3u64 {
        let path = dir.path().join(format!("part-{k}"));
        make_cache(&path, 2 + k, 100, ManifestVersion::V3);
        let part = prefix(store.clone(), &format!("joined/.parts/{k}"));
        publish_cache(&path, &part, &quick()).unwrap();
        local.push(JoinPart {
            location: StoreLocation::Local(path),
            payload_bytes: 10 * k,
        });
        remote.push(JoinPart {
            location: StoreLocation::Remote(part),
            payload_bytes: 10 * k,
        });
    }
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let options = WriterOptions::new("remote-test", schema);
    let to = prefix(store.clone(), "joined");
    let out = dir.path().join("joined");
    let to_dir = StoreLocation::Local(out.clone());
    // A part of the other kind is refused, naming it, before anything is read or written.
    let mixed = [local[0].clone(), remote[1].clone()];
    let error = join_parts(&to_dir, &mixed, &options, &quick()).unwrap_err();
    assert!(
        matches!(&error, RemoteError::Location { location, .. } if location.ends_with("/.parts/1")),
        "{error}"
    );
    assert!(!out.exists());
    let error = join_parts(
        &StoreLocation::Remote(to.clone()),
        &local,
        &options,
        &quick(),
    );
    assert!(matches!(error, Err(RemoteError::Location { .. })));
    let on_store = join_parts(
        &StoreLocation::Remote(to.clone()),
        &remote,
        &options,
        &quick(),
    );
    let in_dir = join_parts(&to_dir, &local, &options, &quick()).unwrap();
    let on_store = on_store.unwrap();
    assert!(in_dir.manifest_atomic && on_store.manifest_atomic);
    assert_eq!((in_dir.cache.samples, in_dir.cache.payload_bytes), (9, 30));
    assert_eq!(in_dir.cache.shards, on_store.cache.shards);
    assert_same_files(&out, &to);
    // A published cache is never removed; an unpublished one's files go, at either place.
    remove_unpublished_at(&to_dir, false).unwrap();
    remove_unpublished_at(&StoreLocation::Remote(to.clone()), false).unwrap();
    assert_same_files(&out, &to);
    let half = dir.path().join("half");
    make_cache(&half, 2, 100, ManifestVersion::V3);
    std::fs::remove_file(half.join("manifest.json")).unwrap();
    remove_unpublished_at(&StoreLocation::Local(half.clone()), true).unwrap();
    assert!(!half.exists());
}
