//! `dsrt plan`: what an epoch's plan reads on a topology, from the caches' manifests and
//! indexes (or a synthetic shape) alone: no payload is read. With `--seq-len`, the plan of an
//! epoch of token rows (windows or bins) instead of samples.

use crate::cache_open::open_all;
use crate::epoch_args::{report_mixture_change, EpochArgs};
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
process's plan takes. With --schedule, each phase's positions and per-cache shares as well.
Exact: computed from the same plan `dsrt iterate` reads.

With --seq-len L, the plan of rows of L input tokens instead of samples (docs/tokens.md): rows
per rank, tokens padded and dropped, each source's share of the epoch's tokens (--weights are
shares of tokens, --tokens-per-epoch the budget), the shards and bytes each node reads, and
rank 0's shuffle figures over 256-row blocks. --synthetic-tokens plans documents of long-tailed
lengths instead of caches. --schedule FILE with --seq-len takes phases counted in tokens,
{\"phases\": [{\"tokens\": N, \"weights\": [..]}, ..]}, and reports each phase's start and each
source's tokens and share in it.

Examples:
  dsrt plan s3://bucket/train --world-size 64 --ranks-per-node 8
  dsrt plan --synthetic 1000000000,100000 --world-size 512 --ranks-per-node 8 --json
  dsrt plan train/ --world-size 6 --ranks-per-node 2 --resume state.json
  dsrt plan code/ web/ --schedule phases.json --world-size 64 --ranks-per-node 8
  dsrt plan --synthetic-tokens 500000000,100000,2000 --seq-len 2048 --world-size 512 --ranks-per-node 8")]
pub(crate) struct PlanArgs {
    /// Caches (directories or URLs), in dataset order. Only manifests and indexes are read.
    #[arg(
        value_name = "CACHE",
        required_unless_present_any = ["synthetic", "synthetic_tokens"],
        conflicts_with_all = ["synthetic", "synthetic_tokens"]
    )]
    caches: Vec<PathBuf>,
    /// Plan a synthetic cache instead: SAMPLES,SHARDS[,SAMPLE_BYTES] (equal shards; samples of
    /// 4096 bytes unless given).
    #[arg(long, value_name = "SAMPLES,SHARDS[,BYTES]", value_parser = parse_synthetic)]
    synthetic: Option<Synthetic>,
    /// Plan documents instead of token caches: DOCS,SHARDS,MEAN_TOKENS (equal shards;
    /// log-normal lengths of that mean, 2-byte tokens). Needs --seq-len.
    #[arg(
        long,
        value_name = "DOCS,SHARDS,MEAN_TOKENS",
        value_parser = parse_synthetic_tokens,
        conflicts_with = "synthetic",
        requires = "seq_len"
    )]
    synthetic_tokens: Option<SyntheticTokens>,
    #[command(flatten)]
    tokens: TokenArgs,
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

/// The token stream's settings of `dsrt plan` (used with `--seq-len`).
#[derive(Debug, Args)]
struct TokenArgs {
    /// Plan rows of this many input tokens from token caches (windows of L + 1 with
    /// --mode concat, bins of L when packing) instead of samples.
    #[arg(long, value_name = "L")]
    seq_len: Option<u64>,
    /// How documents become rows.
    #[arg(long, value_enum, default_value_t = ModeArg::Concat, requires = "seq_len")]
    mode: ModeArg,
    /// The epoch's token budget when --weights are given (default: all the sources' tokens).
    #[arg(long, requires = "seq_len", conflicts_with = "schedule")]
    tokens_per_epoch: Option<u64>,
    /// Rows permuted together on top of the document order.
    #[arg(long, default_value_t = datasetrt::token_stream::DEFAULT_WINDOW_BLOCK, requires = "seq_len")]
    window_block: u64,
    /// Open bins when packing.
    #[arg(long, default_value_t = datasetrt::token_stream::DEFAULT_PACKING_BINS, requires = "seq_len")]
    packing_bins: usize,
    /// Documents longer than L when packing: split, truncate or refuse.
    #[arg(long, value_enum, default_value_t = LongDocsArg::Split, requires = "seq_len")]
    long_docs: LongDocsArg,
    /// Begin each document with this token, unless its cache's documents already do.
    #[arg(long, requires = "seq_len")]
    bos_id: Option<u32>,
    /// End each document with this token, unless its cache's documents already do.
    #[arg(long, requires = "seq_len")]
    eos_id: Option<u32>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ModeArg {
    Concat,
    FirstFit,
    BestFit,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum LongDocsArg {
    Split,
    Truncate,
    Refuse,
}

/// A synthetic token source: documents, equal shards, mean tokens per document.
#[derive(Debug, Clone, Copy)]
struct SyntheticTokens {
    docs: u64,
    shards: u64,
    mean_tokens: u64,
}

fn parse_synthetic_tokens(text: &str) -> Result<SyntheticTokens, String> {
    let numbers = text
        .split(',')
        .map(|n| n.trim().replace('_', "").parse::<u64>())
        .collect::<Result<Vec<u64>, _>>()
        .map_err(|e| format!("{text:?}: {e}"))?;
    let [docs, shards, mean_tokens] = numbers[..] else {
        return Err(format!("{text:?}: expected DOCS,SHARDS,MEAN_TOKENS"));
    };
    if shards == 0 || shards > docs {
        return Err(format!("{text:?}: need between 1 and {docs} shards"));
    }
    if mean_tokens == 0 {
        return Err(format!(
            "{text:?}: documents need at least one token on average"
        ));
    }
    Ok(SyntheticTokens {
        docs,
        shards,
        mean_tokens,
    })
}

/// `dsrt plan --seq-len`: the plan of an epoch of token rows.
fn run_tokens(args: &PlanArgs, seq_len: u64, started: Instant) -> Result<(), CliError> {
    use datasetrt::token_stream::{
        CacheSource, LongDocs, PackMode, RunConfig, SyntheticSource, SyntheticSpec, TokenConfig,
        TokenPlan, TokenReport, TokenState, TokenStreamError,
    };
    let plan_config = args.epoch.order_config();
    if args.epoch.samples_per_epoch.is_some() {
        return Err(CliError::Invalid(
            "--samples-per-epoch counts samples; with --seq-len the budget is \
             --tokens-per-epoch"
                .into(),
        ));
    }
    let config = TokenConfig {
        seq_len,
        mode: match args.tokens.mode {
            ModeArg::Concat => PackMode::Concat,
            ModeArg::FirstFit => PackMode::FirstFit,
            ModeArg::BestFit => PackMode::BestFit,
        },
        long_docs: match args.tokens.long_docs {
            LongDocsArg::Split => LongDocs::Split,
            LongDocsArg::Truncate => LongDocs::Truncate,
            LongDocsArg::Refuse => LongDocs::Refuse,
        },
        weights: plan_config.weights.clone(),
        tokens_per_epoch: args.tokens.tokens_per_epoch,
        sampling: if args.epoch.replacement {
            datasetrt::Sampling::RunsWithReplacement
        } else {
            datasetrt::Sampling::WithoutReplacement
        },
        seed: plan_config.seed,
        shuffle: plan_config.shuffle,
        window_block: args.tokens.window_block,
        packing_bins: args.tokens.packing_bins,
        bos_id: args.tokens.bos_id,
        eos_id: args.tokens.eos_id,
        schedule: args.epoch.schedule()?,
        ..TokenConfig::default()
    };
    let schedule_fault = |error: TokenStreamError| match &error {
        TokenStreamError::Plan(plan) => args
            .epoch
            .schedule_fault(plan)
            .unwrap_or(CliError::TokenStream(error)),
        _ => CliError::TokenStream(error),
    };
    let resume: Option<TokenState> = match &args.epoch.resume {
        Some(path) => {
            let text = std::fs::read(path).map_err(CliError::io(path, "read state file"))?;
            Some(serde_json::from_slice(&text).map_err(|e| {
                CliError::Invalid(format!("{}: not a token stream state: {e}", path.display()))
            })?)
        }
        None => None,
    };
    let topology = args.epoch.topology()?;
    let run = RunConfig {
        epoch: args.epoch.epoch,
        rank: 0,
        world_size: topology.world_size,
        ranks_per_node: topology.ranks_per_node,
        policy: args.epoch.policy(),
        resume,
    };
    let mut report = match args.synthetic_tokens {
        Some(spec) => {
            let source = SyntheticSource::new(vec![SyntheticSpec::new(
                spec.docs,
                spec.shards,
                spec.mean_tokens,
            )]);
            {
                let plan = TokenPlan::new(&source, &config, &run).map_err(schedule_fault)?;
                TokenReport::compute(&plan, &source, 64)?
            }
        }
        None => {
            // Only manifests, indexes and metadata are read (and, with --bos-id or --eos-id,
            // each document's ends, to count those that carry them).
            let dataset =
                Dataset::from_caches(open_all(&args.caches, OpenOptions::default(), &args.store)?)?;
            let source = CacheSource::new(dataset)?;
            {
                let plan = TokenPlan::new(&source, &config, &run).map_err(schedule_fault)?;
                TokenReport::compute(&plan, &source, 64)?
            }
        }
    };
    if args.summary {
        report.nodes.clear();
    }
    if args.json {
        return print_json(&report);
    }
    print(format_args!(
        "epoch {} of {} tokens in {} rows of {} ({}; {} remaining) on {} ranks, {} nodes of {}\n\
         rows per rank: {} ({} padding rows, {} dropped)\n\
         tokens padded: {} ({:.3}% of the rows read), dropped: {}\n",
        args.epoch.epoch,
        report.epoch_tokens,
        report.rows,
        report.seq_len,
        report.mode,
        report.remaining_rows,
        report.world_size,
        report.world_size / report.ranks_per_node,
        report.ranks_per_node,
        report.rows_per_rank,
        report.padding_rows,
        report.dropped_rows,
        report.padded_tokens,
        report.padding_fraction * 100.0,
        report.dropped_tokens,
    ))?;
    for source in &report.sources {
        print(format_args!(
            "source {}: {} of {} tokens ({:.4} of the epoch; budget {}), {} documents read of {}\n",
            source.name,
            source.tokens,
            source.natural_tokens,
            source.share,
            source.budget,
            source.epoch_documents,
            source.documents,
        ))?;
    }
    for phase in &report.phases {
        print(format_args!(
            "phase {}: from token {}, {} tokens (scheduled {})\n",
            phase.phase, phase.start, phase.tokens, phase.scheduled_tokens
        ))?;
        for (name, source) in report.sources.iter().zip(&phase.sources) {
            print(format_args!(
                "  source {}: {} tokens ({:.4} of the phase; budget {}), {} documents\n",
                name.name, source.tokens, source.share, source.budget, source.documents
            ))?;
        }
    }
    print(format_args!(
        "egress factor: {:.4} ({} downloaded for {} of shards read; {} shards, {} read by more than one node)\n\
         rank 0 shuffle: {:.1} distinct shards per 256 rows, rank correlation with physical order {:.4}\n\
         plan memory per process: {}\n",
        report.egress_factor,
        human_bytes(report.downloaded_bytes),
        human_bytes(report.dataset_bytes),
        report.shards_read,
        report.shards_read_by_more_than_one_node,
        report.shuffle.distinct_shards_per_256_rows,
        report.shuffle.physical_rank_correlation,
        human_bytes(report.plan_bytes),
    ))?;
    if !report.nodes.is_empty() {
        print(format_args!("node  shards  downloads\n"))?;
        for node in &report.nodes {
            print(format_args!(
                "{:>4}  {:>6}  {:>9}\n",
                node.node,
                node.shards,
                human_bytes(node.bytes)
            ))?;
        }
    }
    print(format_args!(
        "planned in {:.2} s\n",
        started.elapsed().as_secs_f64()
    ))
}

/// Runs `dsrt plan`.
pub(crate) fn run(args: &PlanArgs) -> Result<(), CliError> {
    let started = Instant::now();
    if let Some(seq_len) = args.tokens.seq_len {
        return run_tokens(args, seq_len, started);
    }
    let topology = args.epoch.topology()?;
    let policy = args.epoch.policy();
    let config = args.epoch.plan_config()?;
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
    .map_err(|e| args.epoch.plan_error(e.into()))?;
    report_mixture_change(plan.mixture_change());
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
    for phase in &report.phases {
        print(format_args!(
            "phase {}: {} samples from position {}, per cache {}\n",
            phase.phase,
            phase.samples,
            phase.start,
            phase
                .shares
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        ))?;
    }
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
