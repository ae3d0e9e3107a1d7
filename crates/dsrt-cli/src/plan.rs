//! `dsrt plan`: what an epoch's plan reads on a topology, from the caches' manifests and
//! indexes (or a synthetic shape) alone: no payload is read.

use crate::cache_open::open_all;
use crate::epoch_args::EpochArgs;
use crate::error::CliError;
use crate::output::{human_bytes, print, print_json};
use crate::store_args::StoreArgs;
use clap::Args;
use datasetrt::{CacheShape, Dataset, EpochPlan, OpenOptions, PlanReport, ReportOptions};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `dsrt plan`.
#[derive(Debug, Args)]
#[command(after_help = "\
Reports, for one epoch on --world-size ranks in nodes of --ranks-per-node: the steps every
rank takes and the padding; per node the shards it reads, their bytes (what it downloads with
an unbounded local cache) and the most it holds at once (the windows it reads plus
--prefetch-shards ahead); the egress factor (bytes all nodes download / bytes of the shards
read); how many shards more than one node reads; rank 0's shuffle figures; and the memory one
process's plan takes. Exact: computed from the same plan `dsrt iterate` reads.

Examples:
  dsrt plan s3://bucket/train --world-size 64 --ranks-per-node 8
  dsrt plan --synthetic 1000000000,100000 --world-size 512 --ranks-per-node 8 --json
  dsrt plan train/ --world-size 6 --ranks-per-node 2 --resume state.json")]
pub(crate) struct PlanArgs {
    /// Caches (directories or URLs), in dataset order. Only manifests and indexes are read.
    #[arg(
        value_name = "CACHE",
        required_unless_present = "synthetic",
        conflicts_with = "synthetic"
    )]
    caches: Vec<PathBuf>,
    /// Plan a synthetic cache instead: SAMPLES,SHARDS[,SAMPLE_BYTES] (equal shards; samples of
    /// 4096 bytes unless given).
    #[arg(long, value_name = "SAMPLES,SHARDS[,BYTES]", value_parser = parse_synthetic)]
    synthetic: Option<Synthetic>,
    #[command(flatten)]
    epoch: EpochArgs,
    /// Shards a node downloads ahead of those it reads (a remote cache's prefetch).
    #[arg(long, default_value_t = datasetrt::DEFAULT_PREFETCH_SHARDS)]
    prefetch_shards: usize,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
    /// Leave the per-node rows out of the output.
    #[arg(long)]
    summary: bool,
    #[command(flatten)]
    store: StoreArgs,
}

/// Sample sizes a synthetic shape assumes unless given.
const SYNTHETIC_SAMPLE_BYTES: u64 = 4096;

/// The shapes to plan and each shard's bytes.
struct Shapes {
    shapes: Vec<CacheShape>,
    shard_bytes: Vec<Vec<u64>>,
}

/// A synthetic cache: samples, equal shards, bytes per sample.
#[derive(Debug, Clone, Copy)]
struct Synthetic {
    samples: u64,
    shards: u64,
    sample_bytes: u64,
}

fn parse_synthetic(text: &str) -> Result<Synthetic, String> {
    let numbers = text
        .split(',')
        .map(|n| n.trim().replace('_', "").parse::<u64>())
        .collect::<Result<Vec<u64>, _>>()
        .map_err(|e| format!("{text:?}: {e}"))?;
    let (samples, shards, sample_bytes) = match numbers[..] {
        [samples, shards] => (samples, shards, SYNTHETIC_SAMPLE_BYTES),
        [samples, shards, bytes] => (samples, shards, bytes),
        _ => {
            return Err(format!(
                "{text:?}: expected SAMPLES,SHARDS or SAMPLES,SHARDS,BYTES"
            ))
        }
    };
    if shards == 0 || shards > samples {
        return Err(format!("{text:?}: need between 1 and {samples} shards"));
    }
    Ok(Synthetic {
        samples,
        shards,
        sample_bytes,
    })
}

fn synthetic(spec: Synthetic) -> Shapes {
    let Synthetic {
        samples,
        shards,
        sample_bytes,
    } = spec;
    let shape = CacheShape::equal_shards(samples, shards);
    let shard_bytes = shape
        .runs
        .iter()
        .map(|r| (r.end - r.start) * sample_bytes)
        .collect();
    Shapes {
        shapes: vec![shape],
        shard_bytes: vec![shard_bytes],
    }
}

fn from_caches(args: &PlanArgs) -> Result<Shapes, CliError> {
    let dataset =
        Dataset::from_caches(open_all(&args.caches, OpenOptions::default(), &args.store)?)?;
    let shard_bytes = dataset
        .caches()
        .iter()
        .map(|c| {
            c.cache
                .manifest()
                .description()
                .shards
                .iter()
                .map(|s| s.byte_len)
                .collect()
        })
        .collect();
    Ok(Shapes {
        shapes: dataset.shapes(),
        shard_bytes,
    })
}

/// Runs `dsrt plan`.
pub(crate) fn run(args: &PlanArgs) -> Result<(), CliError> {
    let started = Instant::now();
    let topology = args.epoch.topology()?;
    let policy = args.epoch.policy();
    let config = args.epoch.plan_config();
    let shapes = match &args.synthetic {
        Some(spec) => synthetic(*spec),
        None => from_caches(args)?,
    };
    let resume = args.epoch.resume_state()?;
    let (plan, state) = EpochPlan::for_run(
        &shapes.shapes,
        &config,
        args.epoch.epoch,
        topology,
        policy,
        resume.as_ref(),
    )
    .map_err(datasetrt::DatasetError::from)?;
    let bytes = |cache: usize, shard: u64| {
        shapes.shard_bytes[cache]
            .get(usize::try_from(shard).unwrap_or(usize::MAX))
            .copied()
            .unwrap_or(0)
    };
    let options = ReportOptions {
        prefetch_shards: args.prefetch_shards,
        ..ReportOptions::default()
    };
    let mut report = PlanReport::compute(&plan, topology, policy, &state, &bytes, options)
        .map_err(datasetrt::DatasetError::from)?;
    if args.summary {
        report.nodes.clear();
    }
    if args.json {
        return print_json(&report);
    }
    print(format_args!(
        "epoch {} of {} samples ({} remaining) on {} ranks, {} nodes of {}\n\
         steps per rank: {} ({} padding, {} dropped)\n\
         egress factor: {:.4} ({} downloaded for {} of shards read; {} shards, {} read by more than one node)\n\
         peak local cache per node: {} (prefetching {} shards)\n\
         rank 0 shuffle: {:.1} distinct shards per 256 samples, rank correlation with physical order {:.4}\n\
         plan memory per process: {}\n",
        args.epoch.epoch,
        report.epoch_len,
        report.remaining,
        report.world_size,
        report.world_size / report.ranks_per_node,
        report.ranks_per_node,
        report.steps_per_rank,
        report.padding,
        report.dropped,
        report.egress_factor,
        human_bytes(report.downloaded_bytes),
        human_bytes(report.dataset_bytes),
        report.shards_read,
        report.shards_read_by_more_than_one_node,
        human_bytes(report.peak_local_bytes_per_node),
        args.prefetch_shards,
        report.shuffle.distinct_shards_per_256,
        report.shuffle.physical_rank_correlation,
        human_bytes(report.plan_bytes),
    ))?;
    if !report.nodes.is_empty() {
        print(format_args!("node  shards  downloads  peak local\n"))?;
        for node in &report.nodes {
            print(format_args!(
                "{:>4}  {:>6}  {:>9}  {:>10}\n",
                node.node,
                node.shards,
                human_bytes(node.bytes),
                human_bytes(node.peak_local_bytes)
            ))?;
        }
    }
    print(format_args!(
        "planned in {:.2} s\n",
        started.elapsed().as_secs_f64()
    ))
}
