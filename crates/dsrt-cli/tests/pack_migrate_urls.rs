//! `--out file://...` and `migrate` argument checks for URLs (the S3 runs are in `s3.rs`).
#![allow(clippy::unwrap_used)] // Test code.

mod common;

use common::{dir_with, dsrt_in};

#[test]
fn pack_to_a_file_url_writes_the_directory() {
    let input = dir_with(&[("a.txt", b"alpha"), ("b.txt", b"beta")]);
    let out = tempfile::tempdir().unwrap();
    let url = format!("file://{}/c", out.path().display());
    let run = dsrt_in(
        input.path(),
        &["pack", "--from-dir", ".", "--out", &url, "--source", "s"],
    )
    .ok();
    assert!(run.stdout_text().contains("packed 2 samples"));
    assert!(out.path().join("c/manifest.json").exists());
}

#[test]
fn migrate_refuses_to_mix_directories_and_store_urls() {
    let dir = tempfile::tempdir().unwrap();
    let run = dsrt_in(
        dir.path(),
        &["migrate", "--to", "3", "local/", "s3://bucket/cache"],
    )
    .fails(1);
    assert!(run.stderr.contains("not both"), "{}", run.stderr);
}
