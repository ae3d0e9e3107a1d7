//! Writing then reading: every dtype, schemas, layouts, attributes, stats, determinism.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use array_format::{FillValue, StatValue, TimestampNs};
use atlas_footer::DType;
use atlas_reader::{Atlas, AtlasError, Attr};
use common::*;
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;
use object_store::ObjectStoreExt;
use std::sync::Arc;

async fn check_every_dtype(atlas: &Atlas) {
    let ds = atlas.dataset("jan").unwrap();
    assert_eq!(ds.ordinal(), 0);
    let f32s = ds.read_array::<f32>("f32", vec![], vec![]).await.unwrap();
    assert_eq!(f32s.shape(), &[2, 4]);
    assert_eq!(
        f32s.iter().copied().collect::<Vec<_>>(),
        (0..8).map(|i| i as f32 + 1.0).collect::<Vec<_>>()
    );
    let part = ds
        .read_array::<f32>("f32", vec![1, 1], vec![1, 2])
        .await
        .unwrap();
    assert_eq!(part.iter().copied().collect::<Vec<_>>(), vec![6.0, 7.0]);
    let f64s = ds.read_array::<f64>("f64", vec![], vec![]).await.unwrap();
    assert_eq!(f64s[[0]], 1.0);
    assert!(f64s[[1]].is_nan());
    assert_eq!(
        ds.read_array::<i8>("i8", vec![], vec![])
            .await
            .unwrap()
            .as_slice()
            .unwrap(),
        &[-1, 1]
    );
    assert_eq!(
        ds.read_array::<i16>("i16", vec![], vec![])
            .await
            .unwrap()
            .as_slice()
            .unwrap(),
        &[-300, 7]
    );
    assert_eq!(
        ds.read_array::<i32>("i32", vec![], vec![])
            .await
            .unwrap()
            .as_slice()
            .unwrap(),
        &[i32::MIN, 1]
    );
    assert_eq!(
        ds.read_array::<i64>("i64", vec![], vec![])
            .await
            .unwrap()
            .as_slice()
            .unwrap(),
        &[i64::MAX, 1]
    );
    assert_eq!(
        ds.read_array::<u8>("u8", vec![], vec![])
            .await
            .unwrap()
            .as_slice()
            .unwrap(),
        &[0, 255, 9]
    );
    assert_eq!(
        ds.read_array::<u16>("u16", vec![], vec![])
            .await
            .unwrap()
            .as_slice()
            .unwrap(),
        &[65535]
    );
    assert_eq!(
        ds.read_array::<u32>("u32", vec![], vec![])
            .await
            .unwrap()
            .as_slice()
            .unwrap(),
        &[7]
    );
    assert_eq!(
        ds.read_array::<u64>("u64", vec![], vec![])
            .await
            .unwrap()
            .as_slice()
            .unwrap(),
        &[u64::MAX]
    );
    let text = ds
        .read_array::<String>("text", vec![], vec![])
        .await
        .unwrap();
    assert_eq!(
        text.iter().cloned().collect::<Vec<_>>(),
        vec!["name-1".to_owned(), "é".to_owned()]
    );
    let bytes = ds
        .read_array::<Vec<u8>>("bytes", vec![], vec![])
        .await
        .unwrap();
    assert_eq!(
        bytes.iter().cloned().collect::<Vec<_>>(),
        vec![vec![1u8, 2], vec![]]
    );
    let time = ds
        .read_array::<TimestampNs>("time", vec![], vec![])
        .await
        .unwrap();
    assert_eq!(
        time.iter().copied().collect::<Vec<_>>(),
        vec![TimestampNs(1), TimestampNs(-1)]
    );
    let never = ds
        .read_array::<f32>("never_written", vec![], vec![])
        .await
        .unwrap();
    assert_eq!(never.as_slice().unwrap(), &[-9.0, -9.0, -9.0]);
}

#[tokio::test]
async fn every_dtype_round_trips_in_memory() {
    let store = write([every_dtype("jan", 1), every_dtype("feb", 2)]).await;
    let atlas = Atlas::open(store, &prefix()).await.unwrap();
    check_every_dtype(&atlas).await;
    let feb = atlas.dataset("feb").unwrap();
    assert_eq!(
        feb.read_array::<i64>("i64", vec![], vec![])
            .await
            .unwrap()
            .as_slice()
            .unwrap(),
        &[i64::MAX, 2]
    );
}

#[tokio::test]
async fn every_dtype_round_trips_on_local_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    write_to(Arc::clone(&store), [every_dtype("jan", 1)]).await;
    check_every_dtype(&Atlas::open(store, &prefix()).await.unwrap()).await;
    let local = Atlas::open_local(dir.path().join("collections/demo"))
        .await
        .unwrap();
    check_every_dtype(&local).await;
}

#[tokio::test]
async fn schemas_borrow_the_footer_and_intern_by_content() {
    let store = write([every_dtype("jan", 1), every_dtype("feb", 2)]).await;
    let atlas = Atlas::open(store, &prefix()).await.unwrap();
    assert_eq!(
        atlas.footer().schema_pool.len(),
        1,
        "same declarations, one schema"
    );
    let jan = atlas.dataset("jan").unwrap();
    let schema = jan.schema();
    let names: Vec<&str> = schema.arrays().map(|a| a.name()).collect();
    assert_eq!(names[..3], ["f32", "f64", "i8"]);
    assert_eq!(schema.array("time").unwrap().dtype(), &DType::TimestampNs);
    assert_eq!(
        schema.array("f32").unwrap().attr("units"),
        Some(&DType::String)
    );
    assert_eq!(schema.attr("seed"), Some(&DType::Int64));
    let owned = jan.to_owned_schema();
    assert_eq!(owned.arrays.len(), 14);
    assert_eq!(
        owned.attrs,
        vec![
            ("source".to_owned(), DType::String),
            ("seed".to_owned(), DType::Int64)
        ]
    );
    let layout = jan.array_layout("f32").await.unwrap();
    assert_eq!((layout.shape, layout.chunk_shape), (vec![2, 4], vec![1, 2]));
    assert_eq!(layout.dimension_names, ["y", "x"]);
    assert_eq!(
        jan.array_layout("u8").await.unwrap().fill_value,
        Some(FillValue::UInt(9))
    );
    let segments: Vec<&str> = atlas.variables().map(|(name, _)| name).collect();
    assert_eq!(segments.first(), Some(&"f32"));
    assert_eq!(
        segments.last(),
        Some(&"_datasets"),
        "first seen after the arrays of the first dataset"
    );
}

#[tokio::test]
async fn attributes_read_back_and_undeclared_keys_cost_nothing() {
    let store = write([every_dtype("jan", 1), every_dtype("feb", 2)]).await;
    let counting = atlas_store::CountingStore::new(store);
    let atlas = Atlas::open(Arc::new(counting.clone()), &prefix())
        .await
        .unwrap();
    let jan = atlas.dataset("jan").unwrap();
    counting.reset();
    assert_eq!(jan.get_attribute("nope").await.unwrap(), None);
    assert_eq!(jan.get_array_attribute("f32", "nope").await.unwrap(), None);
    assert!(jan.array_attributes("i8").await.unwrap().is_empty());
    assert_eq!(counting.count(), 0, "the schema settles undeclared keys");
    assert_eq!(
        jan.get_attribute("seed").await.unwrap(),
        Some(Attr::Int64(1))
    );
    assert_eq!(
        jan.get_array_attribute("f32", "units").await.unwrap(),
        Some(Attr::from("K"))
    );
    let mut all = jan.attributes().await.unwrap();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        all,
        vec![
            ("seed".to_owned(), Attr::Int64(1)),
            ("source".to_owned(), Attr::from("synthetic"))
        ]
    );
    let by_dataset = atlas.attributes_by_dataset("seed").await.unwrap();
    assert_eq!(
        by_dataset,
        vec![
            ("jan".to_owned(), Attr::Int64(1)),
            ("feb".to_owned(), Attr::Int64(2))
        ]
    );
    assert!(atlas
        .attributes_by_dataset("missing")
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn attribute_keys_with_a_leading_underscore_keep_their_names() {
    // NetCDF's conventions put these on variables and files; the format reserves the prefix
    // for dataset and array names only.
    use atlas_writer::{ArraySpec, DatasetSpec};
    use ndarray::{ArrayD, IxDyn};
    let array = ArraySpec::new(
        "time",
        ArrayD::from_shape_vec(IxDyn(&[2]), vec![0i64, 1]).unwrap(),
    )
    .attr("_FillValue", -9i64)
    .attr("_CoordinateAxisType", "Time")
    .attr("_ChunkSizes", Attr::Int32List(vec![1]))
    .attr("units", "days since 2000-01-01");
    let spec = DatasetSpec::new("jan")
        .array(array)
        .attr("_NCProperties", "version=2")
        .attr("_datasets", 1i64);
    let atlas = Atlas::open(write([spec]).await, &prefix()).await.unwrap();
    let jan = atlas.dataset("jan").unwrap();
    let mut attrs = jan.array_attributes("time").await.unwrap();
    attrs.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        attrs,
        vec![
            ("_ChunkSizes".to_owned(), Attr::Int32List(vec![1])),
            ("_CoordinateAxisType".to_owned(), Attr::from("Time")),
            ("_FillValue".to_owned(), Attr::Int64(-9)),
            ("units".to_owned(), Attr::from("days since 2000-01-01")),
        ]
    );
    assert_eq!(
        jan.get_array_attribute("time", "_FillValue").await.unwrap(),
        Some(Attr::Int64(-9))
    );
    let mut attrs = jan.attributes().await.unwrap();
    attrs.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        attrs,
        vec![
            ("_NCProperties".to_owned(), Attr::from("version=2")),
            ("_datasets".to_owned(), Attr::Int64(1)),
        ]
    );
    assert_eq!(
        atlas.attributes_by_dataset("_datasets").await.unwrap(),
        vec![("jan".to_owned(), Attr::Int64(1))],
        "an attribute key is no segment name"
    );
    let variables: Vec<&str> = atlas.variables().map(|(name, _)| name).collect();
    assert_eq!(variables, ["time", "_datasets"]);
}

#[tokio::test]
async fn an_array_over_four_gib_without_chunks_is_split_into_readable_chunks() {
    // 1025^3 float32 (4.3 GB), declared and never written: array-format addresses a chunk
    // with u32 offsets, so one whole-array chunk could not be read back.
    use atlas_writer::{ArraySpec, DatasetSpec};
    let shape = vec![1025, 1025, 1025];
    let spec = DatasetSpec::new("big")
        .array(ArraySpec::declared::<f32>("fvar", shape.clone()).fill(FillValue::Float(-1.0)))
        .array(ArraySpec::declared::<f32>("small", vec![1025, 1025]));
    let atlas = Atlas::open(write([spec]).await, &prefix()).await.unwrap();
    let big = atlas.dataset("big").unwrap();
    let layout = big.array_layout("fvar").await.unwrap();
    assert_eq!(layout.shape, [1025, 1025, 1025]);
    // Trailing axes whole while they fit one 8 MiB block (1025 x 1025 x 4 bytes = 4.2 MB; two
    // such planes would not), the leading one split.
    assert_eq!(layout.chunk_shape, [1, 1025, 1025]);
    let corner = big
        .read_array::<f32>("fvar", vec![1024, 1000, 1000], vec![1, 25, 25])
        .await
        .unwrap();
    assert!(corner.iter().all(|&v| v == -1.0));
    let small = big.array_layout("small").await.unwrap();
    assert_eq!(small.chunk_shape, [1025, 1025], "what fits stays one chunk");
}

#[tokio::test]
async fn stats_fold_over_datasets() {
    let store = write([every_dtype("jan", 1), every_dtype("feb", 2)]).await;
    let atlas = Atlas::open(store, &prefix()).await.unwrap();
    let rows = atlas.array_stats_by_dataset("i64").await.unwrap();
    assert_eq!(
        rows.iter().map(|r| r.dataset.as_str()).collect::<Vec<_>>(),
        ["jan", "feb"]
    );
    let total = atlas.array_stats("i64").await.unwrap();
    assert_eq!(
        (total.datasets, total.row_count, total.null_count),
        (2, 4, 0)
    );
    assert_eq!(
        (total.min, total.max),
        (Some(StatValue::Int(1)), Some(StatValue::Int(i64::MAX)))
    );
    let text = atlas.array_stats("text").await.unwrap();
    assert_eq!(
        text.min,
        Some(StatValue::Bytes(b"name-1".to_vec())),
        "strings compare as bytes"
    );
    let never = atlas
        .dataset("jan")
        .unwrap()
        .array_stats("never_written")
        .await
        .unwrap();
    assert_eq!(
        never.row_count, never.null_count,
        "declared, never written: all holes"
    );
    let u8s = atlas
        .dataset("jan")
        .unwrap()
        .array_stats("u8")
        .await
        .unwrap();
    assert_eq!(u8s.null_count, 1, "the fill value counts as null");
    assert!(matches!(
        atlas.array_stats("missing").await,
        Err(AtlasError::NoSuchArray(name)) if name == "missing"
    ));
}

#[tokio::test]
async fn read_errors_are_typed() {
    let store = write([every_dtype("jan", 1)]).await;
    let atlas = Atlas::open(store, &prefix()).await.unwrap();
    let jan = atlas.dataset("jan").unwrap();
    assert!(matches!(
        jan.read_array::<f64>("f32", vec![], vec![]).await,
        Err(AtlasError::TypeMismatch { .. })
    ));
    assert!(matches!(
        jan.read_array::<f32>("nope", vec![], vec![]).await,
        Err(AtlasError::ArrayNotFound { .. })
    ));
    assert!(matches!(
        jan.read_array::<f32>("f32", vec![1, 3], vec![1, 2]).await,
        Err(AtlasError::InvalidSelection { .. })
    ));
    assert!(matches!(
        jan.read_array::<f32>("f32", vec![0], vec![1]).await,
        Err(AtlasError::InvalidSelection { .. })
    ));
    assert!(atlas.dataset("missing").is_none());
}

#[tokio::test]
async fn output_is_deterministic() {
    let first = write([every_dtype("jan", 1), every_dtype("feb", 2)]).await;
    let second = write([every_dtype("jan", 1), every_dtype("feb", 2)]).await;
    let path = prefix().join("data.atlas");
    let a = first.get(&path).await.unwrap().bytes().await.unwrap();
    let b = second.get(&path).await.unwrap().bytes().await.unwrap();
    assert_eq!(a, b);
    assert_eq!(&a[..8], b"ATLS\x08\0\0\0");
    assert_eq!(&a[a.len() - 8..], b"\x08\0\0\0ATLS");
}
