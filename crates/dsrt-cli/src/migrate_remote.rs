//! `dsrt migrate` on store URLs: the same checks, each manifest replaced by a conditional PUT,
//! and a plain warning for every manifest the store could not replace atomically.

use crate::error::CliError;
use crate::output::{print, print_json, warn};
use dsrt_remote::{
    update_remote_manifests, RemotePrefix, RemoteUpdateEntry, RemoteUpdateError,
    RemoteUpdateOutcome, StoreLocation,
};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The caches of one migration: all local directories or all store prefixes.
#[derive(Debug)]
pub(crate) enum Targets {
    /// Directories (plain paths, `file://` URLs turned into paths).
    Local(Vec<PathBuf>),
    /// Store prefixes.
    Remote(Vec<RemotePrefix>),
}

/// Sorts the arguments; a list without any `://` stays exactly as given.
pub(crate) fn classify(caches: &[PathBuf]) -> Result<Targets, CliError> {
    let is_url = |p: &Path| p.to_str().is_some_and(|t| t.contains("://"));
    if !caches.iter().any(|p| is_url(p)) {
        return Ok(Targets::Local(caches.to_vec()));
    }
    let (mut local, mut remote) = (Vec::new(), Vec::new());
    for cache in caches {
        match cache.to_str().map(StoreLocation::parse).transpose()? {
            Some(StoreLocation::Remote(prefix)) => remote.push(prefix),
            Some(StoreLocation::Local(path)) => local.push(path),
            None => local.push(cache.clone()),
        }
    }
    match (local.is_empty(), remote.is_empty()) {
        (_, true) => Ok(Targets::Local(local)),
        (true, false) => Ok(Targets::Remote(remote)),
        (false, false) => Err(CliError::Invalid(
            "migrate takes local directories or store URLs, not both: a v2 cache's id is its \
             position in the whole list, so the list cannot be split into two runs"
                .into(),
        )),
    }
}

#[derive(Debug, Serialize)]
struct EntryJson<'a> {
    cache: &'a str,
    manifest: String,
    cache_id: u64,
    outcome: &'static str,
    atomic: bool,
}

#[derive(Debug, Serialize)]
struct ReportJson<'a> {
    ok: bool,
    entries: Vec<EntryJson<'a>>,
    failed: Option<&'a str>,
    error: Option<String>,
}

fn entry_json(entry: &RemoteUpdateEntry) -> EntryJson<'_> {
    EntryJson {
        cache: &entry.url,
        manifest: format!("{}/manifest.json", entry.url),
        cache_id: entry.cache_id,
        outcome: match entry.outcome {
            RemoteUpdateOutcome::Updated => "updated",
            RemoteUpdateOutcome::Unchanged => "unchanged",
        },
        atomic: entry.atomic,
    }
}

fn entries_text(entries: &[RemoteUpdateEntry]) -> String {
    let mut text = String::new();
    for entry in entries {
        let json = entry_json(entry);
        let _ = writeln!(
            text,
            "{}: {} (cache_id {})",
            entry.url, json.outcome, entry.cache_id
        );
    }
    text
}

/// The warning for each manifest replaced without a conditional PUT.
fn warn_not_atomic(entries: &[RemoteUpdateEntry]) {
    for entry in entries.iter().filter(|e| !e.atomic) {
        warn(format_args!(
            "warning: {}: this store has no conditional PUT, so the manifest update could not \
             be made atomic: it was re-read unchanged and then overwritten, and a change made \
             by someone else in between would be lost",
            entry.url
        ));
    }
}

/// Migrates store prefixes and prints the report.
pub(crate) fn run(caches: &[RemotePrefix], version: u64, json: bool) -> Result<(), CliError> {
    match update_remote_manifests(caches, version) {
        Ok(report) => {
            warn_not_atomic(&report.entries);
            if json {
                print_json(&ReportJson {
                    ok: true,
                    entries: report.entries.iter().map(entry_json).collect(),
                    failed: None,
                    error: None,
                })
            } else {
                print(entries_text(&report.entries))
            }
        }
        Err(error) => fail(&error, json),
    }
}

fn fail(error: &RemoteUpdateError, json: bool) -> Result<(), CliError> {
    warn_not_atomic(&error.done);
    if json {
        print_json(&ReportJson {
            ok: false,
            entries: error.done.iter().map(entry_json).collect(),
            failed: error.failed.as_deref(),
            error: Some(error.cause.to_string()),
        })?;
    } else {
        print(entries_text(&error.done))?;
    }
    Err(CliError::Migration {
        message: error.to_string(),
        interrupted: false,
    })
}
