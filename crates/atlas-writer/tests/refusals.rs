//! What the writer refuses, before writing anything.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

use atlas_writer::{ArraySpec, AtlasWriter, DatasetSpec, WriteError, WriterOptions};
use ndarray::{ArrayD, IxDyn};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use std::sync::Arc;

fn temp() -> ArraySpec {
    ArraySpec::new(
        "temp",
        ArrayD::from_shape_vec(IxDyn(&[2]), vec![1.0f32, 2.0]).unwrap(),
    )
}

fn writer(store: &Arc<dyn ObjectStore>) -> AtlasWriter {
    AtlasWriter::new(
        Arc::clone(store),
        &Path::from("c"),
        WriterOptions::default(),
    )
}

#[tokio::test]
async fn names_repeats_and_layouts_are_refused_and_the_writer_stays_usable() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let mut w = writer(&store);
    assert_eq!(
        w.write_dataset(DatasetSpec::new("jan").array(temp()))
            .unwrap(),
        0
    );
    let refusals = [
        DatasetSpec::new("jan").array(temp()),
        DatasetSpec::new("").array(temp()),
        DatasetSpec::new("_hidden").array(temp()),
        DatasetSpec::new("feb").array(temp()).array(temp()),
        DatasetSpec::new("feb").array(temp().attr("", 1i64)),
        DatasetSpec::new("feb")
            .array(temp())
            .attr("k", 1i64)
            .attr("k", 2i64),
        DatasetSpec::new("feb").array(temp().chunks(vec![1, 1])),
        DatasetSpec::new("feb").array(temp().chunks(vec![0])),
        // A chunk array-format cannot address (over u32::MAX bytes).
        DatasetSpec::new("feb")
            .array(ArraySpec::declared::<f64>("big", vec![1 << 29, 2]).chunks(vec![1 << 29, 2])),
        DatasetSpec::new("feb").array(temp().dims(["a", "b"])),
        DatasetSpec::new("feb").array(ArraySpec::declared::<u8>("_datasets", vec![1])),
    ];
    for spec in refusals {
        let label = format!("{spec:?}");
        let err = w.write_dataset(spec).unwrap_err();
        assert!(
            matches!(
                err,
                WriteError::DuplicateDataset(_)
                    | WriteError::InvalidName(_)
                    | WriteError::DuplicateArray { .. }
                    | WriteError::DuplicateAttribute { .. }
                    | WriteError::InvalidLayout { .. }
            ),
            "{label}: {err}"
        );
    }
    assert_eq!(
        w.write_dataset(DatasetSpec::new("feb").array(temp()))
            .unwrap(),
        1
    );
    let summary = w.finish().await.unwrap();
    assert_eq!(
        (summary.datasets, summary.segments),
        (2, 1),
        "no _datasets segment without dataset attributes"
    );
    let size = store.head(&Path::from("c/data.atlas")).await.unwrap().size;
    assert_eq!(size, summary.container_bytes);
    assert!(
        store.head(&Path::from("c/deleted.mask")).await.is_err(),
        "the writer never creates a mask"
    );
}

#[tokio::test]
async fn nothing_appears_before_finish() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let mut w = writer(&store);
    w.write_dataset(DatasetSpec::new("jan").array(temp()))
        .unwrap();
    assert!(store.head(&Path::from("c/data.atlas")).await.is_err());
    drop(w);
    assert!(store.head(&Path::from("c/data.atlas")).await.is_err());
}
