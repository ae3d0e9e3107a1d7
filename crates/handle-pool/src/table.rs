//! Values that keep handles alive (a view of a mapping, an object holding a file), by key,
//! each counted in the pool as one handle and dropped when the pool releases it.

use crate::pool::{HandlePool, Holder};
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// A table of values by key whose entries the process's [`HandlePool`] counts and bounds:
/// each inserted value is admitted as one handle, and the pool drops the least recently used
/// (by [`PooledTable::get`] and [`PooledTable::insert`]) when it needs room, as it closes
/// files. What a layer that keeps its own objects over mappings (the Python binding's
/// memoryviews of shard files) uses instead of a bounded cache of its own, so one bound covers
/// every mapping of the process.
///
/// The table's lock is held for map operations only, never while the pool is called, and a
/// value is dropped after it is released.
pub struct PooledTable<K, V> {
    state: Mutex<State<K, V>>,
    pool: &'static HandlePool,
    this: Weak<Self>,
}

struct State<K, V> {
    ids: HashMap<K, u64>,
    /// Each entry by its id: its key, its value, and whether it was used since the pool's
    /// clock last passed.
    entries: HashMap<u64, (K, V, bool)>,
    next: u64,
}

impl<K, V> std::fmt::Debug for PooledTable<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledTable")
            .field("entries", &self.lock().entries.len())
            .finish_non_exhaustive()
    }
}

impl<K: Hash + Eq + Clone + Send + 'static, V: Clone + Send + 'static> PooledTable<K, V> {
    /// An empty table counted by the process's pool ([`HandlePool::global`]).
    pub fn new() -> Arc<Self> {
        Self::in_pool(HandlePool::global())
    }

    /// An empty table counted by `pool`.
    pub fn in_pool(pool: &'static HandlePool) -> Arc<Self> {
        Arc::new_cyclic(|this| Self {
            state: Mutex::new(State {
                ids: HashMap::new(),
                entries: HashMap::new(),
                next: 0,
            }),
            pool,
            this: this.clone(),
        })
    }

    /// The value of `key`, marked used.
    pub fn get(&self, key: &K) -> Option<V> {
        let mut state = self.lock();
        let id = *state.ids.get(key)?;
        let (_, value, used) = state.entries.get_mut(&id)?;
        *used = true;
        Some(value.clone())
    }

    /// Sets `key` to `value` (dropping the value it had), counted by the pool, which may
    /// release other entries (or this one, with a capacity of zero idle handles) to make room.
    pub fn insert(&self, key: K, value: V) {
        let (id, replaced) = {
            let mut state = self.lock();
            let id = state.next;
            state.next += 1;
            let replaced = state.ids.insert(key.clone(), id);
            let replaced = replaced.and_then(|old| state.entries.remove(&old).map(|e| (old, e)));
            state.entries.insert(id, (key, value, true));
            (id, replaced)
        };
        if let Some((old, entry)) = replaced {
            self.pool.forget(&self.holder(), old);
            drop(entry);
        }
        self.pool.admit(self.holder(), id);
    }

    /// Drops every entry (the pool stops counting them).
    pub fn clear(&self) {
        let entries: Vec<(u64, (K, V, bool))> = {
            let mut state = self.lock();
            state.ids.clear();
            state.entries.drain().collect()
        };
        let holder = self.holder();
        for (id, entry) in entries {
            self.pool.forget(&holder, id);
            drop(entry);
        }
    }

    /// How many entries the table holds.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn holder(&self) -> Weak<dyn Holder> {
        self.this.clone()
    }
}

impl<K, V> PooledTable<K, V> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State<K, V>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K: Hash + Eq + Send + 'static, V: Send + 'static> Holder for PooledTable<K, V> {
    fn take_used(&self, id: u64) -> bool {
        let mut state = self.lock();
        state
            .entries
            .get_mut(&id)
            .is_some_and(|(_, _, used)| std::mem::replace(used, false))
    }

    fn release(&self, id: u64) -> bool {
        let entry = {
            let mut state = self.lock();
            let entry = state.entries.remove(&id);
            if let Some((key, _, _)) = &entry {
                if state.ids.get(key) == Some(&id) {
                    state.ids.remove(key);
                }
            }
            entry
        };
        drop(entry);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(capacity: usize) -> &'static HandlePool {
        Box::leak(Box::new(HandlePool::new(capacity)))
    }

    #[test]
    fn the_pool_bounds_the_table_and_drops_what_it_releases() {
        let pool = pool(3);
        let table = PooledTable::in_pool(pool);
        let values: Vec<Arc<u32>> = (0..100).map(Arc::new).collect();
        for (key, value) in values.iter().enumerate() {
            table.insert(key, Arc::clone(value));
            assert!(table.len() <= 3 && pool.admitted() <= 3);
        }
        let kept: Vec<usize> = (0..100).filter(|k| table.get(k).is_some()).collect();
        assert_eq!(kept.len(), 3);
        for (key, value) in values.iter().enumerate() {
            let held = if kept.contains(&key) { 2 } else { 1 };
            assert_eq!(Arc::strong_count(value), held, "entry {key}");
        }
        pool.set_capacity(1);
        assert_eq!(table.len(), 1);
        table.clear();
        assert!(table.is_empty());
        assert_eq!(pool.admitted(), 0);
    }

    #[test]
    fn a_released_value_is_dropped_and_a_replaced_one_is_no_longer_counted() {
        let pool = pool(2);
        let table = PooledTable::in_pool(pool);
        let first = Arc::new("first");
        table.insert("k", Arc::clone(&first));
        table.insert("k", Arc::new("second"));
        assert_eq!(
            Arc::strong_count(&first),
            1,
            "the replaced value was dropped"
        );
        assert_eq!(pool.admitted(), 1);
        table.insert("a", Arc::new("a"));
        table.insert("b", Arc::new("b"));
        table.insert("c", Arc::new("c"));
        assert_eq!(table.len(), 2);
        assert_eq!(pool.admitted(), 2);
        assert_eq!(table.get(&"k"), None);
    }
}
