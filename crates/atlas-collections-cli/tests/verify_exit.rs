//! `atlas verify` on damaged collections, and the exit status of every kind of failure.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::atlas;

fn code(output: &Output) -> i32 {
    output.status.code().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn demo(dir: &Path, datasets: usize) -> String {
    let out = dir.join("c").to_str().unwrap().to_owned();
    let done = atlas(&["demo", &out, "--datasets", &datasets.to_string()]);
    assert_eq!(code(&done), 0, "{}", text(&done.stderr));
    out
}

fn container(collection: &str) -> PathBuf {
    Path::new(collection).join("data.atlas")
}

/// Flips `mask` into the byte at `at` of `data.atlas`.
fn flip(collection: &str, at: u64, mask: u8) {
    let path = container(collection);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[at as usize] ^= mask;
    std::fs::write(&path, bytes).unwrap();
}

fn json(output: &Output) -> Value {
    serde_json::from_str(&text(&output.stdout)).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {:?} stderr {:?}",
            text(&output.stdout),
            text(&output.stderr)
        )
    })
}

/// Offsets of the segments, by name, from `atlas info --json`.
fn segment_offset(collection: &str, name: &str) -> u64 {
    let info = json(&atlas(&["info", collection, "--json"]));
    info["segments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap()["offset"]
        .as_u64()
        .unwrap()
}

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Damages the first data block of segment `name` (a zstd frame at the segment's start) so that
/// it cannot decode; nothing an open or a structural check reads changes.
fn damage_first_block(collection: &str, name: &str) {
    let at = segment_offset(collection, name);
    let bytes = std::fs::read(container(collection)).unwrap();
    assert_eq!(
        bytes[at as usize..at as usize + 4],
        ZSTD_MAGIC,
        "segment '{name}' starts with its first block"
    );
    flip(collection, at, 0xff);
}

#[test]
fn a_sound_collection_verifies_at_both_depths_with_the_same_report_shape() {
    let dir = tempfile::tempdir().unwrap();
    let c = demo(dir.path(), 4);
    let quick = atlas(&["verify", &c, "--json"]);
    assert_eq!(code(&quick), 0, "{}", text(&quick.stderr));
    let quick = json(&quick);
    assert_eq!(quick["ok"], true);
    assert_eq!(quick["segments_checked"], 4);
    assert_eq!(quick["arrays_checked"], 12);
    assert_eq!(quick["chunks_decoded"], 0);
    let full = atlas(&["verify", "--full", &c, "--json"]);
    assert_eq!(code(&full), 0, "{}", text(&full.stderr));
    let full = json(&full);
    assert_eq!(full["ok"], true);
    // temperature: 4 chunks of 2x4 per dataset; station: 1; pressure: never written.
    assert_eq!(full["chunks_decoded"], 4 * 5);
    assert!(text(&atlas(&["verify", &c]).stdout).starts_with("ok: 4 segments"));
}

#[test]
fn full_verify_decodes_every_block_and_reports_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let c = demo(dir.path(), 4);
    damage_first_block(&c, "temperature");
    damage_first_block(&c, "station");
    // A structural check reads no data block: it cannot see this damage, and says so.
    let quick = atlas(&["verify", &c]);
    assert_eq!(code(&quick), 0, "{}", text(&quick.stderr));
    assert!(text(&quick.stdout).contains("no data block read"));

    let full = atlas(&["verify", "--full", &c]);
    assert_eq!(code(&full), 1, "a damaged block is a failed verification");
    let out = text(&full.stdout);
    assert!(out.starts_with("FAILED:"), "{out}");
    assert!(out.contains("/temperature chunk"), "{out}");
    assert!(
        out.contains("/station chunk"),
        "both segments' damage is listed: {out}"
    );
    assert!(
        text(&full.stderr).is_empty(),
        "the report is the message: {}",
        text(&full.stderr)
    );

    let report = atlas(&["verify", "--full", &c, "--json"]);
    assert_eq!(code(&report), 1);
    let report = json(&report);
    assert_eq!(report["ok"], false);
    let problems = report["problems"].as_array().unwrap();
    let locations: Vec<&str> = problems
        .iter()
        .map(|p| p["location"].as_str().unwrap())
        .collect();
    assert!(
        locations.iter().any(|l| l.contains("/temperature chunk"))
            && locations.iter().any(|l| l.contains("/station chunk")),
        "{locations:?}"
    );
    assert!(problems.iter().all(|p| p["error"]
        .as_str()
        .unwrap()
        .contains("corrupt Atlas collection")));
}

#[test]
fn a_segment_that_does_not_open_is_one_problem_and_the_rest_is_still_checked() {
    let dir = tempfile::tempdir().unwrap();
    let c = demo(dir.path(), 6);
    // The last byte of the `temperature` segment (its own trailer) is the byte before `station`.
    let station = segment_offset(&c, "station");
    flip(&c, station - 1, 0xff);
    damage_first_block(&c, "station");
    let report = atlas(&["verify", "--full", &c, "--json"]);
    assert_eq!(code(&report), 1);
    let report = json(&report);
    let locations: Vec<&str> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["location"].as_str().unwrap())
        .collect();
    let temperature: Vec<&&str> = locations
        .iter()
        .filter(|l| l.contains("temperature"))
        .collect();
    assert_eq!(temperature, [&"segment 'temperature'"], "{locations:?}");
    assert!(
        locations.iter().any(|l| l.ends_with("/station chunk [0]")),
        "the other segments are still decoded: {locations:?}"
    );
    assert_eq!(report["segments_checked"], 4);
    assert_eq!(
        report["arrays_checked"],
        6 * 2,
        "station and pressure of 6 datasets"
    );
}

#[test]
fn a_wrong_leading_magic_fails_verify_even_when_open_skips_it() {
    let dir = tempfile::tempdir().unwrap();
    // Large enough that the open's tail probe does not reach offset 0.
    let c = demo(dir.path(), 1500);
    let size = std::fs::metadata(container(&c)).unwrap().len();
    assert!(size > 64 * 1024, "{size} bytes");
    flip(&c, 0, 0x01);
    assert_eq!(
        code(&atlas(&["info", &c])),
        0,
        "the open does not read the header"
    );
    let report = atlas(&["verify", &c, "--json"]);
    assert_eq!(code(&report), 1);
    let report = json(&report);
    assert_eq!(report["problems"][0]["location"], "header");
    assert!(report["problems"][0]["error"]
        .as_str()
        .unwrap()
        .contains("not an Atlas collection"));

    // A wrong version in the header is a problem too.
    flip(&c, 0, 0x01);
    flip(&c, 4, 0x02);
    let report = json(&atlas(&["verify", &c, "--json"]));
    assert_eq!(report["problems"][0]["location"], "header");
    assert!(report["problems"][0]["error"]
        .as_str()
        .unwrap()
        .contains("unsupported Atlas format version"));
}

#[test]
fn a_collection_that_does_not_open_gets_the_same_report() {
    let dir = tempfile::tempdir().unwrap();
    let c = demo(dir.path(), 2);
    let size = std::fs::metadata(container(&c)).unwrap().len();
    flip(&c, size - 1, 0xff); // the trailer magic
    let report = atlas(&["verify", &c, "--json"]);
    assert_eq!(code(&report), 1);
    let report = json(&report);
    assert_eq!(report["ok"], false);
    assert_eq!(report["problems"][0]["location"], "container");
}

#[test]
fn exit_status_tells_usage_runtime_and_violation_apart() {
    let help = atlas(&["--help"]);
    assert_eq!(code(&help), 0);
    let help = text(&help.stdout);
    assert!(
        help.contains("Exit status: 0 success, 1 a runtime error")
            && help.contains("2 a usage error")
            && help.contains("75 a failure a later run may not repeat")
            && help.contains("130 interrupted"),
        "{help}"
    );

    let dir = tempfile::tempdir().unwrap();
    let c = demo(dir.path(), 2);
    assert_eq!(code(&atlas(&["info", &c])), 0);
    // Usage: clap's own, and a selection that does not fit the array.
    assert_eq!(code(&atlas(&["frobnicate"])), 2);
    assert_eq!(code(&atlas(&["read", &c])), 2);
    let outside = atlas(&[
        "read",
        &c,
        "month_000",
        "temperature",
        "--start",
        "0,9",
        "--shape",
        "1,1",
    ]);
    assert_eq!(code(&outside), 2, "{}", text(&outside.stderr));
    // Runtime: not a collection, an unknown dataset.
    let not_atlas = atlas(&["info", dir.path().to_str().unwrap()]);
    assert_eq!(code(&not_atlas), 1);
    assert!(text(&not_atlas.stderr).contains("not an Atlas collection"));
    assert_eq!(code(&atlas(&["read", &c, "nope", "temperature"])), 1);
    assert_eq!(code(&atlas(&["stats", &c, "no-such-array"])), 1);
}

/// A store nobody answers (a closed loopback port) is a retryable failure: exit 75, as `dsrt`
/// exits for the same failure.
#[test]
fn an_unreachable_store_exits_75() {
    let output = Command::new(env!("CARGO_BIN_EXE_atlas"))
        .args(["info", "s3://bucket/collection"])
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(code(&output), 75, "{stderr}");
    assert!(stderr.starts_with("atlas: "), "{stderr}");
    assert!(stderr.contains("collection"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[cfg(unix)]
#[test]
fn ctrl_c_exits_130() {
    use std::time::{Duration, Instant};
    // A store that accepts connections and never answers: the command waits in the open. (A
    // FIFO in place of `data.atlas` no longer blocks: it is refused before any read.)
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let mut child = Command::new(env!("CARGO_BIN_EXE_atlas"))
        .args(["info", "s3://bucket/collection"])
        .env("AWS_ENDPOINT_URL", &endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the open should be waiting for the store"
    );
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no exit after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
}
