//! What the CLI's integration tests share: running the built `atlas` binary.
#![allow(dead_code)] // each test binary uses part of it

use std::process::{Command, Output};

/// Runs the built `atlas` with `args` and waits for it.
pub(crate) fn atlas(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_atlas"))
        .args(args)
        .output()
        .unwrap()
}

/// The standard output of a run that must have succeeded (its stderr in the failure).
pub(crate) fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}
