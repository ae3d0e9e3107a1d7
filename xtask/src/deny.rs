//! `cargo xtask deny`: license, advisory, ban and source checks with cargo-deny, per `deny.toml`.
//!
//! cargo-deny is an external tool; when it is not installed the task says how to get it and
//! fails, rather than passing without having checked anything.

use std::process::Command;

/// Runs `cargo deny check` with any extra arguments.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let installed = Command::new(env!("CARGO"))
        .args(["deny", "--version"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !installed {
        return Err(
            "cargo-deny is not installed: `cargo install --locked cargo-deny`, then rerun".into(),
        );
    }
    let status = Command::new(env!("CARGO"))
        .args(["deny", "check"])
        .args(args)
        .status()
        .map_err(|e| format!("running cargo deny: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo deny check failed: {status}"))
    }
}
