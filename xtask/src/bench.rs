//! Benchmarks as ratios and as regressions.
//!
//! Every criterion group carries a function whose name starts with `baseline`; the report shows
//! each other function's throughput over it. `--save NAME` stores the run as a criterion
//! baseline; `--compare NAME --threshold PCT` reruns, prints each function's change against
//! NAME and fails when any median is slower by more than PCT percent.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What `cargo xtask bench` was asked to do.
#[derive(Debug, Default)]
struct BenchArgs {
    benches: Vec<String>,
    save: Option<String>,
    compare: Option<String>,
    threshold: f64,
}

fn parse(args: &[String]) -> Result<BenchArgs, String> {
    let mut parsed = BenchArgs {
        threshold: 5.0,
        ..BenchArgs::default()
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| {
            args.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match arg.as_str() {
            "--save" => parsed.save = Some(value("--save")?),
            "--compare" => parsed.compare = Some(value("--compare")?),
            "--threshold" => {
                let text = value("--threshold")?;
                parsed.threshold = text
                    .parse()
                    .map_err(|_| format!("--threshold {text}: not a number"))?;
            }
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}")),
            bench => parsed.benches.push(bench.to_owned()),
        }
    }
    Ok(parsed)
}

/// Runs `cargo bench` (optionally only the named bench targets), then reports.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let args = parse(args)?;
    let mut command = Command::new(env!("CARGO"));
    command.args(["bench", "-p", "dsrt-atlas-benches"]);
    for bench in &args.benches {
        command.args(["--bench", bench]);
    }
    command.args(["--", "--noplot"]);
    if let Some(name) = &args.save {
        command.args(["--save-baseline", name]);
    }
    if let Some(name) = &args.compare {
        command.args(["--baseline", name]);
    }
    let status = command
        .status()
        .map_err(|e| format!("running cargo bench: {e}"))?;
    if !status.success() {
        return Err(format!("cargo bench failed: {status}"));
    }
    report()?;
    match &args.compare {
        Some(name) => compare(name, args.threshold),
        None => Ok(()),
    }
}

/// One measured function: its group, name and directory.
struct Measured {
    group: String,
    name: String,
    dir: PathBuf,
}

fn measured() -> Result<Vec<Measured>, String> {
    let mut out = Vec::new();
    for group in list_dirs(&criterion_dir())? {
        for function in list_dirs(&group)? {
            out.push(Measured {
                group: file_name(&group),
                name: file_name(&function),
                dir: function,
            });
        }
    }
    out.sort_by(|a, b| (&a.group, &a.name).cmp(&(&b.group, &b.name)));
    Ok(out)
}

/// Prints one table row per benchmark function with its ratio to its group's baseline.
pub(crate) fn report() -> Result<(), String> {
    let all = measured()?;
    println!("| group | function | median | ratio to baseline (throughput) |");
    println!("|---|---|---|---|");
    for m in &all {
        let Some(median) = median_ns(&m.dir, "new") else {
            continue;
        };
        let baseline = all
            .iter()
            .find(|b| b.group == m.group && b.name.starts_with("baseline"))
            .and_then(|b| median_ns(&b.dir, "new"));
        let ratio = baseline.map_or("-".to_owned(), |b| format!("{:.2}", b / median));
        println!(
            "| {} | {} | {} | {} |",
            m.group,
            m.name,
            human_ns(median),
            ratio
        );
    }
    Ok(())
}

/// Prints each function's change against the saved baseline `name`; fails past `threshold`%.
fn compare(name: &str, threshold: f64) -> Result<(), String> {
    println!();
    println!("| group | function | {name} | now | change |");
    println!("|---|---|---|---|---|");
    let mut regressions = Vec::new();
    for m in measured()? {
        let (Some(before), Some(now)) = (median_ns(&m.dir, name), median_ns(&m.dir, "new")) else {
            continue;
        };
        let change = (now / before - 1.0) * 100.0;
        let flag = if change > threshold {
            " REGRESSION"
        } else {
            ""
        };
        println!(
            "| {} | {} | {} | {} | {change:+.1}%{flag} |",
            m.group,
            m.name,
            human_ns(before),
            human_ns(now)
        );
        if change > threshold {
            regressions.push(format!("{}/{} {change:+.1}%", m.group, m.name));
        }
    }
    if regressions.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} regression(s) beyond {threshold}%: {}",
            regressions.len(),
            regressions.join(", ")
        ))
    }
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

fn median_ns(function: &Path, run: &str) -> Option<f64> {
    let text = std::fs::read_to_string(function.join(run).join("estimates.json")).ok()?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flags_and_bench_names() {
        let args: Vec<String> = ["--save", "main", "dsrt_read", "--threshold", "2.5"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let parsed = parse(&args).unwrap();
        assert_eq!(parsed.save.as_deref(), Some("main"));
        assert_eq!(parsed.benches, vec!["dsrt_read"]);
        assert!((parsed.threshold - 2.5).abs() < 1e-9);
        assert!(parse(&["--compare".to_string()]).is_err());
        assert!(parse(&["--bogus".to_string()]).is_err());
    }
}
