use crate::PlanError;
use serde::{Deserialize, Serialize};

/// Where an epoch stands: enough to resume exactly at the next sample, with any number of
/// workers and any world size. O(1) in size whatever the dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterState {
    /// The plan's seed.
    pub seed: u64,
    /// The epoch.
    pub epoch: u64,
    /// Global positions already consumed by all ranks together.
    pub position: u64,
    /// The epoch's length, checked on resume so a state is not applied to another dataset.
    pub epoch_len: u64,
}

impl IterState {
    /// The start of epoch `epoch`.
    pub fn start(seed: u64, epoch: u64, epoch_len: u64) -> Self {
        Self {
            seed,
            epoch,
            position: 0,
            epoch_len,
        }
    }

    /// Checks that this state belongs to a plan with `seed`, `epoch` and `epoch_len`.
    pub fn check(&self, seed: u64, epoch: u64, epoch_len: u64) -> Result<(), PlanError> {
        if (self.seed, self.epoch, self.epoch_len) != (seed, epoch, epoch_len) {
            return Err(PlanError::State(format!(
                "state is for seed {}, epoch {}, {} samples; the plan has seed {seed}, epoch {epoch}, {epoch_len} samples",
                self.seed, self.epoch, self.epoch_len
            )));
        }
        if self.position > epoch_len {
            return Err(PlanError::State(format!(
                "position {} is past the epoch's {epoch_len} samples",
                self.position
            )));
        }
        Ok(())
    }

    /// Whether the epoch is fully consumed.
    pub fn is_finished(&self) -> bool {
        self.position >= self.epoch_len
    }
}
