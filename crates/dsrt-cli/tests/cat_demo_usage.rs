//! `dsrt cat` in pipelines, `dsrt demo`, and the command line's usage behaviour.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use common::*;
use std::process::Stdio;

/// A cache `c` whose sample 0 is a 1 MiB payload, far more than a pipe buffer holds.
fn big_sample() -> (tempfile::TempDir, Vec<u8>) {
    let payload: Vec<u8> = (0..1u32 << 20).map(|i| (i % 253) as u8).collect();
    let dir = dir_with(&[
        ("big.bin", &payload),
        ("in.jsonl", b"{\"f\": \"big.bin\"}\n"),
    ]);
    dsrt_in(
        dir.path(),
        &[
            "pack",
            "--jsonl",
            "in.jsonl",
            "--payload-field",
            "f",
            "--out",
            "c",
            "--source",
            "big",
        ],
    )
    .ok();
    (dir, payload)
}

#[test]
fn cat_writes_the_exact_payload() {
    let (dir, payload) = big_sample();
    assert_eq!(cat(dir.path(), "c", 0), payload);
}

#[test]
fn cat_into_a_closed_pipe_exits_quietly() {
    let (dir, _) = big_sample();
    let mut child = command()
        .args(["cat", "c", "0"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away at once, as `| head -c 10` does after ten bytes.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}

#[test]
fn cat_through_head_in_a_shell_pipeline() {
    let (dir, payload) = big_sample();
    let script = format!(
        "set -o pipefail; '{}' cat c 0 | head -c 10",
        env!("CARGO_BIN_EXE_dsrt")
    );
    let output = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.stdout, &payload[..10]);
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}

#[test]
fn cat_refuses_an_index_out_of_range_and_a_missing_cache() {
    let (dir, _) = big_sample();
    let run = dsrt_in(dir.path(), &["cat", "c", "1"]).fails(1);
    assert!(
        run.stderr.contains("c: sample 1 is out of range"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
    let run = dsrt_in(dir.path(), &["cat", "nope", "0"]).fails(1);
    assert!(run.stderr.contains("nope"), "{}", run.stderr);
}

#[test]
fn demo_packs_verifies_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let run = dsrt_in(dir.path(), &["demo"]).ok();
    let text = run.stdout_text();
    for word in [
        "packed 120 samples",
        "lz4",
        "verified 120 samples",
        "sample 0: {",
        "payload (",
    ] {
        assert!(text.contains(word), "{word:?} missing from:\n{text}");
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "without --out nothing is left behind"
    );
}

#[test]
fn demo_keeps_its_cache_with_out() {
    let dir = tempfile::tempdir().unwrap();
    dsrt_in(dir.path(), &["demo", "--out", "demo"]).ok();
    dsrt_in(dir.path(), &["verify", "--full", "demo"]).ok();
    let info = inspect(dir.path(), "demo");
    assert_eq!(info["samples"], 120);
    assert!(info["shards"].as_array().unwrap().len() > 1, "{info}");
    let types: Vec<_> = schema_of(dir.path(), "demo")
        .into_iter()
        .map(|(_, ty, _)| ty)
        .collect();
    for ty in ["bool", "int64", "float64", "utf8"] {
        assert!(
            types.iter().any(|t| t == ty),
            "{ty} column missing: {types:?}"
        );
    }
    assert!(schema_of(dir.path(), "demo")
        .iter()
        .any(|(_, _, nullable)| *nullable));
    // A second run into the same directory is refused, not merged.
    dsrt_in(dir.path(), &["demo", "--out", "demo"]).fails(1);
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &[][..],
        &["frobnicate"],
        &["cat", "c", "minus-one"],
        &["pack", "--out", "c", "--source", "s"],
        &["pack", "--jsonl", "x.jsonl", "--out", "c", "--source", "s"],
        &[
            "pack",
            "--jsonl",
            "x",
            "--from-dir",
            "d",
            "--payload-field",
            "p",
            "--out",
            "c",
            "--source",
            "s",
        ],
        &[
            "pack",
            "--from-dir",
            "d",
            "--out",
            "c",
            "--source",
            "s",
            "--max-shard-bytes",
            "0",
        ],
        &[
            "pack",
            "--from-dir",
            "d",
            "--out",
            "c",
            "--source",
            "s",
            "--compression",
            "zstd",
        ],
        &["verify"],
    ] {
        let run = dsrt_in(dir.path(), args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(!run.stderr.is_empty());
    }
}

#[test]
fn every_subcommand_has_help_with_examples() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["pack", "inspect", "verify", "cat", "demo"] {
        let run = dsrt_in(dir.path(), &[sub, "--help"]).ok();
        let text = run.stdout_text();
        assert!(
            text.contains("Examples:") && text.contains(&format!("dsrt {sub}")),
            "{sub}:\n{text}"
        );
    }
}
