//! Where a new collection is written, from a location: what `Target::open` refuses by
//! occupancy, and `CollectionWriter` writing a plain collection or parts of a growing one,
//! removing a directory it made when the write is aborted.
#![allow(clippy::disallowed_methods)] // a test drives its own runtime
#![allow(clippy::unwrap_used)] // test code

use atlas_append::{CollectionWriter, Occupancy, Target, TargetError, WriteMode, Written};
use atlas_reader::Atlas;
use atlas_writer::{ArraySpec, DatasetSpec, WriterOptions};
use ndarray::{ArrayD, IxDyn};
use object_access::StoreLocation;
use std::path::Path;

fn local(dir: &Path) -> StoreLocation {
    StoreLocation::Local(dir.to_path_buf())
}

fn dataset(name: &str) -> DatasetSpec {
    let data = ArrayD::from_shape_vec(IxDyn(&[2]), vec![1.0f32, 2.0]).unwrap();
    DatasetSpec::new(name).array(ArraySpec::new("t2m", data))
}

async fn write(
    dir: &Path,
    mode: WriteMode,
    name: &str,
) -> Result<Written, atlas_append::AppendError> {
    let mut writer = CollectionWriter::open(&local(dir), mode, WriterOptions::default()).await?;
    writer.write_dataset(dataset(name))?;
    assert_eq!(writer.dataset_count(), 1);
    writer.finish().await
}

/// The serde form's keys in the order it writes them (what a Python dict of it keeps).
fn keys(written: &Written) -> Vec<String> {
    let text = serde_json::to_string(written).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort_by_key(|key| text.find(&format!("\"{key}\":")));
    keys
}

#[tokio::test]
async fn a_new_collection_is_written_where_none_is_and_refused_where_one_is() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("new");
    let written = write(&dir, WriteMode::Create, "jan").await.unwrap();
    let Written::Created(summary) = &written else {
        panic!("{written:?}");
    };
    assert_eq!(summary.datasets, 1);
    assert_eq!(
        keys(&written),
        ["datasets", "segments", "container_bytes", "footer_bytes"]
    );
    let names: Vec<String> = (Atlas::open_local(&dir).await.unwrap().datasets())
        .map(|d| d.name().to_owned())
        .collect();
    assert_eq!(names, ["jan"]);

    let location = local(&dir);
    let again = CollectionWriter::open(&location, WriteMode::Create, WriterOptions::default());
    let Err(atlas_append::AppendError::Target(TargetError::Exists { reason, .. })) = again.await
    else {
        panic!("a second collection was allowed");
    };
    assert!(reason.contains("write-once"), "{reason}");
}

#[tokio::test]
async fn parts_are_appended_and_a_plain_collection_is_not_written_over_them() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("grown");
    let append = WriteMode::Append { replace: false };
    write(&dir, append, "jan").await.unwrap();
    let written = write(&dir, append, "feb").await.unwrap();
    let Written::Appended(report) = &written else {
        panic!("{written:?}");
    };
    assert_eq!(
        (report.version, report.datasets, report.replaced),
        (2, 1, 0)
    );
    assert_eq!(
        keys(&written),
        [
            "datasets",
            "container_bytes",
            "version",
            "part",
            "attempts",
            "replaced"
        ]
    );
    let refused = Target::open(&local(&dir), Occupancy::NoCollection).await;
    let Err(TargetError::Exists { reason, .. }) = refused else {
        panic!("a plain collection over a growing one was allowed");
    };
    assert!(reason.contains("collection.manifest"), "{reason}");
}

#[tokio::test]
async fn an_empty_target_is_refused_when_it_holds_anything() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("README"), b"notes").unwrap();
    let Err(refused) = Target::open(&local(root.path()), Occupancy::Empty).await else {
        panic!("a directory holding a file was taken as empty");
    };
    assert!(!refused.is_retryable());
    let TargetError::NotEmpty { found, .. } = refused else {
        panic!("{refused:?}");
    };
    assert_eq!(found, "README");
    let target = Target::open(&local(root.path()), Occupancy::NoCollection)
        .await
        .unwrap();
    assert!(target.created_dir.is_none(), "it existed");
}

#[tokio::test]
async fn an_aborted_writer_removes_the_directory_it_made() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("a/b");
    let target = Target::open(&local(&dir), Occupancy::Empty).await.unwrap();
    assert_eq!(target.created_dir.as_deref(), Some(dir.as_path()));
    target.remove_created_dir();
    assert!(!dir.exists());
    let mut writer =
        CollectionWriter::open(&local(&dir), WriteMode::Create, WriterOptions::default())
            .await
            .unwrap();
    writer.write_dataset(dataset("jan")).unwrap();
    writer.abort();
    assert!(!dir.exists(), "nothing is left");
    assert!(
        root.path().join("a").exists(),
        "only the directory made last is removed"
    );
}
