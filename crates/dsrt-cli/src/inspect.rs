//! `dsrt inspect`: what a cache holds, from its manifest, after a default (structural) open.

use crate::cache_open::open_location;
use crate::error::CliError;
use crate::output::{human_bytes, print, print_json};
use crate::store_args::StoreArgs;
use clap::Args;
use datasetrt::tokens::{TokenInfo, N_TOKENS_COLUMN};
use datasetrt::{Cache, CompressionAlgo, Manifest, OpenOptions, Schema, ShardEntry, ValueRef};
use serde::Serialize;
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use terminal_text::escape;

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
    /// A token cache's `tokens` key, with `total`, its documents' `n_tokens` summed; `null`
    /// for any other cache.
    tokens: Option<serde_json::Value>,
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
    fn new(cache: &'a Cache, path: &'a Path) -> Result<Self, CliError> {
        let manifest: &Manifest = cache.manifest();
        let description = manifest.description();
        let shards: Vec<ShardInfo<'a>> = description.shards.iter().map(ShardInfo::new).collect();
        Ok(Self {
            path,
            format_version: manifest.format_version(),
            cache_id: manifest.stored_cache_id(),
            source: &description.source,
            samples: description.sample_count,
            schema: &description.metadata_schema,
            tokens: token_summary(cache, path)?,
            shard_bytes: shards.iter().map(|s| s.byte_len).sum(),
            uncompressed_shard_bytes: shards.iter().map(|s| s.uncompressed_byte_len).sum(),
            shards,
        })
    }
}

/// The `tokens` key of a token cache (checked as a token reader checks it) and the sum of its
/// documents' `n_tokens`, read from the mapped metadata (no payload).
fn token_summary(cache: &Cache, path: &Path) -> Result<Option<serde_json::Value>, CliError> {
    let Some(info) = TokenInfo::of_manifest(cache.manifest(), path)? else {
        return Ok(None);
    };
    let total = cache
        .schema()
        .position(N_TOKENS_COLUMN)
        .and_then(|column| cache.metadata().column(column))
        .map(|column| {
            column
                .values()
                .map(|v| match v {
                    ValueRef::Int64(n) => n.max(0).unsigned_abs(),
                    _ => 0,
                })
                .sum::<u64>()
        });
    let mut value = info.to_json();
    value["total"] = serde_json::json!(total);
    Ok(Some(value))
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
    let inspection = Inspection::new(&opened.cache, opened.name())?;
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
            let name = escape(&column.name);
            writeln!(f, "  {name:<20} {}{nullable}", column.ty)?;
        }
        if let Some(tokens) = &self.tokens {
            let field = |name: &str| match &tokens[name] {
                serde_json::Value::Null => "-".to_owned(),
                serde_json::Value::String(s) => escape(s).into_owned(),
                other => other.to_string(),
            };
            writeln!(
                f,
                "tokens      {} in all, {}, vocab_size {}, bos {}, eos {}, pad {}, tokenizer {}",
                field("total"),
                field("dtype"),
                field("vocab_size"),
                field("bos_id"),
                field("eos_id"),
                field("pad_id"),
                field("tokenizer")
            )?;
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
        shard.algo.name(),
        shard.ratio
    );
    line
}
