//! `dsrt demo`: the whole job on a sample set shipped inside the binary. It packs the set
//! (lz4, small shards so there are several), verifies the cache fully, reads a few samples
//! back and prints them with the pack summary. It needs no input and no network.

use crate::cache_open::open_cache;
use crate::error::CliError;
use crate::output::{print, RowJson};
use crate::pack::{pack_jsonl, JsonlInput, JsonlJob, PackReport, PackTarget};
use clap::Args;
use datasetrt::pack::{JsonlOptions, PayloadEncoding};
use datasetrt::{Cache, CompressionAlgo, OpenOptions, SampleBuf};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The shipped sample set: one JSON object per line, the payload inline in `text`, metadata
/// of all four types with nulls, missing keys and non-ASCII text.
const SAMPLES: &str = include_str!("../data/samples.jsonl");
/// Small enough that the set spans several shards.
const DEMO_MAX_SHARD_BYTES: u64 = 4096;
/// Longest payload excerpt printed per sample, in characters.
const EXCERPT_CHARS: usize = 60;

/// Arguments of `dsrt demo`.
#[derive(Debug, Args)]
#[command(after_help = "\
Packs the sample set compiled into dsrt (120 JSONL lines with text payloads) as
`dsrt pack --jsonl samples.jsonl --payload-field text --payload-encoding text
--compression lz4 --max-shard-bytes 4096` would, verifies the cache as `dsrt verify --full`
does, and prints a few samples read back.

Examples:
  dsrt demo
  dsrt demo --out /tmp/demo-cache && dsrt inspect /tmp/demo-cache")]
pub(crate) struct DemoArgs {
    /// Keep the cache in this (empty or new) directory; by default a temporary directory is
    /// used and removed afterwards.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Runs `dsrt demo`.
pub(crate) fn run(args: &DemoArgs) -> Result<(), CliError> {
    // Held until the end of the run; dropping it removes the temporary cache.
    let temp_dir;
    let out = match &args.out {
        Some(out) => out.clone(),
        None => {
            temp_dir = tempfile::tempdir().map_err(CliError::io(
                std::env::temp_dir(),
                "create temporary directory",
            ))?;
            temp_dir.path().join("demo-cache")
        }
    };
    let report = pack_demo(&out)?;
    print(&report)?;
    let cache = verify_fully(&out)?;
    print(format_args!(
        "verified {} samples (checksums, embedded metadata, payloads): ok\n",
        cache.len()
    ))?;
    print(samples_text(&cache)?)?;
    if args.out.is_none() {
        print("the cache was in a temporary directory, now removed; keep one with --out DIR\n")?;
    }
    Ok(())
}

fn pack_demo(out: &Path) -> Result<PackReport, CliError> {
    let job = JsonlJob {
        input: JsonlInput::Embedded {
            name: "embedded samples.jsonl",
            text: SAMPLES,
        },
        options: JsonlOptions::new("text").encoding(PayloadEncoding::Text),
        infer: true,
    };
    let target = PackTarget {
        out: out.to_path_buf(),
        source: "dsrt-demo".to_owned(),
        compression: CompressionAlgo::Lz4,
        max_shard_bytes: DEMO_MAX_SHARD_BYTES,
        overwrite_partial: false,
        io_threads: true,
    };
    pack_jsonl(job, &target, None)
}

/// Opens with every checksum checked, then reads every sample (embedded metadata, payload).
fn verify_fully(path: &Path) -> Result<Cache, CliError> {
    let cache = open_cache(path, OpenOptions::validated())?;
    let mut buf = SampleBuf::new();
    for sample in 0..cache.len() {
        cache.read(sample, &mut buf)?;
    }
    Ok(cache)
}

/// The first, a middle and the last sample: metadata as JSON, payload as an excerpt.
fn samples_text(cache: &Cache) -> Result<String, CliError> {
    let mut text = String::new();
    let last = cache.len().saturating_sub(1);
    let mut picks = vec![0, cache.len() / 2, last];
    picks.dedup();
    let mut buf = SampleBuf::new();
    for sample in picks.into_iter().filter(|&s| s < cache.len()) {
        let read = cache.read(sample, &mut buf)?;
        let metadata = serde_json::to_string(&RowJson {
            schema: cache.schema(),
            row: read.metadata,
        })
        .map_err(|e| CliError::Invalid(format!("sample {sample}: metadata as JSON: {e}")))?;
        let payload = String::from_utf8_lossy(read.payload);
        let excerpt: String = payload.chars().take(EXCERPT_CHARS).collect();
        let more = if payload.chars().count() > EXCERPT_CHARS {
            "..."
        } else {
            ""
        };
        // Writing into a String cannot fail.
        let _ = writeln!(text, "sample {sample}: {metadata}");
        let _ = writeln!(
            text,
            "  payload ({} bytes): {excerpt:?}{more}",
            read.payload.len()
        );
    }
    Ok(text)
}
