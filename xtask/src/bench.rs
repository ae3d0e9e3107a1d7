//! Benchmarks as ratios and as regressions.
//!
//! Every criterion group carries a function whose name starts with `baseline`; the report shows
//! each other function's throughput over it. `--save NAME` stores the run as a criterion
//! baseline; `--compare NAME --threshold PCT` reruns, prints each function's change against
//! NAME and fails when any median is slower by more than PCT percent. The Python benchmark
//! scripts run after the criterion ones (`bench_python.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bench_python::{self, PythonBench};

/// What `cargo xtask bench` was asked to do.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// Benchmarks to run (default: all): criterion targets (`dsrt_read`) and Python scripts
    /// (`bench_read`), by name.
    #[arg(value_name = "BENCH")]
    pub(crate) benches: Vec<String>,
    /// Only the criterion benchmarks.
    #[arg(long, conflicts_with = "python_only")]
    pub(crate) rust_only: bool,
    /// Only the Python benchmark scripts.
    #[arg(long, conflicts_with_all = ["save", "compare"])]
    pub(crate) python_only: bool,
    /// Starts the local S3 test server and runs the Python scripts that can on it too.
    #[arg(long)]
    pub(crate) s3: bool,
    /// Stores this run as the criterion baseline NAME.
    #[arg(long, value_name = "NAME")]
    pub(crate) save: Option<String>,
    /// Compares this run with the saved baseline NAME and fails on a regression.
    #[arg(long, value_name = "NAME")]
    pub(crate) compare: Option<String>,
    /// With --compare: the largest allowed slowdown of a median, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub(crate) threshold: f64,
}

/// The criterion targets and Python scripts `names` stand for; an unknown name is an error
/// that lists the known ones.
fn split_names(
    root: &Path,
    names: &[String],
) -> Result<(Vec<String>, Vec<&'static PythonBench>), String> {
    let mut criterion = Vec::new();
    let mut python = Vec::new();
    for name in names {
        if let Some(bench) = bench_python::find(name) {
            python.push(bench);
        } else if root
            .join("benches/benches")
            .join(format!("{name}.rs"))
            .is_file()
        {
            criterion.push(name.clone());
        } else {
            let known: Vec<&str> = bench_python::PYTHON_BENCHES
                .iter()
                .map(|b| b.name)
                .collect();
            return Err(format!(
                "no benchmark {name:?}: the criterion targets are the files of benches/benches/, \
                 the Python ones {}",
                known.join(", ")
            ));
        }
    }
    Ok((criterion, python))
}

/// Runs the criterion benchmarks (all, or the named ones) and reports them, then the Python
/// scripts (all, or the named ones); both halves run before either fails the task.
pub(crate) fn run(args: &BenchArgs) -> Result<(), String> {
    let root = crate::test::workspace_root();
    let (criterion, python) = split_names(&root, &args.benches)?;
    // Naming only benchmarks of one kind runs only that kind.
    let run_rust = !args.python_only && (args.benches.is_empty() || !criterion.is_empty());
    let run_python = !args.rust_only && (args.benches.is_empty() || !python.is_empty());
    let mut failures = Vec::new();
    if run_rust {
        if let Err(e) = run_criterion(args, &criterion) {
            failures.push(e);
        }
    }
    if run_python {
        if let Err(e) = bench_python::run(&root, &python, args.s3) {
            failures.push(e);
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// Runs `cargo bench` (optionally only the named bench targets), then reports.
fn run_criterion(args: &BenchArgs, benches: &[String]) -> Result<(), String> {
    let mut command = Command::new(env!("CARGO"));
    command.args(["bench", "-p", "dsrt-atlas-benches"]);
    for bench in benches {
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
    // Both tables are printed before either can fail the run.
    let reported = report();
    let compared = match &args.compare {
        Some(name) => compare(name, args.threshold),
        None => Ok(()),
    };
    match (reported, compared) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
        (Err(a), Err(b)) => Err(format!("{a}; {b}")),
    }
}

/// One measured benchmark: its group, its id inside the group and its directory.
///
/// Criterion writes `<group>/<function>/new/estimates.json` for `bench_function` and
/// `<group>/<function>/<parameter>/new/estimates.json` for `BenchmarkId::new(function,
/// parameter)`; `name` is the path below the group (`cache_open/10000`).
#[derive(Debug)]
struct Measured {
    group: String,
    name: String,
    dir: PathBuf,
}

impl Measured {
    /// The function part of the id (`cache_open` of `cache_open/10000`).
    fn function(&self) -> &str {
        self.name.split('/').next().unwrap_or(&self.name)
    }

    /// The parameter part of the id (`10000` of `cache_open/10000`; empty without one).
    fn parameter(&self) -> &str {
        self.name.split_once('/').map_or("", |(_, p)| p)
    }

    fn is_baseline(&self) -> bool {
        self.function().starts_with("baseline")
    }
}

/// Every benchmark under `root` (a criterion directory), sorted, and every group with no
/// benchmark estimates at all (named in the error).
fn measured(root: &Path) -> Result<Vec<Measured>, String> {
    let mut out = Vec::new();
    let mut empty = Vec::new();
    for group in list_dirs(root)? {
        let before = out.len();
        collect(&group, &file_name(&group), "", &mut out)?;
        if out.len() == before {
            empty.push(file_name(&group));
        }
    }
    if !empty.is_empty() {
        empty.sort();
        return Err(format!(
            "no benchmark estimates in group(s) {} under {}",
            empty.join(", "),
            root.display()
        ));
    }
    out.sort_by(|a, b| (&a.group, &a.name).cmp(&(&b.group, &b.name)));
    Ok(out)
}

/// Finds the benchmark directories below `dir`: a directory is one when a run directory in it
/// (`new`, `base`, a saved baseline, `change`) holds an `estimates.json`; otherwise its
/// subdirectories are searched (one level per id component).
fn collect(dir: &Path, group: &str, prefix: &str, out: &mut Vec<Measured>) -> Result<(), String> {
    let children = list_dirs(dir)?;
    if children.iter().any(|c| c.join("estimates.json").is_file()) {
        if !prefix.is_empty() {
            out.push(Measured {
                group: group.to_owned(),
                name: prefix.to_owned(),
                dir: dir.to_path_buf(),
            });
        }
        return Ok(());
    }
    for child in children {
        let name = file_name(&child);
        let id = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        collect(&child, group, &id, out)?;
    }
    Ok(())
}

/// Prints one table row per benchmark with its ratio to its group's baseline (the function
/// whose name starts with `baseline`, with the same parameter).
pub(crate) fn report() -> Result<(), String> {
    let (table, problems) = report_table(&criterion_dir())?;
    print!("{table}");
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// The ratio table of the criterion directory `root`, and every benchmark that has no
/// estimate or no baseline to divide by.
fn report_table(root: &Path) -> Result<(String, Vec<String>), String> {
    let all = measured(root)?;
    let mut table = String::from(
        "| group | function | median | ratio to baseline (throughput) |\n|---|---|---|---|\n",
    );
    let mut problems = Vec::new();
    for m in &all {
        let Some(median) = median_ns(&m.dir, "new") else {
            problems.push(format!(
                "{}/{}: no estimate of the last run (new/estimates.json)",
                m.group, m.name
            ));
            continue;
        };
        let baseline = all
            .iter()
            .find(|b| b.group == m.group && b.is_baseline() && b.parameter() == m.parameter());
        let ratio = match baseline.map(|b| (b, median_ns(&b.dir, "new"))) {
            Some((_, Some(b))) => format!("{:.2}", b / median),
            Some((b, None)) => {
                problems.push(format!(
                    "{}/{}: its baseline {} has no estimate",
                    m.group, m.name, b.name
                ));
                "-".to_owned()
            }
            None => {
                problems.push(format!(
                    "{}/{}: no baseline function (baseline*{}) in the group to compute a ratio",
                    m.group,
                    m.name,
                    if m.parameter().is_empty() {
                        String::new()
                    } else {
                        format!("/{}", m.parameter())
                    }
                ));
                "-".to_owned()
            }
        };
        table.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            m.group,
            m.name,
            human_ns(median),
            ratio
        ));
    }
    Ok((table, problems))
}

/// Prints each function's change against the saved baseline `name`; fails past `threshold`%.
fn compare(name: &str, threshold: f64) -> Result<(), String> {
    let (table, problems) = compare_table(&criterion_dir(), name, threshold)?;
    println!();
    print!("{table}");
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// The change table against the saved baseline `name`, and the problems: every regression
/// beyond `threshold` percent, and every benchmark missing from the baseline or the new run.
fn compare_table(root: &Path, name: &str, threshold: f64) -> Result<(String, Vec<String>), String> {
    let mut table =
        format!("| group | function | {name} | now | change |\n|---|---|---|---|---|\n");
    let mut regressions = Vec::new();
    let mut missing = Vec::new();
    for m in measured(root)? {
        let (before, now) = (median_ns(&m.dir, name), median_ns(&m.dir, "new"));
        let (Some(before), Some(now)) = (before, now) else {
            let which = if before.is_none() {
                format!("the saved baseline {name}")
            } else {
                "the last run".to_owned()
            };
            missing.push(format!("{}/{}: no estimate in {which}", m.group, m.name));
            continue;
        };
        let change = (now / before - 1.0) * 100.0;
        let flag = if change > threshold {
            " REGRESSION"
        } else {
            ""
        };
        table.push_str(&format!(
            "| {} | {} | {} | {} | {change:+.1}%{flag} |\n",
            m.group,
            m.name,
            human_ns(before),
            human_ns(now)
        ));
        if change > threshold {
            regressions.push(format!("{}/{} {change:+.1}%", m.group, m.name));
        }
    }
    let mut problems = Vec::new();
    if !regressions.is_empty() {
        problems.push(format!(
            "{} regression(s) beyond {threshold}%: {}",
            regressions.len(),
            regressions.join(", ")
        ));
    }
    problems.extend(missing);
    Ok((table, problems))
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

    /// A criterion directory tree in a fresh temporary directory, removed on drop.
    struct Tree(PathBuf);

    impl Tree {
        fn new(test: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("xtask-bench-{test}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Tree(dir)
        }

        /// Writes `<id>/<run>/estimates.json` with the given median, as criterion does.
        fn estimate(&self, id: &str, run: &str, median_ns: f64) -> &Self {
            let dir = self.0.join(id).join(run);
            std::fs::create_dir_all(&dir).unwrap();
            let json = format!(
                "{{\"mean\":{{\"point_estimate\":{median_ns}}},\"median\":{{\"point_estimate\":{median_ns}}}}}"
            );
            std::fs::write(dir.join("estimates.json"), json).unwrap();
            std::fs::create_dir_all(self.0.join(id).join("report")).unwrap();
            self
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// The layout criterion writes: plain functions, parameterised ones one level deeper, and
    /// `report` directories at every level.
    fn criterion_tree(test: &str) -> Tree {
        let tree = Tree::new(test);
        tree.estimate("dsrt_random_read/baseline_pread", "new", 100.0)
            .estimate("dsrt_random_read/cache_read", "new", 200.0)
            .estimate(
                "dsrt_open/baseline_read_and_decode_index/10000",
                "new",
                50.0,
            )
            .estimate("dsrt_open/cache_open/10000", "new", 100.0)
            .estimate(
                "dsrt_open/baseline_read_and_decode_index/100000",
                "new",
                400.0,
            )
            .estimate("dsrt_open/cache_open/100000", "new", 100.0);
        std::fs::create_dir_all(tree.0.join("report")).unwrap();
        std::fs::create_dir_all(tree.0.join("dsrt_open/report")).unwrap();
        tree
    }

    #[test]
    fn parameterised_benchmarks_are_reported_against_the_baseline_of_their_parameter() {
        let tree = criterion_tree("param");
        let (table, problems) = report_table(&tree.0).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert!(
            table.contains("| dsrt_open | cache_open/10000 | 100 ns | 0.50 |"),
            "{table}"
        );
        assert!(
            table.contains("| dsrt_open | cache_open/100000 | 100 ns | 4.00 |"),
            "{table}"
        );
        assert!(
            table.contains("| dsrt_open | baseline_read_and_decode_index/10000 | 50 ns | 1.00 |"),
            "{table}"
        );
        assert!(
            table.contains("| dsrt_random_read | cache_read | 200 ns | 0.50 |"),
            "{table}"
        );
        assert_eq!(table.lines().count(), 2 + 6);
    }

    #[test]
    fn a_regression_of_a_parameterised_benchmark_fails_the_compare() {
        let tree = criterion_tree("compare");
        tree.estimate("dsrt_random_read/baseline_pread", "main", 100.0)
            .estimate("dsrt_random_read/cache_read", "main", 200.0)
            .estimate(
                "dsrt_open/baseline_read_and_decode_index/10000",
                "main",
                50.0,
            )
            .estimate("dsrt_open/cache_open/10000", "main", 100.0)
            .estimate(
                "dsrt_open/baseline_read_and_decode_index/100000",
                "main",
                400.0,
            )
            // 100 ns now against 80 ns saved: 25 % slower.
            .estimate("dsrt_open/cache_open/100000", "main", 80.0);
        let (table, problems) = compare_table(&tree.0, "main", 5.0).unwrap();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("dsrt_open/cache_open/100000 +25.0%"),
            "{problems:?}"
        );
        assert!(table.contains("+25.0% REGRESSION"), "{table}");
        assert_eq!(table.lines().count(), 2 + 6);
    }

    #[test]
    fn a_benchmark_missing_from_the_saved_baseline_is_an_error_naming_it() {
        let tree = criterion_tree("missing");
        tree.estimate("dsrt_random_read/baseline_pread", "main", 100.0)
            .estimate("dsrt_random_read/cache_read", "main", 200.0);
        let (_, problems) = compare_table(&tree.0, "main", 5.0).unwrap();
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems
            .iter()
            .any(|p| p
                .contains("dsrt_open/cache_open/10000: no estimate in the saved baseline main")));
    }

    #[test]
    fn a_group_without_estimates_or_without_a_baseline_is_an_error_naming_it() {
        let tree = criterion_tree("empty");
        std::fs::create_dir_all(tree.0.join("dsrt_empty/report")).unwrap();
        let error = report_table(&tree.0).unwrap_err();
        assert!(error.contains("dsrt_empty"), "{error}");

        let tree = criterion_tree("nobaseline");
        tree.estimate("dsrt_alone/cache_read", "new", 10.0)
            .estimate("dsrt_open/cache_open/7", "new", 10.0);
        let (table, problems) = report_table(&tree.0).unwrap();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("dsrt_alone/cache_read: no baseline"),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("dsrt_open/cache_open/7: no baseline"),
            "{problems:?}"
        );
        assert!(
            table.contains("| dsrt_alone | cache_read | 10 ns | - |"),
            "{table}"
        );
    }
}
