//! `inspect`, `verify`, `cat` and `iterate` on `file://` URLs, and the store flags they share
//! (the S3 runs are in `s3.rs`).
#![allow(clippy::unwrap_used)] // Test code.

mod common;

use common::{dir_with, dsrt_in};
use serde_json::{json, Value};
use std::path::Path;

/// A directory holding cache `c`: 12 files over several lz4 shards.
fn packed() -> tempfile::TempDir {
    let files: Vec<(String, Vec<u8>)> = (0..12)
        .map(|i| {
            (
                format!("in/{i:02}.txt"),
                format!("file {i} ").repeat(40).into_bytes(),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let dir = dir_with(&borrowed);
    let args = [
        "pack",
        "--from-dir",
        "in",
        "--out",
        "c",
        "--source",
        "urls",
        "--compression",
        "lz4",
        "--max-shard-bytes",
        "512",
    ];
    dsrt_in(dir.path(), &args).ok();
    dir
}

fn file_url(dir: &Path) -> String {
    format!("file://{}", dir.join("c").display())
}

fn without_path(mut value: Value) -> Value {
    value.as_object_mut().unwrap().remove("path");
    value
}

#[test]
fn inspect_reads_a_file_url_as_the_directory() {
    let dir = packed();
    let url = file_url(dir.path());
    let local = dsrt_in(dir.path(), &["inspect", "c", "--json"]).ok().json();
    let remote = dsrt_in(dir.path(), &["inspect", &url, "--json"])
        .ok()
        .json();
    assert!(local["shards"].as_array().unwrap().len() > 1);
    assert_eq!(without_path(remote.clone()), without_path(local));
    assert_eq!(remote["path"], json!(dir.path().join("c")));
}

#[test]
fn cat_of_a_file_url_is_byte_equal_to_the_directory() {
    let dir = packed();
    let url = file_url(dir.path());
    for args in [
        &["3"][..],
        &["3", "--metadata"],
        &["11", "--fetch", "range"],
    ] {
        let local: Vec<&str> = ["cat", "c"].iter().chain(args).copied().collect();
        let remote: Vec<&str> = ["cat", url.as_str()].iter().chain(args).copied().collect();
        let expected = dsrt_in(dir.path(), &local).ok().stdout;
        assert!(!expected.is_empty());
        assert_eq!(
            dsrt_in(dir.path(), &remote).ok().stdout,
            expected,
            "{args:?}"
        );
    }
}

#[test]
fn verify_full_names_the_url_it_was_given() {
    let dir = packed();
    let url = file_url(dir.path());
    let run = dsrt_in(dir.path(), &["verify", "--full", &url, "c"]).ok();
    assert_eq!(run.stdout_text(), format!("{url}: ok\nc: ok\n"));
    let json = dsrt_in(dir.path(), &["verify", "--json", &url]).ok().json();
    assert_eq!(json["caches"][0]["path"], url.as_str());
    assert_eq!(json["caches"][0]["samples"], 12);
}

#[test]
fn iterate_over_file_urls_yields_the_directory_order() {
    let dir = packed();
    let url = file_url(dir.path());
    let args = ["--keys", "--seed", "5", "--shuffle", "full"];
    let local: Vec<&str> = ["iterate", "c"].iter().chain(&args).copied().collect();
    let remote: Vec<&str> = ["iterate", url.as_str()]
        .iter()
        .chain(&args)
        .copied()
        .collect();
    let expected = dsrt_in(dir.path(), &local).ok().stdout_text();
    assert_eq!(expected.lines().count(), 12);
    assert_eq!(dsrt_in(dir.path(), &remote).ok().stdout_text(), expected);
}

#[test]
fn iterate_refuses_the_same_cache_twice_by_url_too() {
    let dir = packed();
    let url = file_url(dir.path());
    let run = dsrt_in(dir.path(), &["iterate", &url, &url]).fails(1);
    assert!(run.stderr.contains(&url), "{}", run.stderr);
}

#[test]
fn store_flags_are_checked_like_other_flags() {
    let dir = packed();
    for args in [
        &["inspect", "c", "--cache-limit", "0"][..],
        &["cat", "c", "0", "--cache-limit", "12XB"],
        &["verify", "c", "--fetch", "sometimes"],
        &["iterate", "c", "--cache-dir"],
    ] {
        let run = dsrt_in(dir.path(), args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
    }
    // Local caches ignore them.
    let flags = [
        "--cache-dir",
        "nowhere",
        "--cache-limit",
        "1KiB",
        "--fetch",
        "range",
    ];
    let args: Vec<&str> = ["verify", "--full", "c"]
        .iter()
        .chain(&flags)
        .copied()
        .collect();
    dsrt_in(dir.path(), &args).ok();
    assert!(!dir.path().join("nowhere").exists());
}

#[test]
fn an_unknown_url_scheme_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for sub in [
        &["inspect"][..],
        &["cat", "--", "nosuch://x/y", "0"],
        &["verify"],
    ] {
        let mut args = sub.to_vec();
        if args.len() == 1 {
            args.push("nosuch://x/y");
        }
        let run = dsrt_in(dir.path(), &args).fails(1);
        assert!(
            run.stderr.starts_with("dsrt: nosuch://x/y"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn reading_subcommands_document_urls_and_the_store_flags() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["inspect", "verify", "cat", "iterate"] {
        let text = dsrt_in(dir.path(), &[sub, "--help"]).ok().stdout_text();
        for needle in ["--cache-dir", "--cache-limit", "--fetch", "s3://"] {
            assert!(
                text.contains(needle),
                "{sub} --help lacks {needle}:\n{text}"
            );
        }
    }
    let text = dsrt_in(dir.path(), &["--help"]).ok().stdout_text();
    assert!(text.contains("75"), "{text}");
}

/// A store nobody answers (a closed loopback port): object_store retries, then dsrt exits 75,
/// the status that says a later run may succeed. Takes some seconds of retries.
#[test]
fn an_unreachable_store_exits_75() {
    let dir = tempfile::tempdir().unwrap();
    let output = unreachable_store()
        .args(["cat", "s3://bucket/cache", "0", "--cache-dir"])
        .arg(dir.path().join("local-cache"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(75), "{stderr}");
    assert!(
        stderr.starts_with("dsrt: s3://bucket/cache/manifest.json: "),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

/// The same for `migrate`: a store nobody answers stops the migration before anything is
/// written, with the status that says a later run may succeed.
#[test]
fn a_migration_of_an_unreachable_store_exits_75() {
    let dir = tempfile::tempdir().unwrap();
    let output = unreachable_store()
        .args(["migrate", "--to", "3", "s3://bucket/cache"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(75), "{stderr}");
    assert!(stderr.contains("s3://bucket/cache"), "{stderr}");
}

/// `dsrt`, its S3 endpoint a closed loopback port.
fn unreachable_store() -> std::process::Command {
    let mut command = common::command();
    command
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1");
    command
}
