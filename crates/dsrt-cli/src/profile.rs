//! `dsrt profile`: runs the loader a training job would over the given caches for a while,
//! with a consumer taking batches at a given rate, and reports from the loader's stats whether
//! it keeps up and where its time went.

use crate::cache_open::open_all;
use crate::error::CliError;
use crate::output::{human_bytes, print, print_json};
use crate::store_args::StoreArgs;
use clap::Args;
use datasetrt::token_stream::{
    CacheSource, LoaderOptions, RunConfig, TokenConfig, TokenLoader, TokenPlan,
};
use datasetrt::{
    Dataset, Loader, LoaderConfig, OpenOptions, PlanConfig, RemainderPolicy, StatsSnapshot,
};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `dsrt profile`.
#[derive(Debug, Args)]
#[command(after_help = "\
Opens the caches, starts the loader (of samples, or with --seq-len of token rows) and takes
--batch-size batches from it for --seconds (or to the end of the epoch), at --consumer-rate
batches per second (as fast as they come without it), then reports: the time to open the
caches and to the first batch; batches, samples and tokens per second; the consumer's stall
share (its wait for batches over its wall time since the first one: near 0 means the loader
keeps up at that rate); and where the loader's threads spent their time: plan (finding the
steps' samples), download (waiting for shards from a store), read (reading and decompressing
records: decompression is not timed apart), assemble (a token batch's columns).

Examples:
  dsrt profile train/ --batch-size 256 --consumer-rate 20
  dsrt profile s3://bucket/tokens --seq-len 2048 --batch-size 8 --seconds 30 --json")]
pub(crate) struct ProfileArgs {
    /// Caches (directories or URLs), in dataset order.
    #[arg(value_name = "CACHE", required = true)]
    caches: Vec<PathBuf>,
    /// Batches of rows of this many input tokens from token caches, instead of samples.
    #[arg(long, value_name = "L")]
    seq_len: Option<u64>,
    /// Samples (or token rows) per batch.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..))]
    batch_size: u64,
    /// How long to run, at most.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Batches per second the consumer takes (default: as fast as they come).
    #[arg(long, value_name = "R")]
    consumer_rate: Option<f64>,
    /// Loader threads reading ahead.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Seed of the epoch's order.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    store: StoreArgs,
}

/// What `dsrt profile` reports (`--json`: this object).
#[derive(Debug, Serialize)]
struct Profile {
    open_s: f64,
    time_to_first_batch_s: Option<f64>,
    seconds: f64,
    batches: u64,
    samples: u64,
    tokens: u64,
    batches_per_s: f64,
    samples_per_s: f64,
    tokens_per_s: f64,
    consumer_rate: Option<f64>,
    stall_share: f64,
    /// Whether the stall share stays under 5% at the consumer rate (`None` without one: a
    /// consumer taking batches as fast as they come always waits).
    keeps_up: Option<bool>,
    bytes_read: u64,
    bytes_downloaded: u64,
    shard_cache_hits: u64,
    /// Seconds per stage, the loader's threads summed: open, plan, download, read, assemble.
    stages: Vec<(String, f64)>,
    /// The stage that took most of the loader threads' time.
    most_time: String,
    source_shares: Vec<f64>,
}

/// The stall share below which a loader keeps up.
const KEEPS_UP: f64 = 0.05;

/// What the consumer took.
#[derive(Debug, Clone, Copy)]
struct Taken {
    batches: u64,
    items: u64,
}

/// Takes batches of `batch` items from `items` for `args.seconds` at `args.consumer_rate`.
fn consume<T, E>(
    items: &mut dyn Iterator<Item = Result<T, E>>,
    batch: u64,
    args: &ProfileArgs,
) -> Result<Taken, E> {
    let started = Instant::now();
    let limit = Duration::from_secs_f64(args.seconds.max(0.0));
    let interval = args
        .consumer_rate
        .filter(|r| *r > 0.0)
        .map(|r| Duration::from_secs_f64(1.0 / r));
    let mut batches = 0u64;
    let mut taken_items = 0u64;
    let mut next_due = Instant::now();
    while started.elapsed() < limit {
        let mut taken = 0;
        while taken < batch {
            match items.next() {
                Some(item) => {
                    item?;
                    taken += 1;
                }
                None => break,
            }
        }
        if taken == 0 {
            break;
        }
        batches += 1;
        taken_items += taken;
        // The consumer works until its next batch is due (a training step of 1/R s).
        if let Some(interval) = interval {
            next_due += interval;
            if let Some(left) = next_due.checked_duration_since(Instant::now()) {
                std::thread::sleep(left);
            }
        }
    }
    Ok(Taken {
        batches,
        items: taken_items,
    })
}

pub(crate) fn run(args: &ProfileArgs) -> Result<(), CliError> {
    let opening = Instant::now();
    let dataset =
        Dataset::from_caches(open_all(&args.caches, OpenOptions::default(), &args.store)?)?;
    let open = opening.elapsed();
    let (stats, taken) = match args.seq_len {
        Some(seq_len) => {
            let source = CacheSource::new(dataset)?;
            let config = TokenConfig {
                seq_len,
                seed: args.seed,
                ..TokenConfig::default()
            };
            let run = RunConfig {
                world_size: 1,
                ranks_per_node: 1,
                policy: RemainderPolicy::Pad,
                ..RunConfig::default()
            };
            let plan = Arc::new(TokenPlan::new(&source, &config, &run)?);
            let options = LoaderOptions {
                batch_size: usize::try_from(args.batch_size).unwrap_or(usize::MAX),
                workers: args.workers,
                ..LoaderOptions::default()
            };
            let mut loader = TokenLoader::new(plan, Arc::new(source), options);
            let taken = consume(&mut loader, 1, args)?;
            let stats = loader.stats();
            let rows = stats.samples;
            (
                stats,
                Taken {
                    items: rows,
                    ..taken
                },
            )
        }
        None => {
            let config = LoaderConfig {
                plan: PlanConfig {
                    seed: args.seed,
                    ..PlanConfig::default()
                },
                world_size: 1,
                workers: args.workers,
                prefetch: 512,
                ..LoaderConfig::default()
            };
            let mut loader = Loader::new(Arc::new(dataset), config)?;
            let taken = consume(&mut loader, args.batch_size, args)?;
            (loader.stats(), taken)
        }
    };
    let profile = profile(args, open, &stats, taken);
    if args.json {
        return print_json(&profile);
    }
    print(human(&profile))
}

/// The report: the consumer's batches and samples (a sample loader reads ahead of them), the
/// loader's stats for the rest.
fn profile(args: &ProfileArgs, open: Duration, stats: &StatsSnapshot, taken: Taken) -> Profile {
    let mut stages = vec![("open".to_owned(), open.as_secs_f64())];
    stages.extend(
        stats
            .stages()
            .iter()
            .map(|(name, time)| ((*name).to_owned(), time.as_secs_f64())),
    );
    let most_time = stages
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|s| s.0.clone())
        .unwrap_or_default();
    let elapsed = stats.elapsed.as_secs_f64().max(1e-6);
    #[allow(clippy::cast_precision_loss)] // rates shown with a few digits
    let rate = |n: u64| n as f64 / elapsed;
    let stall_share = stats.stall_share();
    Profile {
        open_s: open.as_secs_f64(),
        time_to_first_batch_s: stats.time_to_first_batch.map(|t| t.as_secs_f64()),
        seconds: stats.elapsed.as_secs_f64(),
        batches: taken.batches,
        samples: taken.items,
        tokens: stats.tokens,
        batches_per_s: rate(taken.batches),
        samples_per_s: rate(taken.items),
        tokens_per_s: stats.tokens_per_second(),
        consumer_rate: args.consumer_rate,
        stall_share,
        keeps_up: args.consumer_rate.map(|_| stall_share < KEEPS_UP),
        bytes_read: stats.bytes_read,
        bytes_downloaded: stats.fetch.fetched_bytes,
        shard_cache_hits: stats.fetch.hits,
        stages,
        most_time,
        source_shares: stats.source_shares(),
    }
}

fn human(p: &Profile) -> String {
    let verdict = match p.keeps_up {
        Some(true) => "keeps up".to_owned(),
        Some(false) => format!(
            "does not keep up: the consumer waited {:.0}% of its time",
            p.stall_share * 100.0
        ),
        None => "the loader's throughput (no --consumer-rate to keep up with)".to_owned(),
    };
    let rate = p.consumer_rate.map_or_else(
        || "as fast as batches came".to_owned(),
        |r| format!("{r} batches/s"),
    );
    let first = p
        .time_to_first_batch_s
        .map_or_else(|| "-".to_owned(), |t| format!("{t:.3} s"));
    let stages: Vec<String> = p
        .stages
        .iter()
        .map(|(name, s)| format!("{name} {s:.3} s"))
        .collect();
    format!(
        "{verdict} (consumer at {rate})\n\
         open {:.3} s, first batch {first}\n\
         {} batches in {:.1} s: {:.1} batches/s, {:.1} samples/s, {:.0} tokens/s\n\
         stall share {:.3}\n\
         read {}, downloaded {}, {} shard cache hits\n\
         time by stage (loader threads summed): {}; most in {}\n",
        p.open_s,
        p.batches,
        p.seconds,
        p.batches_per_s,
        p.samples_per_s,
        p.tokens_per_s,
        p.stall_share,
        human_bytes(p.bytes_read),
        human_bytes(p.bytes_downloaded),
        p.shard_cache_hits,
        stages.join(", "),
        p.most_time,
    )
}
