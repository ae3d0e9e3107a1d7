//! `cargo xtask package`: every publishable crate packages as it would for a registry.
//!
//! Runs `cargo package --workspace` over every package whose manifest allows publishing (tools
//! say `publish = false` and are left out), which packages them in dependency order against a
//! local overlay of the crates packaged before. That checks what a registry checks: names,
//! versions on every path dependency, the metadata fields, and the file list. `--verify` also
//! builds each crate from its packaged sources alone (slow: every crate compiles again).

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Packages every publishable crate; `--verify` builds each from its package too.
pub(crate) fn run(root: &Path, verify: bool) -> Result<(), String> {
    let excluded = unpublishable(root)?;
    let mut command = Command::new(env!("CARGO"));
    command
        .current_dir(root)
        .args(["package", "--workspace", "--allow-dirty", "--locked"]);
    if !verify {
        command.arg("--no-verify");
    }
    for name in &excluded {
        command.args(["--exclude", name]);
    }
    let status = command
        .status()
        .map_err(|e| format!("running cargo package: {e}"))?;
    if status.success() {
        println!(
            "package: every publishable crate packaged ({} tools left out: {})",
            excluded.len(),
            excluded.join(", ")
        );
        Ok(())
    } else {
        Err(format!("cargo package failed: {status}"))
    }
}

/// Workspace packages whose manifests say `publish = false`.
fn unpublishable(root: &Path) -> Result<Vec<String>, String> {
    let output = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["metadata", "--no-deps", "--format-version", "1", "--locked"])
        .output()
        .map_err(|e| format!("running cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let metadata: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("reading cargo metadata: {e}"))?;
    Ok(unpublishable_in(&metadata))
}

fn unpublishable_in(metadata: &Value) -> Vec<String> {
    let packages = metadata["packages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    packages
        .iter()
        // `publish = false` appears as an empty registry list; absent means any registry.
        .filter(|p| p["publish"].as_array().is_some_and(Vec::is_empty))
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_packages_that_say_publish_false_are_left_out() {
        let metadata = serde_json::json!({"packages": [
            {"name": "dsrt-reader", "publish": null},
            {"name": "xtask", "publish": []},
            {"name": "internal", "publish": ["my-registry"]},
        ]});
        assert_eq!(unpublishable_in(&metadata), vec!["xtask".to_owned()]);
    }
}
