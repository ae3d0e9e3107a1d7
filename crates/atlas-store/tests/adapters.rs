//! The adapters against InMemory.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

use atlas_store::{
    segment_path, AppendSink, ContainerUpload, CountingStore, RequestKind, SegmentView,
};
use bytes::Bytes;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{GetRange, ObjectStore, ObjectStoreExt, PutPayload};
use std::sync::Arc;

#[tokio::test]
async fn sink_appends_puts_and_parts_in_call_order() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("c/data.atlas");
    let sink = AppendSink::new(ContainerUpload::new(Arc::clone(&store), path.clone()));
    sink.append(Bytes::from_static(b"head")).await.unwrap();
    sink.put(&segment_path(), PutPayload::from_static(b"-one"))
        .await
        .unwrap();
    let mut upload = sink.put_multipart(&segment_path()).await.unwrap();
    let first = upload.put_part(PutPayload::from_static(b"-two"));
    let second = upload.put_part(PutPayload::from_static(b"-three"));
    // Polled in reverse: the bytes still land in call order.
    second.await.unwrap();
    first.await.unwrap();
    upload.complete().await.unwrap();
    assert_eq!(sink.written().await.unwrap(), 18);
    assert!(
        store.head(&path).await.is_err(),
        "nothing visible before finish"
    );
    sink.into_upload().await.unwrap().finish().await.unwrap();
    assert_eq!(
        store.get(&path).await.unwrap().bytes().await.unwrap(),
        &b"head-one-two-three"[..]
    );
}

#[tokio::test]
async fn segment_view_maps_ranges_and_answers_head_without_a_request() {
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("data.atlas");
    memory
        .put(&path, PutPayload::from_static(b"0123456789abcdef"))
        .await
        .unwrap();
    let counting = CountingStore::new(memory);
    let view = SegmentView::new(Arc::new(counting.clone()), path, 4, 8, 3, segment_path());
    assert_eq!(view.head(&segment_path()).await.unwrap().size, 8);
    assert_eq!(
        counting.count(),
        0,
        "head is answered from the footer's seg_len"
    );
    assert_eq!(
        view.get_range(&segment_path(), 0..3).await.unwrap(),
        &b"456"[..]
    );
    assert_eq!(
        view.get_range(&segment_path(), 6..8).await.unwrap(),
        &b"ab"[..]
    );
    assert_eq!(
        view.get_range(&segment_path(), 5..8).await.unwrap(),
        &b"9ab"[..]
    );
    let options = object_store::GetOptions {
        range: Some(GetRange::Suffix(2)),
        ..Default::default()
    };
    let suffix = view.get_opts(&segment_path(), options).await.unwrap();
    assert_eq!(suffix.bytes().await.unwrap(), &b"ab"[..]);
    assert_eq!(
        counting.count(),
        2,
        "one read at the front, one of the tail window"
    );
    assert!(
        matches!(counting.requests()[1].kind, RequestKind::GetRange(GetRange::Bounded(ref r)) if *r == (9..12))
    );
    assert!(
        view.get_range(&segment_path(), 8..9).await.is_err(),
        "past the end of the segment"
    );
    assert!(view.get_range(&Path::from("other"), 0..1).await.is_err());
    assert!(view
        .put(&segment_path(), PutPayload::from_static(b"x"))
        .await
        .is_err());
}

#[tokio::test]
async fn a_released_tail_is_freed_and_later_reads_go_to_the_store() {
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("data.atlas");
    memory
        .put(&path, PutPayload::from_static(b"0123456789abcdef"))
        .await
        .unwrap();
    let counting = CountingStore::new(memory);
    let view = SegmentView::new(Arc::new(counting.clone()), path, 4, 8, 3, segment_path());
    for _ in 0..3 {
        let tail = view.get_range(&segment_path(), 6..8).await.unwrap();
        assert_eq!(tail, &b"ab"[..]);
    }
    assert_eq!(counting.count(), 1, "the tail window is fetched once");
    view.release_tail().await;
    let tail = view.get_range(&segment_path(), 6..8).await.unwrap();
    assert_eq!(tail, &b"ab"[..]);
    assert_eq!(
        counting.count(),
        2,
        "after release, a tail read is a request"
    );
    assert!(
        matches!(counting.requests()[1].kind, RequestKind::GetRange(GetRange::Bounded(ref r)) if *r == (10..12))
    );
}

#[test]
fn fetch_parts_split_large_reads_into_at_most_eight_parts_of_a_mebibyte_or_more() {
    use atlas_store::{fetch_parts, MAX_FETCH_PARTS, MIN_FETCH_PART};
    const MIB: u64 = 1 << 20;
    assert_eq!(fetch_parts(5..5 + 2 * MIB - 1), vec![5..5 + 2 * MIB - 1]);
    assert_eq!(fetch_parts(0..0), vec![0..0]);
    for (start, len) in [
        (0, 2 * MIB),
        (7, 6 * MIB + 12_345),
        (1 << 40, 8 * MIB),
        (3, 64 * MIB + 1),
    ] {
        let parts = fetch_parts(start..start + len);
        assert!(
            parts.len() >= 2 && parts.len() as u64 <= MAX_FETCH_PARTS,
            "{parts:?}"
        );
        assert_eq!(parts[0].start, start);
        assert_eq!(parts.last().unwrap().end, start + len);
        for pair in parts.windows(2) {
            assert_eq!(pair[0].end, pair[1].start, "contiguous");
        }
        assert!(
            parts.iter().all(|p| p.end - p.start >= MIN_FETCH_PART),
            "{parts:?}"
        );
    }
}

#[tokio::test]
async fn a_large_read_is_fetched_in_parts_at_once_and_reassembled_byte_exact() {
    let len = 5 * (1 << 20) + 777;
    let data: Vec<u8> = (0..len + 100).map(|i| (i * 31 % 251) as u8).collect();
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("data.atlas");
    memory
        .put(&path, PutPayload::from(data.clone()))
        .await
        .unwrap();
    let counting = CountingStore::new(memory);
    let view = SegmentView::new(
        Arc::new(counting.clone()),
        path,
        50,
        len as u64,
        0,
        segment_path(),
    );
    let got = view
        .get_range(&segment_path(), 10..len as u64)
        .await
        .unwrap();
    assert_eq!(&got[..], &data[60..50 + len]);
    let parts = atlas_store::fetch_parts(60..50 + len as u64);
    assert_eq!(parts.len(), 5);
    assert_eq!(counting.count(), parts.len());
    let mut asked: Vec<_> = counting
        .requests()
        .into_iter()
        .map(|r| match r.kind {
            RequestKind::GetRange(GetRange::Bounded(range)) => range,
            other => panic!("{other:?}"),
        })
        .collect();
    asked.sort_by_key(|r| r.start);
    assert_eq!(asked, parts);
}
