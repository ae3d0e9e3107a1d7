//! `dsrt pack --out s3://...` and `dsrt migrate s3://...` through the binary, configured only by
//! the standard `AWS_*` environment variables, against the local S3-compatible server
//! `.ci/s3-server.sh` starts. Every test is `#[ignore]`d; `cargo xtask test` starts the server
//! and runs them with `--ignored`. Only loopback endpoints are accepted.
#![allow(clippy::unwrap_used)] // Test code.

mod common;

use common::{dir_with, dsrt_in};
use std::time::{SystemTime, UNIX_EPOCH};

/// A fresh prefix URL for `test`; without a configured server the test fails and says why.
fn prefix_url(test: &str) -> String {
    let Ok(bucket) = std::env::var("ATLAS_S3_TEST_BUCKET") else {
        panic!(
            "{test}: ATLAS_S3_TEST_BUCKET is not set, so no S3 server is configured. Run \
             `cargo xtask test`, or `bash .ci/s3-server.sh start DIR` and `source DIR/env` first."
        );
    };
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        ["http://127.0.0.1:", "http://localhost:"]
            .iter()
            .any(|p| endpoint.starts_with(p)),
        "AWS_ENDPOINT_URL ('{endpoint}') is not on loopback"
    );
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "s3://{bucket}/dsrt-cli-tests/{test}-{}-{nanos}",
        std::process::id()
    )
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn pack_out_s3_publishes_and_a_second_pack_is_refused() {
    let url = prefix_url("pack");
    let input = dir_with(&[("a.txt", b"alpha"), ("b/c.txt", b"gamma")]);
    let args = [
        "pack",
        "--from-dir",
        ".",
        "--out",
        &url,
        "--source",
        "s3",
        "--json",
    ];
    let run = dsrt_in(input.path(), &args).ok();
    let json = run.json();
    assert_eq!(json["path"], url.as_str());
    assert_eq!(json["samples"], 2);
    assert!(run.stderr.contains("publishing"), "{}", run.stderr);
    let again = dsrt_in(input.path(), &args).fails(1);
    assert!(
        again.stderr.contains("already published"),
        "{}",
        again.stderr
    );
}

#[test]
#[ignore = "needs the S3 test server: cargo xtask test runs it"]
fn migrate_accepts_s3_urls() {
    let url = prefix_url("migrate");
    let input = dir_with(&[("a.txt", b"alpha")]);
    let args = ["pack", "--from-dir", ".", "--out", &url, "--source", "m"];
    dsrt_in(input.path(), &args).ok();
    // A v3 cache stays as it is; the conditional path itself is covered in dsrt-remote.
    let run = dsrt_in(input.path(), &["migrate", "--to", "3", &url, "--json"]).ok();
    let json = run.json();
    assert_eq!(json["entries"][0]["outcome"], "unchanged");
    assert_eq!(json["entries"][0]["atomic"], true);
}
