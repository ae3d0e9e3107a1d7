//! Shared by the corruption sweeps: a global allocator that records the largest single
//! allocation (and refuses absurd ones), per-case timing, and an outcome tally.
#![allow(dead_code, unreachable_pub)]
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Largest single allocation a case may make: no file here is larger than a few KiB, so
/// anything near this is sized by an untrusted length.
pub const ALLOCATION_LIMIT: usize = 64 << 20;
/// Beyond this the allocator returns null (the process aborts with "memory allocation
/// failed") instead of asking the OS: the test fails either way, but cannot take the machine.
const HARD_LIMIT: usize = 1 << 30;

static LARGEST: AtomicUsize = AtomicUsize::new(0);
/// One case at a time per process: [`LARGEST`] is process-wide, so a case running on another
/// test thread would be charged with this one's allocations.
static ONE_CASE_AT_A_TIME: Mutex<()> = Mutex::new(());

pub struct Limiting;

// SAFETY: forwards every call to the system allocator unchanged, except that it records the
// largest size asked for and refuses (returns null, as the contract allows) requests past
// HARD_LIMIT.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Limiting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        if layout.size() > HARD_LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        if layout.size() > HARD_LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        if new_size > HARD_LIMIT {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// What one corrupted case came to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// A typed error (its variant name).
    Error(String),
    /// Opened and read everything; identical to the original.
    Same,
    /// Opened and read everything; something differs from the original.
    Different(String),
}

impl Outcome {
    pub fn class(&self) -> &'static str {
        match self {
            Outcome::Error(_) => "error",
            Outcome::Same => "same",
            Outcome::Different(_) => "different",
        }
    }
}

/// The first word of an error's Debug form: its variant.
pub fn variant(err: &impl std::fmt::Debug) -> String {
    let text = format!("{err:?}");
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or("")
        .to_owned()
}

/// Counts per (region, outcome class), the slowest case and the largest allocation.
#[derive(Default)]
pub struct Tally {
    counts: BTreeMap<(String, &'static str), u64>,
    pub cases: u64,
    pub slowest: Duration,
    pub largest_allocation: usize,
}

impl Tally {
    /// Runs one case: `run` must not panic, must finish in 2 s and must not allocate more
    /// than [`ALLOCATION_LIMIT`] at once; `allowed` says which outcomes the region permits.
    pub fn case(
        &mut self,
        region: &str,
        what: &str,
        allowed: impl Fn(&Outcome) -> bool,
        run: impl FnOnce() -> Outcome + std::panic::UnwindSafe,
    ) {
        let _exclusive = ONE_CASE_AT_A_TIME
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        LARGEST.store(0, Ordering::Relaxed);
        let start = Instant::now();
        let outcome =
            std::panic::catch_unwind(run).unwrap_or_else(|_| panic!("{region}: {what}: panicked"));
        let elapsed = start.elapsed();
        let largest = LARGEST.load(Ordering::Relaxed);
        assert!(
            largest <= ALLOCATION_LIMIT,
            "{region}: {what}: one allocation of {largest} bytes"
        );
        assert!(
            elapsed < Duration::from_secs(2),
            "{region}: {what}: took {elapsed:?}"
        );
        assert!(
            allowed(&outcome),
            "{region}: {what}: outcome {outcome:?} not allowed"
        );
        self.slowest = self.slowest.max(elapsed);
        self.largest_allocation = self.largest_allocation.max(largest);
        self.cases += 1;
        *self
            .counts
            .entry((region.to_owned(), outcome.class()))
            .or_default() += 1;
    }

    /// Prints the table of counts.
    pub fn print(&self, title: &str) {
        println!("{title}: {} cases", self.cases);
        for ((region, class), n) in &self.counts {
            println!("  {region:<40} {class:<10} {n}");
        }
        println!(
            "  slowest case {:?}, largest single allocation {} bytes",
            self.slowest, self.largest_allocation
        );
    }

    pub fn count(&self, region: &str, class: &str) -> u64 {
        self.counts
            .iter()
            .filter(|((r, c), _)| r == region && *c == class)
            .map(|(_, n)| n)
            .sum()
    }
}

/// Silences panics raised inside arrow's decoders (which `dsrt-metadata` catches and turns
/// into a typed error); every other panic prints as usual.
pub fn quiet_caught_arrow_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_arrow = info
            .location()
            .is_some_and(|l| l.file().contains("/arrow-"));
        if !in_arrow {
            default(info);
        }
    }));
}
