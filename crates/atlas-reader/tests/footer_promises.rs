//! Lookups that fail say so: an unknown array is an error, and a segment that disagrees with
//! the footer (an entry the footer does not name, an attribute the footer declares and the
//! segment lacks) is a corrupt collection, never empty or skipped results.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: small known values

mod common;

use atlas_footer::trailer::{encode_header, encode_trailer, parse_trailer};
use atlas_footer::wire::{decode_footer, encode_footer};
use atlas_footer::{CollectionFooter, DType, DatasetMap, HEADER_SIZE};
use atlas_reader::{Atlas, AtlasError, CommitOutcome, MaskCommitter, MergeFn};
use atlas_writer::{ArraySpec, Attr, DatasetSpec};
use common::{prefix, write};
use ndarray::{ArrayD, IxDyn};
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::sync::Arc;

/// A committer that reports a commit without calling the merge: it wrote a mask (dataset `b`
/// deleted) itself.
#[derive(Debug)]
struct WritesItsOwnMask(Arc<dyn ObjectStore>);

impl MaskCommitter for WritesItsOwnMask {
    fn attempt<'a>(
        &'a self,
        _merge: &'a MergeFn<'a>,
    ) -> futures::future::BoxFuture<'a, Result<CommitOutcome, AtlasError>> {
        Box::pin(async move {
            let mut set = atlas_mask::DeletedSet::new(2);
            set.insert(1);
            let path = prefix().join("deleted.mask");
            self.0
                .put(&path, PutPayload::from(atlas_mask::encode(&set)))
                .await
                .unwrap();
            Ok(CommitOutcome::Committed)
        })
    }
}

fn dataset(name: &str, value: f32) -> DatasetSpec {
    DatasetSpec::new(name)
        .attr("month", Attr::Int64(value as i64))
        .array(
            ArraySpec::new(
                "v",
                ArrayD::from_shape_vec(IxDyn(&[2]), vec![value, -value]).unwrap(),
            )
            .attr("units", "K"),
        )
}

/// A collection of datasets `a` and `b`, its footer rewritten by `edit`.
async fn collection(edit: impl FnOnce(&mut CollectionFooter)) -> Atlas {
    let store = write([dataset("a", 1.0), dataset("b", 2.0)]).await;
    let path = prefix().join("data.atlas");
    let bytes = store.get(&path).await.unwrap().bytes().await.unwrap();
    let location =
        atlas_footer::trailer::locate_footer(bytes.len() as u64, parse_trailer(&bytes).unwrap())
            .unwrap();
    let range = location.footer.start as usize..location.footer.end as usize;
    let mut footer = decode_footer(&bytes[range.clone()]).unwrap();
    edit(&mut footer);
    let frame = encode_footer(&footer);
    let mut out = encode_header().to_vec();
    out.extend_from_slice(&bytes[HEADER_SIZE as usize..range.start]);
    out.extend_from_slice(&frame);
    out.extend_from_slice(&encode_trailer(frame.len() as u64));
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    store.put(&path, PutPayload::from(out)).await.unwrap();
    Atlas::open(store, &prefix()).await.unwrap()
}

fn assert_corrupt(error: &AtlasError, detail: &str) {
    assert!(
        matches!(error, AtlasError::CorruptCollection { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains(detail),
        "{error} lacks {detail:?}"
    );
}

/// Renames dataset `b` in the footer: the segments still hold `b`.
fn rename_b(footer: &mut CollectionFooter) {
    let mut renamed = DatasetMap::default();
    for (name, schema) in &footer.datasets {
        let name = if name == "b" { "z" } else { name };
        renamed.insert(name, schema).unwrap();
    }
    footer.datasets = renamed;
}

/// Declares one more dataset attribute and one more array attribute, which no segment holds.
fn promise_more(footer: &mut CollectionFooter) {
    footer.string_pool.push("ghost".into());
    let key = (footer.string_pool.len() - 1) as u32;
    let dtype = footer
        .dtype_pool
        .iter()
        .position(|d| *d == DType::Int64)
        .unwrap() as u32;
    for schema in &mut footer.schema_pool {
        schema.attrs.push((key, dtype));
        for (_, pairs) in schema.array_attrs.iter_mut() {
            pairs.push((key, dtype));
        }
    }
}

#[tokio::test]
async fn the_untouched_collection_answers() {
    let atlas = collection(|_| {}).await;
    assert_eq!(atlas.array_stats("v").await.unwrap().datasets, 2);
    assert_eq!(atlas.attributes_by_dataset("month").await.unwrap().len(), 2);
    let a = atlas.dataset("a").unwrap();
    assert_eq!(a.attributes().await.unwrap().len(), 1);
    assert_eq!(a.array_attributes("v").await.unwrap().len(), 1);
}

#[tokio::test]
async fn stats_of_an_unknown_array_are_an_error() {
    let atlas = collection(|_| {}).await;
    let error = atlas.array_stats("no-such-array").await.unwrap_err();
    assert!(
        matches!(error, AtlasError::NoSuchArray(ref a) if a == "no-such-array"),
        "{error:?}"
    );
    let error = atlas
        .array_stats_by_dataset("no-such-array")
        .await
        .unwrap_err();
    assert!(matches!(error, AtlasError::NoSuchArray(_)), "{error:?}");
    // The reserved segment of dataset attributes is not an array.
    let error = atlas.array_stats("_datasets").await.unwrap_err();
    assert!(matches!(error, AtlasError::NoSuchArray(_)), "{error:?}");
}

#[tokio::test]
async fn a_segment_entry_the_footer_does_not_name_is_corrupt() {
    let atlas = collection(rename_b).await;
    let error = atlas.array_stats("v").await.unwrap_err();
    assert_corrupt(&error, "dataset 'b', which the footer does not name");
    let error = atlas.array_stats_by_dataset("v").await.unwrap_err();
    assert_corrupt(&error, "dataset 'b'");
    let error = atlas.attributes_by_dataset("month").await.unwrap_err();
    assert_corrupt(&error, "dataset 'b'");
}

#[tokio::test]
async fn attributes_the_footer_promises_and_the_segment_lacks_are_corrupt() {
    let atlas = collection(promise_more).await;
    let a = atlas.dataset("a").unwrap();
    assert_corrupt(
        &a.attributes().await.unwrap_err(),
        "lacks attribute 'ghost'",
    );
    assert_corrupt(
        &a.get_attribute("ghost").await.unwrap_err(),
        "lacks attribute 'ghost'",
    );
    assert_corrupt(
        &a.array_attributes("v").await.unwrap_err(),
        "lacks attribute 'ghost'",
    );
    assert_corrupt(
        &a.get_array_attribute("v", "ghost").await.unwrap_err(),
        "lacks attribute 'ghost'",
    );
    assert_corrupt(
        &atlas.attributes_by_dataset("ghost").await.unwrap_err(),
        "lacks attribute 'ghost'",
    );
    // What the segment does hold still reads.
    assert_eq!(
        a.get_attribute("month").await.unwrap(),
        Some(Attr::Int64(1))
    );
}

#[tokio::test]
async fn a_commit_that_skipped_the_merge_leaves_the_stores_mask_not_an_empty_one() {
    let store = write([dataset("a", 1.0), dataset("b", 2.0)]).await;
    let atlas = Atlas::open(Arc::clone(&store), &prefix())
        .await
        .unwrap()
        .with_committer(Arc::new(WritesItsOwnMask(Arc::clone(&store))));
    let report = atlas.delete(&["a"]).await.unwrap();
    assert_eq!(report.total_deleted, 1, "what the store holds");
    assert!(atlas.dataset("b").is_none(), "b is deleted in the store");
    assert!(atlas.dataset("a").is_some());
}
