use crate::{PlanError, RemainderPolicy, Topology};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Where an epoch stands: enough to resume exactly at the next sample, with any number of
/// workers and on any topology. Its size is in the number of nodes, never in samples.
///
/// `remaining` lists the global positions not yet consumed (every node's share minus what its
/// ranks read), `cuts` the node boundaries of the epoch's first run, which fix the order of the
/// windows they cut (see [`crate::EpochPlan::with_cuts`]). A state saved before either field
/// existed, with only `position`, reads as `remaining = [position, epoch_len)` and no cuts.
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

    /// Checks that this state belongs to a plan with `seed`, `epoch` and `epoch_len`, and that
    /// its positions are well formed.
    pub fn check(&self, seed: u64, epoch: u64, epoch_len: u64) -> Result<(), PlanError> {
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
}
