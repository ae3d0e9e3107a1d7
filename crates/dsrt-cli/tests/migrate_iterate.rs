//! `dsrt migrate` and `dsrt iterate` on caches packed by `dsrt pack`.
#![allow(clippy::unwrap_used)]

mod common;

use common::{dsrt_in, make_v2, pack_text};
use serde_json::json;
use std::path::Path;

/// Packs `count` text samples into `dir/name`, a few per shard.
fn pack(dir: &Path, name: &str, count: usize) {
    pack_text(dir, name, count, 200);
}

#[test]
fn migrate_reports_each_cache_and_keeps_ids() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b"] {
        pack(dir.path(), name, 5);
        make_v2(&dir.path().join(name));
    }
    let keys_before = dsrt_in(dir.path(), &["iterate", "a", "b", "--keys", "--seed", "3"])
        .ok()
        .stdout_text();
    let report = dsrt_in(dir.path(), &["migrate", "--to", "3", "a", "b", "--json"])
        .ok()
        .json();
    assert_eq!(report["ok"], json!(true));
    let outcomes: Vec<_> = report["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["cache_id"].clone(), e["outcome"].clone()))
        .collect();
    assert_eq!(
        outcomes,
        vec![(json!(0), json!("updated")), (json!(1), json!("updated"))]
    );
    // Again: nothing to do, still fsynced and reported.
    let text = dsrt_in(dir.path(), &["migrate", "--to", "3", "a", "b"])
        .ok()
        .stdout_text();
    assert_eq!(
        text,
        "a: unchanged (cache_id 0)\nb: unchanged (cache_id 1)\n"
    );
    // The same keys name the same samples.
    let keys_after = dsrt_in(dir.path(), &["iterate", "a", "b", "--keys", "--seed", "3"])
        .ok()
        .stdout_text();
    assert_eq!(keys_after, keys_before);
}

#[test]
fn migrate_refuses_before_replacing_anything() {
    let dir = tempfile::tempdir().unwrap();
    pack(dir.path(), "a", 3);
    make_v2(&dir.path().join("a"));
    let before = std::fs::read(dir.path().join("a/manifest.json")).unwrap();
    let run = dsrt_in(dir.path(), &["migrate", "--to", "3", "a", "missing"]).fails(1);
    assert!(run.stderr.contains("missing"), "{}", run.stderr);
    assert_eq!(
        std::fs::read(dir.path().join("a/manifest.json")).unwrap(),
        before
    );
    dsrt_in(dir.path(), &["migrate", "--to", "4", "a"]).fails(1);
}

#[test]
fn iterate_prints_the_per_rank_length_and_ranks_cover_the_epoch() {
    let dir = tempfile::tempdir().unwrap();
    pack(dir.path(), "a", 10);
    pack(dir.path(), "b", 3);
    let text = dsrt_in(
        dir.path(),
        &["iterate", "a", "b", "--world-size", "4", "--rank", "1"],
    )
    .ok()
    .stdout_text();
    assert!(
        text.starts_with(
            "rank 1 of 4 (node 1 of 4): 4 samples per rank (epoch 0 has 13 samples, policy Pad)"
        ),
        "{text}"
    );
    let mut all = Vec::new();
    for rank in 0..4 {
        let rank = rank.to_string();
        let keys = dsrt_in(
            dir.path(),
            &[
                "iterate",
                "a",
                "b",
                "--world-size",
                "4",
                "--rank",
                &rank,
                "--keys",
                "--workers",
                "3",
            ],
        )
        .ok()
        .stdout_text();
        assert_eq!(keys.lines().count(), 4);
        all.extend(keys.lines().map(str::to_owned));
    }
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 13, "padding repeats only: every sample appears");
    let drop = dsrt_in(
        dir.path(),
        &[
            "iterate",
            "a",
            "b",
            "--world-size",
            "4",
            "--policy",
            "drop",
            "--json",
        ],
    )
    .ok()
    .json();
    assert_eq!(drop["samples_per_rank"], json!(3));
    dsrt_in(
        dir.path(),
        &["iterate", "a", "--world-size", "2", "--rank", "2"],
    )
    .fails(1);
    dsrt_in(dir.path(), &["iterate", "a", "--world-size", "0"]).fails(2);
}

/// `--prefetch` bounds how far workers read ahead (dsrt-dataset's loader tests count it); the
/// order is the same for any value and any number of workers.
#[test]
fn iterate_order_does_not_depend_on_prefetch_or_workers() {
    let dir = tempfile::tempdir().unwrap();
    pack(dir.path(), "a", 40);
    let keys = |workers: &str, prefetch: &str| {
        dsrt_in(
            dir.path(),
            &[
                "iterate",
                "a",
                "--keys",
                "--seed",
                "4",
                "--workers",
                workers,
                "--prefetch",
                prefetch,
            ],
        )
        .ok()
        .stdout_text()
    };
    let reference = keys("0", "512");
    assert_eq!(reference.lines().count(), 40);
    for (workers, prefetch) in [("1", "1"), ("2", "3"), ("3", "16"), ("2", "300")] {
        assert_eq!(
            keys(workers, prefetch),
            reference,
            "{workers} workers, prefetch {prefetch}"
        );
    }
    dsrt_in(dir.path(), &["iterate", "a", "--prefetch", "0"]).fails(2);
}

/// The state file is replaced by a rename (durable-fs's publication), not rewritten in place:
/// another hard link to the old file keeps the old bytes, and no temporary file is left.
#[cfg(unix)]
#[test]
fn iterate_publishes_the_state_file_by_rename() {
    let dir = tempfile::tempdir().unwrap();
    pack(dir.path(), "a", 20);
    std::fs::write(dir.path().join("s.json"), b"old state").unwrap();
    std::fs::hard_link(dir.path().join("s.json"), dir.path().join("link.json")).unwrap();
    dsrt_in(
        dir.path(),
        &["iterate", "a", "--limit", "7", "--save-state", "s.json"],
    )
    .ok();
    assert_eq!(
        std::fs::read(dir.path().join("link.json")).unwrap(),
        b"old state",
        "the state file was written in place"
    );
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(state["position"], json!(7), "{state}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "link.json", "s.json"]);
}

#[test]
fn iterate_saves_and_resumes_state() {
    let dir = tempfile::tempdir().unwrap();
    pack(dir.path(), "a", 20);
    let all = dsrt_in(dir.path(), &["iterate", "a", "--keys", "--seed", "9"])
        .ok()
        .stdout_text();
    let first = dsrt_in(
        dir.path(),
        &[
            "iterate",
            "a",
            "--keys",
            "--seed",
            "9",
            "--limit",
            "7",
            "--save-state",
            "s.json",
        ],
    )
    .ok()
    .stdout_text();
    let rest = dsrt_in(
        dir.path(),
        &[
            "iterate",
            "a",
            "--keys",
            "--seed",
            "9",
            "--resume",
            "s.json",
            "--workers",
            "0",
        ],
    )
    .ok()
    .stdout_text();
    assert_eq!(format!("{first}{rest}"), all);
    let run = dsrt_in(
        dir.path(),
        &["iterate", "a", "--seed", "10", "--resume", "s.json"],
    )
    .fails(1);
    assert!(run.stderr.contains("seed 9"), "{}", run.stderr);
}
