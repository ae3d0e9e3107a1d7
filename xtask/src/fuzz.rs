//! `cargo xtask fuzz-seed` and `cargo xtask fuzz [TARGET] [--seconds N]`: corpus seeding and
//! cargo-fuzz runs of the targets in `crates/dsrt-atlas-fuzz-targets`.

use crate::fixtures::workspace_root;
use std::path::Path;
use std::process::{Command, Stdio};

/// Writes one `seed-*` file per seed into `fuzz/corpus/<target>/`, from `fixtures`
/// (`--fixtures DIR`, default `fixtures/`). Other corpus files are kept.
pub(crate) fn seed(fixtures: &Path) -> Result<(), String> {
    let root = workspace_root();
    let seeds =
        dsrt_atlas_fuzz_targets::seeds(fixtures).map_err(|e| format!("reading fixtures: {e}"))?;
    for seed in &seeds {
        let dir = root.join("fuzz").join("corpus").join(seed.target);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join(format!("seed-{}", seed.name));
        std::fs::write(&path, &seed.bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    println!("wrote {} seeds under fuzz/corpus/", seeds.len());
    Ok(())
}

/// Runs the `named` targets (or all, one after another) for `seconds` each (`--seconds N`,
/// default 60) with cargo-fuzz on the stable toolchain (`RUSTC_BOOTSTRAP=1`), then prints
/// executions per target.
pub(crate) fn run(named: &[String], seconds: u64) -> Result<(), String> {
    let named: Vec<&str> = named.iter().map(String::as_str).collect();
    let targets: Vec<&str> = if named.is_empty() {
        dsrt_atlas_fuzz_targets::TARGETS
            .iter()
            .map(|(n, _)| *n)
            .collect()
    } else {
        for name in &named {
            if dsrt_atlas_fuzz_targets::target(name).is_none() {
                return Err(format!("unknown fuzz target {name}"));
            }
        }
        named
    };
    let fuzz_dir = workspace_root().join("fuzz");
    let mut summary = Vec::new();
    for target in targets {
        // New inputs go to the scratch corpus (git-ignored); the checked-in seeds are read too.
        let work = fuzz_dir.join("work").join(target);
        let corpus = fuzz_dir.join("corpus").join(target);
        std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
        let artifacts = fuzz_dir.join("artifacts").join(target);
        std::fs::create_dir_all(&corpus).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&artifacts).map_err(|e| e.to_string())?;
        let mut command = Command::new("cargo");
        command
            .current_dir(&fuzz_dir)
            .env("RUSTC_BOOTSTRAP", "1")
            .args(["fuzz", "run", "--release", "--debug-assertions"]);
        if let Ok(dir) = std::env::var("CARGO_TARGET_DIR") {
            command.args(["--target-dir", &format!("{dir}/fuzz")]);
        }
        command
            .arg(target)
            .arg(&work)
            .arg(&corpus)
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg(format!("-artifact_prefix={}/", artifacts.display()))
            .args(["-timeout=10", "-rss_limit_mb=2048", "-print_final_stats=1"])
            .stderr(Stdio::piped());
        println!("fuzzing {target} for {seconds} s");
        let output = command
            .output()
            .map_err(|e| format!("running cargo fuzz (is it installed?): {e}"))?;
        let log = String::from_utf8_lossy(&output.stderr);
        let log_path = artifacts.join("last-run.log");
        std::fs::write(&log_path, log.as_bytes()).map_err(|e| e.to_string())?;
        let execs = log
            .lines()
            .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
            .map_or("?".to_owned(), |v| v.trim().to_owned());
        let verdict = if output.status.success() {
            "ok"
        } else {
            "FAILED"
        };
        println!(
            "  {target}: {verdict}, {execs} executions (log: {})",
            log_path.display()
        );
        summary.push((target, verdict, execs));
    }
    println!("| target | seconds | executions | result |");
    println!("|---|---|---|---|");
    for (target, verdict, execs) in &summary {
        println!("| {target} | {seconds} | {execs} | {verdict} |");
    }
    if summary.iter().any(|(_, v, _)| *v != "ok") {
        return Err("a fuzz target failed; see fuzz/artifacts/".into());
    }
    Ok(())
}
