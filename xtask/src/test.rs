//! `cargo xtask test`: the whole test suite with everything it needs started first.
//!
//! It starts the local S3-compatible server (`.ci/s3-server.sh`: moto on 127.0.0.1, installed
//! from PyPI when missing) so the Atlas S3 tests run instead of skipping, runs
//! `cargo test --workspace --locked` with the server's environment (the hardened
//! `atlas-array-format` is a workspace member, so its own tests run too), then the Python
//! packages' pytest suites against the same server (`python.rs`; `--python-only` runs only
//! those), and stops the server whatever happened. The whole suite also runs the downstream
//! crates (`tests/downstream`, `downstream.rs`) and packages every publishable crate
//! (`package.rs`). `--no-s3` runs the suite without it (the S3 tests then say they skip).

use std::path::Path;
use std::process::Command;

const BUCKET: &str = "atlas-ci";

/// Runs the suite; extra arguments go to `cargo test` after `--workspace --locked`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let no_s3 = args.iter().any(|a| a == "--no-s3");
    let python_only = args.iter().any(|a| a == "--python-only");
    let passthrough: Vec<&String> = args
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
    let mut result = if python_only {
        Ok(())
    } else {
        cargo_test(&root, &env, &passthrough)
    };
    // Only the whole suite checks the crates as another project sees them.
    if result.is_ok() && passthrough.is_empty() && !python_only {
        result = crate::downstream::check(&root).and_then(|()| crate::package::run(&root, false));
    }
    // The Python packages' pytest suites, against the same S3 server (see python.rs).
    if result.is_ok() && passthrough.is_empty() {
        result = crate::python::run(&root, &env);
    }
    if !no_s3 {
        // Stopping is best effort: the server dies with the session anyway.
        let _ = Command::new("bash")
            .arg(root.join(".ci/s3-server.sh"))
            .arg("stop")
            .arg(&state)
            .status();
    }
    let _ = std::fs::remove_dir_all(&state);
    result
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
fn start_s3(root: &Path, state: &Path) -> Result<Vec<(String, String)>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
