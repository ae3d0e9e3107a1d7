//! Publishing and migrating on the local S3-compatible server `.ci/s3-server.sh` starts,
//! configured only by the standard `AWS_*` variables. Every test is `#[ignore]`d; `cargo xtask
//! test` starts the server and runs them with `--ignored`. Only loopback endpoints are accepted.
#![allow(clippy::unwrap_used)] // Test code.

mod s3_support;
mod write_support;

use dsrt_migrate::{CancelToken, UpdateOutcome};
use dsrt_remote::{
    merge_remote_parts, publish_cache, remove_prefix, PublishOptions, RemoteError, RemoteManifest,
    RemotePart, RemotePrefix,
};
use dsrt_schema::{Column, ColumnType, Schema, ValueRef};
use dsrt_writer::{
    merge_parts, CacheWriter, ManifestVersion, PartCache, WriteError, WriterOptions,
};
use s3_support::s3_prefix;
use std::path::Path;
use write_support::{list_objects, local_files, make_cache, read_object, Behaviour, TestStore};

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn publish_lists_every_file_byte_equal_multipart_included() {
    let cache = tempfile::tempdir().unwrap();
    // Shards of about 6 MiB: multipart with 5 MiB parts (S3's minimum but for the last).
    make_cache(cache.path(), 6, 2 << 20, ManifestVersion::V3);
    let to = s3_prefix("publish");
    let options = PublishOptions {
        multipart_threshold: 5 << 20,
        part_size: 5 << 20,
        ..PublishOptions::default()
    };
    let report = publish_cache(cache.path(), &to, &options).unwrap();
    assert!(report.multipart_files >= 1, "{report:?}");
    assert!(report.manifest_atomic);
    let files = local_files(cache.path());
    let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(list_objects(&to), names);
    for (name, bytes) in files {
        assert_eq!(read_object(&to, &name).unwrap(), bytes, "{name}");
    }
    let again = publish_cache(cache.path(), &to, &options).unwrap_err();
    assert!(
        matches!(again, RemoteError::AlreadyPublished { .. }),
        "{again}"
    );
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn migrate_replaces_v2_manifests_with_if_match() {
    let (a, b) = (s3_prefix("migrate-a"), s3_prefix("migrate-b"));
    let mut originals = Vec::new();
    for to in [&a, &b] {
        let cache = tempfile::tempdir().unwrap();
        make_cache(cache.path(), 3, 100, ManifestVersion::V2);
        publish_cache(cache.path(), to, &PublishOptions::default()).unwrap();
        originals.push(std::fs::read(cache.path().join("manifest.json")).unwrap());
    }
    let stores = [
        RemoteManifest::new(a.clone()),
        RemoteManifest::new(b.clone()),
    ];
    let report =
        dsrt_migrate::update_manifests(&[&stores[0], &stores[1]], 3, &CancelToken::new()).unwrap();
    for (position, entry) in report.entries.iter().enumerate() {
        assert_eq!(entry.outcome, UpdateOutcome::Updated);
        assert!(entry.atomic, "S3 answers If-Match");
        assert_eq!(entry.cache_id, position as u64);
    }
    for (position, to) in [&a, &b].into_iter().enumerate() {
        let expected = dsrt_manifest::upgrade_v2_to_v3(&originals[position], position as u64);
        assert_eq!(read_object(to, "manifest.json").unwrap(), expected.unwrap());
    }
}

/// The options the join parts of these tests are written with (`make_cache`'s).
fn part_options(source: &str) -> WriterOptions {
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    WriterOptions::new(source, schema)
}

/// Three parts of 5, 9 and 14 samples (several shards each, one of them short), written
/// locally under `dir/0..3` and published under `staging/00000k`; returns them for both joins.
fn three_parts(dir: &Path, staging: &RemotePrefix) -> (Vec<PartCache>, Vec<RemotePart>) {
    let (mut local, mut remote) = (Vec::new(), Vec::new());
    for (k, samples) in [5u64, 9, 14].into_iter().enumerate() {
        let path = dir.join(k.to_string());
        make_cache(&path, samples, 100 + 37 * k, ManifestVersion::V3);
        let prefix = sub_prefix(staging, &format!("{k:06}"));
        publish_cache(&path, &prefix, &PublishOptions::default()).unwrap();
        local.push(PartCache {
            path,
            payload_bytes: samples * (100 + 37 * k as u64),
        });
        remote.push(RemotePart {
            prefix,
            payload_bytes: samples * (100 + 37 * k as u64),
        });
    }
    (local, remote)
}

fn sub_prefix(of: &RemotePrefix, name: &str) -> RemotePrefix {
    RemotePrefix::new(of.store(), of.object(name), of.object_url(name))
}

/// The objects under `to` outside its staging prefix `.dsrt-parts-test/`.
fn cache_objects(to: &RemotePrefix) -> Vec<String> {
    list_objects(to)
        .into_iter()
        .filter(|name| !name.starts_with(".dsrt-parts-test/"))
        .collect()
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn three_parts_joined_on_the_store_equal_the_local_join_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let to = s3_prefix("join");
    let staging = sub_prefix(&to, ".dsrt-parts-test");
    let (local_parts, remote_parts) = three_parts(dir.path(), &staging);
    let options = part_options("remote-test");
    let out = dir.path().join("joined");
    let local = merge_parts(&out, &local_parts, &options).unwrap();
    let remote =
        merge_remote_parts(&to, &remote_parts, &options, &PublishOptions::default()).unwrap();
    assert!(remote.manifest_atomic);
    assert_eq!(remote.cache.samples, 28);
    assert_eq!(remote.cache.shards, local.shards);
    assert_eq!(remote.cache.cache_id, local.cache_id);
    assert_eq!(remote.cache.payload_bytes, local.payload_bytes);
    assert_eq!(remote.cache.path.to_str(), Some(to.url()));
    assert!(
        local.shards.len() > 3,
        "several shards per part: {}",
        local.shards.len()
    );
    // Every file of the local join, byte for byte, and nothing else: the staging prefix (the
    // parts) is gone.
    let files = local_files(&out);
    let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(list_objects(&to), names);
    for (name, bytes) in files {
        assert_eq!(read_object(&to, &name).unwrap(), bytes, "{name}");
    }
    // It opens and reads as a cache.
    let cache = dsrt_remote::open_remote(
        &to,
        &dsrt_remote::RemoteOptions::new(dir.path().join("read")).validate_cache(true),
    )
    .unwrap();
    assert_eq!(cache.len(), 28);
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn a_part_that_does_not_fit_is_refused_by_name_and_nothing_is_published() {
    let dir = tempfile::tempdir().unwrap();
    let to = s3_prefix("join-misfit");
    let staging = sub_prefix(&to, ".dsrt-parts-test");
    let (_, mut parts) = three_parts(dir.path(), &staging);
    // A fourth part written for another source.
    let odd = dir.path().join("odd");
    let mut writer = CacheWriter::create(&odd, part_options("another-source")).unwrap();
    writer.add_values(b"sample", &[ValueRef::Int64(1)]).unwrap();
    writer.finish().unwrap();
    let odd_prefix = sub_prefix(&staging, "000003");
    publish_cache(&odd, &odd_prefix, &PublishOptions::default()).unwrap();
    parts.push(RemotePart {
        prefix: odd_prefix.clone(),
        payload_bytes: 6,
    });
    let staged = list_objects(&staging);
    let error = merge_remote_parts(
        &to,
        &parts,
        &part_options("remote-test"),
        &PublishOptions::default(),
    )
    .unwrap_err();
    match &error {
        RemoteError::Write(WriteError::Part { path, reason }) => {
            assert_eq!(path.to_str(), Some(odd_prefix.url()), "{error}");
            assert!(reason.contains("another-source"), "{error}");
        }
        other => panic!("expected a part error, got {other:?}"),
    }
    assert!(
        error.to_string().contains("/.dsrt-parts-test/000003"),
        "{error}"
    );
    // Nothing was written beside the staging prefix, which is left whole for its owner.
    assert_eq!(cache_objects(&to), Vec::<String>::new());
    assert_eq!(list_objects(&staging), staged);
    remove_prefix(&staging).unwrap();
    assert_eq!(list_objects(&to), Vec::<String>::new());
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn an_existing_manifest_at_the_target_is_refused_and_nothing_is_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let to = s3_prefix("join-published");
    let existing = dir.path().join("existing");
    make_cache(&existing, 3, 50, ManifestVersion::V3);
    publish_cache(&existing, &to, &PublishOptions::default()).unwrap();
    let before: Vec<(String, Vec<u8>)> = cache_objects(&to)
        .into_iter()
        .map(|name| {
            let bytes = read_object(&to, &name).unwrap();
            (name, bytes)
        })
        .collect();
    let staging = sub_prefix(&to, ".dsrt-parts-test");
    let (_, parts) = three_parts(dir.path(), &staging);
    let error = merge_remote_parts(
        &to,
        &parts,
        &part_options("remote-test"),
        &PublishOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(error, RemoteError::AlreadyPublished { .. }),
        "{error}"
    );
    assert_eq!(error.kind(), "already_published");
    let after: Vec<(String, Vec<u8>)> = cache_objects(&to)
        .into_iter()
        .map(|name| {
            let bytes = read_object(&to, &name).unwrap();
            (name, bytes)
        })
        .collect();
    assert_eq!(after, before);
    remove_prefix(&staging).unwrap();
    assert_eq!(list_objects(&staging), Vec::<String>::new());
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn a_join_failing_after_its_copies_deletes_them_and_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let real = s3_prefix("join-fails");
    let staging = sub_prefix(&real, ".dsrt-parts-test");
    let (_, parts) = three_parts(dir.path(), &staging);
    // The target through a store whose first PUT (index.bin's upload, after every shard was
    // copied) is refused.
    let store = TestStore::new(
        real.store(),
        Behaviour {
            fail_put: Some(1),
            ..Behaviour::default()
        },
    );
    let to = RemotePrefix::new(store.clone(), real.prefix().clone(), real.url());
    let error = merge_remote_parts(
        &to,
        &parts,
        &part_options("remote-test"),
        &PublishOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(error, RemoteError::Upload { .. }), "{error}");
    assert_eq!(cache_objects(&real), Vec::<String>::new());
    // The parts are whole: the same join succeeds once the store takes the PUT.
    let joined = merge_remote_parts(
        &real,
        &parts,
        &part_options("remote-test"),
        &PublishOptions::default(),
    )
    .unwrap();
    assert_eq!(joined.cache.samples, 28);
    assert!(cache_objects(&real).contains(&"manifest.json".to_owned()));
    assert_eq!(list_objects(&staging), Vec::<String>::new());
}
