//! The `atlas` binary on `s3://bucket/prefix`, configured only by the standard `AWS_*`
//! environment variables, against the local S3-compatible server `.ci/s3-server.sh` starts.
//!
//! The tests are `#[ignore]`d, so a plain `cargo test` reports them as ignored rather than
//! passed; `cargo xtask test` starts the server and runs them with `--ignored` (and fails if none
//! ran). Run by hand without `ATLAS_S3_TEST_BUCKET`, a test fails and says how to start the
//! server. Only loopback endpoints are accepted, and every run of the binary has a time limit.
#![allow(clippy::unwrap_used)] // Test code.

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The collection URL to use; without a configured server the test fails (it was asked to run).
fn collection(test: &str) -> String {
    let Ok(bucket) = std::env::var("ATLAS_S3_TEST_BUCKET") else {
        panic!(
            "{test}: ATLAS_S3_TEST_BUCKET is not set, so no S3 server is configured. \
             Run `cargo xtask test`, or start one with `bash .ci/s3-server.sh start DIR` and \
             `source DIR/env` first."
        );
    };
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        ["http://127.0.0.1:", "http://localhost:"]
            .iter()
            .any(|p| endpoint.starts_with(p)),
        "ATLAS_S3_TEST_BUCKET is set but AWS_ENDPOINT_URL ('{endpoint}') is not on loopback"
    );
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "s3://{bucket}/atlas-cli-tests/{test}-{}-{nanos}",
        std::process::id()
    )
}

/// Runs the binary with a time limit; the environment (endpoint, keys) is inherited.
fn atlas(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_atlas"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("atlas {args:?} did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
    Output {
        status,
        stdout,
        stderr,
    }
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut args = args.to_vec();
    args.push("--json");
    serde_json::from_str(&stdout(&atlas(&args))).unwrap()
}

#[test]
#[ignore = "needs the S3 test server; cargo xtask test runs them"]
fn demo_info_ls_stats_attrs_read_verify_delete_on_s3() {
    let c = collection("every_command");
    assert!(stdout(&atlas(&["demo", &c, "--datasets", "5"])).contains("wrote 5 datasets"));
    assert!(stdout(&atlas(&["info", &c])).contains("5 live of 5"));
    assert_eq!(json(&["info", &c])["segments"].as_array().unwrap().len(), 4);
    assert_eq!(json(&["ls", &c])[4]["name"], "month_004");
    let stats = json(&["stats", &c, "temperature"]);
    assert_eq!(
        (stats["datasets"].as_u64(), stats["row_count"].as_u64()),
        (Some(5), Some(160))
    );
    assert_eq!(json(&["attrs", &c, "month"])["month_003"]["Int64"], 3);
    let read = json(&[
        "read",
        &c,
        "month_001",
        "temperature",
        "--start",
        "0,1",
        "--shape",
        "1,2",
    ]);
    assert_eq!(read["shape"], serde_json::json!([1, 2]));
    assert_eq!(read["values"], serde_json::json!([1.5, 2.0]));
    assert!(stdout(&atlas(&["verify", &c])).starts_with("ok:"));

    let deleted = json(&["delete", &c, "month_001", "month_003"]);
    assert_eq!(deleted["newly_deleted"], 2);
    let ls = json(&["ls", &c]);
    let names: Vec<_> = ls
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["month_000", "month_002", "month_004"]);
    assert!(stdout(&atlas(&["info", &c])).contains("3 live of 5"));
    assert_eq!(json(&["stats", &c, "temperature"])["datasets"], 3);
}

#[test]
#[ignore = "needs the S3 test server; cargo xtask test runs them"]
fn s3_errors_exit_non_zero_with_a_message() {
    let c = collection("errors");
    let missing = atlas(&["info", &c]);
    assert!(!missing.status.success());
    let message = String::from_utf8_lossy(&missing.stderr);
    assert!(
        message.contains("not an Atlas collection"),
        "stderr: {message}"
    );
    stdout(&atlas(&["demo", &c, "--datasets", "2"]));
    let unknown = atlas(&["delete", &c, "nope"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("nope"));
}

#[test]
#[ignore = "needs the S3 test server; cargo xtask test runs them"]
fn append_log_and_versions_on_s3() {
    let jan = collection("append_jan");
    let feb = collection("append_feb");
    let grown = collection("append_grown");
    stdout(&atlas(&[
        "demo",
        &jan,
        "--datasets",
        "3",
        "--name-prefix",
        "jan_",
    ]));
    stdout(&atlas(&[
        "demo",
        &feb,
        "--datasets",
        "2",
        "--name-prefix",
        "feb_",
    ]));
    let appended = json(&["append", &grown, &jan, &feb]);
    assert_eq!(appended[1]["version"], 2);
    assert_eq!(json(&["log", &grown]).as_array().unwrap().len(), 2);
    assert_eq!(json(&["ls", &grown]).as_array().unwrap().len(), 5);
    assert_eq!(
        json(&["ls", &grown, "--at-version", "1"])
            .as_array()
            .unwrap()
            .len(),
        3
    );
    // A clash is refused and commits nothing.
    assert_eq!(atlas(&["append", &grown, &feb]).status.code(), Some(1));
    assert_eq!(json(&["log", &grown]).as_array().unwrap().len(), 2);
    stdout(&atlas(&["verify", "--full", &grown]));
}
