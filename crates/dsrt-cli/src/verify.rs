//! `dsrt verify`: checks caches and says, per cache, `ok` or why not; exit status 1 if any
//! cache is invalid.

use crate::cache_open::open_cache;
use crate::error::CliError;
use crate::output::{print, print_json, warn};
use crate::progress::Progress;
use clap::Args;
use datasetrt::{Cache, OpenOptions, SampleBuf};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Arguments of `dsrt verify`.
#[derive(Debug, Args)]
#[command(after_help = "\
Without --full, each cache is opened as a reader opens it: manifest, row counts, index
bounds, shard presence and sizes, the Arrow schema. --full also hashes index.bin,
metadata.arrow and every shard against the manifest's SHA-256, then reads every sample,
which checks each record's embedded metadata and decodes each payload.

Prints `PATH: ok` per valid cache on stdout and `dsrt: <error>` per invalid one on stderr.
Exit status 0 if every cache is valid, 1 otherwise.

Examples:
  dsrt verify cache/
  dsrt verify --full train/ val/ test/
  dsrt verify --json cache/ | jq .valid")]
pub(crate) struct VerifyArgs {
    /// Cache directories to check.
    #[arg(required = true)]
    caches: Vec<PathBuf>,
    /// Also hash every file and read every sample.
    #[arg(long)]
    full: bool,
    /// Print one JSON object with a result per cache instead of text.
    #[arg(long)]
    json: bool,
}

/// `dsrt verify --json` output.
#[derive(Debug, Serialize)]
struct Report<'a> {
    valid: bool,
    full: bool,
    caches: Vec<CacheReport<'a>>,
}

#[derive(Debug, Serialize)]
struct CacheReport<'a> {
    path: &'a Path,
    valid: bool,
    /// Samples in the cache; `null` when it could not be opened.
    samples: Option<u64>,
    /// The error's full text; `null` when valid.
    error: Option<String>,
}

/// Runs `dsrt verify`.
pub(crate) fn run(args: &VerifyArgs) -> Result<(), CliError> {
    let mut reports = Vec::with_capacity(args.caches.len());
    // A stdout failure (say, `| head -1` closing the pipe) must not stop the checks or mask
    // an invalid cache: the exit status is the answer scripts rely on.
    let mut stdout_result = Ok(());
    for path in &args.caches {
        let report = check(path, args.full);
        if !args.json {
            stdout_result = stdout_result.and(print_text(&report));
        }
        reports.push(report);
    }
    let failed = reports.iter().filter(|r| !r.valid).count();
    if args.json {
        stdout_result = print_json(&Report {
            valid: failed == 0,
            full: args.full,
            caches: reports,
        });
    }
    if failed == 0 {
        return stdout_result;
    }
    // One cache's error already says it all; over several, a closing count helps.
    let reported = args.json || args.caches.len() == 1;
    Err(CliError::VerificationFailed {
        failed,
        total: args.caches.len(),
        reported,
    })
}

fn print_text(report: &CacheReport<'_>) -> Result<(), CliError> {
    match &report.error {
        None => print(format_args!("{}: ok\n", report.path.display())),
        Some(error) => {
            warn(format_args!("{error}"));
            Ok(())
        }
    }
}

fn check(path: &Path, full: bool) -> CacheReport<'_> {
    let (samples, result) = match open(path, full) {
        Ok(cache) => (
            Some(cache.len()),
            if full {
                read_every_sample(&cache)
            } else {
                Ok(())
            },
        ),
        Err(error) => (None, Err(error)),
    };
    CacheReport {
        path,
        valid: result.is_ok(),
        samples,
        error: result.err().map(|e| e.to_string()),
    }
}

fn open(path: &Path, full: bool) -> Result<Cache, CliError> {
    let options = if full {
        OpenOptions::validated()
    } else {
        OpenOptions::default()
    };
    open_cache(path, options)
}

/// Reads every sample through one buffer, so memory stays at the largest record.
fn read_every_sample(cache: &Cache) -> Result<(), CliError> {
    let progress = Progress::samples("verifying", Some(cache.len()));
    let mut buf = SampleBuf::new();
    for sample in 0..cache.len() {
        cache.read(sample, &mut buf)?;
        progress.inc();
    }
    progress.finish();
    Ok(())
}
