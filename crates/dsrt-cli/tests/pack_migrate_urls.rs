//! `--out file://...` and `migrate` of lists mixing directories and URLs (the S3 runs are in
//! `s3.rs`).
#![allow(clippy::unwrap_used)] // Test code.

mod common;

use common::{dir_with, dsrt_in, make_v2};
use serde_json::json;

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
fn migrate_takes_directories_and_urls_in_one_list_by_position() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b"] {
        common::pack_text(dir.path(), name, 3, 200);
        make_v2(&dir.path().join(name));
    }
    let url = format!("file://{}/b", dir.path().display());
    let report = dsrt_in(dir.path(), &["migrate", "--to", "3", "a", &url, "--json"])
        .ok()
        .json();
    let entries: Vec<_> = report["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["cache_id"].clone(),
                e["outcome"].clone(),
                e["atomic"].clone(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        vec![
            (json!(0), json!("updated"), json!(true)),
            (json!(1), json!("updated"), json!(true))
        ]
    );
}

#[test]
fn migrate_checks_every_cache_of_a_mixed_list_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    common::pack_text(dir.path(), "a", 3, 200);
    make_v2(&dir.path().join("a"));
    let before = std::fs::read(dir.path().join("a/manifest.json")).unwrap();
    let url = format!("file://{}/missing", dir.path().display());
    let run = dsrt_in(dir.path(), &["migrate", "--to", "3", "a", &url]).fails(1);
    assert!(run.stderr.contains("missing"), "{}", run.stderr);
    assert_eq!(
        std::fs::read(dir.path().join("a/manifest.json")).unwrap(),
        before
    );
}
