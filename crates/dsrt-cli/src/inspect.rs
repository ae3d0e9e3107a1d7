//! `dsrt inspect`: what a cache holds, from its manifest, after a default (structural) open.

use crate::cache_open::open_location;
use crate::error::CliError;
use crate::output::{human_bytes, print, print_json};
use crate::store_args::StoreArgs;
use clap::Args;
use datasetrt::{Cache, CompressionAlgo, Manifest, OpenOptions, Schema, ShardEntry};
use serde::Serialize;
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

/// Arguments of `dsrt inspect`.
#[derive(Debug, Args)]
#[command(after_help = "\
The cache is opened as a reader opens it by default (manifest, row counts, index bounds,
shard sizes, Arrow schema), without hashing; `dsrt verify --full` checks the rest.

A store URL (s3://bucket/prefix, gs://, az://; configured by the usual AWS_*, GOOGLE_*,
AZURE_* variables) is opened through the local cache directory: manifest.json, index.bin and
metadata.arrow are downloaded (checked against the manifest), no shard is.

Examples:
  dsrt inspect cache/
  dsrt inspect cache/ --json | jq .samples
  dsrt inspect s3://bucket/caches/train")]
pub(crate) struct InspectArgs {
    /// The cache: a directory or a URL.
    #[arg(value_name = "CACHE")]
    cache: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    store: StoreArgs,
}

/// `dsrt inspect --json` output.
#[derive(Debug, Serialize)]
struct Inspection<'a> {
    path: &'a Path,
    format_version: u64,
    /// The stored id (v3); `null` for v2, whose id is its position in a dataset's list.
    cache_id: Option<u64>,
    source: &'a str,
    samples: u64,
    schema: &'a Schema,
    shard_bytes: u64,
    uncompressed_shard_bytes: u64,
    shards: Vec<ShardInfo<'a>>,
}

#[derive(Debug, Serialize)]
struct ShardInfo<'a> {
    name: &'a str,
    byte_len: u64,
    uncompressed_byte_len: u64,
    algo: CompressionAlgo,
    ratio: f64,
}

impl<'a> Inspection<'a> {
    fn new(cache: &'a Cache, path: &'a Path) -> Self {
        let manifest: &Manifest = cache.manifest();
        let description = manifest.description();
        let shards: Vec<ShardInfo<'a>> = description.shards.iter().map(ShardInfo::new).collect();
        Self {
            path,
            format_version: manifest.format_version(),
            cache_id: manifest.stored_cache_id(),
            source: &description.source,
            samples: description.sample_count,
            schema: &description.metadata_schema,
            shard_bytes: shards.iter().map(|s| s.byte_len).sum(),
            uncompressed_shard_bytes: shards.iter().map(|s| s.uncompressed_byte_len).sum(),
            shards,
        }
    }
}

impl<'a> ShardInfo<'a> {
    fn new(entry: &'a ShardEntry) -> Self {
        Self {
            name: &entry.name,
            byte_len: entry.byte_len,
            uncompressed_byte_len: entry.uncompressed_byte_len,
            algo: entry.compression.algo,
            ratio: entry.compression.ratio,
        }
    }
}

/// Runs `dsrt inspect`.
pub(crate) fn run(args: &InspectArgs) -> Result<(), CliError> {
    let opened = open_location(&args.cache, OpenOptions::default(), &args.store)?;
    let inspection = Inspection::new(&opened.cache, opened.name());
    if args.json {
        print_json(&inspection)
    } else {
        print(&inspection)
    }
}

impl fmt::Display for Inspection<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cache_id = match self.cache_id {
            Some(id) => id.to_string(),
            None => "positional (v2)".to_owned(),
        };
        writeln!(f, "cache       {}", self.path.display())?;
        writeln!(f, "version     {}", self.format_version)?;
        writeln!(f, "cache id    {cache_id}")?;
        writeln!(f, "source      {:?}", self.source)?;
        writeln!(f, "samples     {}", self.samples)?;
        writeln!(f, "schema      {} columns", self.schema.len())?;
        for column in self.schema.columns() {
            let nullable = if column.nullable { ", nullable" } else { "" };
            writeln!(f, "  {:<20} {}{nullable}", column.name, column.ty)?;
        }
        writeln!(
            f,
            "shards      {} ({} on disk, {} uncompressed)",
            self.shards.len(),
            human_bytes(self.shard_bytes),
            human_bytes(self.uncompressed_shard_bytes)
        )?;
        for shard in &self.shards {
            writeln!(f, "{}", shard_line(shard))?;
        }
        Ok(())
    }
}

fn shard_line(shard: &ShardInfo<'_>) -> String {
    let mut line = String::new();
    // Writing into a String cannot fail.
    let _ = write!(
        line,
        "  {}  {:>12} bytes  {:<4}  ratio {:.3}",
        shard.name,
        shard.byte_len,
        algo_name(shard.algo),
        shard.ratio
    );
    line
}

/// The manifest's name of `algo`.
pub(crate) fn algo_name(algo: CompressionAlgo) -> &'static str {
    match algo {
        CompressionAlgo::None => "none",
        CompressionAlgo::Lz4 => "lz4",
    }
}
