//! The hidden ordinals of one container, as a bitset.

/// Which ordinals of a container are deleted.
///
/// A bitset of one bit per dataset (12.5 KiB for 100,000 datasets): a lookup is one shift and
/// one mask, on the hot path of every lookup and iteration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeletedSet {
    words: Vec<u64>,
    dataset_count: usize,
    len: usize,
}

impl DeletedSet {
    /// An empty set for a container of `dataset_count` datasets.
    pub fn new(dataset_count: usize) -> Self {
        Self {
            words: vec![0; dataset_count.div_ceil(64)],
            dataset_count,
            len: 0,
        }
    }

    /// Hides `ordinal`. Returns `false` (and changes nothing) when it is past the last dataset.
    pub fn insert(&mut self, ordinal: u32) -> bool {
        let Some((word, bit)) = self.position(ordinal) else {
            return false;
        };
        if self.words[word] & bit == 0 {
            self.words[word] |= bit;
            self.len += 1;
        }
        true
    }

    /// Whether `ordinal` is hidden.
    pub fn contains(&self, ordinal: u32) -> bool {
        self.position(ordinal)
            .is_some_and(|(word, bit)| self.words[word] & bit != 0)
    }

    /// Number of hidden ordinals.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is hidden.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of datasets the set was made for.
    pub fn dataset_count(&self) -> usize {
        self.dataset_count
    }

    /// The hidden ordinals, increasing.
    pub fn ordinals(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.len);
        out.extend(self.iter());
        out
    }

    /// The hidden ordinals, increasing, without collecting them. Empty stretches of the bitset
    /// are skipped eight words (512 datasets) at a time, so a sparse set in a large container
    /// costs little more than its entries.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let blocks = self.words.chunks(8).enumerate();
        blocks
            .filter(|(_, block)| block.iter().any(|&w| w != 0))
            .flat_map(|(b, block)| {
                block
                    .iter()
                    .enumerate()
                    .flat_map(move |(i, &word)| set_bits(word, (b * 8 + i) * 64))
            })
    }

    /// Hides every ordinal of `other` too. Returns how many were newly hidden.
    pub fn merge(&mut self, ordinals: impl IntoIterator<Item = u32>) -> usize {
        let before = self.len;
        for ordinal in ordinals {
            self.insert(ordinal);
        }
        self.len - before
    }

    fn position(&self, ordinal: u32) -> Option<(usize, u64)> {
        let ordinal = usize::try_from(ordinal).ok()?;
        (ordinal < self.dataset_count).then(|| (ordinal / 64, 1u64 << (ordinal % 64)))
    }
}

/// The positions of `word`'s set bits, offset by `base`, increasing.
fn set_bits(word: u64, base: usize) -> impl Iterator<Item = u32> {
    let mut rest = word;
    std::iter::from_fn(move || {
        if rest == 0 {
            return None;
        }
        let bit = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        // Positions come from a set sized by a u32-indexed container, so they fit.
        Some(u32::try_from(base + bit).unwrap_or(u32::MAX))
    })
}
