//! Requirement 4: a writer SIGKILLed at any point leaves a directory no reader opens (or, if
//! the kill came after the manifest's rename, a fully valid cache), and nothing outside the
//! target directory changes.
//!
//! The child is this same test binary (`harness = false`, so the child is not a test), re-run
//! with `DSRT_CRASH_CHILD` set: it writes a cache, reports each step on stdout and waits for a
//! go-ahead line on stdin, so the parent's SIGKILL lands exactly at the chosen step, however
//! loaded the machine is.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

mod common;
use dsrt_atlas_test_runner as runner;

use dsrt_manifest::CompressionAlgo;
use dsrt_reader::{Cache, CacheError, OpenOptions};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

const CHILD_ENV: &str = "DSRT_CRASH_CHILD";
const SAMPLES: u64 = 400;

fn main() -> ExitCode {
    if let Ok(target) = std::env::var(CHILD_ENV) {
        crash_child_writer(&target);
        return ExitCode::SUCCESS;
    }
    runner::run(&[(
        "sigkill_at_any_point_never_publishes_a_broken_cache",
        sigkill_at_any_point_never_publishes_a_broken_cache,
    )])
}

/// The child: writes a cache, announcing progress.
fn crash_child_writer(target: &str) {
    let options = WriterOptions::new("crash", common::schema())
        .compression(CompressionAlgo::Lz4)
        .max_shard_bytes(4096);
    let mut writer = CacheWriter::create(target, options).unwrap();
    step("created");
    for i in 0..SAMPLES {
        writer
            .add(&common::payload(i), &common::row(i as i64))
            .unwrap();
        step(&format!("sample {i}"));
    }
    step("finishing");
    writer.finish().unwrap();
    step("finished");
}

/// Announces a step and waits until the parent lets the child go on.
fn step(name: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "STEP:{name}").unwrap();
    out.flush().unwrap();
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();
}

/// File name -> size for everything under `root` except `skip`.
fn snapshot(root: &Path, skip: &Path) -> BTreeMap<PathBuf, u64> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.starts_with(skip) {
                continue;
            }
            let meta = std::fs::metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path.clone());
            }
            out.insert(path, if meta.is_dir() { 0 } else { meta.len() });
        }
    }
    out
}

fn run_and_kill_at(kill_line: &str) -> (tempfile::TempDir, PathBuf, bool) {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("neighbour.txt"), b"untouched").unwrap();
    let target = root.path().join("cache");
    let before = snapshot(root.path(), &target);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, &target)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut reached = false;
    for line in BufReader::new(stdout).lines() {
        if line.unwrap().split("STEP:").nth(1) == Some(kill_line) {
            reached = true;
            child.kill().unwrap();
            break;
        }
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
    }
    let status = child.wait().unwrap();
    assert!(reached, "child never printed {kill_line:?} ({status})");
    assert_eq!(
        snapshot(root.path(), &target),
        before,
        "files outside the target changed"
    );
    (root, target, status.success())
}

fn sigkill_at_any_point_never_publishes_a_broken_cache() {
    let points = [
        "created",
        "sample 0",
        "sample 57",
        "sample 200",
        "sample 399",
        "finishing",
        "finished",
    ];
    for point in points {
        let (_root, target, _) = run_and_kill_at(point);
        match Cache::open(&target, OpenOptions::validated()) {
            Err(CacheError::Incomplete { .. }) => {}
            // After `finish` returned, the cache is published and must be whole.
            Ok(cache) if point == "finished" => {
                assert_eq!(cache.len(), SAMPLES);
                for i in 0..SAMPLES {
                    assert_eq!(cache.sample(i).unwrap().payload, common::payload(i));
                }
            }
            Ok(_) => panic!("killed at {point:?} but a cache was published"),
            Err(other) if point == "finished" => {
                panic!("finish returned but the cache is broken: {other}")
            }
            Err(other) => panic!("killed at {point:?}: expected an incomplete cache, got {other}"),
        }
        let leftovers: Vec<_> = std::fs::read_dir(target.parent().unwrap())
            .unwrap()
            .collect();
        assert!(
            leftovers.len() <= 2,
            "only the neighbour and the target directory exist"
        );
    }
}
