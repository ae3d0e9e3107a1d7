//! Crash consistency under random kills: a writer process SIGKILLed 100 times, each time once
//! its cache directory holds a seeded random number of bytes, leaves either no published cache
//! (a typed `Incomplete` error) or a fully valid one with every sample intact; and nothing
//! outside its directory ever changes.
//!
//! `crash.rs` kills at chosen steps through a handshake; this loop has no handshake: the parent
//! polls the directory's size while the child writes at full speed (background shard hashing,
//! writing and fsync included), so kills land wherever the bytes are, in the middle of any file
//! or between any two system calls. The child is this test binary (`harness = false`, so the
//! child is not a test) re-run with `DSRT_KILL_LOOP_CHILD` set.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output

mod common;
use dsrt_atlas_test_runner as runner;

use dsrt_manifest::CompressionAlgo;
use dsrt_reader::{Cache, CacheError, OpenOptions};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

const CHILD_ENV: &str = "DSRT_KILL_LOOP_CHILD";
const SAMPLES: u64 = 600;
const KILLS: u64 = 100;
const SEED: u64 = 0x5eed_dead_beef;

fn payload(i: u64) -> Vec<u8> {
    let len = 64 + (splitmix(i) % 6000) as usize;
    (0..len).map(|b| (b as u64 * 31 + i) as u8).collect()
}

fn write(target: &Path) {
    let options = WriterOptions::new("kill-loop", common::schema())
        .compression(CompressionAlgo::Lz4)
        .max_shard_bytes(64 * 1024);
    let mut writer = CacheWriter::create(target, options).unwrap();
    for i in 0..SAMPLES {
        writer.add(&payload(i), &common::row(i as i64)).unwrap();
    }
    writer.finish().unwrap();
}

fn main() -> ExitCode {
    // The child: writes the cache at full speed.
    if let Ok(target) = std::env::var(CHILD_ENV) {
        write(Path::new(&target));
        return ExitCode::SUCCESS;
    }
    runner::run(&[(
        "a_hundred_random_kills_never_publish_a_broken_cache",
        a_hundred_random_kills_never_publish_a_broken_cache,
    )])
}

/// splitmix64: a seeded, dependency-free source of kill points.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Bytes of every file under `dir` (temporary files included); 0 while it does not exist.
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => bytes_under(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0, // removed or renamed between listing and stat
        })
        .sum()
}

/// How one kill ended.
#[derive(Debug, Default)]
struct Outcomes {
    unpublished: u64,
    published: u64,
    finished_first: u64,
}

/// Starts the writer child and SIGKILLs it once `target` holds `kill_at` bytes. Returns whether
/// the child finished on its own first.
fn run_child(target: &Path, kill_at: u64) -> bool {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, target)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "the writer child failed on its own: {status}"
            );
            return true;
        }
        if bytes_under(target) >= kill_at {
            child.kill().unwrap();
            child.wait().unwrap();
            return false;
        }
    }
}

fn check(target: &Path, kill_at: u64, outcomes: &mut Outcomes) {
    match Cache::open(target, OpenOptions::validated()) {
        Err(CacheError::Incomplete { .. }) => outcomes.unpublished += 1,
        Ok(cache) => {
            outcomes.published += 1;
            assert_eq!(cache.len(), SAMPLES, "kill at {kill_at} B");
            for i in 0..SAMPLES {
                let sample = cache.sample(i).unwrap();
                assert_eq!(
                    sample.payload,
                    payload(i),
                    "kill at {kill_at} B: sample {i}"
                );
            }
        }
        Err(other) => panic!("kill at {kill_at} B: neither unpublished nor valid: {other}"),
    }
}

fn a_hundred_random_kills_never_publish_a_broken_cache() {
    // A reference write tells how many bytes a whole cache is.
    let reference = tempfile::tempdir().unwrap();
    write(&reference.path().join("cache"));
    let full = bytes_under(&reference.path().join("cache"));

    let mut outcomes = Outcomes::default();
    for round in 0..KILLS {
        // Up to 10 % past the final size, so some kills come at the very end or never.
        let kill_at = splitmix(SEED ^ round) % (full + full / 10);
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("neighbour.txt"), b"untouched").unwrap();
        let target = root.path().join("cache");
        if run_child(&target, kill_at) {
            outcomes.finished_first += 1;
        }
        check(&target, kill_at, &mut outcomes);
        let mut names: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        let expected: Vec<_> = ["cache", "neighbour.txt"]
            .iter()
            .filter(|n| **n != "cache" || target.exists())
            .map(std::ffi::OsString::from)
            .collect();
        assert_eq!(
            names, expected,
            "kill at {kill_at} B: files outside the target"
        );
        assert_eq!(
            std::fs::read(root.path().join("neighbour.txt")).unwrap(),
            b"untouched"
        );
    }
    println!("{KILLS} kills of a {full}-byte cache write (seed {SEED:#x}): {outcomes:?}");
    // The loop must really have killed writers mid-write, not only watched them finish.
    assert!(outcomes.unpublished >= KILLS / 2, "{outcomes:?}");
    assert_eq!(
        outcomes.unpublished + outcomes.published,
        KILLS,
        "{outcomes:?}"
    );
}
