//! The architecture's invariants that the tree can check (`docs/ARCHITECTURE.md`, "Invariants"):
//! the two library stacks never depend on each other, library crates never print (they report
//! through `tracing`), and no library crate builds a tokio runtime but `object-access`. Clippy
//! enforces the last two line by line (`print_stdout`/`print_stderr` in the workspace lints,
//! `disallowed-methods` in `clippy.toml`); these tests keep the escape hatches closed.
#![allow(clippy::unwrap_used)] // Test code.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Crates that own their output or their runtime: the CLIs and the test, bench and fixture
/// tools. Every other workspace crate is a library (the Python bindings included).
const TOOLS: &[&str] = &[
    "xtask",
    "dsrt-cli",
    "atlas-collections-cli",
    "dsrt-atlas-benches",
    "dsrt-atlas-fixtures",
    "dsrt-atlas-fuzz-targets",
    "dsrt-atlas-link-shaper",
    "dsrt-atlas-test-runner",
];

/// One workspace package: its name, directory and every dependency it names (any kind).
struct Package {
    name: String,
    dir: PathBuf,
    dependencies: Vec<String>,
}

/// The workspace's packages, as `cargo metadata` reads the manifests.
fn packages() -> Vec<Package> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(root())
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    packages
        .iter()
        .map(|p| Package {
            name: p["name"].as_str().unwrap().to_owned(),
            dir: Path::new(p["manifest_path"].as_str().unwrap())
                .parent()
                .unwrap()
                .to_path_buf(),
            dependencies: (p["dependencies"].as_array().unwrap().iter())
                .map(|d| d["name"].as_str().unwrap().to_owned())
                .collect(),
        })
        .collect()
}

/// The stack a crate belongs to: DatasetRT (`dsrt-*`, `datasetrt`), Atlas (`atlas-*`), or
/// neither (the shared bottom layer, `py-support`, and the `dsrt-atlas-*` tools of both).
fn stack(name: &str) -> Option<&'static str> {
    if name.starts_with("dsrt-atlas-") {
        None
    } else if name.starts_with("dsrt-") || name == "datasetrt" {
        Some("DatasetRT")
    } else if name.starts_with("atlas-") {
        Some("Atlas")
    } else {
        None
    }
}

fn is_library(package: &Package) -> bool {
    !TOOLS.contains(&package.name.as_str())
}

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code lines (comments dropped) of every library crate's `src/`, as (file, line
/// number, line).
fn library_source_lines() -> Vec<(PathBuf, usize, String)> {
    let mut lines = Vec::new();
    for package in packages().iter().filter(|p| is_library(p)) {
        let mut files = Vec::new();
        rust_files(&package.dir.join("src"), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if !code.starts_with("//") {
                    lines.push((file.clone(), n + 1, line.to_owned()));
                }
            }
        }
    }
    lines
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn the_datasetrt_and_atlas_stacks_never_depend_on_each_other() {
    let mut crossings = Vec::new();
    for package in packages() {
        let Some(own) = stack(&package.name) else {
            continue;
        };
        for dependency in &package.dependencies {
            if stack(dependency).is_some_and(|other| other != own) {
                crossings.push(format!("{} ({own}) -> {dependency}", package.name));
            }
        }
    }
    assert!(
        crossings.is_empty(),
        "a library stack depends on the other (they meet only in the bottom layer and in \
         tools): {crossings:?}"
    );
}

#[test]
fn library_crates_never_print() {
    let found: Vec<String> = library_source_lines()
        .into_iter()
        .filter(|(_, _, line)| {
            ["println!", "eprintln!", "print!", "eprint!", "dbg!"]
                .iter()
                .any(|m| line.contains(m))
                || line.contains("clippy::print_stdout")
                || line.contains("clippy::print_stderr")
        })
        .map(|(file, n, line)| format!("{}:{n}: {}", relative(&file), line.trim()))
        .collect();
    assert!(
        found.is_empty(),
        "a library crate prints or allows printing (libraries report through `tracing`; only \
         the CLIs and tools own their output): {found:#?}"
    );
}

/// `atlas-array-format` is array-format 0.15.0 with a hardened reader and keeps that crate's
/// own lint settings; the text checks here cover its sources.
const OWN_LINTS: &[&str] = &["atlas-array-format"];

#[test]
fn every_library_crate_has_the_workspace_lints() {
    let missing: Vec<String> = (packages().into_iter())
        .filter(|p| is_library(p) && !OWN_LINTS.contains(&p.name.as_str()))
        .filter(|p| {
            let manifest = std::fs::read_to_string(p.dir.join("Cargo.toml")).unwrap();
            !manifest.contains("[lints]\nworkspace = true")
        })
        .map(|p| p.name)
        .collect();
    assert!(
        missing.is_empty(),
        "crates without `[lints] workspace = true` (the print and runtime lints): {missing:?}"
    );
}

#[test]
fn no_library_crate_builds_a_tokio_runtime_but_object_access() {
    // Clippy refuses the builders everywhere (`clippy.toml`); a library may allow them only in
    // its unit tests (`cfg_attr(test, ...)`), and object-access at its one runtime.
    let found: Vec<String> = library_source_lines()
        .into_iter()
        .filter(|(file, _, line)| {
            let allowed_here = file.ends_with("crates/object-access/src/runtime.rs")
                || line.contains("cfg_attr(test, allow(clippy::disallowed_methods))");
            !allowed_here
                && (line.contains("clippy::disallowed_methods")
                    || line.contains("tokio::main")
                    || line.contains("Runtime::new("))
        })
        .map(|(file, n, line)| format!("{}:{n}: {}", relative(&file), line.trim()))
        .collect();
    assert!(
        found.is_empty(),
        "a library crate builds a tokio runtime of its own (the process's one runtime is \
         object_access::runtime()): {found:#?}"
    );
}
