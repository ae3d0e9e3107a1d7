//! `dsrt iterate`: one rank's share of an epoch, read the way a training job reads it, with a
//! throughput summary.

use crate::byte_size::parse_byte_size;
use crate::cache_open::{is_url, open_all};
use crate::epoch_args::{report_mixture_change, EpochArgs};
use crate::error::CliError;
use crate::output::{human_bytes, per_second, print, print_json, seconds};
use crate::progress::Progress;
use crate::store_args::StoreArgs;
use clap::Args;
use datasetrt::{Dataset, IterState, Loader, LoaderConfig, MixtureChange, OpenOptions};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `dsrt iterate`.
#[derive(Debug, Args)]
#[command(after_help = "\
The epoch's order depends only on the caches, --seed, --epoch, --weights and
--samples-per-epoch (or --schedule), --replacement and --shuffle (and, inside the few shard
windows where two nodes' shares meet, on the number of nodes the epoch started on); never on
--workers or --prefetch. Each node (--ranks-per-node ranks) takes one contiguous share of it,
dealt round-robin to its ranks, so each shard is read by one node; every rank yields the same
number of samples (printed first): with --policy pad the last round repeats samples its node
already read, with --policy drop it is dropped. A state saved with --save-state resumes on any
topology. `dsrt plan` reports what a plan reads without reading it.

Caches may be store URLs (s3://bucket/prefix, gs://, az://), mixed with directories: their
shards are downloaded into the local cache directory as the epoch needs them, the next ones
while the current ones are read (or, with --fetch range, read record by record).

Examples:
  dsrt iterate train/ val/ --seed 7 --epoch 0
  dsrt iterate s3://bucket/caches/train s3://bucket/caches/val --cache-dir /scratch/dsrt --keys
  dsrt iterate a/ b/ --weights 3,1 --samples-per-epoch 100000 --rank 1 --world-size 8 --workers 2
  dsrt iterate code/ web/ --schedule phases.json --rank 3 --world-size 8
  dsrt iterate s3://bucket/train --world-size 16 --ranks-per-node 8 --rank 9 --cache-dir /scratch/dsrt
  dsrt iterate cache/ --limit 1000 --save-state state.json && dsrt iterate cache/ --resume state.json")]
pub(crate) struct IterateArgs {
    /// Caches (directories or URLs), in dataset order (a v2 cache's id is its position).
    #[arg(required = true, value_name = "CACHE")]
    caches: Vec<PathBuf>,
    #[command(flatten)]
    epoch: EpochArgs,
    /// This rank.
    #[arg(long, default_value_t = 0)]
    rank: u64,
    /// Prefetching worker threads (0: read on the main thread).
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Samples each worker may read ahead of the consumer: workers hand over chunks of
    /// min(PREFETCH, 256) samples and hold at most PREFETCH; the order does not depend on it.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    prefetch: u64,
    /// Payload bytes read ahead of the consumer at most, whatever --prefetch allows: bytes,
    /// or with a KiB, MiB or GiB suffix (a single sample larger than that is still read)
    #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = parse_byte_size)]
    prefetch_bytes: u64,
    /// Stop after this many samples (the state then points at the next one).
    #[arg(long)]
    limit: Option<u64>,
    /// Write the iterator state (JSON) here when done.
    #[arg(long)]
    save_state: Option<PathBuf>,
    /// Print each sample's `cache_id sample_id` on stdout, one per line.
    #[arg(long)]
    keys: bool,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
    /// Hash index, metadata and shards before iterating.
    #[arg(long)]
    validate: bool,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Debug, Serialize)]
struct Summary {
    rank: u64,
    world_size: u64,
    ranks_per_node: u64,
    epoch: u64,
    epoch_samples: u64,
    samples_per_rank: u64,
    samples: u64,
    padding: u64,
    payload_bytes: u64,
    seconds: f64,
    samples_per_second: f64,
    bytes_per_second: f64,
    state: IterState,
    /// The change of mixture the run resumed under, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    mixture_change: Option<MixtureChange>,
}

impl IterateArgs {
    fn loader_config(&self) -> Result<LoaderConfig, CliError> {
        let topology = self.epoch.topology()?;
        Ok(LoaderConfig {
            plan: self.epoch.plan_config()?,
            epoch: self.epoch.epoch,
            rank: self.rank,
            world_size: topology.world_size,
            ranks_per_node: topology.ranks_per_node,
            policy: self.epoch.policy(),
            workers: self.workers,
            prefetch: usize::try_from(self.prefetch).unwrap_or(usize::MAX),
            prefetch_bytes: Some(self.prefetch_bytes),
            resume: self.epoch.resume_state()?,
        })
    }
}

/// Publishes the state file crash-safely (temp file beside it, fsync, rename, directory
/// fsync), so a crash or a full disk leaves the previous state whole rather than a torn one.
fn save_state(path: &Path, state: &IterState) -> Result<(), CliError> {
    let json = serde_json::to_vec_pretty(state).map_err(|e| CliError::Invalid(e.to_string()))?;
    let name = path
        .file_name()
        .map_or_else(|| "state".into(), |n| n.to_string_lossy());
    let published = durable_fs::publish(
        &durable_fs::StdFileSystem,
        path,
        &format!(".{name}.tmp-"),
        &json,
    )
    .map_err(|e| CliError::Io {
        path: path.to_path_buf(),
        action: "write state file",
        source: std::io::Error::new(e.source.kind(), format!("{}: {}", e.step, e.source)),
    })?;
    if let durable_fs::Published::DurabilityUnknown(e) = published {
        eprintln!(
            "warning: {}: state file written, but fsyncing its directory failed ({e}); \
             a power loss may bring back the previous state",
            path.display()
        );
    }
    Ok(())
}

/// The dataset of `args.caches`; a list without URLs is opened exactly as `Dataset::open`
/// opens directories.
fn open_dataset(args: &IterateArgs, options: OpenOptions) -> Result<Dataset, CliError> {
    if !args.caches.iter().any(|c| is_url(c)) {
        return Ok(Dataset::open(&args.caches, options)?);
    }
    Ok(Dataset::from_caches(open_all(
        &args.caches,
        options,
        &args.store,
    )?)?)
}

/// Runs `dsrt iterate`.
pub(crate) fn run(args: &IterateArgs) -> Result<(), CliError> {
    if args.rank >= args.epoch.world_size {
        return Err(CliError::Invalid(format!(
            "--rank {} is not below --world-size {}",
            args.rank, args.epoch.world_size
        )));
    }
    let options = OpenOptions {
        validate_cache: args.validate,
    };
    // Settings files (--schedule, --resume) are read before any cache is opened, so a bad one
    // is reported before downloads begin.
    let config = args.loader_config()?;
    let dataset = Arc::new(open_dataset(args, options)?);
    let mut loader = Loader::new(dataset, config).map_err(|e| args.epoch.plan_error(e))?;
    let mixture_change = loader.plan().mixture_change().cloned();
    report_mixture_change(mixture_change.as_ref());
    let samples_per_rank = loader.len();
    let to_read = args
        .limit
        .map_or(samples_per_rank, |limit| limit.min(samples_per_rank));
    if !args.json && !args.keys {
        print(format_args!(
            "rank {} of {} (node {} of {}): {} samples per rank (epoch {} has {} samples, policy {:?})\n",
            args.rank,
            args.epoch.world_size,
            loader.rank_partition().node(),
            loader.rank_partition().topology().nodes(),
            samples_per_rank,
            args.epoch.epoch,
            loader.epoch_len(),
            args.epoch.policy
        ))?;
    }
    let progress = Progress::samples("iterating", Some(to_read));
    let started = Instant::now();
    let (mut samples, mut padding, mut payload_bytes) = (0u64, 0u64, 0u64);
    let mut stdout = std::io::stdout().lock();
    for item in loader
        .by_ref()
        .take(usize::try_from(to_read).unwrap_or(usize::MAX))
    {
        let item = item?;
        samples += 1;
        padding += u64::from(item.padding);
        payload_bytes += item.payload.len() as u64;
        if args.keys {
            writeln!(stdout, "{} {}", item.key.cache_id, item.key.sample_id)
                .map_err(CliError::Stdout)?;
        }
        progress.inc();
    }
    stdout.flush().map_err(CliError::Stdout)?;
    drop(stdout);
    progress.finish();
    let elapsed = started.elapsed();
    let state = loader.state();
    if let Some(path) = &args.save_state {
        save_state(path, &state)?;
    }
    let summary = Summary {
        rank: args.rank,
        world_size: args.epoch.world_size,
        ranks_per_node: args.epoch.ranks_per_node,
        epoch: args.epoch.epoch,
        epoch_samples: loader.epoch_len(),
        samples_per_rank,
        samples,
        padding,
        payload_bytes,
        seconds: seconds(elapsed),
        samples_per_second: per_second(samples, elapsed),
        bytes_per_second: per_second(payload_bytes, elapsed),
        state,
        mixture_change,
    };
    if args.json {
        print_json(&summary)
    } else if args.keys {
        Ok(())
    } else {
        // A display figure: the fraction and anything past 2^64 B/s do not matter.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let rate = summary.bytes_per_second as u64;
        print(format_args!(
            "read {} samples ({} padding), {} in {:.2} s: {:.0} samples/s, {}/s\n",
            summary.samples,
            summary.padding,
            human_bytes(payload_bytes),
            summary.seconds,
            summary.samples_per_second,
            human_bytes(rate)
        ))
    }
}
