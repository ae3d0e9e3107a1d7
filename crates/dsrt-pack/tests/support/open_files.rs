//! The open files of this process while a tree is packed into planned shards: for the tests
//! that bound them, each alone in its test binary so that no other test's files count.

use crate::trees::write;
use dsrt_manifest::CompressionAlgo;
use dsrt_pack::{Convert, ImageFolder, PackOptions};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Open file descriptors of this process.
pub(crate) fn open_files() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Packs `convert` (the ImageFolder schema, uncompressed, shards of `max_shard_bytes`) into
/// `out` on `jobs` workers; the open files before the run and the most seen during it
/// (counted at every progress report).
pub(crate) fn pack_counting_open_files<C: Convert>(
    convert: &C,
    out: &Path,
    max_shard_bytes: u64,
    jobs: usize,
) -> (usize, usize) {
    let before = open_files();
    let most = AtomicUsize::new(0);
    let progress = |_: u64| {
        most.fetch_max(open_files(), Ordering::Relaxed);
    };
    write(
        convert,
        ImageFolder::schema(),
        out,
        max_shard_bytes,
        CompressionAlgo::None,
        &PackOptions::default().jobs(jobs).progress(&progress),
    )
    .unwrap();
    (before, most.load(Ordering::Relaxed))
}
