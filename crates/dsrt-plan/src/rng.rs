//! A small, fast, seedable generator (xoshiro256**, seeded through SplitMix64), so the plan
//! depends on this crate's code alone and never on another crate's version.

/// Mixes `values` into one 64-bit seed (SplitMix64 finalizer over each value): how every seed
/// of a plan is derived from the plan's seed, so layers above that need seeds of their own
/// derive them the same way.
pub fn mix(values: &[u64]) -> u64 {
    let mut state = 0x243f_6a88_85a3_08d3u64;
    for &value in values {
        state = splitmix(state ^ value);
    }
    state
}

/// A uniform value in `0..bound` from a hash (`bound > 0`): the high word of `hash * bound`,
/// biased by less than `bound / 2^64`, which no epoch can observe.
#[allow(clippy::cast_possible_truncation)] // the high word of a 64x64 product fits 64 bits
pub(crate) fn scaled(hash: u64, bound: u64) -> u64 {
    ((u128::from(hash) * u128::from(bound)) >> 64) as u64
}

/// A pseudo-random permutation of `0..len` keyed by a seed, computed per element in O(1): a
/// four-round Feistel network over the smallest number of bits that holds `len` (its halves
/// one bit apart when that number is odd), walking the cycle until the value falls below
/// `len` (fewer than two rounds of walking expected, as the domain is less than `2 * len`).
/// It stands in for a Fisher-Yates shuffle, which would need the whole order in memory.
#[derive(Debug, Clone, Copy)]
pub struct Permutation {
    len: u64,
    left_bits: u32,
    right_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// The permutation of `0..len` keyed by `seed`.
    pub fn new(seed: u64, len: u64) -> Self {
        let bits = (64 - len.saturating_sub(1).leading_zeros()).max(2);
        let left_bits = bits / 2;
        let mut rng = Rng::new(seed);
        Self {
            len,
            left_bits,
            right_bits: bits - left_bits,
            keys: [
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
            ],
        }
    }

    /// The image of `index` (`index < len`).
    #[inline]
    pub fn apply(&self, index: u64) -> u64 {
        if self.len <= 1 {
            return index;
        }
        let mut value = index;
        loop {
            value = self.round_trip(value);
            if value < self.len {
                return value;
            }
        }
    }

    /// Four Feistel rounds; each swaps the halves, so their widths alternate and are back in
    /// place after an even number of rounds.
    #[inline]
    fn round_trip(&self, value: u64) -> u64 {
        let mask = |bits: u32| (1u64 << bits) - 1;
        let (mut left_bits, mut right_bits) = (self.left_bits, self.right_bits);
        let (mut left, mut right) = (value >> right_bits, value & mask(right_bits));
        for key in self.keys {
            let next = left ^ (splitmix(right ^ key) & mask(left_bits));
            left = right;
            right = next;
            std::mem::swap(&mut left_bits, &mut right_bits);
        }
        (left << right_bits) | right
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(crate) struct Rng([u64; 4]);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        let mut z = seed;
        let mut next = || {
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            splitmix(z)
        };
        Self([next(), next(), next(), next()])
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..bound` (Lemire's multiply-shift with rejection; `bound > 0`).
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        loop {
            let product = u128::from(self.next_u64()) * u128::from(bound);
            #[allow(clippy::cast_possible_truncation)] // the low word, on purpose
            let low = product as u64;
            if low >= bound.wrapping_neg() % bound {
                #[allow(clippy::cast_possible_truncation)] // the high word is below `bound`
                return (product >> 64) as u64;
            }
        }
    }

    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            // `below(i + 1)` is at most `i`, a valid index.
            #[allow(clippy::cast_possible_truncation)]
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values are small
mod tests {
    use super::*;

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut rng = Rng::new(1);
        let mut seen = [false; 7];
        for _ in 0..1000 {
            let v = rng.below(7);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_ne!(mix(&[1, 2]), mix(&[2, 1]));
    }

    #[test]
    fn permutations_are_bijections_of_every_length() {
        for len in (0..70).chain([255, 256, 257, 1000, 4097]) {
            let permutation = Permutation::new(len ^ 0x5eed, len);
            let mut seen = vec![false; len as usize];
            for i in 0..len {
                let image = permutation.apply(i);
                assert!(image < len, "{i} -> {image} of {len}");
                assert!(!seen[image as usize], "{image} twice in {len}");
                seen[image as usize] = true;
            }
        }
    }

    #[test]
    fn permutations_move_most_elements() {
        let permutation = Permutation::new(7, 10_000);
        let fixed = (0..10_000).filter(|&i| permutation.apply(i) == i).count();
        // A uniform permutation fixes one element on average.
        assert!(fixed < 20, "{fixed} fixed points");
        assert!(scaled(u64::MAX, 10) == 9 && scaled(0, 10) == 0);
    }
}
