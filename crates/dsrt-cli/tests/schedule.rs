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
fn a_schedule_conflicts_with_weights_samples_per_epoch_and_tokens_per_epoch() {
    let dir = setup();
    for (command, extra) in [
        ("iterate", &["--weights", "1,1"][..]),
        ("iterate", &["--samples-per-epoch", "10"][..]),
        ("plan", &["--weights", "1,1"][..]),
        ("plan", &["--samples-per-epoch", "10"][..]),
        ("plan", &["--seq-len", "8", "--tokens-per-epoch", "100"][..]),
        ("plan", &["--seq-len", "8", "--weights", "1,1"][..]),
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

/// Two token caches (`code`: 300 documents, `web`: 500) packed from JSONL token arrays.
fn token_caches(dir: &Path) {
    for (name, docs, seed) in [("code", 300u64, 1u64), ("web", 500, 2)] {
        let lines: Vec<serde_json::Value> = (0..docs)
            .map(|d| {
                let len = 1 + (d * 37 + seed * 11) % 90;
                let ids: Vec<u64> = (0..len).map(|i| (d * 7 + i * seed) % 1000 + 1).collect();
                json!({"ids": ids})
            })
            .collect();
        let input = format!("{name}.jsonl");
        std::fs::write(dir.join(&input), common::jsonl(&lines)).unwrap();
        dsrt_in(
            dir,
            &[
                "pack",
                "--jsonl",
                &input,
                "--tokens-column",
                "ids",
                "--out",
                name,
                "--source",
                name,
                "--max-shard-bytes",
                "4KiB",
            ],
        )
        .ok();
    }
}

#[test]
fn plan_with_seq_len_follows_a_schedule_counted_in_tokens() {
    let dir = tempfile::tempdir().unwrap();
    token_caches(dir.path());
    write(
        dir.path(),
        "tokens.json",
        r#"{"phases": [
            {"tokens": 12000, "weights": [0.5, 0.5]},
            {"tokens": 6000, "weights": [0.9, 0.1]},
            {"tokens": 9000, "weights": [0.0, 1.0]}
        ]}"#,
    );
    let args = [
        "plan",
        "code",
        "web",
        "--seq-len",
        "64",
        "--world-size",
        "8",
        "--ranks-per-node",
        "2",
        "--schedule",
        "tokens.json",
    ];
    let report = dsrt_in(dir.path(), &[&args[..], &["--json"]].concat())
        .ok()
        .json();
    let phases = report["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 3);
    let mut start = 0;
    let longest = 90;
    let mut budget = [0u64; 2];
    let mut tokens = [0u64; 2];
    for (p, (phase, (scheduled, weights))) in phases
        .iter()
        .zip([(12000, [5, 5]), (6000, [9, 1]), (9000, [0, 10])])
        .enumerate()
    {
        assert_eq!(phase["phase"], json!(p));
        assert_eq!(phase["start"], json!(start));
        assert_eq!(phase["scheduled_tokens"], json!(scheduled));
        start += phase["tokens"].as_u64().unwrap();
        for c in 0..2 {
            let source = &phase["sources"][c];
            assert_eq!(
                source["budget"].as_u64().unwrap(),
                scheduled * weights[c] / 10
            );
            budget[c] += source["budget"].as_u64().unwrap();
            tokens[c] += source["tokens"].as_u64().unwrap();
            assert!(
                tokens[c] >= budget[c] && tokens[c] < budget[c] + longest,
                "phase {p} source {c}: {} tokens through it for {}",
                tokens[c],
                budget[c]
            );
        }
    }
    assert_eq!(phases[2]["sources"][0]["tokens"], json!(0));
    assert_eq!(report["epoch_tokens"], json!(start));
    // The text report lists each phase with each source's tokens and share.
    let text = dsrt_in(dir.path(), &args).ok().stdout_text();
    assert!(text.contains("phase 1: from token "), "{text}");
    assert!(text.contains("of the phase; budget 5400)"), "{text}");

    // A refused phase is a usage error naming the file and the phase.
    write(
        dir.path(),
        "bad.json",
        r#"{"phases": [{"tokens": 10, "weights": [1, 1]}, {"tokens": 0, "weights": [1, 1]}]}"#,
    );
    let run = dsrt_in(
        dir.path(),
        &[
            "plan",
            "code",
            "web",
            "--seq-len",
            "64",
            "--schedule",
            "bad.json",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("dsrt: bad.json: not a usable schedule")
            && run.stderr.contains("phases[1]: it holds 0 tokens"),
        "{}",
        run.stderr
    );
    // A sample schedule is not a token schedule.
    write(
        dir.path(),
        "samples.json",
        r#"{"phases": [{"samples": 10, "weights": [1, 1]}]}"#,
    );
    let run = dsrt_in(
        dir.path(),
        &[
            "plan",
            "code",
            "web",
            "--seq-len",
            "64",
            "--schedule",
            "samples.json",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown field `samples`"),
        "{}",
        run.stderr
    );
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
