use crate::{Continuation, PlanError, RemainderPolicy, Sampling, Shuffle, Topology};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Where an epoch stands: enough to resume exactly at the next sample, with any number of
/// workers and on any topology. Its size is in the number of nodes, never in samples.
///
/// `remaining` lists the global positions not yet consumed (every node's share minus what its
/// ranks read), `cuts` the node boundaries of the epoch's first run, which fix the order of the
/// windows they cut (see [`crate::EpochPlan::with_cuts`]). A state saved before either field
/// existed, with only `position`, reads as `remaining = [position, epoch_len)` and no cuts.
///
/// `mixture` records what the positions mean: the caches, their shares and the modes the
/// epoch was planned with. A position names a sample only under that mixture, so a resume
/// under another one is refused (see [`IterState::check`]). A state saved before it was
/// recorded has none and gets only the checks of seed, epoch and length.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterState {
    /// The plan's seed.
    pub seed: u64,
    /// The epoch.
    pub epoch: u64,
    /// Global positions already consumed by all ranks together.
    pub position: u64,
    /// The epoch's length, checked on resume so a state is not applied to another dataset.
    pub epoch_len: u64,
    /// Global positions the epoch's windows are cut at: the node boundaries of its first run.
    #[serde(default)]
    pub cuts: Vec<u64>,
    /// Global positions not consumed yet, as sorted disjoint `[start, end)` pairs; `None`:
    /// `[position, epoch_len)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining: Option<Vec<[u64; 2]>>,
    /// What the epoch was planned with; `None` in states saved before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixture: Option<Mixture>,
    /// Where the epoch changed mixture, if it was resumed under another one: what each
    /// cache's stream had consumed by then (see [`Continuation`]). `None` for an epoch that
    /// kept its mixture, whose states are then what they were before changes were possible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation: Option<Continuation>,
}

/// What an epoch's order was planned from, as a state records it: O(caches + phases) numbers,
/// enough to tell that a resume would read other samples at the positions the state marks.
///
/// Weights are recorded as the shares they give (integers, so no float round trip), which is
/// all the order depends on: weights `[1, 1]` and `[0.5, 0.5]` are the same mixture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mixture {
    /// Each cache as the plan saw it, in dataset order.
    pub caches: Vec<PlannedCache>,
    /// Each cache's share of the epoch, in dataset order: samples it draws (with a schedule,
    /// summed over the phases), or, in a token stream's state, the tokens of its budget.
    pub shares: Vec<u64>,
    /// With a schedule, each phase's shares, in order; empty without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Vec<u64>>,
    /// How shares were drawn.
    pub sampling: Sampling,
    /// How the epoch was ordered.
    pub shuffle: Shuffle,
}

/// One cache as a plan sees it: what decides which sample a stream position reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedCache {
    /// Samples (documents, for a token stream) in the cache.
    pub samples: u64,
    /// Runs of samples sharing a shard, as the plan laid them out.
    pub shard_runs: u64,
    /// The cache's id, where the plan was given one (plans built from a dataset are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_id: Option<u64>,
}

impl IterState {
    /// The start of epoch `epoch` run on `topology`: nothing consumed, the windows cut at the
    /// boundaries between its nodes' shares.
    pub fn start(
        seed: u64,
        epoch: u64,
        epoch_len: u64,
        topology: Topology,
        policy: RemainderPolicy,
    ) -> Self {
        let span = topology.ranks_per_node * topology.steps(epoch_len, policy);
        let cuts = (1..topology.nodes())
            .map(|node| node * span)
            .filter(|&cut| cut > 0 && cut < epoch_len)
            .collect();
        Self {
            seed,
            epoch,
            position: 0,
            epoch_len,
            cuts,
            remaining: None,
            mixture: None,
            continuation: None,
        }
    }

    /// The global positions not consumed yet, in order.
    pub fn remaining(&self) -> Vec<Range<u64>> {
        match &self.remaining {
            Some(ranges) => ranges.iter().map(|&[start, end]| start..end).collect(),
            None if self.position < self.epoch_len => {
                std::iter::once(self.position..self.epoch_len).collect()
            }
            None => Vec::new(),
        }
    }

    /// The same state with its remaining positions listed as ranges (`remaining` set), the
    /// form a saved state is shown in: what is left reads the same whether the state was made
    /// at an epoch's start or after a resume.
    pub fn listed(&self) -> Self {
        let remaining = self.remaining().into_iter().map(|r| [r.start, r.end]);
        Self {
            remaining: Some(remaining.collect()),
            ..self.clone()
        }
    }

    /// Checks that this state belongs to a plan with `seed`, `epoch`, `epoch_len` and
    /// `mixture` (where the state records one), and that its positions are well formed. Every
    /// difference is named in the error.
    pub fn check(
        &self,
        seed: u64,
        epoch: u64,
        epoch_len: u64,
        mixture: &Mixture,
    ) -> Result<(), PlanError> {
        let mut differences = Vec::new();
        if self.seed != seed {
            differences.push(format!("seed {} (the plan's is {seed})", self.seed));
        }
        if self.epoch != epoch {
            differences.push(format!("epoch {} (the plan's is {epoch})", self.epoch));
        }
        if self.epoch_len != epoch_len {
            differences.push(format!(
                "{} samples per epoch (the plan has {epoch_len})",
                self.epoch_len
            ));
        }
        if let Some(recorded) = &self.mixture {
            recorded.differences(mixture, &mut differences);
        }
        if !differences.is_empty() {
            return Err(PlanError::State(format!(
                "the state is for {}",
                differences.join(", ")
            )));
        }
        if self.position > epoch_len {
            return Err(PlanError::State(format!(
                "position {} is past the epoch's {epoch_len} samples",
                self.position
            )));
        }
        if let Some(bad) = self
            .cuts
            .windows(2)
            .find(|w| w[0] >= w[1])
            .map(|w| w[1])
            .or_else(|| {
                self.cuts
                    .iter()
                    .copied()
                    .find(|&c| c == 0 || c >= epoch_len)
            })
        {
            return Err(PlanError::State(format!(
                "cut {bad} is not inside the epoch's {epoch_len} samples in increasing order"
            )));
        }
        let remaining = self.remaining();
        let mut end = 0;
        let mut total = 0u64;
        for range in &remaining {
            if range.start < end || range.start >= range.end || range.end > epoch_len {
                return Err(PlanError::State(format!(
                    "remaining range {}..{} is empty, out of order or past the epoch's {epoch_len} samples",
                    range.start, range.end
                )));
            }
            end = range.end;
            total += range.end - range.start;
        }
        if total != epoch_len - self.position {
            return Err(PlanError::State(format!(
                "{total} positions remain but position {} of {epoch_len} leaves {}",
                self.position,
                epoch_len - self.position
            )));
        }
        Ok(())
    }

    /// Whether the epoch is fully consumed.
    pub fn is_finished(&self) -> bool {
        self.position >= self.epoch_len
    }

    /// The state a run of a plan with `mixture` starts from: `self` checked against the plan
    /// (see [`IterState::check`]), recording `mixture` if it recorded none, so that the
    /// states saved from the run on guard their resumes.
    pub fn checked_for(
        mut self,
        seed: u64,
        epoch: u64,
        epoch_len: u64,
        mixture: Mixture,
    ) -> Result<Self, PlanError> {
        self.check(seed, epoch, epoch_len, &mixture)?;
        self.mixture.get_or_insert(mixture);
        Ok(self)
    }
}

/// Differences listed one by one at most this many times per kind, so that a state of
/// thousands of caches gives a message of a few lines.
const LISTED: usize = 4;

impl Mixture {
    /// Whether a state recording `self` resumes under a plan with mixture `plan` unchanged:
    /// the same caches (an id missing on either side is not a difference), shares, phases
    /// and modes.
    pub fn same_as(&self, plan: &Self) -> bool {
        let mut differences = Vec::new();
        self.differences(plan, &mut differences);
        differences.is_empty()
    }

    /// The epoch's length under this mixture.
    pub(crate) fn epoch_len(&self) -> u64 {
        self.shares
            .iter()
            .fold(0u64, |sum, &s| sum.saturating_add(s))
    }

    /// Adds to `out`, in words, how the mixture of a state (`self`) differs from the plan's.
    fn differences(&self, plan: &Self, out: &mut Vec<String>) {
        if self.caches.len() != plan.caches.len() {
            out.push(format!(
                "{} (the plan has {})",
                counted(self.caches.len() as u64, "cache"),
                plan.caches.len()
            ));
        }
        let mut changed = 0;
        for (cache, (was, now)) in self.caches.iter().zip(&plan.caches).enumerate() {
            let shape = (was.samples, was.shard_runs) != (now.samples, now.shard_runs);
            let id = match (was.cache_id, now.cache_id) {
                (Some(was), Some(now)) => was != now,
                // A plan given no ids (one of shapes alone) cannot tell; lengths and runs
                // still do.
                _ => false,
            };
            if !(shape || id) {
                continue;
            }
            changed += 1;
            if changed > LISTED {
                continue;
            }
            if shape {
                out.push(format!(
                    "cache {cache} of {} in {} (the plan's has {} in {})",
                    counted(was.samples, "sample"),
                    counted(was.shard_runs, "shard run"),
                    now.samples,
                    now.shard_runs
                ));
            }
            if let (true, Some(was), Some(now)) = (id, was.cache_id, now.cache_id) {
                out.push(format!(
                    "cache id {was:#018x} at position {cache} (the plan's is {now:#018x})"
                ));
            }
        }
        if changed > LISTED {
            out.push(format!(
                "and {}",
                counted((changed - LISTED) as u64, "other differing cache")
            ));
        }
        match (self.phases.len(), plan.phases.len()) {
            (0, 0) => {
                if self.shares != plan.shares {
                    out.push(format!(
                        "weights giving shares {} (the plan gives {})",
                        list(&self.shares),
                        list(&plan.shares)
                    ));
                }
            }
            (0, phases) => out.push(format!(
                "no schedule (the plan has a schedule of {})",
                counted(phases as u64, "phase")
            )),
            (phases, 0) => out.push(format!(
                "a schedule of {} (the plan has no schedule)",
                counted(phases as u64, "phase")
            )),
            (was, now) if was != now => out.push(format!(
                "a schedule of {} (the plan's has {now})",
                counted(was as u64, "phase")
            )),
            _ => {
                let differing = self
                    .phases
                    .iter()
                    .zip(&plan.phases)
                    .enumerate()
                    .filter(|(_, (was, now))| was != now);
                let mut count = 0;
                for (phase, (was, now)) in differing {
                    count += 1;
                    if count <= LISTED {
                        out.push(format!(
                            "phase {phase} with shares {} (the plan's gives {})",
                            list(was),
                            list(now)
                        ));
                    }
                }
                if count > LISTED {
                    out.push(format!(
                        "and {}",
                        counted((count - LISTED) as u64, "other differing phase")
                    ));
                }
            }
        }
        if self.sampling != plan.sampling {
            out.push(format!(
                "sampling {} (the plan's is {})",
                sampling_name(self.sampling),
                sampling_name(plan.sampling)
            ));
        }
        if self.shuffle != plan.shuffle {
            out.push(format!(
                "shuffle {} (the plan's is {})",
                shuffle_name(self.shuffle),
                shuffle_name(plan.shuffle)
            ));
        }
    }
}

/// `[a, b, c]`, or its first numbers and how many there are in all.
fn list(values: &[u64]) -> String {
    const SHOWN: usize = 8;
    let shown: Vec<String> = values.iter().take(SHOWN).map(u64::to_string).collect();
    if values.len() > SHOWN {
        format!("[{}, ... ({} in all)]", shown.join(", "), values.len())
    } else {
        format!("[{}]", shown.join(", "))
    }
}

/// `1 cache`, `2 caches`.
pub(crate) fn counted(count: impl Into<u128>, noun: &str) -> String {
    let count = count.into();
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// A sampling as the APIs spell it.
pub(crate) fn sampling_name(sampling: Sampling) -> &'static str {
    match sampling {
        Sampling::WithoutReplacement => "without_replacement",
        Sampling::WithReplacement => "with_replacement",
        Sampling::RunsWithReplacement => "runs_with_replacement",
    }
}

/// A shuffle as the APIs spell it, with its window.
pub(crate) fn shuffle_name(shuffle: Shuffle) -> String {
    match shuffle {
        Shuffle::Sequential => "sequential".into(),
        Shuffle::Local { window_shards } => format!("local({window_shards})"),
        Shuffle::Full => "full".into(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code

    use super::*;

    fn mixture(lens: &[u64]) -> Mixture {
        Mixture {
            caches: lens
                .iter()
                .map(|&samples| PlannedCache {
                    samples,
                    shard_runs: 1,
                    cache_id: None,
                })
                .collect(),
            shares: lens.to_vec(),
            phases: Vec::new(),
            sampling: Sampling::default(),
            shuffle: Shuffle::default(),
        }
    }

    fn state(mixture: Mixture) -> IterState {
        let epoch_len = mixture.shares.iter().sum();
        let mut state = IterState::start(
            0,
            0,
            epoch_len,
            Topology::ranks(1).unwrap(),
            RemainderPolicy::Pad,
        );
        state.mixture = Some(mixture);
        state
    }

    #[test]
    fn a_listed_state_names_what_is_left_as_ranges_and_means_the_same() {
        let mut fresh = state(mixture(&[3, 4]));
        fresh.position = 2;
        let listed = fresh.listed();
        assert_eq!(listed.remaining, Some(vec![[2, 7]]));
        assert_eq!(listed.remaining(), fresh.remaining());
        assert_eq!(listed.listed(), listed);
        let mut done = fresh.clone();
        done.position = 7;
        assert_eq!(done.listed().remaining, Some(Vec::new()));
    }

    #[test]
    fn a_mixture_of_many_caches_is_named_in_a_bounded_message() {
        let was: Vec<u64> = (1..=12).collect();
        let now: Vec<u64> = (1..=12).rev().collect();
        let error = state(mixture(&was))
            .check(0, 0, 78, &mixture(&now))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("cache 0 of 1 sample in 1 shard run (the plan's has 12 in 1)"),
            "{error}"
        );
        assert!(error.contains("cache 3 of 4 samples"), "{error}");
        assert!(!error.contains("cache 4 of"), "{error}");
        assert!(error.contains("and 8 other differing caches"), "{error}");
        assert!(
            error.contains(
                "weights giving shares [1, 2, 3, 4, 5, 6, 7, 8, ... (12 in all)] \
                 (the plan gives [12, 11, 10, 9, 8, 7, 6, 5, ... (12 in all)])"
            ),
            "{error}"
        );
    }

    #[test]
    fn the_same_mixture_passes_and_a_state_without_one_is_checked_as_before() {
        let same = mixture(&[3, 4]);
        state(same.clone()).check(0, 0, 7, &same).unwrap();
        let mut old = state(same);
        old.mixture = None;
        old.check(0, 0, 7, &mixture(&[5, 2])).unwrap();
        let checked = old.checked_for(0, 0, 7, mixture(&[5, 2])).unwrap();
        assert_eq!(checked.mixture, Some(mixture(&[5, 2])));
    }
}
