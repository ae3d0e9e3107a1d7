//! The `atlas` command: inspect, read, verify, delete from and append to Atlas collections.
//!
//! A collection is named by a local directory or by a URL object_store parses
//! (`s3://bucket/prefix`, configured from the usual `AWS_*` environment variables). Output is a
//! table for people, or JSON with `--json`. Errors go to stderr; the exit status says which
//! kind (see [`error`]): 1 a runtime error or a failed verification, 2 a usage error, 130
//! interrupted, as for `dsrt`.
#![forbid(unsafe_code)]
#![allow(clippy::print_stderr)] // a test or tool that owns its output
#![allow(clippy::print_stdout)] // a test or tool that owns its output

mod commands;
mod error;
mod location;
mod npy;

use clap::{Parser, Subcommand};
use error::{CliError, EXIT_FAILURE};
use std::process::ExitCode;

/// Inspect, read, verify and delete from Atlas collections.
#[derive(Debug, Parser)]
#[command(name = "atlas", version, propagate_version = true)]
#[command(after_help = "\
Exit status: 0 success, 1 a runtime error (store, I/O, a damaged collection) or a collection
that failed verification, 2 a usage error, 75 a failure a later run may not repeat (a store
that did not answer, a dropped connection), 130 interrupted (Ctrl-C).

Examples:
  atlas demo /tmp/collection --datasets 100
  atlas info /tmp/collection
  atlas verify --full /tmp/collection
  atlas read /tmp/collection month_001 temperature --start 0,1 --shape 1,2
  atlas demo /tmp/june --datasets 30 --name-prefix june_
  atlas append /tmp/growing /tmp/june
  atlas append --replace /tmp/growing /tmp/june_fixed
  atlas log /tmp/growing
  atlas ls --at-version 1 /tmp/growing
  atlas tag /tmp/growing june-release
  atlas ls --at-tag june-release /tmp/growing
  atlas gc /tmp/growing")]
struct Cli {
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    json: bool,
    /// Read this version of a growing collection instead of the latest (`atlas log` lists
    /// them); refused for a plain collection.
    #[arg(long, global = true, value_name = "N")]
    at_version: Option<u64>,
    /// Read the version this tag of a growing collection names (`atlas tag` writes one).
    #[arg(long, global = true, value_name = "TAG", conflicts_with = "at_version")]
    at_tag: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Summary: datasets, segments, schemas, footer size.
    Info { collection: String },
    /// Live datasets with their arrays.
    Ls { collection: String },
    /// One array's statistics folded over the live datasets.
    Stats {
        collection: String,
        variable: String,
    },
    /// One dataset-level attribute of every live dataset.
    Attrs { collection: String, key: String },
    /// Reads one array of one dataset: prints it (up to --max-elements) or writes a .npy file.
    Read(ReadArgs),
    /// Hides datasets by name (the container is never modified).
    Delete {
        collection: String,
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Checks the leading header, opens every segment and cross-checks every live dataset's
    /// arrays against the footer; with --full, also decodes every chunk of every array. Prints
    /// every problem found (the same report with --json, ok or not); exit 1 if any.
    Verify {
        collection: String,
        /// Also read and decode every data block (every written chunk of every array).
        #[arg(long)]
        full: bool,
    },
    /// Writes a small synthetic collection into a local directory or to a URL (`s3://...`).
    Demo {
        out: String,
        /// Number of datasets.
        #[arg(long, default_value_t = 12)]
        datasets: usize,
        /// What the datasets' names start with (then a 3-digit number).
        #[arg(long, default_value = "month_")]
        name_prefix: String,
    },
    /// Adds each SOURCE (a plain collection, copied as it is) to COLLECTION as one new part and
    /// one new version; an empty or new COLLECTION becomes a growing collection. A dataset name
    /// the collection already holds live is refused before anything is written (with
    /// --replace, the old dataset is hidden in the same commit); concurrent appends all land
    /// (docs/format/growing.md).
    Append {
        /// Replace the datasets of the names a source holds: the version that adds the source
        /// hides the old ones (older versions still read them), instead of refusing the names.
        #[arg(long)]
        replace: bool,
        collection: String,
        #[arg(required = true)]
        sources: Vec<String>,
    },
    /// The versions of a growing collection: number, kind (append, replace or compact), commit
    /// time (UTC), datasets in its part, datasets of earlier parts it hid, part.
    Log { collection: String },
    /// Rewrites the live datasets of every part of a growing collection, in order, as one part
    /// (byte for byte a fresh write of them) committed as a new version; older versions read
    /// their parts until gc removes them (docs/format/growing.md, "Compaction"). A progress
    /// bar on stderr when it is a terminal.
    Compact { collection: String },
    /// Names VERSION of a growing collection (default: the latest) NAME, once: a tag is
    /// never moved. Read it with --at-tag NAME (docs/format/growing.md, "Tags").
    Tag {
        collection: String,
        name: String,
        /// The version to name (default: the latest).
        #[arg(value_name = "VERSION")]
        tagged_version: Option<u64>,
    },
    /// Removes the parts of a growing collection that no kept version names (what failed or
    /// killed appends left), once older than the grace period an append in progress is given
    /// to commit (docs/format/growing.md, "Garbage collection").
    Gc {
        collection: String,
        /// Keep the parts of the latest N versions only (default: of every version).
        #[arg(long, value_name = "N")]
        keep_versions: Option<std::num::NonZeroU64>,
        /// Leave a part whose newest object is younger than this many seconds: an append may
        /// still commit it. Must exceed the longest append.
        #[arg(long, default_value_t = atlas::DEFAULT_GC_GRACE.as_secs(), value_name = "SECONDS")]
        grace_seconds: u64,
        /// Say what would be removed; remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// `atlas read`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
The region's size is checked before anything is read: printing more than --max-elements values
is refused (exit 2) unless --all is given. --npy writes any size to a NumPy .npy file (format
1.0; strings as fixed-width '<U', binary as fixed-width '|S'), published crash-safely.")]
struct ReadArgs {
    collection: String,
    dataset: String,
    variable: String,
    /// Start of the region, comma separated (default: the whole array).
    #[arg(long, value_delimiter = ',')]
    start: Vec<usize>,
    /// Shape of the region, comma separated.
    #[arg(long, value_delimiter = ',')]
    shape: Vec<usize>,
    /// Largest number of values printed; a larger region is refused.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    max_elements: u64,
    /// Print the region whatever its size.
    #[arg(long)]
    all: bool,
    /// Write the values to this .npy file instead of printing them (no size limit).
    #[arg(long, value_name = "FILE")]
    npy: Option<std::path::PathBuf>,
}

fn main() -> ExitCode {
    // clap prints usage errors itself and exits 2, `--help` and `--version` exit 0.
    let cli = Cli::parse();
    let runtime = match object_access::runtime() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("atlas: {e}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let result = runtime.block_on(async {
        tokio::select! {
            result = commands::run(cli.command, cli.json, location::At { version: cli.at_version, tag: cli.at_tag }) => result,
            _ = tokio::signal::ctrl_c() => Err(CliError::Interrupted),
        }
    });
    // The runtime is never shut down: a store call blocked in a worker thread (a hung file
    // system, a FIFO) must not hold the exit up once the answer is known, and returning from
    // `main` ends the process without waiting for those threads.
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => report(&error),
    }
}

/// Prints `error` the way Unix tools do and picks the exit status.
fn report(error: &CliError) -> ExitCode {
    if error.is_broken_pipe() {
        return ExitCode::SUCCESS;
    }
    if !error.already_reported() {
        // Messages quote names read from the collection: nothing in them may act on a terminal.
        eprintln!("atlas: {}", terminal_text::Escaped(&error.to_string()));
    }
    ExitCode::from(error.exit_status())
}
