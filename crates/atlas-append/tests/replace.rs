//! Appends that replace datasets (`Appender::with_replace`, `docs/format/growing.md`,
//! "Replacing"), through the public API: the commit that adds the new part hides the old
//! datasets of those names, so every version before it reads the old data and every version
//! from it the new data only, with each name once; a reader opening while replaces commit sees
//! one or the other, never both nor neither; a compaction after a replace is byte for byte a
//! fresh write of the live datasets; gc keeps the replaced datasets' parts while a version
//! reads them; racing replacers of one name (on local disk and on an object store) all commit
//! and leave exactly one live dataset.
#![allow(clippy::disallowed_methods)] // a test drives its own runtime
#![allow(
    clippy::unwrap_used,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)] // test code: small known values

mod common;

use atlas_append::{collect_garbage, compact, AppendError, AppendReport, Appender, GcOptions};
use atlas_reader::manifest::{Manifest, MANIFEST_OBJECT};
use atlas_reader::{Atlas, AtlasError, Attr, SelectValue, Selection};
use atlas_writer::{ArraySpec, DatasetSpec, WriterOptions};
use common::*;
use ndarray::{ArrayD, IxDyn};
use object_access::StoreLocation;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStore;
use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The values a replacement written by `writer` holds for `name`: unlike [`values`], so a
/// read shows which of the two it found.
fn new_values(name: &str, writer: usize) -> Vec<f32> {
    values(name)
        .into_iter()
        .map(|v| -v - writer as f32)
        .collect()
}

/// A replacement of dataset `name` by `writer`: the shape of [`dataset`], other values.
fn replacement(name: &str, writer: usize) -> DatasetSpec {
    let data = ArrayD::from_shape_vec(IxDyn(&[2, 3]), new_values(name, writer)).unwrap();
    DatasetSpec::new(name)
        .array(ArraySpec::new("temp", data).dims(["y", "x"]))
        .attr("writer", writer as i64)
}

/// Appends `datasets` as one commit, replacing (or not) the live datasets of their names.
async fn append_specs(
    location: &StoreLocation,
    datasets: Vec<DatasetSpec>,
    replace: bool,
) -> Result<AppendReport, AppendError> {
    let mut appender = Appender::open(location, WriterOptions::default())
        .await?
        .with_replace(replace);
    for dataset in datasets {
        appender.write_dataset(dataset)?;
    }
    appender.commit().await
}

async fn temp_of(atlas: &Atlas, name: &str) -> Vec<f32> {
    let view = atlas.dataset(name).unwrap();
    let temp = view
        .read_array::<f32>("temp", vec![], vec![])
        .await
        .unwrap();
    temp.iter().copied().collect()
}

async fn writer_of(atlas: &Atlas, name: &str) -> i64 {
    let attrs = atlas.dataset(name).unwrap().attributes().await.unwrap();
    match attrs.iter().find(|(k, _)| k == "writer") {
        Some((_, Attr::Int64(w))) => *w,
        other => panic!("{name}: writer attribute {other:?}"),
    }
}

/// Each live name of `atlas` with how many live datasets hold it.
fn name_counts(atlas: &Atlas) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for view in atlas.datasets() {
        *counts.entry(view.name().to_owned()).or_insert(0) += 1;
    }
    counts
}

#[test]
fn a_replace_hides_the_old_datasets_in_the_commit_that_adds_the_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    runtime().block_on(async {
        append(&location, 0, 5).await;
        let first = std::fs::read(collection.join(MANIFEST_OBJECT)).unwrap();
        assert!(first.starts_with(b"atlas-growing 1\n"));

        // Without replace a live name is refused, before anything is written.
        let refused = append_specs(&location, vec![replacement(&name(0, 1), 7)], false).await;
        assert!(
            matches!(&refused, Err(AppendError::NameTaken { name: n, .. }) if *n == name(0, 1)),
            "{refused:?}"
        );
        // A name written twice by one append is refused with replace too.
        let twice = append_specs(
            &location,
            vec![replacement(&name(0, 1), 7), replacement(&name(0, 1), 8)],
            true,
        )
        .await;
        assert!(
            matches!(&twice, Err(AppendError::NameTaken { held_by, .. }) if held_by == "this append"),
            "{twice:?}"
        );

        let report = append_specs(
            &location,
            vec![
                replacement(&name(0, 3), 7),
                replacement(&name(0, 1), 7),
                replacement("brand_new", 7),
            ],
            true,
        )
        .await
        .unwrap();
        assert_eq!((report.version, report.replaced, report.datasets), (2, 2, 3));

        // The manifest: version 3 bytes, the replace line naming part 1's ordinals 1 and 3.
        let bytes = std::fs::read(collection.join(MANIFEST_OBJECT)).unwrap();
        let manifest = Manifest::decode(&bytes).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        let old_part = &manifest.commits[0].part;
        assert!(text.starts_with("atlas-growing 3 1\n"), "{text}");
        assert!(
            text.ends_with(&format!(
                " 3 {} replace {old_part}:1,{old_part}:3\n",
                report.part
            )),
            "{text}"
        );

        // The new version: each name once, the replaced ones with the new data.
        let latest = Atlas::open_location(&location, |s| s).await.unwrap();
        let counts = name_counts(&latest);
        assert_eq!(counts.len(), 6);
        assert!(counts.values().all(|&n| n == 1), "{counts:?}");
        assert_eq!(latest.dataset_count(), 6);
        assert_eq!(temp_of(&latest, &name(0, 1)).await, new_values(&name(0, 1), 7));
        assert_eq!(temp_of(&latest, &name(0, 3)).await, new_values(&name(0, 3), 7));
        assert_eq!(temp_of(&latest, &name(0, 2)).await, values(&name(0, 2)));
        assert_eq!(writer_of(&latest, &name(0, 1)).await, 7);
        // The old datasets' ordinals serve nothing; the part reports them hidden.
        assert!(latest.dataset_at(1).is_none() && latest.dataset_at(3).is_none());
        assert_eq!(latest.parts().next().unwrap().1.hidden(), [1, 3]);
        // Selections, statistics and run reads do not see the hidden datasets.
        let old_writer = latest
            .select(&Selection::new().attr_in("writer", vec![SelectValue::Int(0)]))
            .await
            .unwrap();
        assert_eq!(old_writer.len(), 3);
        let stats = latest.array_stats("temp").await.unwrap();
        assert_eq!(stats.datasets, 6);
        assert_eq!(
            latest.attributes_by_dataset("writer").await.unwrap().len(),
            6
        );
        let ordinals: Vec<u32> = latest.datasets().map(|d| d.ordinal()).collect();
        let run = latest.read_run::<f32>("temp", &ordinals).await.unwrap();
        assert_eq!(run.values().len(), 36);

        // The version before reads the old data, and does not know the new names.
        let old = Atlas::open_location_version(&location, Some(1), |s| s)
            .await
            .unwrap();
        assert_eq!(old.dataset_count(), 5);
        assert_eq!(temp_of(&old, &name(0, 1)).await, values(&name(0, 1)));
        assert_eq!(writer_of(&old, &name(0, 3)).await, 0);
        assert!(old.dataset("brand_new").is_none());
        assert!(old.parts().next().unwrap().1.hidden().is_empty());

        // A delete of a replaced name hides the live (new) dataset, not the old one.
        let deleted = latest.delete(&[name(0, 1)]).await.unwrap();
        assert_eq!(deleted.newly_deleted, 1);
        let latest = Atlas::open_location(&location, |s| s).await.unwrap();
        assert!(latest.dataset(&name(0, 1)).is_none());
        let old = Atlas::open_location_version(&location, Some(1), |s| s)
            .await
            .unwrap();
        assert_eq!(temp_of(&old, &name(0, 1)).await, values(&name(0, 1)));

        // A name held only by deleted or hidden datasets is free: a plain append takes it, a
        // replacing one hides nothing.
        let again = append_specs(&location, vec![replacement(&name(0, 1), 9)], true)
            .await
            .unwrap();
        assert_eq!(again.replaced, 0);
        let text = std::fs::read_to_string(collection.join(MANIFEST_OBJECT)).unwrap();
        assert!(text.ends_with(&format!(" 1 {}\n", again.part)), "{text}");
        let latest = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(temp_of(&latest, &name(0, 1)).await, new_values(&name(0, 1), 9));
        assert!(name_counts(&latest).values().all(|&n| n == 1));
    });
}

#[test]
fn a_replace_that_hides_nothing_keeps_the_version_1_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    runtime().block_on(async {
        let report = append_specs(&location, vec![replacement("a", 1)], true)
            .await
            .unwrap();
        assert_eq!(report.replaced, 0);
        append_specs(&location, vec![replacement("b", 1)], true)
            .await
            .unwrap();
        let text = std::fs::read_to_string(collection.join(MANIFEST_OBJECT)).unwrap();
        assert!(text.starts_with("atlas-growing 1\n"), "{text}");
    });
}

#[test]
fn a_hide_past_its_part_is_refused_naming_the_manifest_line() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    runtime().block_on(async {
        append(&location, 0, 2).await;
        append_specs(&location, vec![replacement(&name(0, 1), 1)], true)
            .await
            .unwrap();
        let path = collection.join(MANIFEST_OBJECT);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace(":1\n", ":2\n")).unwrap();
        let error = Atlas::open_location(&location, |s| s).await.unwrap_err();
        match &error {
            AtlasError::CorruptCollection { field, .. } => {
                assert_eq!(field, "line 3", "{error}");
            }
            other => panic!("{other:?}"),
        }
        // The version before the damaged line still opens.
        assert!(Atlas::open_location_version(&location, Some(1), |s| s)
            .await
            .is_ok());
    });
}

#[test]
fn a_reader_sees_the_old_or_the_new_dataset_never_both_nor_neither() {
    const ROUNDS: usize = 30;
    const NAMES: usize = 4;
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    let rt = runtime();
    rt.block_on(append(&location, 0, NAMES));
    let done = Arc::new(AtomicBool::new(false));
    let replacer = {
        let location = location.clone();
        let done = Arc::clone(&done);
        rt.spawn(async move {
            for round in 1..=ROUNDS {
                let specs = (0..NAMES)
                    .map(|i| replacement(&name(0, i), round))
                    .collect();
                let report = append_specs(&location, specs, true).await.unwrap();
                assert_eq!(report.replaced, NAMES);
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let opens = rt.block_on(async {
        let mut opens = 0;
        loop {
            let finished = done.load(Ordering::SeqCst);
            let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
            let counts = name_counts(&atlas);
            assert_eq!(counts.len(), NAMES, "version {:?}", atlas.version());
            assert!(
                counts.values().all(|&n| n == 1),
                "version {:?}: {counts:?}",
                atlas.version()
            );
            // Every dataset is the one that version's last replace wrote.
            let round = atlas.version().unwrap() as usize - 1;
            for i in 0..NAMES {
                let want = match round {
                    0 => values(&name(0, i)),
                    r => new_values(&name(0, i), r),
                };
                assert_eq!(temp_of(&atlas, &name(0, i)).await, want);
            }
            opens += 1;
            if finished {
                break opens;
            }
        }
    });
    rt.block_on(replacer).unwrap();
    assert!(opens > 1);
    // Every version, read afterwards, has each name once, with its own round's data.
    rt.block_on(async {
        for version in [1, 2, ROUNDS as u64 / 2, ROUNDS as u64 + 1] {
            let atlas = Atlas::open_location_version(&location, Some(version), |s| s)
                .await
                .unwrap();
            assert_eq!(atlas.dataset_count(), NAMES);
            let round = version as usize - 1;
            let want = match round {
                0 => values(&name(0, 0)),
                r => new_values(&name(0, 0), r),
            };
            assert_eq!(temp_of(&atlas, &name(0, 0)).await, want);
        }
    });
}

#[test]
fn racing_replacers_of_one_name_all_commit_and_leave_one_live() {
    let dir = tempfile::tempdir().unwrap();
    let location = StoreLocation::Local(dir.path().join("growing"));
    runtime().block_on(racing_replacers(&location));
}

/// The same race on an object store, where the commit is a conditional PUT, not a lock.
#[test]
fn racing_replacers_on_an_object_store_all_commit_and_leave_one_live() {
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let location = StoreLocation::Remote(object_access::RemotePrefix::new(
        memory,
        Path::from("c"),
        "memory:///c",
    ));
    runtime().block_on(racing_replacers(&location));
}

/// Replacers of `shared` that all read version 1 before any commits, so all but one catch up:
/// every commit lands, each hides the one live `shared` it found, and exactly one is live in
/// every version, the last commit's at the end.
async fn racing_replacers(location: &StoreLocation) {
    const REPLACERS: usize = 8;
    append_specs(location, vec![replacement("shared", 0)], false)
        .await
        .unwrap();
    let mut appenders = Vec::new();
    for writer in 1..=REPLACERS {
        let mut appender = Appender::open(location, WriterOptions::default())
            .await
            .unwrap()
            .with_replace(true);
        appender
            .write_dataset(replacement("shared", writer))
            .unwrap();
        appender
            .write_dataset(replacement(&format!("own_{writer}"), writer))
            .unwrap();
        appenders.push(appender);
    }
    let commits = appenders
        .into_iter()
        .map(|appender| tokio::spawn(appender.commit()));
    let mut reports = Vec::new();
    for commit in commits {
        reports.push(commit.await.unwrap().unwrap());
    }
    let mut versions: Vec<u64> = reports.iter().map(|r| r.version).collect();
    versions.sort_unstable();
    assert_eq!(versions, (2..=REPLACERS as u64 + 1).collect::<Vec<_>>());
    assert!(reports.iter().all(|r| r.replaced == 1));
    assert!(reports.iter().any(|r| r.attempts > 1));
    let last = reports.iter().max_by_key(|r| r.version).unwrap();

    let atlas = Atlas::open_location(location, |s| s).await.unwrap();
    let counts = name_counts(&atlas);
    assert_eq!(counts.len(), REPLACERS + 1);
    assert!(counts.values().all(|&n| n == 1), "{counts:?}");
    let (commit, _) = atlas
        .parts()
        .find(|(_, part)| part.dataset("shared").is_some())
        .unwrap();
    assert_eq!(commit.part, last.part);
    assert_eq!(
        temp_of(&atlas, "shared").await,
        new_values("shared", writer_of(&atlas, "shared").await as usize)
    );
    for version in 1..=REPLACERS as u64 + 1 {
        let at = Atlas::open_location_version(location, Some(version), |s| s)
            .await
            .unwrap();
        assert_eq!(
            at.datasets().filter(|d| d.name() == "shared").count(),
            1,
            "version {version}"
        );
    }
}

#[test]
fn compaction_after_a_replace_is_a_fresh_write_of_the_live_datasets_and_gc_keeps_what_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    runtime().block_on(async {
        append(&location, 0, 4).await;
        append_specs(
            &location,
            vec![replacement(&name(0, 2), 5), replacement(&name(0, 0), 5)],
            true,
        )
        .await
        .unwrap();

        // Gc with no compaction: every version still names the replaced datasets' part.
        let gc = collect_garbage(
            &location,
            &GcOptions {
                keep_versions: NonZeroU64::new(1),
                grace: Duration::ZERO,
                dry_run: false,
            },
        )
        .await
        .unwrap();
        assert!(gc.removed_parts.is_empty(), "{gc:?}");
        let old = Atlas::open_location_version(&location, Some(1), |s| s)
            .await
            .unwrap();
        assert_eq!(temp_of(&old, &name(0, 2)).await, values(&name(0, 2)));

        let report = compact(&location, &mut |_, _| {}).await.unwrap();
        assert_eq!((report.version, report.datasets), (3, 4));
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        let order: Vec<String> = atlas.datasets().map(|d| d.name().to_owned()).collect();
        assert_eq!(order, [name(0, 1), name(0, 3), name(0, 2), name(0, 0)]);
        assert!(atlas.parts().all(|(_, part)| part.hidden().is_empty()));
        let created = atlas.parts().next().unwrap().1.footer().created_unix_ms;

        let specs = [
            dataset(&name(0, 1), 0),
            dataset(&name(0, 3), 0),
            replacement(&name(0, 2), 5),
            replacement(&name(0, 0), 5),
        ];
        let (fresh, _) = fresh_write(&dir.path().join("fresh"), created, specs).await;
        assert!(
            part_bytes(&collection, &report.part) == fresh,
            "the compacted part differs from a fresh write"
        );

        // A replace after the compaction hides a dataset of the compacted part.
        let after = append_specs(&location, vec![replacement(&name(0, 3), 6)], true)
            .await
            .unwrap();
        assert_eq!(after.replaced, 1);
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(
            temp_of(&atlas, &name(0, 3)).await,
            new_values(&name(0, 3), 6)
        );
        assert_eq!(atlas.dataset_count(), 4);

        // Gc keeping the latest version: the parts before the compaction go, the compacted
        // part (holding the replaced dataset) stays.
        let gc = collect_garbage(
            &location,
            &GcOptions {
                keep_versions: NonZeroU64::new(1),
                grace: Duration::ZERO,
                dry_run: false,
            },
        )
        .await
        .unwrap();
        assert_eq!(gc.removed_parts.len(), 2, "{gc:?}");
        assert_eq!(gc.oldest_readable_version, 4);
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(temp_of(&atlas, &name(0, 1)).await, values(&name(0, 1)));
        let text = std::fs::read_to_string(collection.join(MANIFEST_OBJECT)).unwrap();
        assert!(text.starts_with("atlas-growing 3 4\n"), "{text}");
    });
}

#[test]
fn replace_switched_off_after_writing_refuses_a_live_name_at_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let collection = dir.path().join("growing");
    let location = StoreLocation::Local(collection.clone());
    runtime().block_on(async {
        append(&location, 0, 2).await;
        let before = std::fs::read(collection.join(MANIFEST_OBJECT)).unwrap();
        let mut appender = Appender::open(&location, WriterOptions::default())
            .await
            .unwrap()
            .with_replace(true);
        appender.write_dataset(replacement(&name(0, 1), 3)).unwrap();
        let refused = appender.with_replace(false).commit().await;
        assert!(
            matches!(&refused, Err(AppendError::NameTaken { name: n, .. }) if *n == name(0, 1)),
            "{refused:?}"
        );
        assert_eq!(
            std::fs::read(collection.join(MANIFEST_OBJECT)).unwrap(),
            before
        );
    });
}
