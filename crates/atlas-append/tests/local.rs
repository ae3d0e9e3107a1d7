//! Growing collections on local disk, through the public API: concurrent appenders in 16
//! processes lose nothing; a reader opening while appends commit sees exactly some committed
//! version each time; `version` reads an old version exactly; a clashing name is refused before
//! anything is written (and, raced, before anything becomes visible); a plain collection is
//! not appended to and opens as before; an open costs the manifest and every part's tail.
//!
//! `harness = false`: the appenders are this binary run again as child processes (`main` runs
//! `child_append` when the parent sets [`common::CHILD_LOCATION`]).
#![allow(clippy::disallowed_methods)] // a test drives its own runtime
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    clippy::print_stdout
)] // test code: small known values; it reports what the races did

mod common;

use atlas_append::{AppendError, Appender};
use atlas_reader::{Atlas, AtlasError, GrowingProblem, Selection};
use atlas_writer::{AtlasWriter, WriterOptions};
use common::*;
use dsrt_atlas_test_runner as runner;
use object_access::StoreLocation;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStore;
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const PROCESSES: usize = 16;
const PER_PROCESS: usize = 50;

fn main() -> ExitCode {
    if std::env::var(CHILD_LOCATION).is_ok() {
        child_append();
        return ExitCode::SUCCESS;
    }
    runner::run(&[
        (
            "sixteen_processes_appending_at_once_lose_nothing",
            sixteen_processes_appending_at_once_lose_nothing,
        ),
        (
            "a_reader_sees_exactly_a_committed_version_on_every_open",
            a_reader_sees_exactly_a_committed_version_on_every_open,
        ),
        (
            "an_old_version_reads_exactly_as_it_was",
            an_old_version_reads_exactly_as_it_was,
        ),
        (
            "a_name_clash_is_refused_before_anything_is_written",
            a_name_clash_is_refused_before_anything_is_written,
        ),
        (
            "a_name_clash_with_a_racing_append_becomes_no_visible_change",
            a_name_clash_with_a_racing_append_becomes_no_visible_change,
        ),
        (
            "a_plain_collection_is_not_appended_to_and_opens_as_before",
            a_plain_collection_is_not_appended_to_and_opens_as_before,
        ),
        (
            "an_open_reads_the_manifest_then_every_part_at_once",
            an_open_reads_the_manifest_then_every_part_at_once,
        ),
        (
            "selections_stats_and_attributes_span_the_parts",
            selections_stats_and_attributes_span_the_parts,
        ),
        (
            "appenders_killed_at_any_moment_leave_a_committed_version",
            appenders_killed_at_any_moment_leave_a_committed_version,
        ),
    ])
}

fn local(dir: &std::path::Path) -> StoreLocation {
    StoreLocation::Local(dir.to_path_buf())
}

fn sixteen_processes_appending_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = local(&collection);
    // A collection that already holds something: the appends add to it.
    let rt = runtime();
    rt.block_on(append(&location, 99, 10));
    let results = append_in_processes(collection.to_str().unwrap(), 0..PROCESSES, PER_PROCESS);
    // Every commit made its own version, 2..=17; any that lost a race retried.
    let versions: BTreeSet<u64> = results.iter().map(|(v, _)| *v).collect();
    assert_eq!(versions, (2..=PROCESSES as u64 + 1).collect());
    let retried = results.iter().filter(|(_, attempts)| *attempts > 1).count();
    println!("  {PROCESSES} appenders: {retried} retried after a conflict");
    rt.block_on(async {
        let atlas = Atlas::open_local(&collection).await.unwrap();
        assert_eq!(atlas.version(), Some(PROCESSES as u64 + 1));
        let by_manifest = Atlas::open_local(collection.join("collection.manifest"))
            .await
            .unwrap();
        assert_eq!(names(&by_manifest), names(&atlas));
        assert_eq!(atlas.dataset_count(), 10 + PROCESSES * PER_PROCESS);
        let mut expected: BTreeSet<String> = (0..10).map(|i| name(99, i)).collect();
        let before = expected.len();
        for writer in 0..PROCESSES {
            expected.extend((0..PER_PROCESS).map(|i| name(writer, i)));
        }
        assert_eq!(expected.len() - before, 800);
        assert_eq!(names(&atlas), expected);
        check_contents(&atlas).await;
    });
}

fn a_reader_sees_exactly_a_committed_version_on_every_open() {
    const WRITERS: usize = 6;
    const EACH: usize = 20;
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let rt = runtime();
    rt.block_on(append(&local(&collection), 99, 3));
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (collection, done) = (collection.clone(), Arc::clone(&done));
        std::thread::spawn(move || {
            let rt = runtime();
            let mut opens = 0;
            let mut seen_versions = BTreeSet::new();
            loop {
                let finished = done.load(Ordering::SeqCst);
                rt.block_on(async {
                    let atlas = Atlas::open_local(&collection).await.unwrap();
                    let version = atlas.version().unwrap();
                    let names = names(&atlas);
                    // Each writer's datasets are all there or none are, and the writers whose
                    // datasets are there are exactly the commits of the version opened.
                    let complete = whole_writers(&names, 0..WRITERS, EACH);
                    assert_eq!(names.len(), 3 + complete * EACH);
                    assert_eq!(version, 1 + complete as u64);
                    assert_eq!(atlas.commits().len() as u64, version);
                    seen_versions.insert(version);
                });
                opens += 1;
                if finished {
                    break;
                }
            }
            (opens, seen_versions)
        })
    };
    let results = append_in_processes(collection.to_str().unwrap(), 0..WRITERS, EACH);
    assert_eq!(results.len(), WRITERS);
    done.store(true, Ordering::SeqCst);
    let (opens, versions) = reader.join().unwrap();
    println!("  {opens} opens saw versions {versions:?}");
    assert!(versions.contains(&(WRITERS as u64 + 1)));
}

fn an_old_version_reads_exactly_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = local(&collection);
    let rt = runtime();
    rt.block_on(async {
        for writer in 0..3 {
            let (version, attempts) = append(&location, writer, 4 + writer).await;
            assert_eq!((version, attempts), (writer as u64 + 1, 1));
        }
        for version in 1..=3u64 {
            let atlas = Atlas::open_location_version(&location, Some(version), |s| s)
                .await
                .unwrap();
            assert_eq!(atlas.version(), Some(version));
            assert_eq!(atlas.latest_version(), Some(3));
            let expected: BTreeSet<String> = (0..version as usize)
                .flat_map(|w| (0..4 + w).map(move |i| name(w, i)))
                .collect();
            assert_eq!(names(&atlas), expected, "version {version}");
            check_contents(&atlas).await;
            let log: Vec<u64> = atlas.commits().iter().map(|c| c.datasets).collect();
            assert_eq!(log, (0..version).map(|w| 4 + w).collect::<Vec<_>>());
        }
        for missing in [0, 4] {
            let error = Atlas::open_location_version(&location, Some(missing), |s| s)
                .await
                .unwrap_err();
            assert!(
                matches!(
                    &error,
                    AtlasError::Growing { problem: GrowingProblem::NoSuchVersion { asked, latest: 3 }, .. } if *asked == missing
                ),
                "{error}"
            );
        }
    });
}

/// The collection's files, by path, for comparing before and after.
fn files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    runner::files_below(dir)
}

fn a_name_clash_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = local(&collection);
    let rt = runtime();
    rt.block_on(async {
        append(&location, 0, 5).await;
        let before = files(&collection);
        let mut appender = Appender::open(&location, WriterOptions::default()).await.unwrap();
        appender.write_dataset(dataset(&name(1, 0), 1)).unwrap();
        let clash = appender.write_dataset(dataset(&name(0, 3), 1)).unwrap_err();
        assert!(
            matches!(&clash, AppendError::NameTaken { name: n, held_by, .. } if *n == name(0, 3) && held_by.contains("version 1")),
            "{clash}"
        );
        let again = appender.write_dataset(dataset(&name(1, 0), 1)).unwrap_err();
        assert!(matches!(&again, AppendError::NameTaken { held_by, .. } if held_by == "this append"), "{again}");
        drop(appender);
        assert_eq!(files(&collection), before, "a refused append wrote something");
    });
}

fn a_name_clash_with_a_racing_append_becomes_no_visible_change() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = local(&collection);
    let rt = runtime();
    rt.block_on(async {
        append(&location, 0, 2).await;
        // Opened before the other append commits `w05_d000`: its check cannot see it yet.
        let mut late = Appender::open(&location, WriterOptions::default()).await.unwrap();
        late.write_dataset(dataset(&name(5, 0), 7)).unwrap();
        append(&location, 5, 1).await;
        let before = files(&collection);
        let clash = late.commit().await.unwrap_err();
        assert!(matches!(&clash, AppendError::NameTaken { held_by, .. } if held_by.contains("version 2")), "{clash}");
        assert_eq!(files(&collection), before, "the losing append left something visible");
        let atlas = Atlas::open_local(&collection).await.unwrap();
        assert_eq!(atlas.version(), Some(2));
        assert_eq!(atlas.dataset_count(), 3);
    });
}

fn a_plain_collection_is_not_appended_to_and_opens_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    rt.block_on(async {
        let store: Arc<dyn ObjectStore> =
            Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let mut writer = AtlasWriter::new(store, &Path::default(), WriterOptions::default());
        writer.write_dataset(dataset("plain", 0)).unwrap();
        writer.finish().await.unwrap();
        let before = files(dir.path());
        let refused = Appender::open(&local(dir.path()), WriterOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(refused, AppendError::PlainCollection { .. }),
            "{refused}"
        );
        assert_eq!(files(dir.path()), before);
        let atlas = Atlas::open_local(dir.path()).await.unwrap();
        assert_eq!(atlas.version(), None);
        assert!(atlas.commits().is_empty());
        assert_eq!(names(&atlas), BTreeSet::from(["plain".to_owned()]));
        check_contents(&atlas).await;
        let versioned = Atlas::open_location_version(&local(dir.path()), Some(1), |s| s)
            .await
            .unwrap_err();
        assert!(
            matches!(versioned, AtlasError::NotAnAtlasCollection { .. }),
            "{versioned}"
        );
    });
}

fn an_open_reads_the_manifest_then_every_part_at_once() {
    let rt = runtime();
    rt.block_on(async {
        let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let location = StoreLocation::Remote(object_access::RemotePrefix::new(
            Arc::clone(&memory),
            Path::from("c"),
            "memory:///c",
        ));
        const PARTS: usize = 64;
        for writer in 0..PARTS {
            append(&location, writer, 2).await;
        }
        let counting = Arc::new(atlas_store::CountingStore::new(Arc::clone(&memory)));
        let wrapped: Arc<dyn ObjectStore> = counting.clone();
        let atlas = Atlas::open_location_version(&location, Some(PARTS as u64), |_| wrapped)
            .await
            .unwrap();
        assert_eq!(atlas.dataset_count(), 2 * PARTS);
        // The manifest, then each part's container tail and mask (sent together).
        assert_eq!(counting.count(), 1 + 2 * PARTS, "{:?}", counting.requests());
        let counting = Arc::new(atlas_store::CountingStore::new(Arc::clone(&memory)));
        let wrapped: Arc<dyn ObjectStore> = counting.clone();
        let latest = Atlas::open_location(&location, |_| wrapped).await.unwrap();
        assert_eq!(latest.version(), Some(PARTS as u64));
        // Without a version asked for, the plain probe (container tail and mask) comes first.
        assert_eq!(
            counting.count(),
            2 + 1 + 2 * PARTS,
            "{:?}",
            counting.requests()
        );
        // Named by its manifest, the latest version opens without the plain probe.
        let counting = Arc::new(atlas_store::CountingStore::new(Arc::clone(&memory)));
        let wrapped: Arc<dyn ObjectStore> = counting.clone();
        let by_manifest = StoreLocation::Remote(object_access::RemotePrefix::new(
            Arc::clone(&memory),
            Path::from("c/collection.manifest"),
            "memory:///c/collection.manifest",
        ));
        let latest = Atlas::open_location(&by_manifest, |_| wrapped)
            .await
            .unwrap();
        assert_eq!(latest.version(), Some(PARTS as u64));
        assert_eq!(counting.count(), 1 + 2 * PARTS, "{:?}", counting.requests());
    });
}

fn selections_stats_and_attributes_span_the_parts() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = local(&collection);
    let rt = runtime();
    rt.block_on(async {
        for writer in 0..3 {
            append(&location, writer, 3).await;
        }
        let atlas = Atlas::open_local(&collection).await.unwrap();
        let selected = atlas
            .select(&Selection::new().attr_in("writer", vec![atlas_reader::SelectValue::Int(1)]))
            .await
            .unwrap();
        let chosen: Vec<String> = selected
            .iter()
            .map(|&o| atlas.dataset_at(o).unwrap().name().to_owned())
            .collect();
        assert_eq!(chosen, (0..3).map(|i| name(1, i)).collect::<Vec<_>>());
        let writers = atlas.attributes_by_dataset("writer").await.unwrap();
        assert_eq!(writers.len(), 9);
        let rows = atlas.array_stats_by_dataset("temp").await.unwrap();
        let ordinals: Vec<u32> = rows.iter().map(|r| r.ordinal).collect();
        assert_eq!(ordinals, (0..9).collect::<Vec<_>>());
        let all: Vec<f32> = atlas.datasets().flat_map(|d| values(d.name())).collect();
        let stats = atlas.array_stats("temp").await.unwrap();
        let min = all.iter().copied().fold(f32::INFINITY, f32::min);
        assert_eq!(
            stats.min,
            Some(array_format::StatValue::Float(f64::from(min)))
        );
        assert!(matches!(
            atlas.array_stats("nope").await,
            Err(AtlasError::NoSuchArray(_))
        ));
        assert!(atlas.verify(atlas_reader::VerifyDepth::Full).await.is_ok());
        let view = atlas.dataset(&name(2, 1)).unwrap();
        assert_eq!(view.ordinal(), 7);
    });
}

/// Appender processes killed (SIGKILL) at spread-out moments of their run, writing or
/// committing: after each kill the collection opens, every writer's datasets are there whole
/// or not at all, the version counts the writers that are there, and the next append commits.
fn appenders_killed_at_any_moment_leave_a_committed_version() {
    const ROUNDS: usize = 16;
    const EACH: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = local(&collection);
    let rt = runtime();
    rt.block_on(append(&location, 99, 2));
    let exe = std::env::current_exe().unwrap();
    let mut killed_mid_way = 0;
    for round in 0..ROUNDS {
        let mut child = std::process::Command::new(&exe)
            .env(CHILD_LOCATION, collection.to_str().unwrap())
            .env(CHILD_WRITER, round.to_string())
            .env(CHILD_DATASETS, EACH.to_string())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // From at once to about a run's length, 6 ms apart, so kills land in every step.
        std::thread::sleep(std::time::Duration::from_millis(round as u64 * 6));
        if child.try_wait().unwrap().is_none() {
            killed_mid_way += 1;
        }
        let _ = child.kill();
        child.wait().unwrap();
        rt.block_on(async {
            let atlas = Atlas::open_local(&collection).await.unwrap();
            let names = names(&atlas);
            let whole = whole_writers(&names, 0..round + 1, EACH);
            assert_eq!(atlas.version(), Some(1 + whole as u64));
            assert_eq!(names.len(), 2 + whole * EACH);
        });
    }
    println!("  {killed_mid_way} of {ROUNDS} appenders killed before they finished");
    // Nothing a killed appender left blocks the next one.
    rt.block_on(async {
        let (version, _) = append(&location, 77, 3).await;
        let atlas = Atlas::open_local(&collection).await.unwrap();
        assert_eq!(atlas.version(), Some(version));
        check_contents(&atlas).await;
    });
}
