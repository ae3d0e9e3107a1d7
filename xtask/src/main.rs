//! `cargo xtask`: project automation that is plain Rust instead of shell scripts.
//!
//! What it is for: tasks a developer or CI runs on the workspace as a whole: running the
//! criterion benchmarks and reporting each group as ratios against its in-run baseline.
//!
//! What it is not for: anything a library or the CLIs need at run time.
//!
//! Layering: outside the library stack; it runs cargo and reads cargo's output.
#![forbid(unsafe_code)]

mod bench;

use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  bench [BENCH...]     run criterion benchmarks (all, or the named bench targets) and report ratios
  bench-report         report ratios from the last benchmark run without running anything
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("bench") => bench::run(&args[1..]),
        Some("bench-report") => bench::report(),
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
