//! Requirement 7: opening a 1,000,000-sample cache allocates nothing per sample: the index
//! stays mapped and metadata.arrow is decoded in place.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_reader::{Cache, OpenOptions, SampleBuf};
use dsrt_schema::{Column, ColumnType, Schema, ValueRef};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn write(path: &Path, samples: u64) {
    let schema = Schema::new(vec![
        Column::new("label", ColumnType::Int64, false),
        Column::new("weight", ColumnType::Float64, true),
    ])
    .unwrap();
    let mut writer = CacheWriter::create(
        path,
        WriterOptions::new("alloc", schema).max_shard_bytes(8 << 20),
    )
    .unwrap();
    for i in 0..samples {
        let values = [ValueRef::Int64(i as i64), ValueRef::Float64(0.25)];
        writer
            .add_values(&i.to_le_bytes()[..(i % 8) as usize], &values)
            .unwrap();
    }
    writer.finish().unwrap();
}

/// (allocations, bytes) made while opening the cache at `path`.
fn open_cost(path: &Path) -> (u64, u64, Cache) {
    let (a0, b0) = (
        ALLOCATIONS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    );
    let cache = Cache::open(path, OpenOptions::default()).unwrap();
    let (a1, b1) = (
        ALLOCATIONS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    );
    (a1 - a0, b1 - b0, cache)
}

#[test]
fn opening_a_million_samples_allocates_nothing_per_sample() {
    let dir = tempfile::tempdir().unwrap();
    let (small, large) = (dir.path().join("small"), dir.path().join("large"));
    write(&small, 1_000);
    write(&large, 1_000_000);
    let (small_allocs, small_bytes, _) = open_cost(&small);
    let (large_allocs, large_bytes, cache) = open_cost(&large);
    eprintln!("open 1k: {small_allocs} allocations, {small_bytes} bytes; open 1M: {large_allocs} allocations, {large_bytes} bytes");
    // A thousand times the samples may cost a few more record batches and shards, never a
    // per-sample structure: 1M samples would need at least 1M allocations or 8 MB for one.
    assert!(
        large_allocs < small_allocs + 2_000,
        "{large_allocs} vs {small_allocs}"
    );
    assert!(
        large_bytes < 2 << 20,
        "{large_bytes} bytes allocated opening 1M samples"
    );

    // Serving samples through one SampleBuf allocates nothing once it has grown and the
    // shards are open (opening a shard allocates its handle once, never per sample).
    let mut buf = SampleBuf::new();
    cache.read(999_999, &mut buf).unwrap();
    for i in (0..1_000_000).step_by(997) {
        cache.read(i, &mut buf).unwrap();
    }
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for i in (0..1_000_000).step_by(997) {
        let sample = cache.read(i, &mut buf).unwrap();
        assert_eq!(sample.metadata.get(0), Some(ValueRef::Int64(i as i64)));
    }
    assert_eq!(
        ALLOCATIONS.load(Ordering::Relaxed) - before,
        0,
        "reads allocated"
    );
}
