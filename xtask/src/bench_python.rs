//! The Python half of `cargo xtask bench`: the benchmark scripts under `python/*/benchmarks/`,
//! run as `docs/benchmarks.md` records their figures, against release builds of the packages.
//!
//! The scripts need what the test environment has plus the peers they compare with
//! ([`BENCH_REQUIREMENTS`]: LitData), so they run in an environment of their own
//! (`bench-venv-<hash>` beside the test one, made the same way), into which both packages are
//! built in the release profile (with `test-hooks`: `bench_read.py` uses `_testing`). Each
//! script prints its own table; a script that exits non-zero fails the run, after the others
//! ran. With `--s3` the local S3 test server is started and the scripts that can measure on it
//! get `--s3` and its environment.

use std::path::Path;
use std::process::Command;

/// The peers the benchmarks compare with that the tests do not need.
pub(crate) const BENCH_REQUIREMENTS: &str = "python/datasetrt/benchmarks/requirements-bench.txt";

/// One benchmark script and the arguments of its recorded figure.
pub(crate) struct PythonBench {
    /// What `cargo xtask bench NAME` calls it: the script's file stem.
    pub(crate) name: &'static str,
    /// The script, relative to the repository root.
    pub(crate) script: &'static str,
    /// Arguments beyond the script's defaults.
    pub(crate) args: &'static [&'static str],
    /// Whether the script takes `--s3` (and measures on the S3 test server too).
    pub(crate) takes_s3: bool,
    /// Whether the script runs the release `dsrt` binary (passed as `--dsrt PATH`).
    pub(crate) runs_dsrt: bool,
}

/// Every Python benchmark `cargo xtask bench` runs, in order.
///
/// `bench_pack.py` runs without its two MosaicML arms here: `mosaicml-streaming` cannot be
/// installed beside the test requirements (its releases pin `transformers` versions that the
/// pinned `datasets` excludes), so those arms need an environment made by hand (see the script).
pub(crate) const PYTHON_BENCHES: &[PythonBench] = &[
    PythonBench {
        name: "bench_read",
        script: "python/datasetrt/benchmarks/bench_read.py",
        args: &[],
        takes_s3: false,
        runs_dsrt: false,
    },
    PythonBench {
        name: "bench_bounded",
        script: "python/datasetrt/benchmarks/bench_bounded.py",
        args: &[],
        takes_s3: false,
        runs_dsrt: false,
    },
    PythonBench {
        name: "bench_token_batches",
        script: "python/datasetrt/benchmarks/bench_token_batches.py",
        args: &[],
        takes_s3: false,
        runs_dsrt: false,
    },
    PythonBench {
        name: "bench_tokens",
        script: "python/datasetrt/benchmarks/bench_tokens.py",
        args: &[],
        takes_s3: false,
        runs_dsrt: false,
    },
    PythonBench {
        name: "bench_pack",
        script: "python/datasetrt/benchmarks/bench_pack.py",
        args: &["--arms", "dsrt,convert,litdata"],
        takes_s3: false,
        runs_dsrt: true,
    },
    PythonBench {
        name: "bench_vs_zarr",
        script: "python/atlas/benchmarks/bench_vs_zarr.py",
        args: &[],
        takes_s3: true,
        runs_dsrt: false,
    },
    PythonBench {
        name: "bench_select",
        script: "python/atlas/benchmarks/bench_select.py",
        args: &[],
        takes_s3: true,
        runs_dsrt: false,
    },
    PythonBench {
        name: "bench_import",
        script: "python/atlas/benchmarks/bench_import.py",
        args: &[],
        takes_s3: false,
        runs_dsrt: false,
    },
    PythonBench {
        name: "bench_calendar_import",
        script: "python/atlas/benchmarks/bench_calendar_import.py",
        args: &["--blocks", "10"],
        takes_s3: false,
        runs_dsrt: false,
    },
    PythonBench {
        name: "bench_mfdataset",
        script: "python/atlas/benchmarks/bench_mfdataset.py",
        args: &[],
        takes_s3: true,
        runs_dsrt: false,
    },
    PythonBench {
        name: "bench_zarr_view",
        script: "python/atlas/benchmarks/bench_zarr_view.py",
        args: &[],
        takes_s3: false,
        runs_dsrt: false,
    },
];

/// The benchmark called `name`, if there is one.
pub(crate) fn find(name: &str) -> Option<&'static PythonBench> {
    PYTHON_BENCHES.iter().find(|bench| bench.name == name)
}

/// Builds the bench environment and the release packages, then runs `benches` (all when
/// empty), with the S3 test server when `s3`.
pub(crate) fn run(root: &Path, benches: &[&'static PythonBench], s3: bool) -> Result<(), String> {
    let benches: Vec<&PythonBench> = if benches.is_empty() {
        PYTHON_BENCHES.iter().collect()
    } else {
        benches.to_vec()
    };
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), Into::into);
    if benches.iter().any(|bench| bench.runs_dsrt) {
        let status = Command::new(env!("CARGO"))
            .current_dir(root)
            .args(["build", "--release", "--locked", "-p", "dsrt-cli"])
            .status()
            .map_err(|e| format!("running cargo build: {e}"))?;
        if !status.success() {
            return Err(format!("building the release dsrt failed: {status}"));
        }
    }
    let venv = crate::python::ensure_bench_env(root)?;
    let python = venv.join("bin/python");
    let state = std::env::temp_dir().join(format!("xtask-bench-s3-{}", std::process::id()));
    let env = if s3 {
        std::fs::create_dir_all(&state).map_err(|e| format!("{}: {e}", state.display()))?;
        crate::test::start_s3(root, &state)?
    } else {
        Vec::new()
    };
    let mut failures = Vec::new();
    for bench in benches {
        eprintln!("== bench: {}", bench.name);
        let mut command = Command::new(&python);
        command
            .current_dir(root)
            .arg(bench.script)
            .args(bench.args)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        if bench.runs_dsrt {
            command.arg("--dsrt").arg(target.join("release/dsrt"));
        }
        if s3 && bench.takes_s3 {
            command.arg("--s3");
        }
        match command.status() {
            Ok(status) if status.success() => {}
            Ok(status) => failures.push(format!("{} ({status})", bench.name)),
            Err(e) => failures.push(format!("{}: {e}", bench.name)),
        }
    }
    if s3 {
        crate::test::stop_s3(root, &state);
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("Python benchmarks failed: {}", failures.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scripts in the benchmark directories that are not benchmarks of their own: modules the
    /// others import, `bench_plan.py`, which `benches/compare/plans.py` runs against an older
    /// package, and `stats_cost.py`, which times the loader stats on the cache
    /// `bench_token_batches.py --work DIR` left (`bench_stats_on_off.sh` compares two builds).
    const HELPER_SCRIPTS: &[&str] = &[
        "python/atlas/benchmarks/corpus.py",
        "python/datasetrt/benchmarks/bench_plan.py",
        "python/datasetrt/benchmarks/stats_cost.py",
    ];

    /// Every script in a benchmark directory is run by `cargo xtask bench` or named as a
    /// helper, and every one named exists: a new benchmark cannot be left out by accident.
    #[test]
    fn every_benchmark_script_is_listed_once() {
        let root = crate::test::workspace_root();
        let mut found = Vec::new();
        for package in crate::python::PACKAGES {
            let dir = root.join(package.dir).join("benchmarks");
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "py") {
                    let relative = path.strip_prefix(&root).unwrap();
                    found.push(relative.to_str().unwrap().to_owned());
                }
            }
        }
        found.sort();
        let mut listed: Vec<String> = PYTHON_BENCHES
            .iter()
            .map(|bench| bench.script.to_owned())
            .chain(HELPER_SCRIPTS.iter().map(|&s| s.to_owned()))
            .collect();
        listed.sort();
        assert_eq!(found, listed);
        for bench in PYTHON_BENCHES {
            assert!(bench.script.ends_with(&format!("/{}.py", bench.name)));
        }
        assert!(root.join(BENCH_REQUIREMENTS).exists());
    }

    /// The scripts said to take `--s3` or `--dsrt` do, and no other does.
    #[test]
    fn the_flags_passed_are_the_scripts_own() {
        let root = crate::test::workspace_root();
        for bench in PYTHON_BENCHES {
            let text = std::fs::read_to_string(root.join(bench.script)).unwrap();
            assert_eq!(text.contains("\"--s3\""), bench.takes_s3, "{}", bench.name);
            assert_eq!(
                text.contains("\"--dsrt\""),
                bench.runs_dsrt,
                "{}",
                bench.name
            );
            for arg in bench.args.iter().filter(|a| a.starts_with("--")) {
                assert!(text.contains(&format!("\"{arg}\"")), "{} {arg}", bench.name);
            }
        }
    }
}
