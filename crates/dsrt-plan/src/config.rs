use serde::{Deserialize, Serialize};
use thiserror::Error;

/// How a cache's share of an epoch is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sampling {
    /// Each sample at most once per pass over the cache; a share larger than the cache takes
    /// several full passes.
    #[default]
    WithoutReplacement,
    /// Every draw uniform over the cache, independently.
    WithReplacement,
    /// Each pass draws whole shard runs uniformly with replacement until it holds as many
    /// samples as the cache (the last run drawn cut to fit), then reads the samples of each
    /// window of drawn runs in an order of their own, as without replacement. A sample can come
    /// twice in a pass (its run drawn twice) or not at all; the samples before any segment
    /// start are the runs laid out before it, so a layer that counts samples by their lengths
    /// (tokens) knows them from per-run totals, as it does without replacement.
    RunsWithReplacement,
}

/// How samples are ordered within an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shuffle {
    /// Physical order, caches one after another. Ignores the seed.
    Sequential,
    /// Shard runs are shuffled, grouped into windows of `window_shards`, and samples are
    /// shuffled within each window, so an epoch reads each shard in a few contiguous spans
    /// (block shuffling, as MosaicML Streaming does).
    Local {
        /// Shard runs per window (at least 1).
        window_shards: usize,
    },
    /// A uniform permutation of each cache.
    Full,
}

impl Default for Shuffle {
    fn default() -> Self {
        Self::Local { window_shards: 4 }
    }
}

/// What decides an epoch's order: the same config, epoch and caches give the same order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PlanConfig {
    /// The seed.
    pub seed: u64,
    /// Sampling proportion per cache, in dataset order; `None`: every cache contributes each
    /// of its samples once.
    pub weights: Option<Vec<f64>>,
    /// Epoch length when weights are given; `None`: the total number of samples.
    pub samples_per_epoch: Option<u64>,
    /// With or without replacement.
    pub sampling: Sampling,
    /// Order within the epoch.
    pub shuffle: Shuffle,
    /// Weights that change by phase: the epoch is the schedule's phases one after another,
    /// each with its own length and weights (see [`Schedule`]). Replaces `weights` and
    /// `samples_per_epoch`, which must then be `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
}

/// A mixture that changes along the epoch: "300,000 samples half and half, then 100,000 with
/// 80% code". The epoch is the phases in order, its length the sum of theirs.
///
/// Within a phase the caches are mixed as a whole epoch with those weights would be, with the
/// phase's length in place of `samples_per_epoch`; each cache's own stream (its passes, its
/// shuffle windows) runs on across phases, so a phase change never restarts a pass and no
/// sample comes twice in a pass because of one.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    /// The phases, in the order the epoch reads them.
    pub phases: Vec<Phase>,
}

/// One phase of a [`Schedule`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// Global positions the phase holds (at least 1): what all ranks read during it together.
    pub samples: u64,
    /// Sampling proportion per cache during the phase, in dataset order: finite, non-negative,
    /// not all zero, and zero for a cache without samples.
    pub weights: Vec<f64>,
}

impl Schedule {
    /// The epoch's length: the phases' lengths summed (`None` past 2^64).
    pub fn samples(&self) -> Option<u64> {
        self.phases
            .iter()
            .try_fold(0u64, |sum, phase| sum.checked_add(phase.samples))
    }
}

/// Why a plan cannot be built.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum PlanError {
    /// Weights must be finite and non-negative, one per cache, not all zero.
    #[error("invalid weights: {0}")]
    Weights(String),
    /// A cache with samples to draw has none.
    #[error("cache {cache} has weight but no samples")]
    EmptyCache {
        /// Position of the cache.
        cache: usize,
    },
    /// The packed representation holds at most 65,536 caches and 2^48 samples per cache.
    #[error("too large to plan: {0}")]
    TooLarge(String),
    /// `world_size` must be at least 1 and `rank < world_size`.
    #[error("invalid partition: rank {rank} of world size {world_size}")]
    Partition {
        /// The rank.
        rank: u64,
        /// The world size.
        world_size: u64,
    },
    /// `world_size` must be a positive multiple of `ranks_per_node`.
    #[error("invalid topology: {world_size} ranks do not form nodes of {ranks_per_node} ranks")]
    Topology {
        /// The world size.
        world_size: u64,
        /// Ranks per node.
        ranks_per_node: u64,
    },
    /// A schedule was given together with a setting it replaces.
    #[error(
        "a schedule cannot be combined with {setting}: each phase gives its own weights and length"
    )]
    ScheduleConflict {
        /// The conflicting setting (`weights` or `samples_per_epoch`).
        setting: &'static str,
    },
    /// A schedule has no phases.
    #[error("invalid schedule: {0}")]
    Schedule(String),
    /// One phase of a schedule cannot be planned.
    #[error("invalid schedule phase {phase}: {problem}")]
    Phase {
        /// The phase's index in the schedule (from 0).
        phase: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// A saved state does not belong to this plan.
    #[error("iterator state does not match this plan: {0}")]
    State(String),
}

/// A setting given by a name that is not one of its names (`shuffle="random"`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting} must be {expected}, not {given:?}")]
pub struct UnknownName {
    /// The setting (`shuffle`, `policy`).
    pub setting: &'static str,
    /// Its names, as a message lists them.
    pub expected: &'static str,
    /// The name given.
    pub given: String,
}

impl Shuffle {
    /// The shuffle a name means, as the Python package and the CLI spell them: `local` (with
    /// `window_shards`), `full`, `sequential` (or `none`).
    pub fn from_name(name: &str, window_shards: usize) -> Result<Self, UnknownName> {
        match name {
            "local" => Ok(Self::Local { window_shards }),
            "full" => Ok(Self::Full),
            "sequential" | "none" => Ok(Self::Sequential),
            other => Err(UnknownName {
                setting: "shuffle",
                expected: "\"local\", \"full\" or \"sequential\"",
                given: other.to_owned(),
            }),
        }
    }
}

impl std::str::FromStr for crate::RemainderPolicy {
    type Err = UnknownName;

    /// `pad` or `drop`.
    fn from_str(name: &str) -> Result<Self, UnknownName> {
        match name {
            "pad" => Ok(Self::Pad),
            "drop" => Ok(Self::Drop),
            other => Err(UnknownName {
                setting: "policy",
                expected: "\"pad\" or \"drop\"",
                given: other.to_owned(),
            }),
        }
    }
}

#[cfg(test)]
mod name_tests {
    use super::*;
    use crate::RemainderPolicy;

    #[test]
    fn settings_by_name_and_unknown_names_refused_with_the_names() {
        assert_eq!(
            Shuffle::from_name("local", 3),
            Ok(Shuffle::Local { window_shards: 3 })
        );
        assert_eq!(Shuffle::from_name("none", 3), Ok(Shuffle::Sequential));
        assert_eq!("drop".parse(), Ok(RemainderPolicy::Drop));
        let error = Shuffle::from_name("random", 4).unwrap_err();
        assert_eq!(
            error.to_string(),
            "shuffle must be \"local\", \"full\" or \"sequential\", not \"random\""
        );
        let error = "keep".parse::<RemainderPolicy>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "policy must be \"pad\" or \"drop\", not \"keep\""
        );
    }
}
