//! Benchmarks as ratios: every criterion group carries a function whose name starts with
//! `baseline`, and each other function is reported as its throughput over the baseline's.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `cargo bench` (optionally only the named bench targets), then prints the report.
pub(crate) fn run(benches: &[String]) -> Result<(), String> {
    let mut command = Command::new(env!("CARGO"));
    command.args(["bench", "-p", "benchmarks"]);
    for bench in benches {
        command.args(["--bench", bench]);
    }
    command.args(["--", "--noplot"]);
    let status = command
        .status()
        .map_err(|e| format!("running cargo bench: {e}"))?;
    if !status.success() {
        return Err(format!("cargo bench failed: {status}"));
    }
    report()
}

/// Prints one table row per benchmark function with its ratio to its group's baseline.
pub(crate) fn report() -> Result<(), String> {
    let root = criterion_dir();
    let mut groups = list_dirs(&root)?;
    groups.sort();
    println!("| group | function | median | ratio to baseline (throughput) |");
    println!("|---|---|---|---|");
    for group in groups {
        let mut functions: Vec<(String, f64)> = Vec::new();
        for function in list_dirs(&group)? {
            if let Some(median) = median_ns(&function) {
                functions.push((file_name(&function), median));
            }
        }
        functions.sort_by(|a, b| a.0.cmp(&b.0));
        let baseline = functions
            .iter()
            .find(|(name, _)| name.starts_with("baseline"))
            .map(|(_, m)| *m);
        for (name, median) in &functions {
            let ratio = baseline.map_or("-".to_owned(), |b| format!("{:.2}", b / median));
            println!(
                "| {} | {} | {} | {} |",
                file_name(&group),
                name,
                human_ns(*median),
                ratio
            );
        }
    }
    Ok(())
}

fn criterion_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace_root().join("target"), PathBuf::from);
    target.join("criterion")
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn list_dirs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e} (run `cargo xtask bench` first)", dir.display()))?;
    Ok(entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && file_name(p) != "report")
        .collect())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn median_ns(function: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(function.join("new/estimates.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json["median"]["point_estimate"].as_f64()
}

fn human_ns(ns: f64) -> String {
    match ns {
        n if n >= 1e9 => format!("{:.3} s", n / 1e9),
        n if n >= 1e6 => format!("{:.3} ms", n / 1e6),
        n if n >= 1e3 => format!("{:.3} µs", n / 1e3),
        n => format!("{n:.0} ns"),
    }
}
