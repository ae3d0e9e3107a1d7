//! `dsrt`: the DatasetRT command-line tool.
//!
//! What it is for: packing JSONL files, directory trees, Parquet files, Hugging Face datasets
//! and WebDataset shards into caches (`pack`), describing a cache (`inspect`), checking caches
//! for scripts and CI (`verify`), reading one sample back (`cat`), showing the whole round
//! trip on a sample set shipped in the binary (`demo`), migrating manifests to v3
//! (`migrate`), iterating epochs as a training rank would (`iterate`) and reporting what an
//! epoch's plan reads on a topology (`plan`).
//!
//! What it is not for: the format itself. Every byte is written and read by the `datasetrt`
//! facade; this crate only turns shell input into library calls and library results into
//! text, JSON and exit codes.
//!
//! Layering: the top of the DatasetRT stack, above `datasetrt` and `dsrt-remote` (store URLs:
//! `pack --out`, `migrate`, and the reading subcommands through `cache_open` and the shared
//! `store_args` flags). One module per subcommand; a new subcommand is a new module and one
//! line in [`Command`].
#![forbid(unsafe_code)]
// A tool that owns its output.
#![allow(clippy::print_stdout, clippy::print_stderr)]
// Argument doc comments are the --help text, plain text where `DIR/<class>` and `[,N]` are
// literal, not rustdoc markup.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

mod byte_size;
mod cache_open;
mod cat;
mod demo;
mod epoch_args;
mod error;
mod inspect;
mod iterate;
mod migrate;
mod output;
mod pack;
mod plan;
mod profile;
mod progress;
mod store_args;
mod verify;

use clap::{Parser, Subcommand};
use error::CliError;
use std::process::ExitCode;

/// Pack, inspect, verify and read DatasetRT caches.
#[derive(Debug, Parser)]
#[command(name = "dsrt", version, about, propagate_version = true)]
#[command(after_help = "\
Caches are directories or URLs: inspect, verify, cat, iterate and migrate read, and
pack --out writes, store prefixes (s3://bucket/prefix, gs://, az://, configured by the usual
AWS_*, GOOGLE_*, AZURE_* variables) and file:// URLs. Reading commands keep downloaded files
in a bounded local cache directory (--cache-dir, --cache-limit, --fetch).

Running out of file descriptors or memory mappings is a runtime error (exit status 1, the
message names the limit and --max-open-shards), never a failed verification.

Exit status: 0 success, 1 a runtime error or a cache that failed verification, 2 a usage
error, 75 a store failure that may pass when run again (a timeout, throttling or server error
after the retries made, or no room in the local cache yet), 130 interrupted.

Examples:
  dsrt demo
  dsrt pack --jsonl samples.jsonl --payload-field image --out cache/ --source train
  dsrt verify --full cache/
  dsrt cat cache/ 0 > sample0.bin
  dsrt pack --from-dir images/ --out s3://bucket/caches/images --source images
  dsrt inspect s3://bucket/caches/images
  dsrt cat s3://bucket/caches/images 3 --cache-dir /scratch/dsrt > sample3.bin")]
struct Cli {
    /// Idle shard files and mappings the process keeps open at most, whatever the number of
    /// shards and caches (default: half the open-file soft limit, which dsrt first raises
    /// toward the hard limit, and a quarter of vm.max_map_count, whichever is lower; or
    /// DSRT_MAX_OPEN_SHARDS).
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_open_shards: Option<u64>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Pack a JSONL file, a directory tree, Parquet files, a Hugging Face dataset or WebDataset
    /// shards into a new cache.
    Pack(Box<pack::PackArgs>),
    /// Describe a cache: version, id, source, samples, schema, shards.
    Inspect(inspect::InspectArgs),
    /// Check caches; exit 1 if any is invalid.
    Verify(verify::VerifyArgs),
    /// Write one sample's payload (or its metadata) to stdout.
    Cat(cat::CatArgs),
    /// Pack, verify and read back the sample set shipped inside this binary.
    Demo(demo::DemoArgs),
    /// Rewrite v2 manifests as v3, keeping every cache id.
    Migrate(migrate::MigrateArgs),
    /// Iterate an epoch of a dataset as one rank of a training job would.
    Iterate(iterate::IterateArgs),
    /// Report what an epoch reads on a topology, per node, without reading any payload.
    Plan(plan::PlanArgs),
    /// Run the loader for a while and report whether it keeps up with a consumer, and where
    /// its time went.
    Profile(profile::ProfileArgs),
}

fn main() -> ExitCode {
    // clap prints usage errors itself and exits 2, `--help` and `--version` exit 0.
    let cli = Cli::parse();
    if let Some(n) = cli.max_open_shards {
        datasetrt::HandlePool::global().set_capacity(usize::try_from(n).unwrap_or(usize::MAX));
    }
    let result = match cli.command {
        Command::Pack(args) => pack::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Cat(args) => cat::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Migrate(args) => migrate::run(&args),
        Command::Iterate(args) => iterate::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Profile(args) => profile::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => report(&error),
    }
}

/// Prints `error` the way Unix tools do and picks the exit status.
fn report(error: &CliError) -> ExitCode {
    // A reader that went away (`dsrt cat ... | head`) is not a failure of ours.
    if error.is_broken_pipe() {
        return ExitCode::SUCCESS;
    }
    if !error.already_reported() {
        output::warn(format_args!("{error}"));
    }
    ExitCode::from(error.exit_status())
}
