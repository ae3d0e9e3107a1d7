use crate::PlanError;
use serde::{Deserialize, Serialize};

/// What to do with the last round when the remaining samples do not divide by the world size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemainderPolicy {
    /// Fill the last round by repeating samples from the start of the epoch's own order, so no
    /// sample is skipped. The default.
    #[default]
    Pad,
    /// Drop the samples of the incomplete last round.
    Drop,
}

/// One rank's share of the part of an epoch not yet consumed.
///
/// Global positions `start..len` are dealt round-robin: rank `r` takes
/// `start + r`, `start + r + world_size`, ... Every rank gets the same count, [`Partition::len`].
/// With `Pad`, positions past the end wrap to the start of the epoch's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    rank: u64,
    world_size: u64,
    policy: RemainderPolicy,
    start: u64,
    epoch_len: u64,
}

impl Partition {
    /// Rank `rank` of `world_size`, over global positions `start..epoch_len`.
    pub fn new(
        rank: u64,
        world_size: u64,
        policy: RemainderPolicy,
        start: u64,
        epoch_len: u64,
    ) -> Result<Self, PlanError> {
        if world_size == 0 || rank >= world_size {
            return Err(PlanError::Partition { rank, world_size });
        }
        Ok(Self {
            rank,
            world_size,
            policy,
            start: start.min(epoch_len),
            epoch_len,
        })
    }

    /// Samples every rank yields: the same for all ranks.
    pub fn len(&self) -> u64 {
        let remaining = self.epoch_len - self.start;
        match self.policy {
            RemainderPolicy::Pad => remaining.div_ceil(self.world_size),
            RemainderPolicy::Drop => remaining / self.world_size,
        }
    }

    /// Whether this rank yields nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The global position of this rank's `step`-th sample (`step < len()`).
    #[inline]
    pub fn global_position(&self, step: u64) -> u64 {
        let position = self.start + self.rank + step * self.world_size;
        if position < self.epoch_len {
            position
        } else {
            // Padding: wrap to the start of the epoch's order.
            (position - self.epoch_len) % self.epoch_len.max(1)
        }
    }

    /// Whether this rank's `step`-th sample is a padding repeat.
    pub fn is_padding(&self, step: u64) -> bool {
        self.start + self.rank + step * self.world_size >= self.epoch_len
    }

    /// The global position reached once every rank has yielded `steps` samples.
    pub fn consumed_after(&self, steps: u64) -> u64 {
        (self.start + steps.min(self.len()) * self.world_size).min(self.epoch_len)
    }

    /// The first global position this partition covers.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The world size.
    pub fn world_size(&self) -> u64 {
        self.world_size
    }

    /// The rank.
    pub fn rank(&self) -> u64 {
        self.rank
    }
}
