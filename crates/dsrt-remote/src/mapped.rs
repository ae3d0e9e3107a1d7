//! Mapped shards a process keeps for zero-copy payloads, a few per cache.
//!
//! A mapping is made through a descriptor that holds no lock (`CachedFile::map`), so keeping
//! it neither pins the shard in the local cache nor stops its eviction: an evicted shard is
//! unlinked, never truncated, and its mapping keeps serving the same checked bytes. Keeping a
//! few saves mapping a shard again for every chunk (the page tables are rebuilt, and every
//! unmap interrupts the other cores); the bound keeps the pages of evicted shards from
//! lingering on disk beyond a few shards.

use std::collections::VecDeque;
use std::sync::Arc;

/// Mappings kept per cache at most (also at most half the cache limit in bytes).
const MAX_MAPPED: usize = 8;

/// A shard's local file, mapped.
pub(crate) struct MappedShard {
    pub(crate) map: memmap2::Mmap,
}

impl AsRef<[u8]> for MappedShard {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

/// The mappings of one cache's shards, least recently used first in `recent`.
#[derive(Default)]
pub(crate) struct MappedShards {
    slots: Vec<Option<Arc<MappedShard>>>,
    recent: VecDeque<usize>,
    bytes: u64,
}

impl MappedShards {
    pub(crate) fn new(shards: usize) -> Self {
        Self {
            slots: vec![None; shards],
            recent: VecDeque::new(),
            bytes: 0,
        }
    }

    /// Shard `index`'s mapping, if kept; marks it most recently used.
    pub(crate) fn get(&mut self, index: usize) -> Option<Arc<MappedShard>> {
        let map = Arc::clone(self.slots.get(index)?.as_ref()?);
        self.recent.retain(|&i| i != index);
        self.recent.push_back(index);
        Some(map)
    }

    /// Whether shard `index`'s mapping is kept (without marking it used).
    pub(crate) fn contains(&self, index: usize) -> bool {
        self.slots.get(index).is_some_and(Option::is_some)
    }

    /// Stops keeping shard `index`'s mapping; returns it (payloads in it keep it alive).
    pub(crate) fn remove(&mut self, index: usize) -> Option<Arc<MappedShard>> {
        let map = self.slots.get_mut(index).and_then(Option::take)?;
        self.bytes -= map.map.len() as u64;
        self.recent.retain(|&i| i != index);
        Some(map)
    }

    /// Keeps `map` for shard `index` (or returns the one another thread kept meanwhile), then
    /// drops the least recently used mappings beyond [`MAX_MAPPED`] or `max_bytes` (the
    /// newest always stays), returning the shards whose mappings it dropped. Payloads in a
    /// dropped mapping keep it alive.
    pub(crate) fn insert(
        &mut self,
        index: usize,
        map: Arc<MappedShard>,
        max_bytes: u64,
    ) -> (Arc<MappedShard>, Vec<usize>) {
        if let Some(present) = self.get(index) {
            return (present, Vec::new());
        }
        let Some(slot) = self.slots.get_mut(index) else {
            return (map, Vec::new());
        };
        *slot = Some(Arc::clone(&map));
        self.bytes += map.map.len() as u64;
        self.recent.push_back(index);
        let mut dropped = Vec::new();
        while self.recent.len() > 1 && (self.recent.len() > MAX_MAPPED || self.bytes > max_bytes) {
            let Some(oldest) = self.recent.pop_front() else {
                break;
            };
            if let Some(map) = self.slots.get_mut(oldest).and_then(Option::take) {
                self.bytes -= map.map.len() as u64;
                dropped.push(oldest);
            }
        }
        (map, dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_of(len: usize) -> Arc<MappedShard> {
        let map = memmap2::MmapMut::map_anon(len)
            .unwrap()
            .make_read_only()
            .unwrap();
        Arc::new(MappedShard { map })
    }

    #[test]
    fn the_least_recently_used_mappings_go_beyond_the_count_or_bytes() {
        let mut kept = MappedShards::new(20);
        for i in 0..10 {
            kept.insert(i, map_of(4096), u64::MAX);
        }
        assert_eq!(kept.recent.len(), MAX_MAPPED);
        assert!(kept.get(0).is_none() && kept.get(1).is_none());
        assert!(kept.get(2).is_some()); // now the most recent
        kept.insert(10, map_of(4096), 3 * 4096);
        assert_eq!(kept.recent.len(), 3);
        assert!(kept.get(2).is_some() && kept.get(10).is_some());
        // The newest stays even alone over the byte bound.
        kept.insert(11, map_of(8192), 4096);
        assert_eq!(kept.recent.iter().copied().collect::<Vec<_>>(), vec![11]);
        assert_eq!(kept.bytes, 8192);
    }
}
