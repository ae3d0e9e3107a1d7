//! `cargo xtask`: project automation that is plain Rust instead of shell scripts.
//!
//! What it is for: tasks a developer or CI runs on the workspace as a whole: the whole test
//! suite with its S3 server (`test`), running the criterion benchmarks and reporting each group as ratios against its in-run baseline,
//! regenerating the golden fixtures, seeding the fuzz corpora and running the fuzz targets.
//!
//! What it is not for: anything a library or the CLIs need at run time.
//!
//! Layering: outside the library stack; it runs cargo and reads cargo's output.
#![forbid(unsafe_code)]

mod bench;
mod deny;
mod downstream;
mod fixtures;
mod fuzz;
mod package;
mod python;
mod test;

use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  test [--no-s3] [--python-only] [ARGS...]
                       the whole test suite: starts the local S3 test server, runs
                       `cargo test --workspace --locked ARGS`, then (without ARGS) builds the
                       Python packages into a cached virtualenv and runs their pytest suites,
                       stops the server; --python-only runs only the Python part
  bench [BENCH...] [--save NAME] [--compare NAME] [--threshold PCT]
                       run criterion benchmarks (all, or the named targets) and report ratios;
                       --save stores a criterion baseline, --compare fails on a regression
                       beyond PCT percent (default 5)
  bench-report         report ratios from the last benchmark run without running anything
  package [--verify]   cargo package every publishable crate, in dependency order (--verify
                       also builds each from its package alone)
  deny [ARGS...]       cargo deny check (licenses, advisories, bans, sources) per deny.toml
  fixtures [--out DIR] regenerate the golden fixtures (default fixtures/)
  fuzz-seed [--fixtures DIR]
                       write seed inputs from the fixtures into fuzz/corpus/<target>/
  fuzz [TARGET...] [--seconds N]
                       run cargo-fuzz on one, several or all targets, N seconds each (default 60)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("bench-report") => bench::report(),
        Some("package") => package::run(
            &test::workspace_root(),
            args[1..].iter().any(|a| a == "--verify"),
        ),
        Some("deny") => deny::run(&args[1..]),
        Some("fixtures") => fixtures::run(&args[1..]),
        Some("fuzz-seed") => fuzz::seed(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("-h" | "--help") => {
            print!("{USAGE}");
            Ok(())
        }
        _ => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}
