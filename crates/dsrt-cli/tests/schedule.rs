//! `--schedule FILE` on `dsrt iterate` and `dsrt plan`: the epoch follows the file's phases
//! (counts per phase, resume mid-phase), `dsrt plan` reports each phase's shares, and a file
//! that is not a usable schedule is a usage error (exit 2) naming the file and the problem.
#![allow(clippy::unwrap_used)] // test code

mod common;

use common::{dsrt_in, pack_text};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Packs `count` text samples into `dir/name`, a few per shard.
fn pack(dir: &Path, name: &str, count: usize) {
    pack_text(dir, name, count, 300);
}

/// A directory with caches `code` (60 samples) and `web` (90), and `phases.json`: 100 samples
/// half and half, then 50 with 80% code.
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    pack(dir.path(), "code", 60);
    pack(dir.path(), "web", 90);
    write(
        dir.path(),
        "phases.json",
        r#"{"phases": [
            {"samples": 100, "weights": [0.5, 0.5]},
            {"samples": 50, "weights": [0.8, 0.2]}
        ]}"#,
    );
    dir
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn cache_id(dir: &Path, cache: &str) -> String {
    let info = dsrt_in(dir, &["inspect", cache, "--json"]).ok().json();
    info["cache_id"].as_u64().unwrap().to_string()
}

/// `dsrt iterate --keys` lines as (cache id, sample id).
fn keys(dir: &Path, extra: &[&str]) -> Vec<(String, String)> {
    let mut args = vec!["iterate", "code", "web", "--keys", "--seed", "3"];
    args.extend_from_slice(extra);
    dsrt_in(dir, &args)
        .ok()
        .stdout_text()
        .lines()
        .map(|line| {
            let (cache, sample) = line.split_once(' ').unwrap();
            (cache.to_owned(), sample.to_owned())
        })
        .collect()
}

#[test]
fn iterate_follows_the_schedule_files_phases() {
    let dir = setup();
    let code = cache_id(dir.path(), "code");
    let epoch = keys(dir.path(), &["--schedule", "phases.json"]);
    assert_eq!(epoch.len(), 150);
    let count = |keys: &[(String, String)]| keys.iter().filter(|(c, _)| *c == code).count();
    assert_eq!(count(&epoch[..100]), 50, "phase 0: half code");
    assert_eq!(count(&epoch[100..]), 40, "phase 1: 80% code");
    // Code's 90 draws from 60 samples: its first pass spans the phase change without a
    // repeat.
    let code_samples: Vec<&String> = epoch
        .iter()
        .filter(|(c, _)| *c == code)
        .map(|(_, s)| s)
        .collect();
    assert_eq!(code_samples[..60].iter().collect::<BTreeSet<_>>().len(), 60);

    // Stopped mid-phase 1 and resumed: the same epoch.
    let state = dir.path().join("state.json");
    let head = keys(
        dir.path(),
        &[
            "--schedule",
            "phases.json",
            "--limit",
            "120",
            "--save-state",
            state.to_str().unwrap(),
        ],
    );
    let tail = keys(
        dir.path(),
        &[
            "--schedule",
            "phases.json",
            "--resume",
            state.to_str().unwrap(),
        ],
    );
    assert_eq!([head, tail].concat(), epoch);

    // Two ranks read the same samples between them.
    let mut both: BTreeMap<(String, String), u32> = BTreeMap::new();
    for rank in ["0", "1"] {
        let extra = [
            "--schedule",
            "phases.json",
            "--world-size",
            "2",
            "--rank",
            rank,
        ];
        for key in keys(dir.path(), &extra) {
            *both.entry(key).or_default() += 1;
        }
    }
    let mut whole: BTreeMap<(String, String), u32> = BTreeMap::new();
    for key in epoch {
        *whole.entry(key).or_default() += 1;
    }
    assert_eq!(both, whole);
}

#[test]
fn plan_reports_each_phases_shares() {
    let dir = setup();
    let report = dsrt_in(
        dir.path(),
        &[
            "plan",
            "code",
            "web",
            "--schedule",
            "phases.json",
            "--world-size",
            "4",
            "--ranks-per-node",
            "2",
            "--json",
        ],
    )
    .ok()
    .json();
    assert_eq!(report["epoch_len"], json!(150));
    assert_eq!(
        report["phases"],
        json!([
            {"phase": 0, "start": 0, "samples": 100, "shares": [50, 50]},
            {"phase": 1, "start": 100, "samples": 50, "shares": [40, 10]},
        ])
    );
    let text = dsrt_in(
        dir.path(),
        &["plan", "code", "web", "--schedule", "phases.json"],
    )
    .ok()
    .stdout_text();
    assert!(
        text.contains("phase 0: 100 samples from position 0, per cache 50 50\n")
            && text.contains("phase 1: 50 samples from position 100, per cache 40 10\n"),
        "{text}"
    );
    // Without a schedule, no phases.
    let plain = dsrt_in(dir.path(), &["plan", "code", "web", "--json"])
        .ok()
        .json();
    assert!(plain.get("phases").is_none());
    // A synthetic cache takes a schedule of one weight per phase.
    write(
        dir.path(),
        "one.json",
        r#"{"phases": [{"samples": 3000, "weights": [1]}, {"samples": 500, "weights": [2]}]}"#,
    );
    let synthetic = dsrt_in(
        dir.path(),
        &[
            "plan",
            "--synthetic",
            "1000,10",
            "--schedule",
            "one.json",
            "--json",
        ],
    )
    .ok()
    .json();
    assert_eq!(synthetic["epoch_len"], json!(3500));
    assert_eq!(synthetic["phases"][1]["shares"], json!([500]));
}

#[test]
fn a_bad_schedule_file_is_a_usage_error_naming_the_file_and_the_problem() {
    let dir = setup();
    let cases: [(&str, Option<&str>, &str); 9] = [
        ("missing.json", None, "cannot read it"),
        ("text.json", Some("phases: 3"), "expected value"),
        (
            "typo.json",
            Some(r#"{"phases": [{"sample": 10, "weights": [1, 1]}]}"#),
            "unknown field `sample`",
        ),
        (
            "fraction.json",
            Some(r#"{"phases": [{"samples": 10.5, "weights": [1, 1]}]}"#),
            "invalid type: floating point",
        ),
        (
            "negative.json",
            Some(r#"{"phases": [{"samples": -3, "weights": [1, 1]}]}"#),
            "invalid value: integer `-3`",
        ),
        ("empty.json", Some(r#"{"phases": []}"#), "it has no phases"),
        (
            "count.json",
            Some(
                r#"{"phases": [{"samples": 10, "weights": [1, 1]}, {"samples": 5, "weights": [1]}]}"#,
            ),
            "phases[1]: 1 weights for 2 caches",
        ),
        (
            "zero.json",
            Some(r#"{"phases": [{"samples": 0, "weights": [1, 1]}]}"#),
            "phases[0]: it holds 0 samples",
        ),
        (
            "sign.json",
            Some(r#"{"phases": [{"samples": 4, "weights": [1, -2]}]}"#),
            "phases[0]: the weight of cache 1, -2, is not a finite non-negative number",
        ),
    ];
    for (file, text, problem) in cases {
        if let Some(text) = text {
            write(dir.path(), file, text);
        }
        for command in ["iterate", "plan"] {
            let run = dsrt_in(dir.path(), &[command, "code", "web", "--schedule", file]);
            assert_eq!(run.code, 2, "{command} {file}: {}", run.stderr);
            assert!(
                run.stderr
                    .starts_with(&format!("dsrt: {file}: not a usable schedule"))
                    && run.stderr.contains(problem),
                "{command} {file}: {:?} should name {problem:?}",
                run.stderr
            );
            assert!(run.stdout.is_empty(), "{command} {file}");
        }
    }
}

#[test]
fn a_schedule_conflicts_with_weights_samples_per_epoch_and_seq_len() {
    let dir = setup();
    for (command, extra) in [
        ("iterate", &["--weights", "1,1"][..]),
        ("iterate", &["--samples-per-epoch", "10"][..]),
        ("plan", &["--weights", "1,1"][..]),
        ("plan", &["--samples-per-epoch", "10"][..]),
        ("plan", &["--seq-len", "8"][..]),
    ] {
        let mut args = vec![command, "code", "web", "--schedule", "phases.json"];
        args.extend_from_slice(extra);
        let run = dsrt_in(dir.path(), &args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("cannot be used with") && run.stderr.contains("--schedule"),
            "{args:?}: {}",
            run.stderr
        );
    }
}

/// A state names the mixture it was saved under; `dsrt iterate --resume` under another one
/// follows the new one where it can (other weights, another schedule, the caches in another
/// order: a note on stderr) and fails with exit status 1, naming what differs, where the state
/// cannot be honoured (another shuffle). A state file of before the mixture was recorded
/// still resumes.
#[test]
fn iterate_follows_or_refuses_a_state_of_another_mixture_naming_the_difference() {
    let dir = setup();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (state, old_state) = (path("state.json"), path("old.json"));
    let weights = ["--weights", "0.5,0.5", "--samples-per-epoch", "150"];
    let epoch = keys(dir.path(), &weights);
    let head = keys(
        dir.path(),
        &[&weights[..], &["--limit", "40", "--save-state", &state]].concat(),
    );
    let refused = |args: &[&str], expected: &str| {
        let mut all = vec!["iterate"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--keys", "--seed", "3", "--resume", &state]);
        let run = dsrt_in(dir.path(), &all).fails(1);
        assert!(
            run.stderr
                .contains("iterator state does not match this plan: "),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.contains(expected),
            "{expected:?}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "samples were read");
    };
    let followed = |args: &[&str], expected: &str| {
        let mut all = vec!["iterate"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--keys", "--seed", "3", "--resume", &state]);
        let run = dsrt_in(dir.path(), &all).ok();
        let note = "dsrt: note: resumed under a changed mixture from global position 40: ";
        assert!(
            run.stderr.contains(&format!("{note}{expected}")),
            "{expected:?}: {}",
            run.stderr
        );
    };
    followed(
        &[
            "code",
            "web",
            "--weights",
            "0.8,0.2",
            "--samples-per-epoch",
            "150",
        ],
        "weights changed",
    );
    followed(
        &["code", "web", "--schedule", "phases.json"],
        "weights changed, phases changed",
    );
    followed(
        &[
            "web",
            "code",
            "--weights",
            "0.5,0.5",
            "--samples-per-epoch",
            "150",
        ],
        "the same caches in another order",
    );
    refused(
        &[
            "code",
            "web",
            "--weights",
            "0.5,0.5",
            "--samples-per-epoch",
            "150",
            "--shuffle",
            "full",
        ],
        "shuffle local(4) (the plan's is full)",
    );

    // The state file as written before the mixture was recorded resumes as before.
    let mut old: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert!(old["mixture"]["caches"].is_array(), "{old}");
    old.as_object_mut().unwrap().remove("mixture");
    std::fs::write(&old_state, old.to_string()).unwrap();
    let tail = keys(
        dir.path(),
        &[&weights[..], &["--resume", &old_state]].concat(),
    );
    assert_eq!([head, tail].concat(), epoch);

    // Another schedule of the same length.
    let scheduled = ["--schedule", "phases.json"];
    keys(
        dir.path(),
        &[&scheduled[..], &["--limit", "30", "--save-state", &state]].concat(),
    );
    write(
        dir.path(),
        "other.json",
        r#"{"phases": [
            {"samples": 100, "weights": [0.2, 0.8]},
            {"samples": 50, "weights": [0.8, 0.2]}
        ]}"#,
    );
    let run = dsrt_in(
        dir.path(),
        &[
            "iterate",
            "code",
            "web",
            "--schedule",
            "other.json",
            "--seed",
            "3",
            "--shuffle",
            "full",
            "--resume",
            &state,
        ],
    )
    .fails(1);
    assert!(
        run.stderr.contains("shuffle local(4) (the plan's is full)"),
        "{}",
        run.stderr
    );
}

// Resuming under a changed mixture: notes, warnings and the JSON of the change.

/// `dsrt iterate --resume` with a cache removed follows the new weights from the state's
/// position, notes the change and warns of the removed cache on stderr (and in `--json`),
/// and serves no sample the first run served; `dsrt plan --resume` with a cache added notes
/// it and reports it in `--json`.
#[test]
fn a_resume_under_changed_caches_notes_the_change_and_warns_of_a_removed_cache() {
    let dir = setup();
    let state = dir.path().join("state.json");
    let state = state.to_str().unwrap();
    let code = cache_id(dir.path(), "code");
    let head = keys(
        dir.path(),
        &[
            "--weights",
            "0.5,0.5",
            "--samples-per-epoch",
            "60",
            "--limit",
            "20",
            "--save-state",
            state,
        ],
    );
    let code_read = head.iter().filter(|(c, _)| *c == code).count();
    let web_only = [
        "iterate",
        "web",
        "--seed",
        "3",
        "--weights",
        "1",
        "--samples-per-epoch",
        "70",
        "--resume",
        state,
    ];
    let run = dsrt_in(dir.path(), &[&web_only[..], &["--keys"]].concat()).ok();
    assert!(
        run.stderr.contains(
            "dsrt: note: resumed under a changed mixture from global position 20: \
             weights changed, 1 cache removed"
        ),
        "{}",
        run.stderr
    );
    let code_id: u64 = code.parse().unwrap();
    let warning = format!(
        "dsrt: warning: cache 0 (id {code_id:#018x}) was removed after {code_read} samples of \
         it were consumed"
    );
    assert!(run.stderr.contains(&warning), "{}", run.stderr);
    let tail: Vec<(String, String)> = run
        .stdout_text()
        .lines()
        .map(|l| {
            let (c, s) = l.split_once(' ').unwrap();
            (c.to_owned(), s.to_owned())
        })
        .collect();
    assert_eq!(tail.len(), 50);
    let served: BTreeSet<&(String, String)> = head.iter().chain(&tail).collect();
    assert_eq!(served.len(), 70, "a sample was served twice");

    let summary = dsrt_in(dir.path(), &[&web_only[..], &["--json"]].concat())
        .ok()
        .json();
    assert_eq!(
        summary["mixture_change"]["removed"],
        json!([{"cache": 0, "cache_id": code_id, "consumed": code_read}])
    );
    assert!(summary["state"]["continuation"]["streams"].is_array());

    // dsrt plan, from the state saved by the first run, with a third cache added.
    pack(dir.path(), "more", 40);
    let plan = dsrt_in(
        dir.path(),
        &[
            "plan",
            "code",
            "web",
            "more",
            "--seed",
            "3",
            "--weights",
            "1,1,1",
            "--samples-per-epoch",
            "90",
            "--resume",
            state,
            "--json",
        ],
    )
    .ok();
    assert!(
        plan.stderr.contains("1 cache added (position 2)"),
        "{}",
        plan.stderr
    );
    let report = plan.json();
    assert_eq!(report["mixture_change"]["added"], json!([2]));
    assert_eq!(report["remaining"], json!(70));
}
