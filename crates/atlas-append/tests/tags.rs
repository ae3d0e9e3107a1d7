//! Tags of growing collections (`docs/format/growing.md`, "Tags"): `create_tag` names a
//! version once, `Atlas::open_location_tag` reads exactly it; an existing tag is never moved,
//! taggers racing for one name leave exactly one winner (local directory lock, conditional
//! PUT); bad names, versions and locations are refused with nothing written.
#![allow(clippy::disallowed_methods)] // a test drives its own runtime
#![allow(clippy::unwrap_used)] // test code

mod common;

use atlas_append::{create_tag, AppendError};
use atlas_reader::{Atlas, AtlasError, GrowingProblem};
use common::*;
use object_access::StoreLocation;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStore;
use std::collections::BTreeSet;
use std::sync::Arc;

fn growing_problem(error: &AppendError) -> Option<&GrowingProblem> {
    match error {
        AppendError::Read(AtlasError::Growing { problem, .. }) => Some(problem),
        _ => None,
    }
}

/// Three appends of 2 datasets, then the tag checks; `location` must be empty.
async fn tags_name_versions(location: &StoreLocation) {
    for writer in 0..3 {
        append(location, writer, 2).await;
    }
    let first = create_tag(location, "first", Some(1)).await.unwrap();
    assert_eq!((first.name.as_str(), first.version), ("first", 1));
    let latest = create_tag(location, "release-3_0", None).await.unwrap();
    assert_eq!(latest.version, 3);
    append(location, 3, 2).await;

    let at_first = Atlas::open_location_tag(location, "first", |s| s)
        .await
        .unwrap();
    assert_eq!(
        (at_first.version(), at_first.latest_version()),
        (Some(1), Some(4))
    );
    let expected: BTreeSet<String> = (0..2).map(|i| name(0, i)).collect();
    assert_eq!(names(&at_first), expected);
    check_contents(&at_first).await;
    let at_release = Atlas::open_location_tag(location, "release-3_0", |s| s)
        .await
        .unwrap();
    assert_eq!(at_release.version(), Some(3));
    assert_eq!(at_release.dataset_count(), 6);

    // A tag is written once: never moved, whatever version is asked.
    for version in [Some(1), Some(2), None] {
        let taken = create_tag(location, "first", version).await.unwrap_err();
        assert!(
            matches!(growing_problem(&taken), Some(GrowingProblem::TagExists(n)) if n == "first"),
            "{taken}"
        );
    }
    let still = Atlas::open_location_tag(location, "first", |s| s)
        .await
        .unwrap();
    assert_eq!(still.version(), Some(1));

    for bad in ["", "Upper", "a/b", ".."] {
        let refused = create_tag(location, bad, None).await.unwrap_err();
        assert!(
            matches!(
                growing_problem(&refused),
                Some(GrowingProblem::InvalidTagName(_))
            ),
            "{bad:?}: {refused}"
        );
    }
    for missing in [0, 5] {
        let refused = create_tag(location, "later", Some(missing))
            .await
            .unwrap_err();
        assert!(
            matches!(
                growing_problem(&refused),
                Some(GrowingProblem::NoSuchVersion { latest: 4, .. })
            ),
            "{refused}"
        );
    }
    let absent = Atlas::open_location_tag(location, "later", |s| s)
        .await
        .unwrap_err();
    assert!(
        matches!(&absent, AtlasError::Growing { problem: GrowingProblem::NoSuchTag(n), .. } if n == "later"),
        "{absent}"
    );
}

/// Four taggers race for one name, each for its own version: one wins, the others are told
/// the tag exists, and the tag names the winner's version.
async fn racing_taggers_leave_one_winner(location: &StoreLocation) {
    let results = futures::future::join_all(
        (1..=4u64).map(|version| create_tag(location, "race", Some(version))),
    )
    .await;
    let winners: Vec<u64> = results
        .iter()
        .filter_map(|r| r.as_ref().ok().map(|t| t.version))
        .collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    for result in &results {
        if let Err(error) = result {
            assert!(
                matches!(growing_problem(error), Some(GrowingProblem::TagExists(_))),
                "{error}"
            );
        }
    }
    let opened = Atlas::open_location_tag(location, "race", |s| s)
        .await
        .unwrap();
    assert_eq!(opened.version(), Some(winners[0]));
}

#[test]
fn local_tags_name_versions_once() {
    let dir = tempfile::tempdir().unwrap();
    let location = StoreLocation::Local(dir.path().join("growing"));
    runtime().block_on(async {
        tags_name_versions(&location).await;
        racing_taggers_leave_one_winner(&location).await;
    });
    let tag = std::fs::read(dir.path().join("growing/tags/first")).unwrap();
    assert_eq!(tag, b"atlas-tag 1\n1\n");
}

#[test]
fn store_tags_name_versions_once() {
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let location = StoreLocation::Remote(object_access::RemotePrefix::new(
        memory,
        Path::from("c"),
        "memory:///c",
    ));
    runtime().block_on(async {
        tags_name_versions(&location).await;
        racing_taggers_leave_one_winner(&location).await;
    });
}

#[test]
fn a_plain_collection_or_an_empty_location_has_no_tags() {
    let dir = tempfile::tempdir().unwrap();
    let empty = StoreLocation::Local(dir.path().to_path_buf());
    let refused = runtime()
        .block_on(create_tag(&empty, "t", None))
        .unwrap_err();
    assert!(
        matches!(
            refused,
            AppendError::Read(AtlasError::NotAnAtlasCollection { .. })
        ),
        "{refused}"
    );
    assert!(!dir.path().join("tags").exists());
}
