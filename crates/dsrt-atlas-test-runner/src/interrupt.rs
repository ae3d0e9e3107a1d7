//! Re-running this test binary under `strace` with its `flock` calls interrupted.

use std::path::Path;
use std::process::Command;

/// What a child run under [`run_with_flocks_interrupted`] did.
#[derive(Debug)]
pub struct InterruptedRun {
    /// Whether the child exited successfully.
    pub succeeded: bool,
    /// The child's standard error.
    pub stderr: String,
    /// How many `flock` calls strace failed with `EINTR`.
    pub injected: usize,
    /// How many `flock` calls the child made in all.
    pub calls: usize,
}

/// Runs this test binary again with `child_env=role` (and `envs`) under `strace`, which fails
/// every other `flock` call of each of the child's threads (the first, third, ...) with
/// `EINTR`, as a signal delivered to a thread blocked in `flock` makes the call return: a
/// caller that retries once gets every lock, one that does not fails on its first. The child must do its role's work and
/// exit; the caller checks what it did. Panics when `strace` cannot run: the test exists to
/// prove the retry, and passing without it would prove nothing.
pub fn run_with_flocks_interrupted(
    child_env: &str,
    role: &str,
    envs: &[(&str, &Path)],
) -> InterruptedRun {
    let log = std::env::temp_dir().join(format!(
        "flock-eintr-{}-{}.strace",
        std::process::id(),
        role
    ));
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = Command::new("strace");
    command
        .args(["-f", "-qq", "-e", "trace=flock", "-e"])
        .arg("inject=flock:error=EINTR:when=1+2")
        .arg("-o")
        .arg(&log)
        .arg(exe)
        .env(child_env, role);
    for (key, value) in envs {
        command.env(key, value);
    }
    let output = command.output().unwrap_or_else(|e| {
        panic!("cannot run strace ({e}): install it (Debian: apt-get install strace)")
    });
    let trace = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !trace.is_empty() || output.status.success(),
        "strace could not trace the child (is ptrace allowed?): {stderr}"
    );
    InterruptedRun {
        succeeded: output.status.success(),
        stderr,
        injected: trace.lines().filter(|l| l.contains("(INJECTED)")).count(),
        calls: trace.lines().filter(|l| l.contains("flock(")).count(),
    }
}
