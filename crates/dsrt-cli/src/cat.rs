//! `dsrt cat`: one sample's payload bytes, raw, to stdout (or its metadata row as JSON).

use crate::cache_open::open_location;
use crate::error::CliError;
use crate::output::{print_json, RowJson};
use crate::store_args::StoreArgs;
use clap::Args;
use datasetrt::{OpenOptions, SampleBuf};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `dsrt cat`.
#[derive(Debug, Args)]
#[command(after_help = "\
The sample is read as every reader reads it: its embedded metadata is checked against
metadata.arrow and its payload is decompressed, so a damaged record fails here too.

From a store URL the sample's shard is downloaded whole into the local cache directory
(checked against its SHA-256, and kept for later reads); with --fetch range only the
sample's record is fetched.

Examples:
  dsrt cat cache/ 0 > sample0.jpg
  dsrt cat cache/ 41 --metadata
  dsrt cat cache/ 7 | head -c 64 | xxd
  dsrt cat s3://bucket/caches/train 3 --fetch range > sample3.jpg")]
pub(crate) struct CatArgs {
    /// The cache: a directory or a URL.
    #[arg(value_name = "CACHE")]
    cache: PathBuf,
    /// Zero-based sample number.
    index: u64,
    /// Print the metadata row as one JSON object instead of the payload.
    #[arg(long)]
    metadata: bool,
    #[command(flatten)]
    store: StoreArgs,
}

/// Runs `dsrt cat`.
pub(crate) fn run(args: &CatArgs) -> Result<(), CliError> {
    // The shard is downloaded whole and kept, as the help says: a range read served while it
    // downloads would end the process, and so the download, before it is kept.
    let store = args.store.waiting_for_shards();
    let opened = open_location(&args.cache, OpenOptions::default(), &store)?;
    let cache = &opened.cache;
    let mut buf = SampleBuf::new();
    let sample = cache
        .read(args.index, &mut buf)
        .map_err(|e| opened.read_error(e))?;
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
