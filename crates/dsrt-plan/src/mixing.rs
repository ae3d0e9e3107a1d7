//! How the caches' streams are interleaved into one epoch, without storing the interleaving.
//!
//! Cache `c` with a share of `s` samples places its `k`-th sample at time `(k + u) / s` of
//! the epoch, `u` uniform in `[0, 1)` from a hash of `(seed, epoch, c, k)`; the epoch reads
//! samples in order of time (ties by cache position). Each cache is therefore spread evenly
//! over the epoch at its rate, with its own order kept: the number of its samples before time
//! `t` is `t * s` within one. That bound is what makes a position found quickly: a guess from
//! the rates is off by at most one sample per cache, corrected through a heap.
//!
//! Counted by positions rather than time, the other caches' errors add up at the time the
//! `p`-th position falls: among the first `p` positions a cache with a fraction `f = s / L`
//! of the epoch has `p * f` samples within `(1 - f) + f * (n - 1)`, `n` the caches drawing.
//! Under one with two caches; with more, a large cache can be off by more than one (measured:
//! 1.73 for shares 0.8, 0.1, 0.1).

// Times are fixed-point fractions of the epoch, 64 fractional bits: a stream position below
// 2^48 shifted by 64 bits fits a u128, and so does a time multiplied by a share.
#![allow(clippy::cast_possible_truncation)]

use crate::rng::mix;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The time (64 fractional bits) of stream position `k` of a cache with `share` samples.
#[inline]
pub(crate) fn time_of(seed: u64, cache: usize, share: u64, k: u64) -> u128 {
    let jitter = u128::from(mix(&[seed, cache as u64, k]) >> 32);
    ((u128::from(k) << 32 | jitter) << 32) / u128::from(share)
}

/// How many of a cache's positions come before `time`.
fn count_before(seed: u64, cache: usize, share: u64, time: u128) -> u64 {
    let mut k = ((time * u128::from(share)) >> 64).min(u128::from(share)) as u64;
    while k > 0 && time_of(seed, cache, share, k - 1) >= time {
        k -= 1;
    }
    while k < share && time_of(seed, cache, share, k) < time {
        k += 1;
    }
    k
}

/// Streams interleaved by time: which cache, and which position of its stream, each global
/// position reads. Holds one entry per cache.
#[derive(Debug, Clone)]
pub(crate) struct Interleaving {
    /// Next global position the heap yields.
    next: u64,
    /// Per cache, its next stream position.
    cursors: Vec<u64>,
    heap: BinaryHeap<Reverse<(u128, u32)>>,
}

impl Interleaving {
    pub(crate) fn new(caches: usize) -> Self {
        Self {
            next: u64::MAX,
            cursors: vec![0; caches],
            heap: BinaryHeap::with_capacity(caches),
        }
    }

    /// Forgets where the heap stands, so the next position is found by a seek: for a cursor
    /// moving to other shares (another phase of a schedule).
    pub(crate) fn restart(&mut self) {
        self.next = u64::MAX;
    }

    /// Positions the heap steps over before a jump is cheaper as a new seek.
    fn seek_threshold(&self) -> u64 {
        (self.cursors.len() as u64).max(64)
    }

    /// Each cache's stream position once the first `position` global positions are read.
    pub(crate) fn cursors_at(seed: u64, shares: &[u64], epoch_len: u64, position: u64) -> Vec<u64> {
        let time = if epoch_len == 0 {
            0
        } else {
            (u128::from(position) << 64) / u128::from(epoch_len)
        };
        let mut cursors: Vec<u64> = shares
            .iter()
            .enumerate()
            .map(|(c, &s)| {
                if s == 0 {
                    0
                } else {
                    count_before(seed, c, s, time)
                }
            })
            .collect();
        let mut counted: u64 = cursors.iter().sum();
        if counted > position {
            // Give back the latest positions taken.
            let mut latest: BinaryHeap<(u128, u32)> = cursors
                .iter()
                .enumerate()
                .filter(|&(_, &k)| k > 0)
                .map(|(c, &k)| (time_of(seed, c, shares[c], k - 1), c as u32))
                .collect();
            while counted > position {
                let Some((_, c)) = latest.pop() else { break };
                let c = c as usize;
                cursors[c] -= 1;
                counted -= 1;
                if cursors[c] > 0 {
                    latest.push((time_of(seed, c, shares[c], cursors[c] - 1), c as u32));
                }
            }
        } else if counted < position {
            let mut earliest: BinaryHeap<Reverse<(u128, u32)>> = cursors
                .iter()
                .enumerate()
                .filter(|&(c, &k)| k < shares[c])
                .map(|(c, &k)| Reverse((time_of(seed, c, shares[c], k), c as u32)))
                .collect();
            while counted < position {
                let Some(Reverse((_, c))) = earliest.pop() else {
                    break;
                };
                let c = c as usize;
                cursors[c] += 1;
                counted += 1;
                if cursors[c] < shares[c] {
                    earliest.push(Reverse((time_of(seed, c, shares[c], cursors[c]), c as u32)));
                }
            }
        }
        cursors
    }

    fn seek(&mut self, seed: u64, shares: &[u64], epoch_len: u64, position: u64) {
        self.cursors = Self::cursors_at(seed, shares, epoch_len, position);
        self.heap.clear();
        for (c, &k) in self.cursors.iter().enumerate() {
            if k < shares[c] {
                self.heap
                    .push(Reverse((time_of(seed, c, shares[c], k), c as u32)));
            }
        }
        self.next = position;
    }

    /// The cache and stream position global position `position` reads.
    pub(crate) fn at(
        &mut self,
        seed: u64,
        shares: &[u64],
        epoch_len: u64,
        position: u64,
    ) -> Option<(usize, u64)> {
        if position < self.next || position - self.next > self.seek_threshold() {
            self.seek(seed, shares, epoch_len, position);
        }
        loop {
            let Reverse((_, c)) = self.heap.pop()?;
            let c = c as usize;
            let k = self.cursors[c];
            self.cursors[c] += 1;
            if self.cursors[c] < shares[c] {
                self.heap.push(Reverse((
                    time_of(seed, c, shares[c], self.cursors[c]),
                    c as u32,
                )));
            }
            self.next += 1;
            if self.next > position {
                return Some((c, k));
            }
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        self.cursors.capacity() * 8 + self.heap.capacity() * std::mem::size_of::<(u128, u32)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_force(seed: u64, shares: &[u64]) -> Vec<(usize, u64)> {
        let mut all: Vec<(u128, usize, u64)> = shares
            .iter()
            .enumerate()
            .flat_map(|(c, &s)| (0..s).map(move |k| (time_of(seed, c, s, k), c, k)))
            .collect();
        all.sort_unstable();
        all.into_iter().map(|(_, c, k)| (c, k)).collect()
    }

    #[test]
    fn positions_found_by_seeking_or_stepping_match_a_sort_by_time() {
        for shares in [
            vec![5u64, 0, 17, 1],
            vec![1000, 3, 250],
            vec![1, 1, 1, 1, 1, 1, 1],
        ] {
            let len: u64 = shares.iter().sum();
            let expected = brute_force(11, &shares);
            let mut walk = Interleaving::new(shares.len());
            let stepped: Vec<(usize, u64)> = (0..len)
                .map(|p| walk.at(11, &shares, len, p).unwrap())
                .collect();
            assert_eq!(stepped, expected);
            for p in (0..len).rev().step_by(7) {
                let mut fresh = Interleaving::new(shares.len());
                assert_eq!(fresh.at(11, &shares, len, p), Some(expected[p as usize]));
            }
        }
    }

    #[test]
    fn every_stretch_holds_each_cache_at_its_rate() {
        let shares = [3000u64, 1000, 500];
        let len: u64 = shares.iter().sum();
        for p in (0..=len).step_by(97) {
            let cursors = Interleaving::cursors_at(3, &shares, len, p);
            for (c, &k) in cursors.iter().enumerate() {
                let expected = p as f64 * shares[c] as f64 / len as f64;
                assert!(
                    (k as f64 - expected).abs() <= 2.0,
                    "cache {c} at {p}: {k} vs {expected}"
                );
            }
        }
    }
}
