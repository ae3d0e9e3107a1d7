//! `dsrt verify`: checks caches and says, per cache, `ok` or why not; exit status 1 if any
//! cache is invalid.

use crate::cache_open::{is_url, open_location, OpenedCache};
use crate::error::CliError;
use crate::output::{print, print_json, warn};
use crate::progress::Progress;
use crate::store_args::{FetchArg, StoreArgs};
use clap::Args;
use datasetrt::{OpenOptions, SampleBuf};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Arguments of `dsrt verify`.
#[derive(Debug, Args)]
#[command(after_help = "\
Without --full, each cache is opened as a reader opens it: manifest, row counts, index
bounds, shard presence and sizes, the Arrow schema. --full also hashes index.bin,
metadata.arrow and every shard against the manifest's SHA-256, then reads every sample,
which checks each record's embedded metadata and decodes each payload.

A store URL (s3://bucket/prefix, gs://, az://) is opened through the local cache directory:
manifest.json, index.bin and metadata.arrow are downloaded and checked against the manifest's
SHA-256; with --full every shard is then downloaded whole into --cache-dir
(whatever --fetch says), checked against its SHA-256, and every sample read.

Prints `PATH: ok` per valid cache on stdout and `dsrt: <error>` per invalid one on stderr.
Exit status 0 if every cache is valid, 1 if any is invalid, 75 if the only failures were
store requests that may pass when run again (timeouts, throttling, server errors).

Examples:
  dsrt verify cache/
  dsrt verify --full train/ val/ test/
  dsrt verify --json cache/ | jq .valid
  dsrt verify --full s3://bucket/caches/train --cache-dir /scratch/dsrt")]
pub(crate) struct VerifyArgs {
    /// Caches to check: directories or URLs.
    #[arg(required = true, value_name = "CACHE")]
    caches: Vec<PathBuf>,
    /// Also hash every file and read every sample.
    #[arg(long)]
    full: bool,
    /// Print one JSON object with a result per cache instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    store: StoreArgs,
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
    /// Whether the failure may pass when run again (a store failure, not an invalid cache).
    #[serde(skip)]
    retryable: bool,
}

/// Runs `dsrt verify`.
pub(crate) fn run(args: &VerifyArgs) -> Result<(), CliError> {
    let mut reports = Vec::with_capacity(args.caches.len());
    // A stdout failure (say, `| head -1` closing the pipe) must not stop the checks or mask
    // an invalid cache: the exit status is the answer scripts rely on.
    let mut stdout_result = Ok(());
    let store = store_args(args);
    for path in &args.caches {
        let report = check(path, args.full, &store)?;
        if !args.json {
            stdout_result = stdout_result.and(print_text(&report));
        }
        reports.push(report);
    }
    let failed = reports.iter().filter(|r| !r.valid).count();
    let retryable = reports.iter().all(|r| r.valid || r.retryable);
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
        retryable,
    })
}

/// The store flags; `--full` reads whole shards, as only a whole shard's SHA-256 can be
/// checked.
fn store_args(args: &VerifyArgs) -> StoreArgs {
    if !args.full {
        return args.store.clone();
    }
    if args.store.fetch() == Some(FetchArg::Range) && args.caches.iter().any(|c| is_url(c)) {
        warn(format_args!(
            "warning: --fetch range is ignored with --full: every shard is downloaded whole to \
             check its SHA-256"
        ));
    }
    args.store.whole_shards()
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

/// Checks one cache. A resource running out (descriptors, mappings) says nothing about the
/// cache: it ends the command as a runtime error instead of failing the cache.
fn check<'a>(path: &'a Path, full: bool, store: &StoreArgs) -> Result<CacheReport<'a>, CliError> {
    let (samples, result) = match open(path, full, store) {
        Ok(opened) => (
            Some(opened.cache.len()),
            if full {
                read_every_sample(&opened)
            } else {
                Ok(())
            },
        ),
        Err(error) => (None, Err(error)),
    };
    let result = match result {
        Err(error) if error.is_resource() => return Err(error),
        other => other,
    };
    Ok(CacheReport {
        path,
        valid: result.is_ok(),
        samples,
        retryable: result.as_ref().is_err_and(CliError::is_retryable),
        error: result.err().map(|e| e.to_string()),
    })
}

fn open(path: &Path, full: bool, store: &StoreArgs) -> Result<OpenedCache, CliError> {
    let options = if full {
        OpenOptions::validated()
    } else {
        OpenOptions::default()
    };
    open_location(path, options, store)
}

/// Reads every sample through one buffer, so memory stays at the largest record. A remote
/// cache is told which shards come next, so they download while the current one is read.
fn read_every_sample(opened: &OpenedCache) -> Result<(), CliError> {
    let cache = &opened.cache;
    let progress = Progress::samples("verifying", Some(cache.len()));
    let mut buf = SampleBuf::new();
    let mut shard = None;
    for sample in 0..cache.len() {
        if cache.has_shard_source() {
            shard = hint_next_shards(opened, sample, shard);
        }
        cache
            .read(sample, &mut buf)
            .map_err(|e| opened.read_error(e))?;
        progress.inc();
    }
    progress.finish();
    Ok(())
}

/// Shards read ahead of the one being verified.
const READ_AHEAD_SHARDS: u64 = 2;

/// When `sample` starts a new shard, hints the shards after it; returns the sample's shard.
fn hint_next_shards(opened: &OpenedCache, sample: u64, current: Option<u64>) -> Option<u64> {
    let shard = opened.cache.index().row(sample).ok()?.shard_id;
    if current != Some(shard) {
        let shards = opened.cache.manifest().description().shards.len() as u64;
        let next: Vec<u64> = (1..=READ_AHEAD_SHARDS)
            .map(|n| shard.saturating_add(n))
            .filter(|&s| s < shards)
            .collect();
        opened.cache.will_need(&next);
    }
    Some(shard)
}
