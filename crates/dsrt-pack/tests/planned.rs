//! Trees packed with their shards planned ahead (each shard written whole by one worker) write
//! the cache the streaming pipeline writes, byte for byte, for every number of jobs and shard
//! size; an input that changes under the run, a cancellation, or a writer that cannot plan
//! are handled. (Open files over thousands of planned shards: `planned_open_files.rs`.)
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: a failure is the test failing.

use dsrt_atlas_test_runner::files_below;
use dsrt_manifest::CompressionAlgo;
use dsrt_pack::{CancelToken, FileTree, ImageFolder, PackError, PackOptions};
use dsrt_reader::{Cache, OpenOptions};

#[path = "support/trees.rs"]
mod trees;
use trees::{image_folder, write};

#[test]
fn planned_shards_are_the_streamed_bytes_for_every_job_count_and_shard_size() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("images");
    image_folder(&input, 600, 6_000);
    let folder = ImageFolder::scan(&input).unwrap();
    let tree = FileTree::scan(&input).unwrap();
    // Below one record (every record its own shard), a few records, many, one shard in all.
    for max_shard_bytes in [1, 9_000, 200_000, u64::MAX / 2] {
        let streamed = root.path().join(format!("streamed-{max_shard_bytes}"));
        let streaming = PackOptions::default().jobs(2).plan_ahead(false);
        write(
            &folder,
            ImageFolder::schema(),
            &streamed,
            max_shard_bytes,
            CompressionAlgo::None,
            &streaming,
        )
        .unwrap();
        let expected = files_below(&streamed);
        for jobs in [1, 2, 3] {
            let out = root
                .path()
                .join(format!("planned-{max_shard_bytes}-{jobs}"));
            let options = PackOptions::default().jobs(jobs);
            write(
                &folder,
                ImageFolder::schema(),
                &out,
                max_shard_bytes,
                CompressionAlgo::None,
                &options,
            )
            .unwrap();
            assert_eq!(
                files_below(&out),
                expected,
                "max_shard_bytes {max_shard_bytes}, {jobs} jobs"
            );
        }
        let tree_streamed = root.path().join(format!("tree-streamed-{max_shard_bytes}"));
        let tree_planned = root.path().join(format!("tree-planned-{max_shard_bytes}"));
        write(
            &tree,
            FileTree::schema(),
            &tree_streamed,
            max_shard_bytes,
            CompressionAlgo::None,
            &streaming,
        )
        .unwrap();
        write(
            &tree,
            FileTree::schema(),
            &tree_planned,
            max_shard_bytes,
            CompressionAlgo::None,
            &PackOptions::default().jobs(3),
        )
        .unwrap();
        assert_eq!(files_below(&tree_planned), files_below(&tree_streamed));
    }
    let every_record_alone = root.path().join("planned-1-2");
    let cache = Cache::open(&every_record_alone, OpenOptions::validated()).unwrap();
    assert_eq!(cache.len(), 600);
    assert_eq!(cache.manifest().description().shards.len(), 600);
}

#[test]
fn a_file_that_changes_size_during_the_run_is_refused_by_name() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("images");
    image_folder(&input, 300, 3_000);
    let folder = ImageFolder::scan(&input).unwrap();
    let victim = input.join("elk/00299.bin");
    std::fs::write(&victim, vec![7u8; 5_000]).unwrap();
    let out = root.path().join("out");
    let error = write(
        &folder,
        ImageFolder::schema(),
        &out,
        50_000,
        CompressionAlgo::None,
        &PackOptions::default().jobs(2),
    )
    .unwrap_err();
    match &error {
        PackError::Input { input, reason } => {
            assert!(input.ends_with("elk/00299.bin"), "{input}");
            assert!(reason.contains("changed size"), "{reason}");
        }
        other => panic!("{other}"),
    }
    assert!(!out.join("manifest.json").exists());
}

#[test]
fn a_compressing_writer_streams_and_writes_the_same_cache() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("images");
    image_folder(&input, 300, 3_000);
    let folder = ImageFolder::scan(&input).unwrap();
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    for (out, plan) in [(&a, true), (&b, false)] {
        write(
            &folder,
            ImageFolder::schema(),
            out,
            20_000,
            CompressionAlgo::Lz4,
            &PackOptions::default().jobs(2).plan_ahead(plan),
        )
        .unwrap();
    }
    assert_eq!(files_below(&a), files_below(&b));
}

#[test]
fn a_cancelled_planned_run_stops_with_cancelled() {
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("images");
    image_folder(&input, 2_000, 3_000);
    let folder = ImageFolder::scan(&input).unwrap();
    let token = CancelToken::new();
    let fired = token.clone();
    let progress = move |_: u64| fired.cancel();
    let error = write(
        &folder,
        ImageFolder::schema(),
        &root.path().join("out"),
        10_000,
        CompressionAlgo::None,
        &PackOptions::default()
            .jobs(2)
            .cancel(token)
            .progress(&progress),
    )
    .unwrap_err();
    assert!(matches!(error, PackError::Cancelled), "{error}");
}
