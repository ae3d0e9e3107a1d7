//! `dsrt migrate`: rewrites v2 manifests as v3 with their positional ids, crash-safely.

use crate::error::CliError;
use crate::migrate_remote::{classify, Targets};
use crate::output::{print, print_json};
use clap::Args;
use datasetrt::{
    CancelToken, ManifestUpdateEntry, ManifestUpdateError, StdFileSystem, UpdateCause,
    UpdateOutcome,
};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `dsrt migrate`.
#[derive(Debug, Args)]
#[command(after_help = "\
Give the caches in the dataset's ORIGINAL order: a v2 cache's id is its position in that list,
and the migration stores exactly that id, so (cache_id, sample_id) tables made before stay
valid. v3 caches keep their stored id and are only fsynced.

Every cache is checked before any manifest is replaced. Each manifest is replaced atomically
(temporary file beside it, fsync, rename, directory fsync); unknown keys, key order and
formatting are kept. The caches are not one transaction: after a failure or Ctrl-C, rerun the
same command to finish.

Store URLs (s3://bucket/prefix, gs://, az://) work as well as directories, but not mixed in
one list. Each manifest is read, all are checked, then each v2 manifest is replaced with a PUT
conditional on the version read (If-Match on S3): if it changed in between, nothing is
overwritten and the migration stops. A store without conditional PUT gets a plain PUT after
re-reading the manifest unchanged, and a warning says that update could not be made atomic.

Exit status: 0 all done, 1 an error (what was done is listed), 130 interrupted.

Examples:
  dsrt migrate --to 3 train/ val/ test/
  dsrt migrate --to 3 s3://bucket/caches/train s3://bucket/caches/val
  dsrt migrate --to 3 --json cache-*/ | jq '.entries[].outcome'")]
pub(crate) struct MigrateArgs {
    /// Target format_version (only 3).
    #[arg(long = "to", value_name = "VERSION")]
    to: u64,
    /// Cache directories or store URLs, in the dataset's original order.
    #[arg(required = true)]
    caches: Vec<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct EntryJson<'a> {
    cache: &'a std::path::Path,
    manifest: &'a std::path::Path,
    cache_id: u64,
    outcome: &'static str,
    error: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct ReportJson<'a> {
    ok: bool,
    entries: Vec<EntryJson<'a>>,
    failed: Option<&'a std::path::Path>,
    error: Option<String>,
}

fn entry_json(entry: &ManifestUpdateEntry) -> EntryJson<'_> {
    let (outcome, error) = match &entry.outcome {
        UpdateOutcome::Updated => ("updated", None),
        UpdateOutcome::Unchanged => ("unchanged", None),
        UpdateOutcome::DurabilityUnknown { error } => ("durability_unknown", Some(error.as_str())),
    };
    EntryJson {
        cache: &entry.cache,
        manifest: &entry.manifest,
        cache_id: entry.cache_id,
        outcome,
        error,
    }
}

fn entries_text(entries: &[ManifestUpdateEntry]) -> String {
    let mut text = String::new();
    for entry in entries {
        let json = entry_json(entry);
        let _ = write!(
            text,
            "{}: {} (cache_id {})",
            entry.cache.display(),
            json.outcome,
            entry.cache_id
        );
        if let Some(error) = json.error {
            let _ = write!(text, ": directory fsync failed: {error}; rerun to confirm");
        }
        text.push('\n');
    }
    text
}

/// Runs `dsrt migrate`: directories here, store URLs in `migrate_remote`.
pub(crate) fn run(args: &MigrateArgs) -> Result<(), CliError> {
    match classify(&args.caches)? {
        Targets::Local(caches) => run_local(args, &caches),
        Targets::Remote(caches) => crate::migrate_remote::run(&caches, args.to, args.json),
    }
}

/// Migrates directories; Ctrl-C cancels between steps and removes the temporary file in flight.
fn run_local(args: &MigrateArgs, caches: &[PathBuf]) -> Result<(), CliError> {
    let cancel = CancelToken::new();
    let handler_token = cancel.clone();
    // A second handler cannot be installed in one process; a process runs one command.
    ctrlc::set_handler(move || handler_token.cancel())
        .map_err(|e| CliError::Invalid(format!("installing the Ctrl-C handler: {e}")))?;
    let result = datasetrt::update_manifests(caches, args.to, &StdFileSystem, &cancel);
    match result {
        Ok(report) => {
            if args.json {
                let entries = report.entries.iter().map(entry_json).collect();
                print_json(&ReportJson {
                    ok: true,
                    entries,
                    failed: None,
                    error: None,
                })
            } else {
                print(entries_text(&report.entries))
            }
        }
        Err(error) => fail(args, &error),
    }
}

fn fail(args: &MigrateArgs, error: &ManifestUpdateError) -> Result<(), CliError> {
    if args.json {
        let entries = error.done.iter().map(entry_json).collect();
        print_json(&ReportJson {
            ok: false,
            entries,
            failed: error.failed.as_deref(),
            error: Some(error.cause.to_string()),
        })?;
    } else {
        print(entries_text(&error.done))?;
    }
    let interrupted = matches!(*error.cause, UpdateCause::Interrupted);
    Err(CliError::Migration {
        message: error.to_string(),
        interrupted,
    })
}
