//! The process-wide count of idle handles and the CLOCK sweep that closes the least recently
//! used ones.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

/// The least capacity the default gives, however low the limits: more than a loader's window
/// of shards in flight.
pub const MIN_DEFAULT_CAPACITY: usize = 16;

/// The most capacity the default gives, however high the limits.
pub const MAX_DEFAULT_CAPACITY: usize = 65_536;

/// The capacity [`HandlePool::global`] takes when [`CAPACITY_ENV`] does not say otherwise:
/// half the process's soft limit on open files and a quarter of `vm.max_map_count`, whichever
/// is lower, within [`MIN_DEFAULT_CAPACITY`] and [`MAX_DEFAULT_CAPACITY`]. The rest of each
/// is left to everything else the process opens and maps (sockets, pipes, libraries, held
/// payloads, each cache's index and metadata). A process with room for every shard it reads
/// keeps them all open; one with less closes the least recently used. The global pool first
/// raises the soft limit toward the hard one ([`raise_open_file_limit`]), so the soft limit of
/// 1024 most systems start processes with does not decide the bound. Each `DataLoader` worker
/// is a process with limits and a pool of its own.
pub fn default_capacity() -> usize {
    capacity_for(open_file_limit(), map_count_limit())
}

/// The process's soft limit on open files; `u64::MAX` for no limit.
fn open_file_limit() -> u64 {
    // `None` is RLIM_INFINITY.
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

/// `vm.max_map_count`; without /proc, the kernel's default.
fn map_count_limit() -> u64 {
    std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .unwrap_or(65_530)
}

/// [`default_capacity`] for a soft limit of `open_files` descriptors and `map_count` mappings.
fn capacity_for(open_files: u64, map_count: u64) -> usize {
    let capacity = (open_files / 2).min(map_count / 4);
    usize::try_from(capacity)
        .unwrap_or(usize::MAX)
        .clamp(MIN_DEFAULT_CAPACITY, MAX_DEFAULT_CAPACITY)
}

/// The soft limit on open files a pool of `capacity` handles asks for: twice the capacity, as
/// [`default_capacity`] leaves half of the limit to the rest of the process.
fn open_files_wanted(capacity: usize) -> u64 {
    u64::try_from(capacity)
        .unwrap_or(u64::MAX)
        .saturating_mul(2)
}

/// Raises the process's soft limit on open files to what a pool of `capacity` handles wants
/// (twice the capacity), never above the hard limit and never lowering it; returns the soft
/// limit in force afterwards. This is what Go's runtime and Ray do at start: the soft limit
/// of 1024 exists for programs that pass descriptors to `select(2)`, which cannot watch a
/// descriptor above 1023, and the hard limit is the administrator's bound. Children the
/// process starts inherit the raised limit.
///
/// A process whose soft limit must stay (one that uses `select` on descriptors it opens after
/// the shards) sets [`CAPACITY_ENV`] to a bound that fits it: the global pool raises the limit
/// only as far as its capacity wants.
pub fn raise_open_file_limit(capacity: usize) -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current.unwrap_or(u64::MAX);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    let wanted = open_files_wanted(capacity).min(hard);
    if wanted <= soft {
        return soft;
    }
    let raised = Rlimit {
        current: Some(wanted),
        maximum: limit.maximum,
    };
    // Failing to raise leaves the limit as it was: the bound then follows that limit.
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => wanted,
        Err(_) => soft,
    }
}

/// The environment variable read once, when the global pool is first used, for its capacity.
pub const CAPACITY_ENV: &str = "DSRT_MAX_OPEN_SHARDS";

/// Something that keeps handles the pool counts, each named by a key of its own choosing.
///
/// The pool calls both methods without holding any lock of its own that a holder could wait
/// on, and a holder must never call [`HandlePool::admit`] while it holds a lock that
/// `release` takes.
pub trait Holder: Send + Sync {
    /// Whether handle `key` was used since the last call, clearing that mark (the CLOCK's
    /// reference bit). Called with the pool's lock held: an atomic swap, nothing more.
    fn take_used(&self, key: u64) -> bool;

    /// Closes handle `key` and returns `true`: the pool no longer counts it. Whoever is using
    /// it at that moment keeps what they hold (a cloned `Arc`). A holder that must not close
    /// it yet (a file that is being read, whose lock others wait on) returns `false`, and the
    /// pool goes on counting it. A handle that is no longer open is `true`.
    fn release(&self, key: u64) -> bool;
}

struct Entry {
    holder: Weak<dyn Holder>,
    key: u64,
}

#[derive(Default)]
struct State {
    entries: Vec<Entry>,
    /// The CLOCK's hand: the next entry to consider.
    hand: usize,
}

/// A count of open handles with a bound: admitting one beyond [`HandlePool::capacity`]
/// releases the least recently used others (CLOCK: a used handle gets a second chance).
pub struct HandlePool {
    capacity: AtomicUsize,
    state: Mutex<State>,
}

impl std::fmt::Debug for HandlePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlePool")
            .field("capacity", &self.capacity())
            .field("admitted", &self.admitted())
            .finish()
    }
}

impl HandlePool {
    /// A pool of its own (tests, tools); readers use [`HandlePool::global`].
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: AtomicUsize::new(capacity.max(1)),
            state: Mutex::default(),
        }
    }

    /// The process's pool: [`default_capacity`], or the number in [`CAPACITY_ENV`] (a value
    /// that is not a whole number >= 1 is ignored). Made on first use, which first raises
    /// the soft limit on open files as far as that capacity wants ([`raise_open_file_limit`]).
    pub fn global() -> &'static Self {
        static GLOBAL: OnceLock<HandlePool> = OnceLock::new();
        GLOBAL.get_or_init(|| {
            let chosen = std::env::var(CAPACITY_ENV)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|&n| n >= 1);
            let capacity = match chosen {
                Some(capacity) => {
                    raise_open_file_limit(capacity);
                    capacity
                }
                None => {
                    // What the mappings allow, were descriptors no constraint; then what the
                    // soft limit, raised toward that, allows.
                    let map_count = map_count_limit();
                    let open_files = raise_open_file_limit(capacity_for(u64::MAX, map_count));
                    capacity_for(open_files, map_count)
                }
            };
            Self::new(capacity)
        })
    }

    /// How many handles nothing uses the pool keeps at most.
    pub fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Sets the bound (at least 1); a lower bound releases handles at once, a higher one
    /// raises the soft limit on open files as far as it wants ([`raise_open_file_limit`]).
    pub fn set_capacity(&self, capacity: usize) {
        raise_open_file_limit(capacity);
        self.capacity.store(capacity.max(1), Ordering::Relaxed);
        self.sweep(None);
    }

    /// How many handles the pool counts now (released ones and those of dropped holders
    /// excepted, once a sweep has seen them).
    pub fn admitted(&self) -> usize {
        self.lock().entries.len()
    }

    /// Counts handle `key` of `holder` as open, then releases the least recently used handles
    /// beyond the capacity. A holder admits a handle once, when it opens it, and again only
    /// after the pool released it.
    pub fn admit(&self, holder: Weak<dyn Holder>, key: u64) {
        self.sweep(Some(Entry { holder, key }));
    }

    /// Stops counting handle `key` of `holder`, which the holder closed itself.
    pub fn forget(&self, holder: &Weak<dyn Holder>, key: u64) {
        let mut state = self.lock();
        if let Some(at) = state
            .entries
            .iter()
            .position(|e| e.key == key && Weak::ptr_eq(&e.holder, holder))
        {
            let entry = state.entries.swap_remove(at);
            drop(state);
            drop(entry);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `entry`, picks the handles to release under the lock (memory only, no system
    /// call: a process forked meanwhile never inherits the lock held for long), releases
    /// them after it, and counts again those their holders kept.
    fn sweep(&self, entry: Option<Entry>) {
        let capacity = self.capacity();
        let mut victims: Vec<(Arc<dyn Holder>, u64)> = Vec::new();
        // Holders upgraded to look at them; dropping one could run its destructor, which
        // must not run under the lock.
        let mut seen: Vec<Arc<dyn Holder>> = Vec::new();
        {
            let mut state = self.lock();
            if let Some(entry) = entry {
                state.entries.push(entry);
            }
            // Two turns of the clock at most: every used mark is cleared in the first.
            let mut budget = state.entries.len().saturating_mul(2).saturating_add(1);
            while state.entries.len() > capacity && budget > 0 {
                budget -= 1;
                if state.hand >= state.entries.len() {
                    state.hand = 0;
                }
                let hand = state.hand;
                let Some(holder) = state.entries[hand].holder.upgrade() else {
                    state.entries.swap_remove(hand);
                    continue;
                };
                let key = state.entries[hand].key;
                if holder.take_used(key) {
                    state.hand += 1;
                    seen.push(holder);
                } else {
                    state.entries.swap_remove(hand);
                    victims.push((holder, key));
                }
            }
        }
        let kept: Vec<Entry> = victims
            .iter()
            .filter(|(holder, key)| !holder.release(*key))
            .map(|(holder, key)| Entry {
                holder: Arc::downgrade(holder),
                key: *key,
            })
            .collect();
        if !kept.is_empty() {
            self.lock().entries.extend(kept);
        }
        drop(seen);
        drop(victims);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: small keys
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// Handles 0..n, each with a used mark, an open flag and a busy flag (being read: not to
    /// be closed).
    struct Handles {
        used: Vec<AtomicBool>,
        open: Vec<AtomicBool>,
        busy: Vec<AtomicBool>,
    }

    impl Handles {
        fn new(n: usize) -> Arc<Self> {
            Arc::new(Self {
                used: (0..n).map(|_| AtomicBool::new(false)).collect(),
                open: (0..n).map(|_| AtomicBool::new(false)).collect(),
                busy: (0..n).map(|_| AtomicBool::new(false)).collect(),
            })
        }

        fn open(self: &Arc<Self>, pool: &HandlePool, key: usize) {
            self.used[key].store(true, Ordering::Relaxed);
            if !self.open[key].swap(true, Ordering::Relaxed) {
                let weak = Arc::downgrade(self);
                pool.admit(weak, key as u64);
            }
        }

        fn open_count(&self) -> usize {
            self.open
                .iter()
                .filter(|o| o.load(Ordering::Relaxed))
                .count()
        }
    }

    impl Holder for Handles {
        fn take_used(&self, key: u64) -> bool {
            self.used[key as usize].swap(false, Ordering::Relaxed)
        }

        fn release(&self, key: u64) -> bool {
            if self.busy[key as usize].load(Ordering::Relaxed) {
                return false;
            }
            self.open[key as usize].store(false, Ordering::Relaxed);
            true
        }
    }

    #[test]
    fn never_more_than_the_capacity_stay_open() {
        let pool = HandlePool::new(4);
        let handles = Handles::new(100);
        for key in 0..100 {
            handles.open(&pool, key);
            assert!(handles.open_count() <= 4, "after opening {key}");
            assert!(pool.admitted() <= 4);
        }
    }

    #[test]
    fn a_handle_used_since_the_last_sweep_outlives_unused_ones() {
        let pool = HandlePool::new(3);
        let handles = Handles::new(10);
        for key in 0..4 {
            handles.open(&pool, key);
        }
        // That sweep cleared every mark; 1 is used again before 4 arrives.
        assert_eq!(handles.open_count(), 3);
        handles.open(&pool, 1);
        handles.open(&pool, 4);
        assert!(
            handles.open[1].load(Ordering::Relaxed),
            "the hot handle was closed"
        );
        assert!(handles.open[4].load(Ordering::Relaxed));
        assert_eq!(handles.open_count(), 3);
    }

    #[test]
    fn the_default_leaves_half_the_descriptors_and_three_quarters_of_the_mappings() {
        assert_eq!(capacity_for(1_024, 65_530), 512);
        assert_eq!(capacity_for(256, 65_530), 128);
        assert_eq!(capacity_for(20_000, 65_530), 10_000);
        // A very high descriptor limit meets the map count, a very low one the floor.
        assert_eq!(capacity_for(1 << 20, 65_530), 16_382);
        assert_eq!(capacity_for(u64::MAX, u64::MAX), MAX_DEFAULT_CAPACITY);
        assert_eq!(capacity_for(4, 65_530), MIN_DEFAULT_CAPACITY);
    }

    #[test]
    fn raising_the_open_file_limit_never_lowers_it_nor_passes_the_hard_one() {
        use rustix::process::{getrlimit, Resource};
        let before = getrlimit(Resource::Nofile);
        assert_eq!(raise_open_file_limit(1), before.current.unwrap_or(u64::MAX));
        assert_eq!(getrlimit(Resource::Nofile).current, before.current);
        let raised = raise_open_file_limit(usize::MAX);
        let after = getrlimit(Resource::Nofile);
        assert_eq!(after.current.unwrap_or(u64::MAX), raised);
        assert_eq!(after.current, before.maximum, "raised to the hard limit");
        assert_eq!(after.maximum, before.maximum);
    }

    #[test]
    fn a_busy_handle_stays_open_and_counted() {
        let pool = HandlePool::new(2);
        let handles = Handles::new(10);
        handles.busy[0].store(true, Ordering::Relaxed);
        for key in 0..10 {
            handles.open(&pool, key);
        }
        assert!(
            handles.open[0].load(Ordering::Relaxed),
            "a busy handle was closed"
        );
        assert_eq!(pool.admitted(), handles.open_count());
        handles.busy[0].store(false, Ordering::Relaxed);
        handles.open(&pool, 5);
        handles.open(&pool, 6);
        assert!(
            !handles.open[0].load(Ordering::Relaxed),
            "once idle, it is closed like any other"
        );
        assert_eq!(handles.open_count(), 2);
    }

    #[test]
    fn dropped_holders_free_their_places_and_lower_capacity_releases_at_once() {
        let pool = HandlePool::new(8);
        let gone = Handles::new(8);
        for key in 0..8 {
            gone.open(&pool, key);
        }
        drop(gone);
        let kept = Handles::new(8);
        for key in 0..8 {
            kept.open(&pool, key);
        }
        assert_eq!(
            kept.open_count(),
            8,
            "dead entries should go before live ones"
        );
        assert_eq!(pool.admitted(), 8);
        pool.set_capacity(2);
        assert_eq!(kept.open_count(), 2);
        assert_eq!(pool.admitted(), 2);
        let open = (0..8)
            .find(|&k| kept.open[k].load(Ordering::Relaxed))
            .unwrap();
        let weak: Weak<dyn Holder> = Arc::downgrade(&kept) as Weak<dyn Holder>;
        pool.forget(&weak, open as u64);
        assert_eq!(pool.admitted(), 1);
    }
}
