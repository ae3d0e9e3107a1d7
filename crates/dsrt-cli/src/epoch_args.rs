//! The flags that decide an epoch's plan on a topology, shared by `dsrt iterate` and
//! `dsrt plan` so both mean the same by each.

use crate::error::CliError;
use crate::output::warn;
use clap::{Args, ValueEnum};
use datasetrt::{
    DatasetError, IterState, MixtureChange, PlanConfig, PlanError, RemainderPolicy, Sampling,
    Shuffle, Topology,
};
use std::path::PathBuf;

/// The epoch's order and how the job's ranks share it.
#[derive(Debug, Args)]
pub(crate) struct EpochArgs {
    /// Sampling weight per cache, comma-separated, in the same order.
    #[arg(long, value_delimiter = ',')]
    pub(crate) weights: Option<Vec<f64>>,
    /// Epoch length when weights are given (default: all samples).
    #[arg(long)]
    pub(crate) samples_per_epoch: Option<u64>,
    /// Weights that change along the epoch: a JSON file of phases, each with its length in
    /// samples and one weight per cache, {"phases": [{"samples": N, "weights": [..]}, ..]}
    /// (with --seq-len, in tokens: {"tokens": N, ..}); the epoch is the phases in order
    /// (docs/iteration.md and docs/tokens.md, "Schedules").
    #[arg(long, value_name = "FILE", conflicts_with_all = ["weights", "samples_per_epoch"])]
    pub(crate) schedule: Option<PathBuf>,
    /// Draw with replacement instead of passes over each cache.
    #[arg(long)]
    pub(crate) replacement: bool,
    /// Order within the epoch.
    #[arg(long, value_enum, default_value_t = ShuffleArg::Local)]
    pub(crate) shuffle: ShuffleArg,
    /// Shards per shuffle window with --shuffle local.
    #[arg(long, default_value_t = 4)]
    pub(crate) window_shards: usize,
    /// The seed.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// The epoch.
    #[arg(long, default_value_t = 0)]
    pub(crate) epoch: u64,
    /// Number of ranks.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) world_size: u64,
    /// Ranks per node (torchrun's LOCAL_WORLD_SIZE); divides --world-size. Each node reads
    /// its own contiguous share of the epoch, so each shard is downloaded by one node.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) ranks_per_node: u64,
    /// What to do with an incomplete last round.
    #[arg(long, value_enum, default_value_t = PolicyArg::Pad)]
    pub(crate) policy: PolicyArg,
    /// Resume from a state file written by `dsrt iterate --save-state`, on any topology.
    #[arg(long)]
    pub(crate) resume: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum ShuffleArg {
    Local,
    Full,
    Sequential,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum PolicyArg {
    Pad,
    Drop,
}

impl EpochArgs {
    /// The plan's settings, with the `--schedule` file read.
    pub(crate) fn plan_config(&self) -> Result<PlanConfig, CliError> {
        Ok(PlanConfig {
            schedule: self.schedule()?,
            ..self.order_config()
        })
    }

    /// The plan's settings without a schedule (no file is read): what a token stream takes
    /// of them, its schedule counted in tokens ([`EpochArgs::schedule`]).
    pub(crate) fn order_config(&self) -> PlanConfig {
        PlanConfig {
            seed: self.seed,
            weights: self.weights.clone(),
            samples_per_epoch: self.samples_per_epoch,
            sampling: if self.replacement {
                Sampling::WithReplacement
            } else {
                Sampling::WithoutReplacement
            },
            shuffle: match self.shuffle {
                ShuffleArg::Local => Shuffle::Local {
                    window_shards: self.window_shards.max(1),
                },
                ShuffleArg::Full => Shuffle::Full,
                ShuffleArg::Sequential => Shuffle::Sequential,
            },
            schedule: None,
        }
    }

    /// The schedule `--schedule` names, if any: of samples (`Schedule`) or of tokens
    /// (`TokenSchedule`), the same file format with the length's unit as its key.
    pub(crate) fn schedule<T: serde::de::DeserializeOwned>(&self) -> Result<Option<T>, CliError> {
        let Some(path) = &self.schedule else {
            return Ok(None);
        };
        let bad = |reason: String| CliError::ScheduleFile {
            path: path.clone(),
            reason,
        };
        let text = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
        let schedule = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
        Ok(Some(schedule))
    }

    /// `error` from building the plan, told as a fault of the `--schedule` file when the plan
    /// refused the schedule.
    pub(crate) fn plan_error(&self, error: DatasetError) -> CliError {
        match &error {
            DatasetError::Plan(plan) => match self.schedule_fault(plan) {
                Some(fault) => fault,
                None => CliError::Dataset(error),
            },
            _ => CliError::Dataset(error),
        }
    }

    /// A plan's refusal of the `--schedule` file, as a fault of that file; `None` for other
    /// refusals.
    pub(crate) fn schedule_fault(&self, error: &PlanError) -> Option<CliError> {
        let reason = match (&self.schedule, error) {
            (Some(_), PlanError::Phase { phase, problem }) => format!("phases[{phase}]: {problem}"),
            (Some(_), PlanError::Schedule(problem)) => problem.clone(),
            _ => return None,
        };
        Some(CliError::ScheduleFile {
            path: self.schedule.clone().unwrap_or_default(),
            reason,
        })
    }

    pub(crate) fn policy(&self) -> RemainderPolicy {
        match self.policy {
            PolicyArg::Pad => RemainderPolicy::Pad,
            PolicyArg::Drop => RemainderPolicy::Drop,
        }
    }

    pub(crate) fn topology(&self) -> Result<Topology, CliError> {
        Topology::new(self.world_size, self.ranks_per_node).map_err(|_| {
            CliError::Invalid(format!(
                "--world-size {} is not a multiple of --ranks-per-node {}",
                self.world_size, self.ranks_per_node
            ))
        })
    }

    /// The state `--resume` names, if any.
    pub(crate) fn resume_state(&self) -> Result<Option<IterState>, CliError> {
        let Some(path) = &self.resume else {
            return Ok(None);
        };
        let text = std::fs::read(path).map_err(CliError::io(path, "read state file"))?;
        let state: IterState = serde_json::from_slice(&text).map_err(|e| {
            CliError::Invalid(format!("{}: not an iterator state: {e}", path.display()))
        })?;
        Ok(Some(state))
    }
}

/// Says on stderr how the mixture changed where a state was resumed under another one, and
/// warns of each cache removed with what of it was consumed: the rest of its share is not
/// read, which a run should not learn only from its results.
pub(crate) fn report_mixture_change(change: Option<&MixtureChange>) {
    let Some(change) = change else { return };
    warn(format_args!("note: {change}"));
    for removed in &change.removed {
        warn(format_args!("warning: {removed}"));
    }
}
