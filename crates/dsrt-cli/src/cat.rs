//! `dsrt cat`: one sample's payload bytes, raw, to stdout (or its metadata row as JSON).

use crate::cache_open::open_cache;
use crate::error::CliError;
use crate::output::{print_json, RowJson};
use clap::Args;
use datasetrt::{OpenOptions, SampleBuf};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `dsrt cat`.
#[derive(Debug, Args)]
#[command(after_help = "\
The sample is read as every reader reads it: its embedded metadata is checked against
metadata.arrow and its payload is decompressed, so a damaged record fails here too.

Examples:
  dsrt cat cache/ 0 > sample0.jpg
  dsrt cat cache/ 41 --metadata
  dsrt cat cache/ 7 | head -c 64 | xxd")]
pub(crate) struct CatArgs {
    /// The cache directory.
    cache: PathBuf,
    /// Zero-based sample number.
    index: u64,
    /// Print the metadata row as one JSON object instead of the payload.
    #[arg(long)]
    metadata: bool,
}

/// Runs `dsrt cat`.
pub(crate) fn run(args: &CatArgs) -> Result<(), CliError> {
    let cache = open_cache(&args.cache, OpenOptions::default())?;
    let mut buf = SampleBuf::new();
    let sample = cache.read(args.index, &mut buf)?;
    if args.metadata {
        return print_json(&RowJson {
            schema: cache.schema(),
            row: sample.metadata,
        });
    }
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(sample.payload)
        .and_then(|()| stdout.flush())
        .map_err(CliError::Stdout)
}
