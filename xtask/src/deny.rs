//! `cargo xtask deny`: license, advisory, ban and source checks with cargo-deny, per `deny.toml`.
//!
//! cargo-deny is an external tool: the one on `PATH` (as a cargo subcommand), else the one this
//! task installed into `<cache>/datasetrt-atlas/tools` (`cargo install --locked`, once, a few
//! minutes), so that CI checks rather than passes without having checked anything.
//!
//! `--offline` checks without the network: licenses, bans and sources need none; the
//! advisory database is fetched from github.com, so `advisories` needs the network. They do
//! need every package of the lock file in cargo's cache, every platform's (cargo-deny reads the
//! whole graph), which a build fetches only for its own: `cargo fetch` is tried first, and where
//! no registry is reachable the check runs on what the cache holds.

use std::path::PathBuf;
use std::process::Command;

/// The cargo-deny version installed when none is found.
const CARGO_DENY_VERSION: &str = "0.20.2";

/// Runs `cargo deny [--offline] check` with the given checks and options.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let deny = cargo_deny()?;
    let (offline, rest): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|arg| *arg == "--offline");
    let mut command = Command::new(&deny);
    command.arg("deny");
    if !offline.is_empty() {
        // Best effort: without a registry, cargo-deny says which package is missing.
        let _ = Command::new(env!("CARGO"))
            .args(["fetch", "--locked", "--quiet"])
            .status();
        command.arg("--offline");
    }
    let status = command
        .arg("check")
        .args(rest)
        .status()
        .map_err(|e| format!("running {}: {e}", deny.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo deny check failed: {status}"))
    }
}

/// The cargo-deny binary: on `PATH`, else in the task's tools directory, installed if missing.
fn cargo_deny() -> Result<PathBuf, String> {
    let works = |binary: &PathBuf| {
        Command::new(binary)
            .args(["deny", "--version"])
            .output()
            .is_ok_and(|out| out.status.success())
    };
    let on_path = PathBuf::from("cargo-deny");
    if works(&on_path) {
        return Ok(on_path);
    }
    let tools = crate::python::cache_root()?.join("tools");
    let installed = tools.join("bin/cargo-deny");
    if works(&installed) {
        return Ok(installed);
    }
    eprintln!(
        "== deny: installing cargo-deny {CARGO_DENY_VERSION} into {}",
        tools.display()
    );
    let status = Command::new(env!("CARGO"))
        .args([
            "install",
            "--locked",
            "--quiet",
            "--version",
            CARGO_DENY_VERSION,
            "--root",
        ])
        .arg(&tools)
        .arg("cargo-deny")
        .env("CARGO_TARGET_DIR", tools.join("build"))
        .status()
        .map_err(|e| format!("running cargo install cargo-deny: {e}"))?;
    let _ = std::fs::remove_dir_all(tools.join("build"));
    if status.success() && works(&installed) {
        Ok(installed)
    } else {
        Err(format!("cargo install cargo-deny failed ({status}); install it by hand: `cargo install --locked cargo-deny`"))
    }
}
