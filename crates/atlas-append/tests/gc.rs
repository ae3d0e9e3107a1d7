//! `collect_garbage` (`atlas gc`) on growing collections: after appenders killed (SIGKILL) at
//! random points, the collection reads as a committed version and gc removes exactly the parts
//! no version names, nothing else; a part younger than the grace period is left for the append
//! that may still commit it; `keep_versions` keeps every part a kept version needs; a location
//! that is not a growing collection is refused.
//!
//! `harness = false`: the appenders are this binary run again as child processes (`main` runs
//! `child_append` when the parent sets [`common::CHILD_LOCATION`]).
#![allow(clippy::disallowed_methods)] // a test drives its own runtime
#![allow(clippy::unwrap_used, clippy::print_stdout)] // test code; it reports what the kills did

mod common;

use atlas_append::{collect_garbage, GcError, GcOptions};
use atlas_reader::manifest::Manifest;
use atlas_reader::Atlas;
use common::*;
use dsrt_atlas_test_runner as runner;
use object_access::StoreLocation;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use std::collections::BTreeSet;
use std::num::NonZeroU64;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

fn main() -> ExitCode {
    if std::env::var(CHILD_LOCATION).is_ok() {
        child_append();
        return ExitCode::SUCCESS;
    }
    runner::run(&[
        (
            "gc_removes_what_killed_appends_left_and_nothing_else",
            gc_removes_what_killed_appends_left_and_nothing_else,
        ),
        (
            "keep_versions_keeps_what_every_kept_version_reads",
            keep_versions_keeps_what_every_kept_version_reads,
        ),
        (
            "a_part_younger_than_the_grace_period_is_left",
            a_part_younger_than_the_grace_period_is_left,
        ),
        (
            "gc_on_a_store_removes_an_unreferenced_part",
            gc_on_a_store_removes_an_unreferenced_part,
        ),
        (
            "gc_refuses_what_is_not_a_growing_collection",
            gc_refuses_what_is_not_a_growing_collection,
        ),
    ])
}

/// Options that remove any unreferenced part at once.
fn no_grace() -> GcOptions {
    GcOptions {
        grace: Duration::ZERO,
        ..GcOptions::default()
    }
}

fn manifest(collection: &std::path::Path) -> Manifest {
    let bytes = std::fs::read(collection.join("collection.manifest")).unwrap();
    Manifest::decode(&bytes).unwrap()
}

/// The part directories under `parts/`.
fn part_dirs(collection: &std::path::Path) -> BTreeSet<String> {
    std::fs::read_dir(collection.join("parts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A copy of a committed part under a new id no manifest names: what an append killed between
/// writing its part and committing it leaves.
fn plant_orphan(collection: &std::path::Path, id: &str) {
    let from = collection
        .join("parts")
        .join(&manifest(collection).commits[0].part);
    let to = collection.join("parts").join(id);
    std::fs::create_dir_all(&to).unwrap();
    std::fs::copy(from.join("data.atlas"), to.join("data.atlas")).unwrap();
}

fn gc_removes_what_killed_appends_left_and_nothing_else() {
    const ROUNDS: usize = 20;
    const EACH: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    let rt = runtime();
    rt.block_on(append(&location, 99, 2));
    let exe = std::env::current_exe().unwrap();
    let mut killed_mid_way = 0;
    // Kill points spread over an append's run: a pseudo-random delay per round (a fixed
    // sequence, so a failure repeats), from at once to about a run's length.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..ROUNDS {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mut child = std::process::Command::new(&exe)
            .env(CHILD_LOCATION, collection.to_str().unwrap())
            .env(CHILD_WRITER, round.to_string())
            .env(CHILD_DATASETS, EACH.to_string())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(state % 120));
        if child.try_wait().unwrap().is_none() {
            killed_mid_way += 1;
        }
        let _ = child.kill();
        child.wait().unwrap();
    }
    // One orphan for certain, whatever the kills hit.
    plant_orphan(&collection, "planted-orphan");
    rt.block_on(async {
        let before = Atlas::open_local(&collection).await.unwrap();
        let before_names = names(&before);
        let version = before.version().unwrap();
        // Every killed append is all there or not at all.
        whole_writers(&before_names, 0..ROUNDS, EACH);
        let named: BTreeSet<String> = manifest(&collection)
            .commits
            .iter()
            .map(|c| c.part.clone())
            .collect();
        let orphans: BTreeSet<String> =
            part_dirs(&collection).difference(&named).cloned().collect();
        assert!(orphans.contains("planted-orphan"));
        println!(
            "  {} part(s) no version names, 1 of them planted",
            orphans.len()
        );
        let files_before = runner::files_below(&collection);

        // The default grace period leaves every orphan: they are all younger than an hour.
        let careful = collect_garbage(&location, &GcOptions::default())
            .await
            .unwrap();
        assert!(careful.removed_parts.is_empty());
        assert_eq!(
            careful.young_parts.iter().cloned().collect::<BTreeSet<_>>(),
            orphans
        );
        assert_eq!(runner::files_below(&collection), files_before);

        // A dry run says what would go and removes nothing.
        let dry = collect_garbage(
            &location,
            &GcOptions {
                dry_run: true,
                ..no_grace()
            },
        )
        .await
        .unwrap();
        assert_eq!(
            dry.removed_parts.iter().cloned().collect::<BTreeSet<_>>(),
            orphans
        );
        assert_eq!(runner::files_below(&collection), files_before);

        let report = collect_garbage(&location, &no_grace()).await.unwrap();
        assert_eq!(report.latest, version);
        assert_eq!(
            report
                .removed_parts
                .iter()
                .cloned()
                .collect::<BTreeSet<_>>(),
            orphans
        );
        assert!(report.young_parts.is_empty());
        // Exactly the orphans' files are gone, their directories too.
        let expected: Vec<(String, Vec<u8>)> = files_before
            .into_iter()
            .filter(|(path, _)| {
                !orphans
                    .iter()
                    .any(|o| path.starts_with(&format!("parts/{o}/")))
            })
            .collect();
        assert_eq!(runner::files_below(&collection), expected);
        assert_eq!(part_dirs(&collection), named);
        let after = Atlas::open_local(&collection).await.unwrap();
        assert_eq!(after.version(), Some(version));
        assert_eq!(names(&after), before_names);
        check_contents(&after).await;
        // Nothing left to collect, and the next append commits as ever.
        let again = collect_garbage(&location, &no_grace()).await.unwrap();
        assert!(again.removed_parts.is_empty());
        let (next, _) = append(&location, 77, 3).await;
        assert_eq!(next, version + 1);
        let latest = Atlas::open_local(&collection).await.unwrap();
        check_contents(&latest).await;
    });
    println!("  {killed_mid_way} of {ROUNDS} appenders killed before they finished");
}

fn keep_versions_keeps_what_every_kept_version_reads() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    runtime().block_on(async {
        for writer in 0..3 {
            append(&location, writer, 2).await;
        }
        plant_orphan(&collection, "orphan");
        let report = collect_garbage(
            &location,
            &GcOptions {
                keep_versions: NonZeroU64::new(1),
                ..no_grace()
            },
        )
        .await
        .unwrap();
        assert_eq!((report.latest, report.oldest_kept), (3, 3));
        assert_eq!(report.removed_parts, ["orphan"]);
        // Version N is the first N parts, so the latest version names every part an older
        // one reads: every version still opens, exactly as it was.
        for version in 1..=3usize {
            let atlas = Atlas::open_location_version(
                &location,
                Some(u64::try_from(version).unwrap()),
                |s| s,
            )
            .await
            .unwrap();
            let expected: BTreeSet<String> = (0..version)
                .flat_map(|w| (0..2).map(move |i| name(w, i)))
                .collect();
            assert_eq!(names(&atlas), expected);
            check_contents(&atlas).await;
        }
    });
}

fn a_part_younger_than_the_grace_period_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    runtime().block_on(async {
        append(&location, 0, 2).await;
        plant_orphan(&collection, "in-progress");
        let grace = GcOptions {
            grace: Duration::from_secs(60),
            ..GcOptions::default()
        };
        let report = collect_garbage(&location, &grace).await.unwrap();
        assert!(report.removed_parts.is_empty());
        assert_eq!(report.young_parts, ["in-progress"]);
        assert!(collection.join("parts/in-progress/data.atlas").exists());
        // Objects under parts/ that are not a part's (no id directory, or an invalid id) are
        // not gc's.
        std::fs::write(collection.join("parts/README"), b"x").unwrap();
        std::fs::create_dir_all(collection.join("parts/Not.An.Id")).unwrap();
        std::fs::write(collection.join("parts/Not.An.Id/f"), b"x").unwrap();
        // A part killed mid-write holds only the local store's staging file, which the
        // store's listing hides: gc removes it all the same.
        std::fs::create_dir_all(collection.join("parts/staged-only")).unwrap();
        std::fs::write(collection.join("parts/staged-only/data.atlas#1"), b"x").unwrap();
        let report = collect_garbage(&location, &no_grace()).await.unwrap();
        assert_eq!(report.removed_parts, ["in-progress", "staged-only"]);
        assert!(!collection.join("parts/staged-only").exists());
        assert!(collection.join("parts/README").exists());
        assert!(collection.join("parts/Not.An.Id/f").exists());
    });
}

fn gc_on_a_store_removes_an_unreferenced_part() {
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let location = StoreLocation::Remote(object_access::RemotePrefix::new(
        Arc::clone(&memory),
        Path::from("c"),
        "memory:///c",
    ));
    runtime().block_on(async {
        append(&location, 0, 2).await;
        append(&location, 1, 2).await;
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        let part = &atlas.commits()[0].part;
        let bytes = memory
            .get(&Path::from(format!("c/parts/{part}/data.atlas")))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        memory
            .put(&Path::from("c/parts/orphan/data.atlas"), bytes.into())
            .await
            .unwrap();
        let report = collect_garbage(&location, &no_grace()).await.unwrap();
        assert_eq!(report.removed_parts, ["orphan"]);
        assert_eq!(report.removed_objects, 1);
        assert!(memory
            .head(&Path::from("c/parts/orphan/data.atlas"))
            .await
            .is_err());
        let after = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(names(&after), names(&atlas));
        check_contents(&after).await;
    });
}

fn gc_refuses_what_is_not_a_growing_collection() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let refused = runtime()
        .block_on(collect_garbage(&StoreLocation::Local(empty), &no_grace()))
        .unwrap_err();
    assert!(matches!(refused, GcError::NotGrowing { .. }), "{refused}");
    assert!(!refused.is_retryable());
}
