//! Publishing and migrating on the local S3-compatible server `.ci/s3-server.sh` starts,
//! configured only by the standard `AWS_*` variables. Every test is `#[ignore]`d; `cargo xtask
//! test` starts the server and runs them with `--ignored`. Only loopback endpoints are accepted.
#![allow(clippy::unwrap_used)] // Test code.

mod s3_support;
mod write_support;

use dsrt_remote::{
    publish_cache, update_remote_manifests, PublishOptions, RemoteError, RemoteUpdateOutcome,
};
use dsrt_writer::ManifestVersion;
use s3_support::s3_prefix;
use write_support::{list_objects, local_files, make_cache, read_object};

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
    let report = update_remote_manifests(&[a.clone(), b.clone()], 3).unwrap();
    for (position, entry) in report.entries.iter().enumerate() {
        assert_eq!(entry.outcome, RemoteUpdateOutcome::Updated);
        assert!(entry.atomic, "S3 answers If-Match");
        assert_eq!(entry.cache_id, position as u64);
    }
    for (position, to) in [&a, &b].into_iter().enumerate() {
        let expected = dsrt_manifest::upgrade_v2_to_v3(&originals[position], position as u64);
        assert_eq!(read_object(to, "manifest.json").unwrap(), expected.unwrap());
    }
}
