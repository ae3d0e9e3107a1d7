//! Compact per-array state an [`ArrayWriter`](crate::ArrayWriter) keeps until `finish`.
//!
//! Added in `atlas-array-format` (not in array-format 0.15.0): a writer holds this for every
//! array of a file until it finishes, and an Atlas collection has one array per dataset and
//! variable, so its size multiplies by the dataset count. 0.15.0 kept a `BTreeMap` of chunks
//! (one 11-slot node, about 1.4 KiB, even for a single chunk) and an `IndexMap` of attributes
//! (a hash table and a spare-capacity entry vector) per array. These tables hold the same
//! entries in vectors sized to what they hold, and emit them in the order `finish` writes:
//! the bytes of the file do not change.

use std::collections::BTreeMap;

use ecow::EcoString;

use crate::attr::AttributeValue;

/// Up to this many chunks live in a sorted vector; beyond it, in a `BTreeMap`, so that
/// writing many chunks out of order stays `O(log n)` per chunk.
const SMALL_CHUNKS: usize = 32;

/// Chunks written so far, keyed by coordinate; a coordinate written twice keeps the last.
pub(crate) enum ChunkTable<V> {
    /// Sorted by coordinate, capacity grown one entry at a time.
    Small(Vec<(Box<[u32]>, V)>),
    /// For arrays with many chunks.
    Large(BTreeMap<Box<[u32]>, V>),
}

impl<V> Default for ChunkTable<V> {
    fn default() -> Self {
        Self::Small(Vec::new())
    }
}

impl<V> ChunkTable<V> {
    /// Inserts or replaces the chunk at `coord`.
    pub(crate) fn insert(&mut self, coord: Vec<u32>, value: V) {
        match self {
            Self::Small(entries) => {
                match entries.binary_search_by(|(c, _)| c.as_ref().cmp(coord.as_slice())) {
                    Ok(i) => entries[i].1 = value,
                    Err(i) if entries.len() < SMALL_CHUNKS => {
                        entries.reserve_exact(1);
                        entries.insert(i, (coord.into_boxed_slice(), value));
                    }
                    Err(_) => {
                        let mut map: BTreeMap<Box<[u32]>, V> = entries.drain(..).collect();
                        map.insert(coord.into_boxed_slice(), value);
                        *self = Self::Large(map);
                    }
                }
            }
            Self::Large(map) => {
                map.insert(coord.into_boxed_slice(), value);
            }
        }
    }

    /// The chunk at `coord`, if it was written.
    pub(crate) fn get(&self, coord: &[u32]) -> Option<&V> {
        match self {
            Self::Small(entries) => entries
                .binary_search_by(|(c, _)| c.as_ref().cmp(coord))
                .ok()
                .map(|i| &entries[i].1),
            Self::Large(map) => map.get(coord),
        }
    }

    /// How many chunks were written.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Small(entries) => entries.len(),
            Self::Large(map) => map.len(),
        }
    }

    /// Every chunk in coordinate order.
    pub(crate) fn into_sorted(self) -> Vec<(Vec<u32>, V)> {
        match self {
            Self::Small(entries) => entries
                .into_iter()
                .map(|(c, v)| (c.into_vec(), v))
                .collect(),
            Self::Large(map) => map.into_iter().map(|(c, v)| (c.into_vec(), v)).collect(),
        }
    }
}

/// Attributes of one array: replacing a key keeps one entry.
#[derive(Default)]
pub(crate) struct AttributeTable {
    entries: Vec<(EcoString, AttributeValue)>,
}

impl AttributeTable {
    /// Sets `key`, replacing any existing value.
    pub(crate) fn insert(&mut self, key: EcoString, value: AttributeValue) {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => {
                self.entries.reserve_exact(1);
                self.entries.push((key, value));
            }
        }
    }

    /// Every attribute sorted by key, the order the footer stores them in.
    pub(crate) fn into_sorted(mut self) -> Vec<(EcoString, AttributeValue)> {
        self.entries.sort_by(|a, b| a.0.cmp(&b.0));
        self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The table behaves as the `BTreeMap` it replaces, across the switch to the large form.
    #[test]
    fn chunk_table_matches_a_btree_map() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for writes in [0usize, 1, 5, SMALL_CHUNKS, SMALL_CHUNKS + 1, 500] {
            let mut table = ChunkTable::default();
            let mut model = BTreeMap::new();
            for i in 0..writes {
                let coord = vec![(next() % 9) as u32, (next() % 9) as u32];
                table.insert(coord.clone(), i);
                model.insert(coord, i);
                let probe = [(next() % 9) as u32, (next() % 9) as u32];
                assert_eq!(table.get(&probe), model.get(probe.as_slice()));
            }
            assert_eq!(table.len(), model.len());
            let ours = table.into_sorted();
            let theirs: Vec<_> = model.into_iter().collect();
            assert_eq!(ours, theirs, "{writes} writes");
        }
    }

    #[test]
    fn attributes_replace_and_come_out_sorted() {
        let mut table = AttributeTable::default();
        table.insert("b".into(), AttributeValue::Int32(1));
        table.insert("a".into(), AttributeValue::Int32(2));
        table.insert("b".into(), AttributeValue::Int32(3));
        let sorted = table.into_sorted();
        let keys: Vec<&str> = sorted.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b"]);
        assert!(matches!(sorted[1].1, AttributeValue::Int32(3)));
    }
}
