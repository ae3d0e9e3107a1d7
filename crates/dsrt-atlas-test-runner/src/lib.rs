//! A small test runner for the test binaries that re-run themselves as a child process
//! (`harness = false` in Cargo.toml): the crash, kill-loop and concurrency tests of
//! `dsrt-reader`, `dsrt-migrate` and `atlas-reader`, which depend on it as a dev-dependency.
//!
//! What it is not for: ordinary tests (libtest runs those) or anything outside tests.
//!
//! Layering: a tool beside the library stack; nothing depends on it but test targets.
//!
//! Such a binary's `main` first checks its child environment variable and, when set, does the
//! child's work and exits; otherwise it runs its tests here. The child's entry point is
//! therefore never a test: under libtest it was a `#[test]` that passed empty in every normal
//! run. Understands what `cargo test` passes on: name filters, `--exact`, `--skip NAME`,
//! `--list`, `--ignored` and `--include-ignored` (the tests of [`run`] are not ignored, so
//! `--ignored` runs none of them; those of [`run_ignored`] are, and only run with either flag,
//! as libtest's `#[ignore]`d tests do); other flags (`--nocapture`, `--test-threads N`, ...) are accepted and
//! have no effect (the tests run one after another, their output not captured).
//!
//! Also [`run_with_flocks_interrupted`], which re-runs such a binary under `strace` with its
//! `flock` calls failed with `EINTR`, for the tests of the lock's retry in every crate that
//! takes one, and [`files_below`], what a directory holds byte for byte, for the tests that
//! compare two outputs that must be identical, and [`assert_one_kind_per_variant`], the check of
//! every error type's `kind()`.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output

mod interrupt;
mod kinds;
mod tree;

pub use interrupt::{run_with_flocks_interrupted, InterruptedRun};
pub use kinds::assert_one_kind_per_variant;
pub use tree::{files_below, is_shard_cache_bookkeeping};

use std::process::ExitCode;

/// One test: its name and body (a panic fails it).
pub type Test = (&'static str, fn());

/// Runs the `tests` that the command line selects, libtest style; fails if any fails.
pub fn run(tests: &[Test]) -> ExitCode {
    run_inner(tests, None)
}

/// Runs `tests` as libtest runs `#[ignore = "reason"]`ed tests: a plain run reports each as
/// ignored (with `reason`) and runs none; `--ignored` or `--include-ignored` runs the selected
/// ones. For tests that need something a plain `cargo test` does not start (a server, say).
pub fn run_ignored(tests: &[Test], reason: &str) -> ExitCode {
    run_inner(tests, Some(reason))
}

fn run_inner(tests: &[Test], ignore_reason: Option<&str>) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut filters, mut skips) = (Vec::new(), Vec::new());
    let (mut exact, mut list, mut only_ignored, mut include_ignored) = (false, false, false, false);
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--exact" => exact = true,
            "--list" => list = true,
            "--ignored" => only_ignored = true,
            "--include-ignored" => include_ignored = true,
            "--skip" => skips.extend(args.next().cloned()),
            // Flags that take a separate value; the value is not a filter.
            "--test-threads" | "--color" | "--format" | "--logfile" | "-Z" => {
                args.next();
            }
            flag if flag.starts_with('-') => {}
            filter => filters.push(filter.to_owned()),
        }
    }
    let matches = |name: &str, pattern: &String| {
        if exact {
            name == pattern
        } else {
            name.contains(pattern.as_str())
        }
    };
    // Which tests run: not-ignored ones unless `--ignored`, ignored ones only when asked for.
    let runs = if ignore_reason.is_some() {
        only_ignored || include_ignored
    } else {
        !only_ignored
    };
    let selected: Vec<&Test> = tests
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| matches(name, f)))
        .filter(|(name, _)| !skips.iter().any(|s| matches(name, s)))
        .collect();
    if list {
        for (name, _) in &selected {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    let (selected, ignored): (Vec<&Test>, Vec<&Test>) = if runs {
        (selected, Vec::new())
    } else if ignore_reason.is_some() {
        (Vec::new(), selected)
    } else {
        (Vec::new(), Vec::new())
    };
    println!("\nrunning {} tests", selected.len() + ignored.len());
    for (name, _) in &ignored {
        println!(
            "test {name} ... ignored, {}",
            ignore_reason.unwrap_or_default()
        );
    }
    let mut failed = Vec::new();
    for &&(name, body) in &selected {
        println!("test {name} ... started");
        match std::panic::catch_unwind(body) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed.push(name);
            }
        }
    }
    let passed = selected.len() - failed.len();
    let outcome = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {outcome}. {passed} passed; {} failed; {} ignored; 0 measured; {} filtered out\n",
        failed.len(),
        ignored.len(),
        tests.len() - selected.len() - ignored.len()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!("failures: {}", failed.join(", "));
        ExitCode::FAILURE
    }
}
