//! Processes sharing one cache root: four processes fetching the same twenty files fetch each
//! exactly once; four processes churning twenty files through room for three never exceed the
//! limit (sampled by the parent throughout); downloaders SIGKILLed mid-transfer leave nothing that is ever served, the
//! survivors take over their files, and a later `open` sweeps what a lone victim left.
//!
//! The children are this test binary (`harness = false`, so a child is not a test) re-run
//! with `SHARD_CACHE_CHILD` set to its role. No assertion depends on timing: the parent waits
//! for the victim's marker file by polling, and the survivors' outcome is the same whether or
//! not they were already waiting when the victim died.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output

mod common;
use dsrt_atlas_test_runner as runner;

use common::{content, partials_under, rel, sha};
use dsrt_shard_cache::{CacheLimits, ShardCache, SEAL_ALLOWANCE};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "SHARD_CACHE_CHILD";
const ROOT_ENV: &str = "SHARD_CACHE_ROOT";
const LOG_ENV: &str = "SHARD_CACHE_LOG";
const VICTIM_FILE_ENV: &str = "SHARD_CACHE_VICTIM_FILE";
const MARKER_ENV: &str = "SHARD_CACHE_MARKER";
const SEED_ENV: &str = "SHARD_CACHE_SEED";
const FILES: u64 = 20;
const LEN: usize = 64 * 1024;

fn limits() -> CacheLimits {
    CacheLimits::new(FILES * (LEN as u64 + SEAL_ALLOWANCE) + 4096)
        .with_wait_for_room(Duration::from_secs(300))
}

fn env_path(name: &str) -> PathBuf {
    PathBuf::from(std::env::var(name).unwrap())
}

fn log_fetch(log: &Path, i: u64) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .unwrap();
    file.write_all(format!("{i}\n").as_bytes()).unwrap();
}

/// Child role: fetches every file (in the same order as its siblings, so they collide),
/// writing each in pieces with short pauses, and checks every file's bytes.
fn fetch_all() {
    let (root, log) = (env_path(ROOT_ENV), env_path(LOG_ENV));
    let cache = ShardCache::open(&root, limits()).unwrap();
    for i in 0..FILES {
        let bytes = content(i, LEN);
        let file = cache
            .get_or_fetch(&rel(i), LEN as u64, &sha(&bytes), &mut |sink| {
                log_fetch(&log, i);
                for (n, piece) in bytes.chunks(LEN / 4).enumerate() {
                    sink.write_at((n * (LEN / 4)) as u64, piece)?;
                    std::thread::sleep(Duration::from_millis(2));
                }
                Ok(())
            })
            .unwrap();
        assert_eq!(file.read_all().unwrap(), bytes, "file {i}");
    }
}

/// Child role: forty fetches over the twenty files in a seeded order, through a root that holds
/// three of them, each file read back and released before the next claim.
fn churn() {
    let (root, log) = (env_path(ROOT_ENV), env_path(LOG_ENV));
    let seed: u64 = std::env::var(SEED_ENV).unwrap().parse().unwrap();
    let cache = ShardCache::open(&root, churn_limits()).unwrap();
    let mut x = seed;
    for _ in 0..40 {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let i = (x >> 33) % FILES;
        let bytes = content(i, LEN);
        let file = cache
            .get_or_fetch(&rel(i), LEN as u64, &sha(&bytes), &mut |sink| {
                log_fetch(&log, i);
                for (n, piece) in bytes.chunks(LEN / 4).enumerate() {
                    sink.write_at((n * (LEN / 4)) as u64, piece)?;
                }
                Ok(())
            })
            .unwrap();
        assert_eq!(file.read_all().unwrap(), bytes, "file {i}");
    }
}

fn churn_limits() -> CacheLimits {
    CacheLimits::new(3 * (LEN as u64 + SEAL_ALLOWANCE)).with_wait_for_room(Duration::from_secs(300))
}

/// Child role: starts fetching one file, writes half of it, leaves a marker and sleeps until
/// it is killed.
fn victim() {
    let (root, log, marker) = (env_path(ROOT_ENV), env_path(LOG_ENV), env_path(MARKER_ENV));
    let i: u64 = std::env::var(VICTIM_FILE_ENV).unwrap().parse().unwrap();
    let cache = ShardCache::open(&root, limits()).unwrap();
    let bytes = content(i, LEN);
    let _ = cache.get_or_fetch(&rel(i), LEN as u64, &sha(&bytes), &mut |sink| {
        log_fetch(&log, i);
        sink.write_at(0, &bytes[..LEN / 2])?;
        std::fs::write(&marker, b"halfway").unwrap();
        std::thread::sleep(Duration::from_secs(600));
        Ok(())
    });
    panic!("the victim was not killed");
}

fn main() -> ExitCode {
    match std::env::var(CHILD_ENV).as_deref() {
        Ok("fetch-all") => {
            fetch_all();
            return ExitCode::SUCCESS;
        }
        Ok("victim") => victim(),
        Ok("churn") => {
            churn();
            return ExitCode::SUCCESS;
        }
        Ok(other) => panic!("unknown child role {other}"),
        Err(_) => {}
    }
    runner::run(&[
        (
            "four_processes_fetch_each_file_exactly_once",
            four_processes_fetch_each_file_exactly_once,
        ),
        (
            "four_processes_churning_never_exceed_the_limit",
            four_processes_churning_never_exceed_the_limit,
        ),
        (
            "killed_downloaders_leave_nothing_behind",
            killed_downloaders_leave_nothing_behind,
        ),
    ])
}

fn spawn(role: &str, root: &Path, log: &Path, extra: &[(&str, String)]) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .env(CHILD_ENV, role)
        .env(ROOT_ENV, root)
        .env(LOG_ENV, log)
        .stdout(Stdio::null());
    for (key, value) in extra {
        command.env(key, value);
    }
    command.spawn().unwrap()
}

/// How many times each file was fetched, by the log.
fn fetch_counts(log: &Path) -> Vec<u64> {
    let mut counts = vec![0; FILES as usize];
    for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
        counts[line.parse::<usize>().unwrap()] += 1;
    }
    counts
}

/// Every file is present with its exact bytes; no partial file is left.
fn check_all_files(root: &Path) {
    for i in 0..FILES {
        assert_eq!(
            std::fs::read(root.join(rel(i))).unwrap(),
            content(i, LEN),
            "file {i}"
        );
    }
    assert_eq!(partials_under(root), Vec::<String>::new());
}

/// Waits for `child` (polling, bounded by a generous deadline so that a deadlock fails the
/// test instead of hanging it) and checks that it succeeded.
fn wait_success(mut child: Child, what: &str) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{what} failed: {status}");
            return;
        }
        if start.elapsed() > Duration::from_secs(600) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish in 10 minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn four_processes_fetch_each_file_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let (root, log) = (dir.path().join("cache"), dir.path().join("fetches.log"));
    let children: Vec<_> = (0..4)
        .map(|_| spawn("fetch-all", &root, &log, &[]))
        .collect();
    for child in children {
        wait_success(child, "a fetching child");
    }
    assert_eq!(fetch_counts(&log), vec![1; FILES as usize]);
    check_all_files(&root);
    let cache = ShardCache::open(&root, limits()).unwrap();
    assert_eq!(cache.usage().unwrap(), common::bytes_under(&root));
    assert!(cache.usage().unwrap() > FILES * LEN as u64);
}

fn four_processes_churning_never_exceed_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (root, log) = (dir.path().join("cache"), dir.path().join("fetches.log"));
    let limit = churn_limits().max_bytes;
    let cache = ShardCache::open(&root, churn_limits()).unwrap();
    let mut children: Vec<_> = (0..4u64)
        .map(|k| {
            spawn(
                "churn",
                &root,
                &log,
                &[(SEED_ENV, (k * 7919 + 1).to_string())],
            )
        })
        .collect();
    // Sample the usage (under the shared directory lock) until every child is done.
    let (mut samples, mut max) = (0u64, 0u64);
    let start = Instant::now();
    while !children.is_empty() {
        max = max.max(cache.usage().unwrap());
        samples += 1;
        let mut still = Vec::new();
        for mut child in children {
            match child.try_wait().unwrap() {
                Some(status) => assert!(status.success(), "a churning child failed: {status}"),
                None => still.push(child),
            }
        }
        children = still;
        if start.elapsed() > Duration::from_secs(600) {
            for mut child in children {
                let _ = child.kill();
                let _ = child.wait();
            }
            panic!("the churning children did not finish in 10 minutes");
        }
    }
    println!("{samples} usage samples, at most {max} of {limit} bytes");
    assert!(max <= limit, "usage {max} > limit {limit}");
    assert!(samples > 0);
    // Twenty files through room for three: files were evicted and fetched again.
    assert!(fetch_counts(&log).iter().sum::<u64>() > FILES);
    assert_eq!(partials_under(&root), Vec::<String>::new());
    assert!(cache.usage().unwrap() <= limit);
}

/// Starts a victim on file `i` and waits (polling, generously bounded) until it is halfway.
fn start_victim(root: &Path, log: &Path, marker: &Path, i: u64) -> Child {
    let mut victim = spawn(
        "victim",
        root,
        log,
        &[
            (VICTIM_FILE_ENV, i.to_string()),
            (MARKER_ENV, marker.display().to_string()),
        ],
    );
    let start = Instant::now();
    while !marker.exists() {
        if let Some(status) = victim.try_wait().unwrap() {
            panic!("the victim exited before its marker: {status}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "the victim never got halfway"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    victim
}

fn kill(mut child: Child) {
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
}

fn killed_downloaders_leave_nothing_behind() {
    const ROUNDS: u64 = 5;
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cache");
        let log = dir.path().join("fetches.log");
        let victim_file = (round * 7) % FILES;
        let victim = start_victim(&root, &log, &dir.path().join("marker"), victim_file);
        // The victim holds its partial file: half written, fully reserved.
        let partial = root.join(format!(
            "cache-1a2b/shards/.shard-cache-partial.{victim_file:06}.bin"
        ));
        assert_eq!(std::fs::metadata(&partial).unwrap().len(), LEN as u64);
        let survivors: Vec<_> = (0..2)
            .map(|_| spawn("fetch-all", &root, &log, &[]))
            .collect();
        // Give the survivors a moment to reach the victim's file (not required for the
        // outcome: a survivor arriving later finds the partial stale and claims it).
        std::thread::sleep(Duration::from_millis(200));
        kill(victim);
        for survivor in survivors {
            wait_success(survivor, "a survivor");
        }
        check_all_files(&root);
        // The victim's file was fetched twice (the victim, then exactly one survivor), every
        // other file once.
        let mut expected = vec![1; FILES as usize];
        expected[victim_file as usize] = 2;
        assert_eq!(fetch_counts(&log), expected, "round {round}");
    }

    // A victim nobody takes over from: its partial file stays until the next `open`.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    let log = dir.path().join("fetches.log");
    kill(start_victim(&root, &log, &dir.path().join("marker"), 3));
    assert_eq!(
        partials_under(&root),
        ["cache-1a2b/shards/.shard-cache-partial.000003.bin"]
    );
    let cache = ShardCache::open(&root, limits()).unwrap();
    assert_eq!(partials_under(&root), Vec::<String>::new());
    assert!(cache
        .get(&rel(3), &sha(&content(3, LEN)))
        .unwrap()
        .is_none());
    let bytes = content(3, LEN);
    let file = cache
        .get_or_fetch(&rel(3), LEN as u64, &sha(&bytes), &mut |sink| {
            sink.write_at(0, &bytes)?;
            Ok(())
        })
        .unwrap();
    assert_eq!(file.read_all().unwrap(), bytes);
}
