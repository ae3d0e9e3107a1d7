// Plans live in memory: every count below is already bounded by a `Vec`'s length, so
// converting it to `usize` cannot truncate on the 64-bit targets this crate builds for.
#![allow(clippy::cast_possible_truncation)]

use crate::rng::{mix, Rng};
use crate::{PlanConfig, PlanError, Sampling, Shuffle};
use std::ops::Range;

const SAMPLE_BITS: u32 = 48;
const SAMPLE_MASK: u64 = (1 << SAMPLE_BITS) - 1;
const MAX_CACHES: usize = 1 << (64 - SAMPLE_BITS);

/// What planning needs to know about one cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheShape {
    /// Number of samples.
    pub len: u64,
    /// Consecutive sample ranges whose records share a shard, covering `0..len` in order.
    /// Used for locality; a single run `0..len` is valid (it disables locality).
    pub runs: Vec<Range<u64>>,
}

impl CacheShape {
    /// A shape with one run per maximal stretch of equal shard ids.
    pub fn from_shard_ids(shard_ids: impl IntoIterator<Item = u64>) -> Self {
        let mut runs: Vec<Range<u64>> = Vec::new();
        let mut last = None;
        let mut len = 0u64;
        for shard in shard_ids {
            match runs.last_mut() {
                Some(run) if last == Some(shard) => run.end = len + 1,
                _ => runs.push(len..len + 1),
            }
            last = Some(shard);
            len += 1;
        }
        Self { len, runs }
    }
}

/// One step of an epoch: which cache (by position in the dataset list) and which sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlannedSample {
    /// Position of the cache in the dataset list.
    pub cache: usize,
    /// Sample id within that cache.
    pub sample: u64,
}

/// The global order of one epoch: 8 bytes per planned sample (cache position and sample id
/// packed into one `u64`), computed once per epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochPlan {
    order: Vec<u64>,
    epoch: u64,
}

impl EpochPlan {
    /// Builds epoch `epoch`'s order over caches of the given shapes.
    pub fn build(
        shapes: &[CacheShape],
        config: &PlanConfig,
        epoch: u64,
    ) -> Result<Self, PlanError> {
        if shapes.len() > MAX_CACHES {
            return Err(PlanError::TooLarge(format!(
                "{} caches (at most {MAX_CACHES})",
                shapes.len()
            )));
        }
        if let Some(cache) = shapes.iter().position(|s| s.len > SAMPLE_MASK) {
            return Err(PlanError::TooLarge(format!(
                "cache {cache} has more than 2^48 samples"
            )));
        }
        let shares = shares(shapes, config)?;
        let streams: Vec<Vec<u64>> = shapes
            .iter()
            .zip(&shares)
            .enumerate()
            .map(|(cache, (shape, &share))| {
                let seed = mix(&[config.seed, epoch, cache as u64]);
                cache_stream(shape, share, config, seed)
            })
            .collect();
        let order = match config.shuffle {
            Shuffle::Sequential => concatenate(streams),
            _ => interleave(streams, &mut Rng::new(mix(&[config.seed, epoch, u64::MAX]))),
        };
        Ok(Self { order, epoch })
    }

    /// The epoch number this plan is for.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Number of samples in the epoch.
    pub fn len(&self) -> u64 {
        self.order.len() as u64
    }

    /// Whether the epoch is empty.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The sample at global position `position` (`None` past the end).
    #[inline]
    pub fn get(&self, position: u64) -> Option<PlannedSample> {
        let packed = *self.order.get(usize::try_from(position).ok()?)?;
        Some(PlannedSample {
            cache: (packed >> SAMPLE_BITS) as usize,
            sample: packed & SAMPLE_MASK,
        })
    }

    /// Bytes the plan holds per planned sample.
    pub const BYTES_PER_SAMPLE: usize = std::mem::size_of::<u64>();
}

/// Samples each cache contributes to the epoch.
fn shares(shapes: &[CacheShape], config: &PlanConfig) -> Result<Vec<u64>, PlanError> {
    let Some(weights) = &config.weights else {
        return Ok(shapes.iter().map(|s| s.len).collect());
    };
    if weights.len() != shapes.len() {
        return Err(PlanError::Weights(format!(
            "{} weights for {} caches",
            weights.len(),
            shapes.len()
        )));
    }
    if let Some(bad) = weights.iter().find(|w| !w.is_finite() || **w < 0.0) {
        return Err(PlanError::Weights(format!(
            "{bad} is not a finite non-negative weight"
        )));
    }
    let total_weight: f64 = weights.iter().sum();
    if total_weight <= 0.0 {
        return Err(PlanError::Weights("all weights are zero".into()));
    }
    let epoch_len = config
        .samples_per_epoch
        .unwrap_or_else(|| shapes.iter().map(|s| s.len).sum());
    let shares = largest_remainder(weights, total_weight, epoch_len);
    if let Some(cache) = shapes
        .iter()
        .zip(&shares)
        .position(|(s, &share)| share > 0 && s.len == 0)
    {
        return Err(PlanError::EmptyCache { cache });
    }
    Ok(shares)
}

/// Splits `total` in proportion to `weights` so the parts sum to exactly `total`.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
fn largest_remainder(weights: &[f64], total_weight: f64, total: u64) -> Vec<u64> {
    let exact: Vec<f64> = weights
        .iter()
        .map(|w| w / total_weight * total as f64)
        .collect();
    let mut shares: Vec<u64> = exact.iter().map(|e| e.floor() as u64).collect();
    let assigned: u64 = shares.iter().sum();
    let mut by_remainder: Vec<usize> = (0..weights.len()).filter(|&i| weights[i] > 0.0).collect();
    // Ties go to the earlier cache, so the split is deterministic.
    by_remainder.sort_by(|&a, &b| {
        (exact[b] - exact[b].floor())
            .total_cmp(&(exact[a] - exact[a].floor()))
            .then(a.cmp(&b))
    });
    for &i in by_remainder
        .iter()
        .cycle()
        .take(total.saturating_sub(assigned) as usize)
    {
        shares[i] += 1;
    }
    shares
}

/// One cache's `share` sample ids, in the order the shuffle mode gives.
fn cache_stream(shape: &CacheShape, share: u64, config: &PlanConfig, seed: u64) -> Vec<u64> {
    if share == 0 || shape.len == 0 {
        return Vec::new();
    }
    let mut rng = Rng::new(seed);
    match config.sampling {
        Sampling::WithoutReplacement => {
            let mut out = Vec::with_capacity(share as usize);
            while (out.len() as u64) < share {
                let pass = permutation(shape, config.shuffle, &mut rng);
                let take = (share - out.len() as u64).min(pass.len() as u64) as usize;
                out.extend_from_slice(&pass[..take]);
            }
            out
        }
        Sampling::WithReplacement => draws_with_replacement(shape, share, config.shuffle, &mut rng),
    }
}

/// One pass over every sample of a cache.
fn permutation(shape: &CacheShape, shuffle: Shuffle, rng: &mut Rng) -> Vec<u64> {
    match shuffle {
        Shuffle::Sequential => (0..shape.len).collect(),
        Shuffle::Full => {
            let mut all: Vec<u64> = (0..shape.len).collect();
            rng.shuffle(&mut all);
            all
        }
        Shuffle::Local { window_shards } => {
            let mut runs: Vec<Range<u64>> = normalized_runs(shape);
            rng.shuffle(&mut runs);
            let mut out = Vec::with_capacity(shape.len as usize);
            for window in runs.chunks(window_shards.max(1)) {
                let start = out.len();
                for run in window {
                    out.extend(run.clone());
                }
                rng.shuffle(&mut out[start..]);
            }
            out
        }
    }
}

/// `share` independent uniform draws, grouped by window for locality when shuffling locally.
fn draws_with_replacement(
    shape: &CacheShape,
    share: u64,
    shuffle: Shuffle,
    rng: &mut Rng,
) -> Vec<u64> {
    let mut draws: Vec<u64> = (0..share).map(|_| rng.below(shape.len)).collect();
    match shuffle {
        Shuffle::Sequential => draws.sort_unstable(),
        Shuffle::Full => {}
        Shuffle::Local { window_shards } => {
            let runs = normalized_runs(shape);
            let mut rank_of_run: Vec<u64> = (0..runs.len() as u64).collect();
            rng.shuffle(&mut rank_of_run);
            let window_of = |sample: u64| {
                let run = runs.partition_point(|r| r.end <= sample);
                rank_of_run[run] / window_shards.max(1) as u64
            };
            let mut keyed: Vec<(u64, u64, u64)> = draws
                .iter()
                .map(|&d| (window_of(d), rng.next_u64(), d))
                .collect();
            keyed.sort_unstable();
            draws = keyed.into_iter().map(|(_, _, d)| d).collect();
        }
    }
    draws
}

/// The shape's runs if they tile `0..len`, else one run per sample block of the whole cache.
fn normalized_runs(shape: &CacheShape) -> Vec<Range<u64>> {
    let tiles = shape.runs.first().is_some_and(|r| r.start == 0)
        && shape
            .runs
            .windows(2)
            .all(|w| w[0].end == w[1].start && w[0].start < w[0].end)
        && shape
            .runs
            .last()
            .is_some_and(|r| r.end == shape.len && r.start < r.end);
    if tiles {
        shape.runs.clone()
    } else {
        std::iter::once(0..shape.len).collect()
    }
}

fn pack(cache: usize, sample: u64) -> u64 {
    ((cache as u64) << SAMPLE_BITS) | sample
}

fn concatenate(streams: Vec<Vec<u64>>) -> Vec<u64> {
    let mut order = Vec::with_capacity(streams.iter().map(Vec::len).sum());
    for (cache, stream) in streams.into_iter().enumerate() {
        order.extend(stream.into_iter().map(|s| pack(cache, s)));
    }
    order
}

/// A uniformly random interleaving that keeps each cache's own order: shuffle the multiset of
/// cache labels, then hand each label its cache's next sample.
fn interleave(streams: Vec<Vec<u64>>, rng: &mut Rng) -> Vec<u64> {
    let mut order: Vec<u64> = Vec::with_capacity(streams.iter().map(Vec::len).sum());
    for (cache, stream) in streams.iter().enumerate() {
        order.extend(std::iter::repeat_n(cache as u64, stream.len()));
    }
    rng.shuffle(&mut order);
    let mut cursors = vec![0usize; streams.len()];
    for slot in &mut order {
        let cache = *slot as usize;
        *slot = pack(cache, streams[cache][cursors[cache]]);
        cursors[cache] += 1;
    }
    order
}
