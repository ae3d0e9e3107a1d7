//! Packing a tree into thousands of planned shards keeps the process's open files bounded by
//! the jobs, not by the shards. Alone in its test binary, so no other test's files count.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: a failure is the test failing.

use dsrt_pack::ImageFolder;
use dsrt_reader::{Cache, OpenOptions};

#[path = "support/trees.rs"]
mod trees;
use trees::image_folder;
#[path = "support/open_files.rs"]
mod open_files;
use open_files::pack_counting_open_files;

#[test]
fn thousands_of_planned_shards_keep_open_files_bounded_by_the_jobs() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("images");
    image_folder(&input, 3_000, 2_000);
    let folder = ImageFolder::scan(&input).unwrap();
    let out = root.path().join("out");
    // A shard per record or two: about 2,500 shards.
    let (before, most) = pack_counting_open_files(&folder, &out, 1_500, 3);
    let cache = Cache::open(&out, OpenOptions::validated()).unwrap();
    assert!(cache.manifest().description().shards.len() > 2_000);
    // index.bin, metadata.arrow, the shards being written and queued (jobs + the queue), the
    // finished ones waiting to be adopted or synced: tens, never thousands.
    assert!(
        most > 0 && most - before < 48,
        "{most} open, {before} before"
    );
}
