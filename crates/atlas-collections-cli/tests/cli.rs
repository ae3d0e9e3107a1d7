//! The binary, run as a user would.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

use std::path::Path;
use std::process::Command;

mod common;
use common::{atlas, stdout};

fn demo(dir: &Path, datasets: usize) -> String {
    let out = dir.join("c").to_str().unwrap().to_owned();
    stdout(&atlas(&["demo", &out, "--datasets", &datasets.to_string()]));
    out
}

#[test]
fn demo_info_ls_stats_attrs_read_verify() {
    let dir = tempfile::tempdir().unwrap();
    let c = demo(dir.path(), 5);
    assert!(stdout(&atlas(&["info", &c])).contains("5 live of 5"));
    let info: serde_json::Value =
        serde_json::from_str(&stdout(&atlas(&["info", &c, "--json"]))).unwrap();
    assert_eq!(info["segments"].as_array().unwrap().len(), 4);
    let ls: serde_json::Value =
        serde_json::from_str(&stdout(&atlas(&["ls", &c, "--json"]))).unwrap();
    assert_eq!(ls[4]["name"], "month_004");
    let stats: serde_json::Value =
        serde_json::from_str(&stdout(&atlas(&["stats", &c, "temperature", "--json"]))).unwrap();
    assert_eq!(
        (stats["datasets"].as_u64(), stats["row_count"].as_u64()),
        (Some(5), Some(160))
    );
    let attrs: serde_json::Value =
        serde_json::from_str(&stdout(&atlas(&["attrs", &c, "month", "--json"]))).unwrap();
    assert_eq!(attrs["month_003"]["Int64"], 3);
    let read = atlas(&[
        "read",
        &c,
        "month_001",
        "temperature",
        "--start",
        "0,1",
        "--shape",
        "1,2",
        "--json",
    ]);
    let read: serde_json::Value = serde_json::from_str(&stdout(&read)).unwrap();
    assert_eq!(read["values"], serde_json::json!([1.5, 2.0]));
    assert!(stdout(&atlas(&["verify", &c])).starts_with("ok: 4 segments, 15 arrays"));
}

#[test]
fn errors_exit_non_zero_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let c = demo(dir.path(), 2);
    let missing = atlas(&["read", &c, "nope", "temperature"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no dataset named 'nope'"));
    let not_atlas = atlas(&["info", dir.path().to_str().unwrap()]);
    assert!(!not_atlas.status.success());
    assert!(String::from_utf8_lossy(&not_atlas.stderr).contains("not an Atlas collection"));
    let bad_delete = atlas(&["delete", &c, "nope"]);
    assert!(!bad_delete.status.success());
}

#[test]
fn four_processes_deleting_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let c = demo(dir.path(), 40);
    let children: Vec<_> = (0..4)
        .map(|p| {
            let names: Vec<String> = (0..10)
                .map(|i| format!("month_{:03}", p * 10 + i))
                .collect();
            let mut command = Command::new(env!("CARGO_BIN_EXE_atlas"));
            command.arg("delete").arg(&c);
            // One process per name batch, each deleting its names one call at a time.
            command.args(&names[..5]);
            let first = command.stdout(std::process::Stdio::null()).spawn().unwrap();
            let mut second = Command::new(env!("CARGO_BIN_EXE_atlas"));
            second
                .arg("delete")
                .arg(&c)
                .args(&names[5..])
                .stdout(std::process::Stdio::null());
            (first, second.spawn().unwrap())
        })
        .collect();
    for (mut a, mut b) in children {
        assert!(a.wait().unwrap().success());
        assert!(b.wait().unwrap().success());
    }
    let info: serde_json::Value =
        serde_json::from_str(&stdout(&atlas(&["info", &c, "--json"]))).unwrap();
    assert_eq!(
        info["live_datasets"], 0,
        "all 40 deletes from 8 processes survive"
    );
    let files = std::fs::read_dir(&c).unwrap().count();
    assert_eq!(files, 2, "no lock or temp file left behind");
}

#[test]
fn a_file_url_is_local_disk_with_the_directory_lock() {
    let dir = tempfile::tempdir().unwrap();
    let c = demo(dir.path(), 3);
    let url = format!("file://{}", std::fs::canonicalize(&c).unwrap().display());
    assert!(atlas(&["delete", &url, "month_000"]).status.success());
    assert!(atlas(&["delete", &url, "month_001"]).status.success());
    let info: serde_json::Value =
        serde_json::from_str(&stdout(&atlas(&["info", &url, "--json"]))).unwrap();
    assert_eq!(info["live_datasets"], 1);
    assert_eq!(
        std::fs::read_dir(&c).unwrap().count(),
        2,
        "no temp file left"
    );
}
