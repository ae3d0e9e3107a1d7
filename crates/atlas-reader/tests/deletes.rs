//! Deletes: the mask hides datasets everywhere, and concurrent deleters lose nothing.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use atlas_footer::DType;
use atlas_reader::{ArrayData, At, Atlas, AtlasError, LocalFlockCommitter};
use common::*;
use object_store::local::LocalFileSystem;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::sync::Arc;

#[tokio::test]
async fn deleted_datasets_are_hidden_from_lookups_iteration_stats_and_attributes() {
    let store = write([
        every_dtype("jan", 1),
        every_dtype("feb", 2),
        every_dtype("mar", 3),
    ])
    .await;
    let atlas = Atlas::open(Arc::clone(&store), &prefix()).await.unwrap();
    let report = atlas.delete(&["feb"]).await.unwrap();
    assert_eq!((report.newly_deleted, report.total_deleted), (1, 1));
    for atlas in [atlas, Atlas::open(store, &prefix()).await.unwrap()] {
        assert!(atlas.dataset("feb").is_none());
        assert_eq!(
            atlas.dataset("mar").unwrap().ordinal(),
            2,
            "ordinals never move"
        );
        assert_eq!(
            atlas.datasets().map(|d| d.name()).collect::<Vec<_>>(),
            ["jan", "mar"]
        );
        assert_eq!(atlas.dataset_count(), 2);
        let stats = atlas.array_stats("i64").await.unwrap();
        assert_eq!(stats.datasets, 2);
        assert_eq!(stats.min, Some(array_format::StatValue::Int(1)));
        let rows = atlas.array_stats_by_dataset("i64").await.unwrap();
        assert!(rows.iter().all(|r| r.dataset != "feb"));
        let seeds = atlas.attributes_by_dataset("seed").await.unwrap();
        assert_eq!(
            seeds.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            ["jan", "mar"]
        );
    }
}

#[tokio::test]
async fn unknown_names_are_refused_before_writing() {
    let store = write(stations(3)).await;
    let atlas = Atlas::open(Arc::clone(&store), &prefix()).await.unwrap();
    assert!(matches!(
        atlas.delete(&["station_000000_2024", "nope"]).await,
        Err(AtlasError::DatasetNotFound(_))
    ));
    assert!(
        store.head(&prefix().join("deleted.mask")).await.is_err(),
        "no mask written"
    );
    assert!(matches!(
        atlas.dataset_named("nope"),
        Err(AtlasError::DatasetNotFound(name)) if name == "nope"
    ));
    let found = atlas.dataset_named("station_000001_2024").unwrap();
    assert_eq!(found.name(), "station_000001_2024");
}

#[tokio::test]
async fn a_foreign_mask_is_reported_and_never_overwritten() {
    let store = write(stations(3)).await;
    store
        .put(
            &prefix().join("deleted.mask"),
            PutPayload::from_static(b"not a mask"),
        )
        .await
        .unwrap();
    assert!(matches!(
        Atlas::open(Arc::clone(&store), &prefix()).await,
        Err(AtlasError::Mask { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_deleters_in_memory_lose_no_ordinal() {
    let store = write(stations(64)).await;
    let mut tasks = Vec::new();
    for deleter in 0..8 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let atlas = Atlas::open(store, &prefix()).await.unwrap();
            for i in 0..8 {
                atlas
                    .delete(&[format!("station_{:06}_2024", deleter * 8 + i)])
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let atlas = Atlas::open(store, &prefix()).await.unwrap();
    assert_eq!(
        atlas.deleted().len(),
        64,
        "every deleter's ordinals survive"
    );
    assert_eq!(atlas.datasets().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_deleters_on_local_disk_lose_no_ordinal() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    write_to(store, stations(64)).await;
    let collection = dir.path().join("collections/demo");
    let mut threads = Vec::new();
    for deleter in 0..8 {
        let collection = collection.clone();
        threads.push(std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let atlas = Atlas::open_local(&collection).await.unwrap();
                for i in 0..8 {
                    atlas
                        .delete(&[format!("station_{:06}_2024", deleter * 8 + i)])
                        .await
                        .unwrap();
                }
            });
        }));
    }
    for thread in threads {
        thread.join().unwrap();
    }
    let atlas = Atlas::open_local(&collection).await.unwrap();
    assert_eq!(atlas.deleted().len(), 64);
    let leftovers: Vec<_> = std::fs::read_dir(&collection)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        2,
        "data.atlas and deleted.mask, no lock or temp files: {leftovers:?}"
    );
}

#[tokio::test]
async fn the_flock_committer_replaces_a_stale_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    write_to(store, stations(4)).await;
    let collection = dir.path().join("collections/demo");
    std::fs::write(collection.join(".deleted.mask.crashed"), b"half").unwrap();
    let atlas = Atlas::open_local(&collection).await.unwrap();
    let atlas = atlas.with_committer(Arc::new(LocalFlockCommitter::new(collection.clone())));
    atlas.delete(&["station_000001_2024"]).await.unwrap();
    assert!(!collection.join(".deleted.mask.crashed").exists());
    assert_eq!(
        Atlas::open_local(&collection)
            .await
            .unwrap()
            .deleted()
            .ordinals(),
        [1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn open_on_a_concrete_local_file_system_takes_the_directory_lock() {
    let dir = tempfile::tempdir().unwrap();
    let local = Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    write_to(Arc::clone(&local) as Arc<dyn ObjectStore>, stations(64)).await;
    // As a trait object the store cannot be recognised: conditional PUT (last-writer-wins here).
    let as_dyn: Arc<dyn ObjectStore> = Arc::clone(&local) as Arc<dyn ObjectStore>;
    let atlas = Atlas::open(as_dyn, &prefix()).await.unwrap();
    assert!(format!("{:?}", atlas.committer()).starts_with("ConditionalPutCommitter"));
    // As `Arc<LocalFileSystem>` it is: the flock committer on the collection directory.
    let atlas = Atlas::open(Arc::clone(&local), &prefix()).await.unwrap();
    assert!(format!("{:?}", atlas.committer()).starts_with("LocalFlockCommitter"));

    let mut tasks = Vec::new();
    for deleter in 0..8 {
        let local = Arc::clone(&local);
        tasks.push(tokio::spawn(async move {
            let atlas = Atlas::open(local, &prefix()).await.unwrap();
            for i in 0..8 {
                atlas
                    .delete(&[format!("station_{:06}_2024", deleter * 8 + i)])
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let atlas = Atlas::open(local, &prefix()).await.unwrap();
    assert_eq!(
        atlas.deleted().len(),
        64,
        "every deleter's ordinals survive"
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("collections/demo"))
            .unwrap()
            .count(),
        2,
        "data.atlas and deleted.mask only"
    );
}

/// A delete reports what it hid itself: another handle's commit in between (on a stale view of
/// the mask) is counted in the total, not as this call's.
#[tokio::test]
async fn a_delete_after_another_handles_commit_reports_only_its_own_datasets() {
    let store = write([
        every_dtype("jan", 1),
        every_dtype("feb", 2),
        every_dtype("mar", 3),
    ])
    .await;
    let first = Atlas::open(Arc::clone(&store), &prefix()).await.unwrap();
    let second = Atlas::open(Arc::clone(&store), &prefix()).await.unwrap();
    let report = first.delete(&["jan"]).await.unwrap();
    assert_eq!((report.newly_deleted, report.total_deleted), (1, 1));
    // `second` opened before that commit: its view hides nothing.
    let report = second.delete(&["feb", "feb"]).await.unwrap();
    assert_eq!((report.newly_deleted, report.total_deleted), (1, 2));
    // Asking again for what is already hidden hides nothing new.
    let report = second.delete(&["jan"]).await.unwrap();
    assert_eq!((report.newly_deleted, report.total_deleted), (0, 2));
}

#[tokio::test]
async fn a_counted_open_counts_the_collections_requests_and_keeps_the_most_recent() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    write_to(store, stations(4)).await;
    let location = object_access::StoreLocation::Local(dir.path().join("collections/demo"));
    let (atlas, counter) = Atlas::open_location_counted(&location, At::Latest, 1)
        .await
        .unwrap();
    assert_eq!(counter.count(), 2, "the container's tail and the mask");
    assert_eq!(counter.requests().len(), 1, "only the most recent is kept");
    let names = ["station_000001_2024", "station_000003_2024"];
    let each = atlas.read_data_each(&names, "temp").await.unwrap();
    assert!(counter.count() > 2, "the read's requests are counted too");
    assert_eq!(each.len(), 2);
    let ArrayData::Float32(third) = &each[1] else {
        panic!("{:?}", each[1]);
    };
    assert_eq!(third.as_slice(), Some(&[3.0, -3.0][..]));
    assert_eq!(each[1].dtype(), DType::Float32);
    let (run, shapes) = atlas
        .read_run_data_named("temp", &names)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(shapes, [vec![2], vec![2]]);
    assert_eq!(run.shape(), [4]);
    let layouts = atlas.array_layouts("temp", &names).await.unwrap();
    assert_eq!(layouts.len(), 2);
    assert_eq!(layouts[0].0.shape, [2]);
    assert!(layouts[0].1.is_empty(), "no attributes");
    assert!(matches!(
        atlas.read_data_each(&["station_000001_2024", "nope"], "temp").await,
        Err(AtlasError::DatasetNotFound(name)) if name == "nope"
    ));
}
