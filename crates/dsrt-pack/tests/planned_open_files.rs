//! Packing a tree into thousands of planned shards keeps the process's open files bounded by
//! the jobs, not by the shards. Alone in its test binary, so no other test's files count.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: a failure is the test failing.

use dsrt_manifest::CompressionAlgo;
use dsrt_pack::{ImageFolder, PackOptions};
use dsrt_reader::{Cache, OpenOptions};
use std::sync::atomic::{AtomicUsize, Ordering};

#[path = "support/trees.rs"]
mod trees;
use trees::{image_folder, write};

/// Open file descriptors of this process.
fn open_files() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn thousands_of_planned_shards_keep_open_files_bounded_by_the_jobs() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("images");
    image_folder(&input, 3_000, 2_000);
    let folder = ImageFolder::scan(&input).unwrap();
    let before = open_files();
    let most = AtomicUsize::new(0);
    let progress = |_: u64| {
        most.fetch_max(open_files(), Ordering::Relaxed);
    };
    let out = root.path().join("out");
    // A shard per record or two: about 2,500 shards.
    write(
        &folder,
        ImageFolder::schema(),
        &out,
        1_500,
        CompressionAlgo::None,
        &PackOptions::default().jobs(3).progress(&progress),
    )
    .unwrap();
    let cache = Cache::open(&out, OpenOptions::validated()).unwrap();
    assert!(cache.manifest().description().shards.len() > 2_000);
    let most = most.load(Ordering::Relaxed);
    // index.bin, metadata.arrow, the shards being written and queued (jobs + the queue), the
    // finished ones waiting to be adopted or synced: tens, never thousands.
    assert!(
        most > 0 && most - before < 48,
        "{most} open, {before} before"
    );
}
