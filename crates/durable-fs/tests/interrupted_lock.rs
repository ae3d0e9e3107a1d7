//! A lock whose `flock` a signal interrupts (`EINTR`) is retried, not reported: the child is
//! this binary run again under strace, which fails every other `flock` call with `EINTR`. A
//! bare `flock` in the same child fails, which shows the interruption is real.
//!
//! `harness = false`: `main` runs the child's role when [`ROLE`] is set, so it is not a test.
#![allow(clippy::unwrap_used)] // test code

use dsrt_atlas_test_runner as runner;
use durable_fs::{lock_file, try_lock_file, DirLock, LockMode};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const ROLE: &str = "DURABLE_FS_EINTR_ROLE";
const DIR: &str = "DURABLE_FS_EINTR_DIR";

fn child(role: &str) -> ExitCode {
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let done = match role {
        // One bare call, no retry: interrupted, as every first call in this child is.
        "bare" => {
            let file = std::fs::File::open(&dir).unwrap();
            let result = rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive);
            result == Err(rustix::io::Errno::INTR)
        }
        "retrying" => {
            let exclusive = DirLock::acquire(&dir, LockMode::Exclusive).unwrap();
            drop(exclusive);
            let shared = DirLock::try_acquire(&dir, LockMode::Shared).unwrap();
            let file = std::fs::File::open(dir.join("file")).unwrap();
            lock_file(&file, LockMode::Shared).unwrap();
            let other = std::fs::File::open(dir.join("file")).unwrap();
            let exclusive_refused = !try_lock_file(&other, LockMode::Exclusive).unwrap();
            shared.is_some() && exclusive_refused
        }
        other => panic!("unknown role {other}"),
    };
    if done {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run(role: &str) -> runner::InterruptedRun {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), b"x").unwrap();
    let path: &Path = dir.path();
    runner::run_with_flocks_interrupted(ROLE, role, &[(DIR, path)])
}

fn a_bare_flock_is_interrupted_by_the_injected_eintr() {
    let run = run("bare");
    assert!(
        run.succeeded,
        "the bare flock was not interrupted: {}",
        run.stderr
    );
    assert_eq!(run.injected, 1, "{run:?}");
}

fn every_lock_is_taken_although_each_first_call_is_interrupted() {
    let run = run("retrying");
    assert!(run.succeeded, "{}", run.stderr);
    // Three locks and two unlocks, each interrupted once and retried once.
    assert!(run.injected >= 4, "{run:?}");
    assert!(run.calls >= 2 * run.injected - 1, "{run:?}");
}

fn main() -> ExitCode {
    if let Ok(role) = std::env::var(ROLE) {
        return child(&role);
    }
    runner::run(&[
        (
            "a_bare_flock_is_interrupted_by_the_injected_eintr",
            a_bare_flock_is_interrupted_by_the_injected_eintr,
        ),
        (
            "every_lock_is_taken_although_each_first_call_is_interrupted",
            every_lock_is_taken_although_each_first_call_is_interrupted,
        ),
    ])
}
