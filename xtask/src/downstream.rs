//! The downstream check: crates outside the workspace (`tests/downstream/*`, each its own
//! `[workspace]`, so none of our workspace settings applies) that depend on our crates by path
//! the way another project would. Each is run, and its dependency tree is checked.
//!
//! - `reader-only` depends on `dsrt-reader` alone and reads the golden v3 fixture: its tree
//!   must hold no Atlas crate, no tokio and no object_store.
//! - `facades` depends on `datasetrt` and `atlas-collections` and runs the README's library
//!   examples: its tree must hold the hardened `atlas-array-format` and not the registry's
//!   `array-format` (which a `[patch]` could only have fixed inside this workspace).

use std::path::{Path, PathBuf};
use std::process::Command;

struct Downstream {
    dir: &'static str,
    args: &'static [&'static str],
    required: &'static [&'static str],
    forbidden: &'static [&'static str],
}

const CRATES: &[Downstream] = &[
    Downstream {
        dir: "reader-only",
        args: &["fixtures/dsrt/v3"],
        required: &["dsrt-reader"],
        forbidden: &["atlas-", "tokio", "object_store", "array-format"],
    },
    Downstream {
        dir: "facades",
        args: &[],
        required: &["atlas-array-format", "datasetrt", "atlas-collections"],
        forbidden: &["array-format"],
    },
];

/// Builds, runs and checks every downstream crate.
pub(crate) fn check(root: &Path) -> Result<(), String> {
    for krate in CRATES {
        let dir = root.join("tests/downstream").join(krate.dir);
        seed_lock_file(root, &dir)?;
        run(root, &dir, krate)?;
        let packages = tree(root, &dir)?;
        check_tree(krate, &packages)?;
        println!("downstream {}: ran; dependency tree checked", krate.dir);
    }
    Ok(())
}

/// Starts from the workspace's lock file so the downstream build resolves the versions we
/// test and reuses what is already compiled in the shared target directory.
fn seed_lock_file(root: &Path, dir: &Path) -> Result<(), String> {
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
        .map(drop)
        .map_err(|e| format!("copying Cargo.lock into {}: {e}", dir.display()))
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), Into::into)
}

fn run(root: &Path, dir: &Path, krate: &Downstream) -> Result<(), String> {
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .arg("run")
        .arg("--quiet")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir(root))
        .arg("--")
        .args(krate.args)
        .status()
        .map_err(|e| format!("running downstream crate {}: {e}", krate.dir))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("downstream crate {} failed: {status}", krate.dir))
    }
}

/// The names of every package in the normal (non-dev) dependency tree.
fn tree(root: &Path, dir: &Path) -> Result<Vec<String>, String> {
    let output = Command::new(env!("CARGO"))
        .current_dir(root)
        .arg("tree")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .args(["-e", "normal", "--prefix", "none", "--format", "{p}"])
        .output()
        .map_err(|e| format!("running cargo tree in {}: {e}", dir.display()))?;
    if !output.status.success() {
        return Err(format!(
            "cargo tree in {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(package_names(&String::from_utf8_lossy(&output.stdout)))
}

fn package_names(tree: &str) -> Vec<String> {
    let mut names: Vec<String> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

fn check_tree(krate: &Downstream, packages: &[String]) -> Result<(), String> {
    for required in krate.required {
        if !packages.iter().any(|p| p == required) {
            return Err(format!(
                "downstream {}: `{required}` is missing from its dependency tree",
                krate.dir
            ));
        }
    }
    for forbidden in krate.forbidden {
        let hit = packages.iter().find(|p| {
            if forbidden.ends_with('-') {
                p.starts_with(forbidden)
            } else {
                p.as_str() == *forbidden
            }
        });
        if let Some(hit) = hit {
            return Err(format!(
                "downstream {}: its dependency tree holds `{hit}`, which it must not",
                krate.dir
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const READER: &Downstream = &CRATES[0];
    const FACADES: &Downstream = &CRATES[1];

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names_come_from_the_first_column_once_each() {
        let tree = "dsrt-reader v0.1.0 (/x)\nlz4_flex v0.11.3\ndsrt-reader v0.1.0 (/x) (*)\n";
        assert_eq!(package_names(tree), names(&["dsrt-reader", "lz4_flex"]));
    }

    #[test]
    fn an_atlas_crate_or_tokio_under_the_reader_fails() {
        assert!(check_tree(READER, &names(&["dsrt-reader", "memmap2"])).is_ok());
        let err = check_tree(READER, &names(&["dsrt-reader", "atlas-footer"])).unwrap_err();
        assert!(err.contains("atlas-footer"), "{err}");
        assert!(check_tree(READER, &names(&["dsrt-reader", "tokio"])).is_err());
    }

    #[test]
    fn the_registry_array_format_under_the_facades_fails() {
        let good = names(&["atlas-array-format", "atlas-collections", "datasetrt"]);
        assert!(check_tree(FACADES, &good).is_ok());
        let mut bad = good.clone();
        bad.push("array-format".into());
        let err = check_tree(FACADES, &bad).unwrap_err();
        assert!(err.contains("`array-format`"), "{err}");
        let err = check_tree(FACADES, &names(&["atlas-collections", "datasetrt"])).unwrap_err();
        assert!(err.contains("missing"), "{err}");
    }
}
