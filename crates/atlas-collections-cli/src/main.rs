//! The `atlas` command: inspect, read, verify and delete from Atlas collections.
//!
//! A collection is named by a local directory or by a URL object_store parses
//! (`s3://bucket/prefix`, configured from the usual `AWS_*` environment variables). Output is a
//! table for people, or JSON with `--json`. Errors go to stderr with a non-zero exit code.
#![forbid(unsafe_code)]

mod commands;
mod location;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Inspect, read, verify and delete from Atlas collections.
#[derive(Debug, Parser)]
#[command(name = "atlas", version)]
struct Cli {
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    json: bool,
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
    /// Reads one array of one dataset.
    Read {
        collection: String,
        dataset: String,
        variable: String,
        /// Start of the region, comma separated (default: the whole array).
        #[arg(long, value_delimiter = ',')]
        start: Vec<usize>,
        /// Shape of the region, comma separated.
        #[arg(long, value_delimiter = ',')]
        shape: Vec<usize>,
    },
    /// Hides datasets by name (the container is never modified).
    Delete {
        collection: String,
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Opens every segment and cross-checks every dataset's arrays against the footer.
    Verify { collection: String },
    /// Writes a small synthetic collection into a local directory or to a URL (`s3://...`).
    Demo {
        out: String,
        /// Number of datasets.
        #[arg(long, default_value_t = 12)]
        datasets: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("atlas: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(cli.command, cli.json)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("atlas: {e}");
            ExitCode::FAILURE
        }
    }
}
