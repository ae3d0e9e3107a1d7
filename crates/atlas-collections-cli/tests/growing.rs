//! `atlas append`, `atlas log` and `--at-version`, run as a user would: sources become parts
//! and versions, a clashing name is refused with nothing written, concurrent `atlas append`
//! processes all land, every read command reads any version, and `atlas delete` hides
//! datasets in whichever part holds them, `atlas tag` names a version once (`--at-tag` reads
//! it), and `atlas gc` removes the parts no version names.
#![allow(clippy::unwrap_used)] // Test code.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

mod common;
use common::{atlas, stdout};

fn json(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    serde_json::from_str(&stdout(&atlas(&args))).unwrap()
}

/// A plain demo collection of `datasets` datasets named `<prefix>000`...
fn source(dir: &Path, prefix: &str, datasets: usize) -> String {
    let out = dir.join(prefix).to_str().unwrap().to_owned();
    stdout(&atlas(&[
        "demo",
        &out,
        "--datasets",
        &datasets.to_string(),
        "--name-prefix",
        prefix,
    ]));
    out
}

fn names(collection: &str, version: Option<&str>) -> Vec<String> {
    let mut args = vec!["ls", collection];
    if let Some(version) = version {
        args.extend(["--at-version", version]);
    }
    json(&args)
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn append_log_and_read_every_version() {
    let dir = tempfile::tempdir().unwrap();
    let jan = source(dir.path(), "jan_", 3);
    let feb = source(dir.path(), "feb_", 2);
    let grown = dir.path().join("grown").to_str().unwrap().to_owned();
    let appended = json(&["append", &grown, &jan, &feb]);
    assert_eq!(appended[0]["version"], 1);
    assert_eq!(appended[1]["version"], 2);
    assert_eq!(appended[1]["datasets"], 2);
    let log = json(&["log", &grown]);
    let added: Vec<u64> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["datasets"].as_u64().unwrap())
        .collect();
    assert_eq!(added, [3, 2]);
    let human = stdout(&atlas(&["log", &grown]));
    assert!(human.starts_with("VERSION"), "{human}");
    assert_eq!(names(&grown, Some("1")), ["jan_000", "jan_001", "jan_002"]);
    assert_eq!(
        names(&grown, None),
        ["jan_000", "jan_001", "jan_002", "feb_000", "feb_001"]
    );
    let stats = json(&["stats", &grown, "temperature"]);
    assert_eq!(stats["datasets"], 5);
    let info = json(&["info", &grown, "--at-version", "1"]);
    assert_eq!(info["version"], 1);
    assert_eq!(info["latest_version"], 2);
    assert_eq!(info["live_datasets"], 3);
    stdout(&atlas(&["verify", "--full", &grown]));
    // A version the collection does not have, or a version of a plain collection: exit 1.
    assert_eq!(
        atlas(&["ls", &grown, "--at-version", "3"]).status.code(),
        Some(1)
    );
    assert_eq!(
        atlas(&["ls", &jan, "--at-version", "1"]).status.code(),
        Some(1)
    );
    // The sources are plain collections and stay readable as before.
    assert_eq!(names(&feb, None), ["feb_000", "feb_001"]);
}

#[test]
fn delete_hides_datasets_in_any_part() {
    let dir = tempfile::tempdir().unwrap();
    let jan = source(dir.path(), "jan_", 3);
    let feb = source(dir.path(), "feb_", 2);
    let grown = dir.path().join("grown").to_str().unwrap().to_owned();
    json(&["append", &grown, &jan, &feb]);
    // An unknown name refuses the delete (exit 1) before any mask is written.
    assert_eq!(
        atlas(&["delete", &grown, "jan_000", "mar_000"])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(names(&grown, None).len(), 5);
    let deleted = json(&["delete", &grown, "jan_001", "feb_000"]);
    assert_eq!(deleted["newly_deleted"], 2);
    assert_eq!(deleted["total_deleted"], 2);
    assert_eq!(names(&grown, None), ["jan_000", "jan_002", "feb_001"]);
    // Masks are not versioned: version 1 (the jan part) sees its delete too.
    assert_eq!(names(&grown, Some("1")), ["jan_000", "jan_002"]);
    let info = json(&["info", &grown]);
    assert_eq!(info["live_datasets"], 3);
    stdout(&atlas(&["verify", "--full", &grown]));
}

#[test]
fn gc_removes_an_unreferenced_part_once_past_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let jan = source(dir.path(), "jan_", 2);
    let grown = dir.path().join("grown");
    let grown_str = grown.to_str().unwrap();
    json(&["append", grown_str, &jan]);
    // What an append killed before its commit leaves: a part no version names.
    let orphan = grown.join("parts/orphan");
    std::fs::create_dir_all(&orphan).unwrap();
    std::fs::copy(
        Path::new(&jan).join("data.atlas"),
        orphan.join("data.atlas"),
    )
    .unwrap();
    let careful = json(&["gc", grown_str]);
    assert_eq!(careful["removed_parts"], serde_json::json!([]));
    assert_eq!(careful["young_parts"], serde_json::json!(["orphan"]));
    let dry = json(&["gc", grown_str, "--grace-seconds", "0", "--dry-run"]);
    assert_eq!(dry["removed_parts"], serde_json::json!(["orphan"]));
    assert!(orphan.exists());
    let gc = json(&[
        "gc",
        grown_str,
        "--grace-seconds",
        "0",
        "--keep-versions",
        "1",
    ]);
    assert_eq!(gc["removed_parts"], serde_json::json!(["orphan"]));
    assert_eq!(gc["oldest_kept_version"], 1);
    assert!(!orphan.exists());
    assert_eq!(names(grown_str, None), ["jan_000", "jan_001"]);
    // A plain collection is not gc's: exit 1.
    assert_eq!(atlas(&["gc", &jan]).status.code(), Some(1));
}

#[test]
fn tag_names_a_version_once_and_every_read_command_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let jan = source(dir.path(), "jan_", 2);
    let feb = source(dir.path(), "feb_", 1);
    let grown = dir.path().join("grown").to_str().unwrap().to_owned();
    json(&["append", &grown, &jan]);
    let tagged = json(&["tag", &grown, "january"]);
    assert_eq!(tagged["version"], 1);
    json(&["append", &grown, &feb]);
    assert_eq!(json(&["tag", &grown, "first", "1"])["version"], 1);
    let mut at_tag = names(&grown, None);
    assert_eq!(at_tag, ["jan_000", "jan_001", "feb_000"]);
    at_tag = json(&["ls", &grown, "--at-tag", "january"])
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(at_tag, ["jan_000", "jan_001"]);
    let info = json(&["info", &grown, "--at-tag", "january"]);
    assert_eq!(info["version"], 1);
    // A tag is never moved; an unknown tag, a bad name, both --at-* : refused.
    assert_eq!(atlas(&["tag", &grown, "january"]).status.code(), Some(1));
    assert_eq!(
        atlas(&["ls", &grown, "--at-tag", "march"]).status.code(),
        Some(1)
    );
    assert_eq!(atlas(&["tag", &grown, "Bad/Name"]).status.code(), Some(1));
    assert_eq!(
        atlas(&["ls", &grown, "--at-tag", "january", "--at-version", "1"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        json(&["info", &grown, "--at-tag", "january"])["latest_version"],
        2
    );
}

#[test]
fn a_clashing_append_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let jan = source(dir.path(), "jan_", 2);
    let grown = dir.path().join("grown").to_str().unwrap().to_owned();
    stdout(&atlas(&["append", &grown, &jan]));
    let before = files_below(Path::new(&grown));
    let refused = atlas(&["append", &grown, &jan]);
    assert_eq!(refused.status.code(), Some(1));
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains("'jan_000' is already in part"),
        "{message}"
    );
    assert_eq!(files_below(Path::new(&grown)), before);
    // A plain collection is not appended to.
    let feb = source(dir.path(), "feb_", 1);
    let plain = atlas(&["append", &jan, &feb]);
    assert_eq!(plain.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&plain.stderr).contains("a plain collection"));
}

#[test]
fn concurrent_atlas_append_processes_all_land() {
    const PROCESSES: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let grown = dir.path().join("grown").to_str().unwrap().to_owned();
    let sources: Vec<String> = (0..PROCESSES)
        .map(|i| source(dir.path(), &format!("s{i}_"), 5))
        .collect();
    let children: Vec<_> = sources
        .iter()
        .map(|s| {
            Command::new(env!("CARGO_BIN_EXE_atlas"))
                .args(["append", &grown, s])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        stdout(&child.wait_with_output().unwrap());
    }
    let log = json(&["log", &grown]);
    assert_eq!(log.as_array().unwrap().len(), PROCESSES);
    let mut all = names(&grown, None);
    all.sort();
    let mut expected: Vec<String> = (0..PROCESSES)
        .flat_map(|i| (0..5).map(move |d| format!("s{i}_{d:03}")))
        .collect();
    expected.sort();
    assert_eq!(all, expected);
}

/// Every file below `dir` with its bytes, sorted by path.
fn files_below(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn compact_folds_the_parts_into_one_version_that_log_and_gc_show() {
    let dir = tempfile::tempdir().unwrap();
    let jan = source(dir.path(), "jan_", 3);
    let feb = source(dir.path(), "feb_", 2);
    let mar = source(dir.path(), "mar_", 2);
    let grown = dir.path().join("grown").to_str().unwrap().to_owned();
    json(&["append", &grown, &jan, &feb, &mar]);
    json(&["delete", &grown, "feb_000"]);
    let before = names(&grown, None);

    let compacted = json(&["compact", &grown]);
    assert_eq!(compacted["version"], 4);
    assert_eq!(compacted["datasets"], 6);
    assert_eq!(compacted["replaced_parts"], 3);
    assert_eq!(compacted["attempts"], 1);
    assert_eq!(names(&grown, None), before);
    assert_eq!(json(&["info", &grown])["live_datasets"], 6);
    stdout(&atlas(&["verify", "--full", &grown]));

    let log = json(&["log", &grown]);
    let kinds: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["append", "append", "append", "compact"]);
    let human = stdout(&atlas(&["log", &grown]));
    assert!(
        human.starts_with("VERSION") && human.contains("KIND"),
        "{human}"
    );
    assert!(human.contains("compact"), "{human}");

    // The old version reads until gc removes its parts; then it is a clear error (exit 1).
    assert_eq!(names(&grown, Some("3")), before);
    let gc = json(&["gc", &grown, "--keep-versions", "1", "--grace-seconds", "0"]);
    assert_eq!(gc["removed_parts"].as_array().unwrap().len(), 3);
    assert_eq!(gc["oldest_readable_version"], 4);
    let old = atlas(&["ls", &grown, "--at-version", "3"]);
    assert_eq!(old.status.code(), Some(1));
    let message = String::from_utf8_lossy(&old.stderr);
    assert!(message.contains("collected by gc"), "{message}");
    assert_eq!(names(&grown, None), before);

    // A plain collection is not compacted (exit 1).
    assert_eq!(atlas(&["compact", &jan]).status.code(), Some(1));
}

#[test]
fn append_replace_hides_the_old_datasets_and_log_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let jan = source(dir.path(), "jan_", 3);
    let fixes = dir.path().join("fixes");
    std::fs::create_dir_all(&fixes).unwrap();
    let fixed = source(&fixes, "jan_", 2);
    let grown = dir.path().join("grown").to_str().unwrap().to_owned();
    json(&["append", &grown, &jan]);
    // Without --replace the names are refused (exit 1), with it the old ones are hidden.
    assert_eq!(atlas(&["append", &grown, &fixed]).status.code(), Some(1));
    let replaced = json(&["append", "--replace", &grown, &fixed]);
    assert_eq!(replaced[0]["version"], 2);
    assert_eq!(replaced[0]["replaced"], 2);
    let human = stdout(&atlas(&["append", "--replace", &grown, &fixed]));
    assert!(human.contains("replacing 2"), "{human}");

    let latest = names(&grown, None);
    assert_eq!(latest, ["jan_002", "jan_000", "jan_001"]);
    assert_eq!(names(&grown, Some("1")), ["jan_000", "jan_001", "jan_002"]);
    assert_eq!(json(&["info", &grown])["live_datasets"], 3);
    assert_eq!(json(&["stats", &grown, "temperature"])["datasets"], 3);
    stdout(&atlas(&["verify", "--full", &grown]));

    let log = json(&["log", &grown]);
    let rows: Vec<(&str, u64, u64)> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap(),
                c["datasets"].as_u64().unwrap(),
                c["hidden"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [("append", 3, 0), ("replace", 2, 2), ("replace", 2, 2)]
    );
    let human = stdout(&atlas(&["log", &grown]));
    assert!(
        human.contains("HIDDEN") && human.contains("replace"),
        "{human}"
    );

    // A delete of a replaced name hides the live dataset; version 1 still lists the old one.
    json(&["delete", &grown, "jan_000"]);
    assert_eq!(names(&grown, None), ["jan_002", "jan_001"]);
    assert_eq!(names(&grown, Some("1")), ["jan_000", "jan_001", "jan_002"]);

    // Compaction keeps the live datasets only.
    json(&["compact", &grown]);
    assert_eq!(names(&grown, None), ["jan_002", "jan_001"]);
}
