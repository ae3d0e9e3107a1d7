//! `compact` (`atlas compact`) on growing collections, through the public API
//! (`docs/format/growing.md`, "Compaction"): the compacted part is byte for byte a fresh write
//! of the live datasets in order (bar the creation time, which the fresh write here copies);
//! older versions read their parts until gc, which then commits them unreadable before it
//! removes a part (a typed error, never a missing part); a tag keeps its version's parts;
//! appends and deletes that race a compaction lose nothing.
#![allow(clippy::disallowed_methods)] // a test drives its own runtime
#![allow(clippy::unwrap_used)] // test code

mod common;

use array_format::FillValue;
use atlas_append::{collect_garbage, compact, create_tag, AppendError, Appender, GcOptions};
use atlas_reader::manifest::{CommitKind, MANIFEST_OBJECT};
use atlas_reader::{Atlas, AtlasError, GrowingProblem};
use atlas_writer::{ArraySpec, AtlasWriter, DatasetSpec, WriterOptions};
use common::*;
use ndarray::{ArrayD, IxDyn};
use object_access::StoreLocation;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use std::collections::BTreeSet;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Duration;

/// Dataset `index` of part `part`: chunked floats with array attributes, strings in every
/// other one, a declared and never written array with a fill value in every third, and
/// dataset attributes, so that the copy has every kind of thing to carry.
fn rich(part: usize, index: usize) -> DatasetSpec {
    let name = format!("p{part}_d{index:02}");
    let seed = (part * 100 + index) as f32;
    let temp = ArrayD::from_shape_fn(IxDyn(&[4, 6]), |i| seed + (i[0] * 6 + i[1]) as f32 / 4.0);
    let mut dataset = DatasetSpec::new(&name)
        .array(
            ArraySpec::new("temp", temp)
                .dims(["y", "x"])
                .chunks(vec![2, 3])
                .attr("units", "K")
                .attr("scale", 0.5),
        )
        .attr("part", part as i64)
        .attr("source", format!("station {index}").as_str());
    if index % 2 == 0 {
        let labels =
            ArrayD::from_shape_fn(IxDyn(&[3]), |i| format!("{name}/{}", "abc".repeat(i[0])));
        dataset = dataset.array(ArraySpec::new("label", labels));
    }
    if index % 3 == 0 {
        dataset = dataset.array(
            ArraySpec::declared::<i64>("flags", vec![5])
                .dims(["t"])
                .fill(FillValue::Int(-1)),
        );
    }
    dataset
}

/// Appends part `part` of `count` rich datasets.
async fn append_rich(location: &StoreLocation, part: usize, count: usize) {
    let mut appender = Appender::open(location, WriterOptions::default())
        .await
        .unwrap();
    for index in 0..count {
        appender.write_dataset(rich(part, index)).unwrap();
    }
    appender.commit().await.unwrap();
}

/// Five parts of six rich datasets each, then deletes in three of them; returns the live names
/// in ordinal order.
async fn five_parts_with_deletes(location: &StoreLocation) -> Vec<(usize, usize)> {
    for part in 0..5 {
        append_rich(location, part, 6).await;
    }
    let deleted = [(0, 1), (2, 0), (2, 5), (4, 3)];
    let names: Vec<String> = deleted
        .iter()
        .map(|&(p, i)| format!("p{p}_d{i:02}"))
        .collect();
    let atlas = Atlas::open_location(location, |s| s).await.unwrap();
    atlas.delete(&names).await.unwrap();
    (0..5)
        .flat_map(|p| (0..6).map(move |i| (p, i)))
        .filter(|key| !deleted.contains(key))
        .collect()
}

fn no_progress() -> impl FnMut(usize, usize) + Send {
    |_, _| {}
}

fn gc_options(keep: u64) -> GcOptions {
    GcOptions {
        keep_versions: NonZeroU64::new(keep),
        grace: Duration::ZERO,
        dry_run: false,
    }
}

fn growing_problem(error: &AtlasError) -> Option<&GrowingProblem> {
    match error {
        AtlasError::Growing { problem, .. } => Some(problem),
        _ => None,
    }
}

/// Five parts with deletes, compacted: the bytes one writer makes of the live datasets in order.
#[test]
fn a_compacted_part_is_byte_identical_to_a_fresh_write_of_the_live_datasets() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    runtime().block_on(async {
        let live = five_parts_with_deletes(&location).await;
        let mut calls = Vec::new();
        let report = compact(&location, &mut |done, total| calls.push((done, total)))
            .await
            .unwrap();
        assert_eq!(report.version, 6);
        assert_eq!(report.datasets, live.len());
        assert_eq!(report.replaced_parts, 5);
        assert_eq!((report.attempts, report.carried_deletes), (1, 0));
        assert_eq!(calls.len(), live.len());
        assert_eq!(calls.last(), Some(&(live.len(), live.len())));

        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(atlas.version(), Some(6));
        assert_eq!(atlas.part_commits().len(), 1);
        assert_eq!(atlas.part_commits()[0].kind, CommitKind::Compact);
        assert_eq!(atlas.commits().len(), 6);
        let names: Vec<String> = atlas.datasets().map(|d| d.name().to_owned()).collect();
        let want: Vec<String> = live.iter().map(|&(p, i)| format!("p{p}_d{i:02}")).collect();
        assert_eq!(names, want);
        let created = atlas.parts().next().unwrap().1.footer().created_unix_ms;

        // One writer, the default options and the compaction's creation time, writing the live
        // datasets in order.
        let specs = live.iter().map(|&(p, i)| rich(p, i));
        let (fresh, container_bytes) = fresh_write(&dir.path().join("fresh"), created, specs).await;
        assert_eq!(container_bytes, report.container_bytes);
        assert!(
            part_bytes(&collection, &report.part) == fresh,
            "the compacted part differs from a fresh write"
        );

        // The version before the compaction still reads its five parts, deletes hidden.
        let old = Atlas::open_location_version(&location, Some(5), |s| s)
            .await
            .unwrap();
        assert_eq!(old.part_commits().len(), 5);
        assert_eq!(
            old.datasets()
                .map(|d| d.name().to_owned())
                .collect::<Vec<_>>(),
            want
        );
    });
}

#[test]
fn gc_after_a_compaction_commits_old_versions_unreadable_then_removes_their_parts() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    runtime().block_on(async {
        let live = five_parts_with_deletes(&location).await;
        let manifest_v1 = std::fs::read(collection.join(MANIFEST_OBJECT)).unwrap();
        assert!(manifest_v1.starts_with(b"atlas-growing 1\n"));
        let report = compact(&location, &mut no_progress()).await.unwrap();
        let manifest = std::fs::read(collection.join(MANIFEST_OBJECT)).unwrap();
        assert!(manifest.starts_with(b"atlas-growing 2 1\n"), "{manifest:?}");

        // The default keeps every version: nothing goes.
        let kept = collect_garbage(&location, &gc_options(0)).await.unwrap();
        assert!(kept.removed_parts.is_empty(), "{kept:?}");
        assert_eq!(kept.oldest_readable_version, 1);

        let gc = collect_garbage(&location, &gc_options(1)).await.unwrap();
        assert_eq!(gc.removed_parts.len(), 5, "{gc:?}");
        assert_eq!(gc.oldest_readable_version, 6);
        let manifest = std::fs::read(collection.join(MANIFEST_OBJECT)).unwrap();
        assert!(manifest.starts_with(b"atlas-growing 2 6\n"), "{manifest:?}");
        let parts: Vec<String> = std::fs::read_dir(collection.join("parts"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(parts, std::slice::from_ref(&report.part));

        for version in 1..=5 {
            let error = Atlas::open_location_version(&location, Some(version), |s| s)
                .await
                .unwrap_err();
            assert!(
                matches!(
                    growing_problem(&error),
                    Some(GrowingProblem::CollectedByGc { asked, oldest_readable: 6 }) if *asked == version
                ),
                "{error}"
            );
        }
        let latest = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(latest.dataset_count(), live.len());

        // A second gc has nothing to do and leaves the manifest as it is.
        let again = collect_garbage(&location, &gc_options(1)).await.unwrap();
        assert!(again.removed_parts.is_empty());
        assert_eq!(
            std::fs::read(collection.join(MANIFEST_OBJECT)).unwrap(),
            manifest
        );
    });
}

#[test]
fn a_tagged_version_keeps_its_parts_across_gc() {
    let dir = tempfile::tempdir().unwrap();
    let location = StoreLocation::Local(dir.path().join("growing"));
    runtime().block_on(async {
        let live = five_parts_with_deletes(&location).await;
        create_tag(&location, "before", Some(5)).await.unwrap();
        compact(&location, &mut no_progress()).await.unwrap();
        let gc = collect_garbage(&location, &gc_options(1)).await.unwrap();
        assert!(gc.removed_parts.is_empty(), "{gc:?}");
        assert_eq!(gc.oldest_kept, 5);
        let tagged = Atlas::open_location_tag(&location, "before", |s| s)
            .await
            .unwrap();
        assert_eq!(tagged.part_commits().len(), 5);
        assert_eq!(tagged.dataset_count(), live.len());
    });
}

#[test]
fn appends_after_a_compaction_add_to_the_compacted_part() {
    let dir = tempfile::tempdir().unwrap();
    let location = StoreLocation::Local(dir.path().join("growing"));
    runtime().block_on(async {
        let live = five_parts_with_deletes(&location).await;
        compact(&location, &mut no_progress()).await.unwrap();

        // A name the compacted part holds is taken; a deleted one left it, so it is free.
        let mut taken = Appender::open(&location, WriterOptions::default())
            .await
            .unwrap();
        let error = taken.write_dataset(rich(1, 2)).unwrap_err();
        assert!(matches!(error, AppendError::NameTaken { .. }), "{error}");
        taken.write_dataset(rich(0, 1)).unwrap();
        let report = taken.commit().await.unwrap();
        assert_eq!(report.version, 7);

        append_rich(&location, 5, 3).await;
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(atlas.version(), Some(8));
        let kinds: Vec<CommitKind> = atlas.part_commits().iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [CommitKind::Compact, CommitKind::Append, CommitKind::Append]
        );
        assert_eq!(atlas.dataset_count(), live.len() + 1 + 3);
        let view = atlas.dataset("p5_d02").unwrap();
        let temp = view
            .read_array::<f32>("temp", vec![], vec![])
            .await
            .unwrap();
        assert_eq!(temp[[3, 5]], 502.0 + 23.0 / 4.0);

        // A second compaction folds them all into one part again.
        let again = compact(&location, &mut no_progress()).await.unwrap();
        assert_eq!((again.version, again.replaced_parts), (9, 3));
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(atlas.part_commits().len(), 1);
        assert_eq!(atlas.dataset_count(), live.len() + 4);
    });
}

/// Runs `work` on its own thread and runtime and waits for it: what a second process does
/// while the compaction is between two datasets.
fn meanwhile<F: std::future::Future<Output = ()>>(work: impl FnOnce() -> F + Send) {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(work())
            })
            .join()
            .unwrap();
    });
}

#[test]
fn an_append_committed_during_a_compaction_is_compacted_too() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    runtime().block_on(async {
        let live = five_parts_with_deletes(&location).await;
        let mut appended = false;
        let report = compact(&location, &mut |done, _| {
            if done == 1 && !appended {
                appended = true;
                meanwhile(|| append_rich(&location, 7, 2));
            }
        })
        .await
        .unwrap();
        assert_eq!(report.attempts, 2);
        assert_eq!(report.version, 7);
        assert_eq!(report.datasets, live.len() + 2);
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(atlas.part_commits().len(), 1);
        assert!(atlas.dataset("p7_d01").is_some());
        // The first attempt's part was removed: the five parts, the append's and the compacted.
        let parts = std::fs::read_dir(collection.join("parts")).unwrap().count();
        assert_eq!(parts, 7);
    });
}

#[test]
fn deletes_racing_a_compaction_are_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    let location = StoreLocation::Local(dir.path().join("growing"));
    runtime().block_on(async {
        let live = five_parts_with_deletes(&location).await;
        // Opened before the compaction: its delete, after the commit, lands in a replaced part.
        let before = Atlas::open_location(&location, |s| s).await.unwrap();
        let mut deleted = false;
        let report = compact(&location, &mut |done, _| {
            if done == 2 && !deleted {
                deleted = true;
                meanwhile(|| async {
                    let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
                    atlas.delete(&["p3_d04"]).await.unwrap();
                });
            }
        })
        .await
        .unwrap();
        assert_eq!(report.carried_deletes, 1);
        before.delete(&["p1_d00"]).await.unwrap();

        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(atlas.part_commits().len(), 1);
        let names: BTreeSet<String> = atlas.datasets().map(|d| d.name().to_owned()).collect();
        assert_eq!(names.len(), live.len() - 2);
        assert!(!names.contains("p3_d04") && !names.contains("p1_d00"));
        assert!(names.contains("p1_d01"));
    });
}

#[test]
fn compaction_refuses_what_is_not_a_growing_collection() {
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let empty = dir.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let error = compact(&StoreLocation::Local(empty), &mut no_progress())
            .await
            .unwrap_err();
        assert!(matches!(error, AppendError::NotGrowing { .. }), "{error}");

        let plain = dir.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        let store = Arc::new(LocalFileSystem::new_with_prefix(&plain).unwrap());
        let mut writer = AtlasWriter::new(store, &Path::default(), WriterOptions::default());
        writer.write_dataset(rich(0, 0)).unwrap();
        writer.finish().await.unwrap();
        let error = compact(&StoreLocation::Local(plain), &mut no_progress())
            .await
            .unwrap_err();
        assert!(
            matches!(error, AppendError::PlainCollection { .. }),
            "{error}"
        );
    });
}
