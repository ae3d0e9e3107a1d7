//! Deletes on growing collections, through the public API (`docs/format/growing.md`,
//! "Deleting"): a delete finds each name in whichever part holds it and hides it in that part's
//! own `deleted.mask`; an unknown name is refused before any mask is written; racing deleters
//! lose nothing, on local disk (each part's directory lock) and on a store with conditional
//! PUT; a reader of an old version sees the deletes too (masks are not versioned).
#![allow(clippy::disallowed_methods)] // a test drives its own runtime
#![allow(clippy::unwrap_used)] // test code

mod common;

use atlas_reader::{Atlas, AtlasError};
use common::*;
use dsrt_atlas_test_runner as runner;
use object_access::StoreLocation;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStore;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Three parts of four datasets each: writers 0, 1 and 2.
async fn three_parts(location: &StoreLocation) {
    for writer in 0..3 {
        append(location, writer, 4).await;
    }
}

/// Every dataset name of the three parts.
fn all_names() -> BTreeSet<String> {
    (0..3)
        .flat_map(|w| (0..4).map(move |i| name(w, i)))
        .collect()
}

/// The mask files below `dir`, relative to it.
fn masks(dir: &std::path::Path) -> Vec<String> {
    runner::files_below(dir)
        .into_iter()
        .map(|(path, _)| path)
        .filter(|path| path.ends_with("deleted.mask"))
        .collect()
}

#[test]
fn a_delete_hides_datasets_in_whichever_part_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    runtime().block_on(async {
        three_parts(&location).await;
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        let parts: Vec<String> = atlas.commits().iter().map(|c| c.part.clone()).collect();

        // One unknown name refuses the whole delete before anything is written.
        let before = runner::files_below(&collection);
        let refused = atlas
            .delete(&[name(0, 1), "nowhere".to_owned()])
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, AtlasError::DatasetNotFound(n) if n == "nowhere"),
            "{refused}"
        );
        assert_eq!(
            runner::files_below(&collection),
            before,
            "a refused delete wrote something"
        );

        let gone = [name(0, 1), name(2, 3), name(0, 2)];
        let report = atlas.delete(&gone).await.unwrap();
        assert_eq!((report.newly_deleted, report.total_deleted), (3, 3));
        assert_eq!(report.attempts, 1);
        let mut expected = all_names();
        for name in &gone {
            expected.remove(name);
        }
        // The open collection sees its own delete, and so does a fresh open.
        assert_eq!(names(&atlas), expected);
        assert_eq!(atlas.dataset_count(), 9);
        let reopened = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(names(&reopened), expected);
        assert!(reopened.dataset(&name(2, 3)).is_none());
        check_contents(&reopened).await;
        // Each mask lives in the part that holds the names: parts 1 and 3, none at the root.
        let want = vec![
            format!("parts/{}/deleted.mask", parts[0]),
            format!("parts/{}/deleted.mask", parts[2]),
        ];
        let mut found = masks(&collection);
        found.sort();
        let mut want_sorted = want.clone();
        want_sorted.sort();
        assert_eq!(found, want_sorted);

        // Masks are not versioned: version 1 (part 1 alone) sees part 1's deletes.
        let first = Atlas::open_location_version(&location, Some(1), |s| s)
            .await
            .unwrap();
        let expected_first: BTreeSet<String> = [0, 3].iter().map(|&i| name(0, i)).collect();
        assert_eq!(names(&first), expected_first);

        // A delete run again hides nothing new; a delete from an old version's open writes
        // the same part's mask, seen by the latest.
        let again = reopened.delete(&gone).await.unwrap();
        assert_eq!((again.newly_deleted, again.total_deleted), (0, 3));
        let from_old = first.delete(&[name(0, 0)]).await.unwrap();
        assert_eq!((from_old.newly_deleted, from_old.total_deleted), (1, 3));
        let latest = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(latest.dataset_count(), 8);
        assert!(latest.dataset(&name(0, 0)).is_none());
    });
}

/// Six deleters at once, each with its own open and its own names in two parts: every name
/// ends up hidden.
fn racing_deleters_lose_nothing(location: &StoreLocation) {
    const DELETERS: usize = 6;
    let rt = runtime();
    rt.block_on(three_parts(location));
    // Deleter `d` hides dataset `i` of every writer where `i % DELETERS == d`, so every
    // deleter's names span the parts and two deleters never share one.
    let deleters: Vec<Vec<String>> = (0..DELETERS)
        .map(|d| {
            all_names()
                .into_iter()
                .enumerate()
                .filter(|(i, _)| i % DELETERS == d)
                .map(|(_, n)| n)
                .collect()
        })
        .collect();
    let barrier = Arc::new(std::sync::Barrier::new(DELETERS));
    std::thread::scope(|scope| {
        for names in &deleters {
            let barrier = Arc::clone(&barrier);
            scope.spawn(move || {
                let rt = runtime();
                rt.block_on(async {
                    let atlas = Atlas::open_location(location, |s| s).await.unwrap();
                    barrier.wait();
                    let report = atlas.delete(names).await.unwrap();
                    assert_eq!(report.newly_deleted, names.len());
                });
            });
        }
    });
    rt.block_on(async {
        let atlas = Atlas::open_location(location, |s| s).await.unwrap();
        assert_eq!(atlas.dataset_count(), 0, "left: {:?}", names(&atlas));
        let report = atlas.delete::<&str>(&[]).await.unwrap();
        assert_eq!((report.newly_deleted, report.total_deleted), (0, 12));
    });
}

#[test]
fn racing_local_deleters_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    racing_deleters_lose_nothing(&StoreLocation::Local(collection.clone()));
    assert_eq!(masks(&collection).len(), 3);
}

#[test]
fn racing_deleters_on_a_conditional_put_store_lose_nothing() {
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let location = StoreLocation::Remote(object_access::RemotePrefix::new(
        memory,
        Path::from("c"),
        "memory:///c",
    ));
    racing_deleters_lose_nothing(&location);
}
