//! `cargo xtask`: project automation that is plain Rust instead of shell scripts.
//!
//! What it is for: tasks a developer or CI runs on the workspace as a whole: the whole test
//! suite with its S3 server (`test`), linting the Python packages and checking their stubs
//! (`lint-python`), running the criterion benchmarks and reporting each group as ratios against its in-run baseline,
//! regenerating the golden fixtures, seeding the fuzz corpora and running the fuzz targets.
//!
//! What it is not for: anything a library or the CLIs need at run time.
//!
//! Layering: outside the library stack; it runs cargo and reads cargo's output. The command
//! line is parsed with clap, so every task and flag answers `--help`.
#![forbid(unsafe_code)]
// A tool that owns its output.
#![allow(clippy::print_stdout, clippy::print_stderr)]
// Subcommand doc comments are the --help text, plain text where `<target>` is literal.
#![allow(rustdoc::invalid_html_tags)]

mod bench;
mod bench_python;
mod deny;
mod downstream;
mod fixtures;
mod fuzz;
mod package;
mod python;
mod test;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Project automation for this workspace.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Runs the whole test suite, with the local S3 test server.
    ///
    /// Starts the server, runs `cargo test --workspace --locked ARGS`, then (without ARGS) the
    /// S3 tests, which a plain `cargo test` reports as ignored (the task fails unless every one
    /// ran and passed), the downstream crates, `cargo package`, and the Python packages' lints
    /// (as `lint-python`) and pytest suites in a cached virtualenv; stops the server whatever
    /// happened.
    Test(test::TestArgs),
    /// Lints the Python packages: ruff, mypy, and stubtest of the native modules' stubs.
    ///
    /// Runs `ruff check` and `ruff format --check` over python/, mypy over each package (its
    /// [tool.mypy]) and mypy's stubtest of each native module against its .pyi stub, with the
    /// pinned tools of python/requirements-lint.txt in a cached virtualenv of their own. The
    /// types and native modules come from the test virtualenv, as the last `test` installed
    /// them; --build builds and installs the packages first. `test` runs the same checks.
    LintPython {
        /// Builds the packages and installs them into the test virtualenv first.
        #[arg(long)]
        build: bool,
    },
    /// Runs every benchmark: criterion's, reported as ratios, then the Python scripts.
    ///
    /// Runs all bench targets and Python benchmark scripts, or the named ones; --save stores
    /// the criterion run as a baseline, --compare fails on a median slower than that baseline
    /// by more than --threshold percent. Any benchmark that cannot be reported or compared is
    /// an error. The Python scripts run against release builds of the packages in a cached
    /// virtualenv of their own (the test requirements and the peers they compare with).
    Bench(bench::BenchArgs),
    /// Reports ratios from the last benchmark run without running anything.
    ///
    /// Fails, naming them, on groups with no estimates and benchmarks without a baseline.
    BenchReport,
    /// Runs `cargo package` on every publishable crate, in dependency order.
    Package {
        /// Also build each crate from its package alone.
        #[arg(long)]
        verify: bool,
    },
    /// Runs `cargo deny check` (licenses, advisories, bans, sources) per deny.toml.
    ///
    /// Installs cargo-deny into the cache directory when it is not on `PATH`; `--offline`
    /// checks without the network (advisories need it).
    Deny {
        /// `--offline`, then arguments for `cargo deny check`, e.g. the checks to run
        /// (`licenses bans`).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<String>,
    },
    /// Regenerates the golden fixtures.
    Fixtures {
        /// Where to write them.
        #[arg(long, value_name = "DIR", default_value_os_t = fixtures::workspace_root().join("fixtures"))]
        out: PathBuf,
    },
    /// Writes seed inputs derived from the fixtures into fuzz/corpus/<target>/.
    FuzzSeed {
        /// The fixtures to derive the seeds from.
        #[arg(long, value_name = "DIR", default_value_os_t = fixtures::workspace_root().join("fixtures"))]
        fixtures: PathBuf,
    },
    /// Runs cargo-fuzz on one, several or all targets, one after another.
    Fuzz {
        /// The targets to run (default: all).
        #[arg(value_name = "TARGET")]
        targets: Vec<String>,
        /// Seconds per target.
        #[arg(long, value_name = "N", default_value_t = 60)]
        seconds: u64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.task {
        Task::Test(args) => test::run(&args),
        Task::LintPython { build } => python::lint(&test::workspace_root(), build),
        Task::Bench(args) => bench::run(&args),
        Task::BenchReport => bench::report(),
        Task::Package { verify } => package::run(&test::workspace_root(), verify),
        Task::Deny { args } => deny::run(&args),
        Task::Fixtures { out } => fixtures::run(&out),
        Task::FuzzSeed { fixtures } => fuzz::seed(&fixtures),
        Task::Fuzz { targets, seconds } => fuzz::run(&targets, seconds),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("cargo-xtask").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `--help` on every task prints help (clap's `DisplayHelp`), not an error.
    #[test]
    fn every_task_answers_help() {
        let tasks = [
            "test",
            "lint-python",
            "bench",
            "bench-report",
            "package",
            "deny",
            "fixtures",
            "fuzz-seed",
            "fuzz",
        ];
        let names: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        assert_eq!(names, tasks);
        for task in tasks {
            for help in ["--help", "-h"] {
                let error = parse(&[task, help]).unwrap_err();
                assert_eq!(
                    error.kind(),
                    clap::error::ErrorKind::DisplayHelp,
                    "{task} {help}"
                );
            }
        }
        assert_eq!(
            parse(&["--help"]).unwrap_err().kind(),
            clap::error::ErrorKind::DisplayHelp
        );
        let help = Cli::command()
            .find_subcommand_mut("bench")
            .unwrap()
            .render_long_help()
            .to_string();
        for flag in ["--save", "--compare", "--threshold"] {
            assert!(help.contains(flag), "{help}");
        }
    }

    #[test]
    fn test_passes_its_arguments_through_to_cargo_test() {
        let Task::Test(args) =
            parse(&["test", "--no-s3", "-p", "dsrt-reader", "--", "--nocapture"])
                .unwrap()
                .task
        else {
            panic!("not the test task");
        };
        assert!(args.no_s3 && !args.python_only);
        assert_eq!(args.cargo_args, ["-p", "dsrt-reader", "--", "--nocapture"]);
        let Task::Test(args) = parse(&["test", "--python-only"]).unwrap().task else {
            panic!("not the test task");
        };
        assert!(args.python_only && args.cargo_args.is_empty());
    }

    #[test]
    fn flags_keep_their_meaning() {
        let Task::Bench(args) =
            parse(&["bench", "dsrt_read", "--save", "main", "--threshold", "2.5"])
                .unwrap()
                .task
        else {
            panic!("not the bench task");
        };
        assert_eq!(args.benches, ["dsrt_read"]);
        assert_eq!(args.save.as_deref(), Some("main"));
        assert!((args.threshold - 2.5).abs() < 1e-9);
        assert!(parse(&["bench", "--compare"]).is_err());
        assert!(parse(&["bench", "--bogus"]).is_err());
        assert!(parse(&["bench", "--threshold", "x"]).is_err());
        assert!(parse(&["bench", "--rust-only", "--python-only"]).is_err());
        assert!(parse(&["bench", "--python-only", "--save", "main"]).is_err());
        let Task::Bench(args) = parse(&["bench", "bench_read", "--python-only", "--s3"])
            .unwrap()
            .task
        else {
            panic!("not the bench task");
        };
        assert!(args.python_only && args.s3 && !args.rust_only);
        let Task::Fuzz { targets, seconds } =
            parse(&["fuzz", "mask", "--seconds", "5"]).unwrap().task
        else {
            panic!("not the fuzz task");
        };
        assert_eq!((targets, seconds), (vec!["mask".to_owned()], 5));
        let Task::Deny { args } = parse(&["deny", "licenses", "--hide-inclusion-graph"])
            .unwrap()
            .task
        else {
            panic!("not the deny task");
        };
        assert_eq!(args, ["licenses", "--hide-inclusion-graph"]);
        assert!(matches!(
            parse(&["package", "--verify"]).unwrap().task,
            Task::Package { verify: true }
        ));
        assert!(matches!(
            parse(&["lint-python", "--build"]).unwrap().task,
            Task::LintPython { build: true }
        ));
        assert!(parse(&["no-such-task"]).is_err());
    }
}
