//! `dsrt migrate`: rewrites v2 manifests as v3 with their positional ids, directories
//! crash-safely and store prefixes by conditional PUT, in one list; a plain warning for every
//! manifest a store could not replace atomically.

use crate::error::CliError;
use crate::output::{print, print_json, warn};
use clap::Args;
use datasetrt::{
    CancelToken, LocalManifest, ManifestStore, ManifestUpdateEntry, ManifestUpdateError,
    StdFileSystem, UpdateCause,
};
use dsrt_remote::{RemoteManifest, StoreLocation};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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

Store URLs (s3://bucket/prefix, gs://, az://) work as well as directories, in one list. Each
manifest is read, all are checked, then each v2 manifest under a prefix is replaced with a PUT
conditional on the version read (If-Match on S3): if it changed in between, nothing is
overwritten and the migration stops. A store without conditional PUT gets a plain PUT after
re-reading the manifest unchanged, and a warning says that update could not be made atomic.

Exit status: 0 all done, 1 an error (what was done is listed), 130 interrupted.

Examples:
  dsrt migrate --to 3 train/ val/ test/
  dsrt migrate --to 3 s3://bucket/caches/train s3://bucket/caches/val
  dsrt migrate --to 3 s3://bucket/caches/train local/extra
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
    cache: &'a str,
    manifest: &'a str,
    cache_id: u64,
    outcome: &'static str,
    error: Option<&'a str>,
    atomic: bool,
}

#[derive(Debug, Serialize)]
struct ReportJson<'a> {
    ok: bool,
    entries: Vec<EntryJson<'a>>,
    failed: Option<&'a str>,
    error: Option<String>,
}

/// Where one cache of the list is: a directory or a store prefix.
enum Target {
    /// A directory (a plain path, or a `file://` URL turned into one).
    Local(LocalManifest<'static>),
    /// A store prefix.
    Remote(RemoteManifest),
}

impl Target {
    fn local(dir: PathBuf) -> Self {
        Self::Local(LocalManifest::new(dir, &StdFileSystem))
    }

    fn store(&self) -> &dyn ManifestStore {
        match self {
            Self::Local(local) => local,
            Self::Remote(remote) => remote,
        }
    }
}

/// Sorts the arguments, keeping their order (a v2 cache's id is its position in the whole
/// list); an argument without `://` is a directory exactly as given.
fn targets(caches: &[PathBuf]) -> Result<Vec<Target>, CliError> {
    let is_url = |p: &Path| p.to_str().is_some_and(|t| t.contains("://"));
    caches
        .iter()
        .map(|cache| match cache.to_str() {
            Some(text) if is_url(cache) => Ok(match StoreLocation::parse(text)? {
                StoreLocation::Remote(prefix) => Target::Remote(RemoteManifest::new(prefix)),
                StoreLocation::Local(path) => Target::local(path),
            }),
            _ => Ok(Target::local(cache.clone())),
        })
        .collect()
}

fn entry_json(entry: &ManifestUpdateEntry) -> EntryJson<'_> {
    EntryJson {
        cache: &entry.cache,
        manifest: &entry.manifest,
        cache_id: entry.cache_id,
        outcome: entry.outcome.name(),
        error: entry.outcome.error(),
        atomic: entry.atomic,
    }
}

fn entries_text(entries: &[ManifestUpdateEntry]) -> String {
    let mut text = String::new();
    for entry in entries {
        let json = entry_json(entry);
        let _ = write!(
            text,
            "{}: {} (cache_id {})",
            entry.cache, json.outcome, entry.cache_id
        );
        if let Some(error) = json.error {
            let _ = write!(text, ": directory fsync failed: {error}; rerun to confirm");
        }
        text.push('\n');
    }
    text
}

/// The warning for each manifest replaced without a conditional PUT.
fn warn_not_atomic(entries: &[ManifestUpdateEntry]) {
    for entry in entries.iter().filter(|e| !e.atomic) {
        warn(format_args!(
            "warning: {}: this store has no conditional PUT, so the manifest update could not \
             be made atomic: it was re-read unchanged and then overwritten, and a change made \
             by someone else in between would be lost",
            entry.cache
        ));
    }
}

/// Runs `dsrt migrate`; Ctrl-C cancels between steps and removes the temporary file in flight.
pub(crate) fn run(args: &MigrateArgs) -> Result<(), CliError> {
    let targets = targets(&args.caches)?;
    let stores: Vec<&dyn ManifestStore> = targets.iter().map(Target::store).collect();
    let cancel = CancelToken::new();
    let handler_token = cancel.clone();
    // A second handler cannot be installed in one process; a process runs one command.
    ctrlc::set_handler(move || handler_token.cancel())
        .map_err(|e| CliError::Invalid(format!("installing the Ctrl-C handler: {e}")))?;
    match datasetrt::update_manifests(&stores, args.to, &cancel) {
        Ok(report) => {
            warn_not_atomic(&report.entries);
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
    warn_not_atomic(&error.done);
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
        retryable: error.is_retryable(),
    })
}
