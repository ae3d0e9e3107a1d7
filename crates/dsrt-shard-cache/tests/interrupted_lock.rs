//! The shard cache's locks survive interrupted `flock` calls: a child (this binary run again
//! under strace, which fails every other `flock` call with `EINTR`, as a signal delivered to
//! a waiting thread does) opens a root, fetches and reads files, and gets every one.
//!
//! `harness = false`: `main` runs the child when [`ROLE`] is set, so it is not a test.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

mod common;
use dsrt_atlas_test_runner as runner;

use common::{content, rel, sha, write_all};
use dsrt_shard_cache::{CacheLimits, ShardCache};
use std::path::PathBuf;
use std::process::ExitCode;

const ROLE: &str = "SHARD_CACHE_EINTR_ROLE";
const ROOT: &str = "SHARD_CACHE_EINTR_ROOT";
const LEN: usize = 4096;

fn child() -> ExitCode {
    let root = PathBuf::from(std::env::var(ROOT).unwrap());
    let cache = ShardCache::open(&root, CacheLimits::new(1 << 20)).unwrap();
    for i in 0..4 {
        let bytes = content(i, LEN);
        let file = cache
            .get_or_fetch(&rel(i), LEN as u64, &sha(&bytes), &mut |sink| {
                write_all(sink, &bytes, 2)
            })
            .unwrap();
        assert_eq!(file.read_all().unwrap(), bytes);
    }
    let again = cache.get(&rel(0), &sha(&content(0, LEN))).unwrap().unwrap();
    assert_eq!(again.read_all().unwrap(), content(0, LEN));
    assert!(cache.usage().unwrap() >= 4 * LEN as u64);
    ExitCode::SUCCESS
}

fn every_lock_of_fetch_and_read_is_retried() {
    let root = tempfile::tempdir().unwrap();
    let run = runner::run_with_flocks_interrupted(ROLE, "cache", &[(ROOT, root.path())]);
    assert!(run.succeeded, "{}", run.stderr);
    assert!(run.injected >= 8, "{run:?}");
    // The files are in place for a process that was not interrupted.
    let cache = ShardCache::open(root.path(), CacheLimits::new(1 << 20)).unwrap();
    for i in 0..4 {
        let file = cache.get(&rel(i), &sha(&content(i, LEN))).unwrap().unwrap();
        assert_eq!(file.read_all().unwrap(), content(i, LEN));
    }
}

fn main() -> ExitCode {
    if std::env::var(ROLE).is_ok() {
        return child();
    }
    runner::run(&[(
        "every_lock_of_fetch_and_read_is_retried",
        every_lock_of_fetch_and_read_is_retried,
    )])
}
