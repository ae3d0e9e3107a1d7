//! The request budget of an open, and the errors an open reports.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use atlas_reader::{Atlas, AtlasError};
use atlas_store::{CountingStore, RequestKind};
use common::*;
use object_store::path::Path;
use object_store::{GetRange, ObjectStore, ObjectStoreExt, PutPayload};
use std::sync::Arc;
use std::time::Instant;

async fn open_counted(store: Arc<dyn ObjectStore>) -> (Atlas, CountingStore) {
    let counting = CountingStore::new(store);
    let atlas = Atlas::open(Arc::new(counting.clone()), &prefix())
        .await
        .unwrap();
    (atlas, counting)
}

fn container_reads(counting: &CountingStore) -> usize {
    counting.count_for("data.atlas")
}

#[tokio::test]
async fn one_dataset_opens_in_two_requests_without_a_head() {
    let (atlas, counting) = open_counted(write(stations(1)).await).await;
    assert_eq!(atlas.dataset_count(), 1);
    let requests = counting.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(
        requests[0].kind,
        RequestKind::GetRange(GetRange::Suffix(64 * 1024))
    );
    assert_eq!(
        requests[1].kind,
        RequestKind::Get,
        "the mask GET, not found"
    );
    assert!(requests.iter().all(|r| r.kind != RequestKind::Head));
}

#[tokio::test]
async fn a_hundred_thousand_datasets_open_in_three_requests() {
    let started = Instant::now();
    let (atlas, counting) = open_counted(write(stations(100_000)).await).await;
    assert_eq!(atlas.dataset_count(), 100_000);
    assert!(counting.count() <= 3, "{:?}", counting.requests());
    // Regular names compress well: whether a second read is needed follows the footer's size.
    let needs_second = footer_size(&atlas).await + 16 > 64 * 1024;
    assert_eq!(container_reads(&counting), 1 + usize::from(needs_second));
    assert_eq!(
        atlas.dataset("station_099999_2024").unwrap().ordinal(),
        99_999
    );
    assert_eq!(atlas.datasets().count(), 100_000);
    counting.reset();
    let stats = atlas.array_stats("temp").await.unwrap();
    assert_eq!(stats.datasets, 100_000);
    assert!(
        counting.reads() <= 2,
        "one segment open (its reads fetched in parts at once): {:?}",
        counting.requests()
    );
    eprintln!(
        "100k datasets: write + open + stats in {:?}",
        started.elapsed()
    );
}

/// The footer frame's size; encoding is deterministic, so re-encoding gives the stored size.
async fn footer_size(atlas: &Atlas) -> u64 {
    atlas_footer::wire::encode_footer(atlas.footer()).len() as u64
}

/// Names that do not compress: a footer far larger than the 64 KiB probe.
fn scattered(n: usize) -> impl Iterator<Item = atlas_writer::DatasetSpec> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    stations(n).map(move |spec| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let name = format!("{}_{state:016x}", spec.name());
        atlas_writer::DatasetSpec::new(name).array(atlas_writer::ArraySpec::new(
            "temp",
            ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[1]), vec![1.0f32]).unwrap(),
        ))
    })
}

#[tokio::test]
async fn exactly_two_container_reads_when_the_footer_exceeds_the_probe() {
    let (atlas, counting) = open_counted(write(scattered(10_000)).await).await;
    assert!(footer_size(&atlas).await > 64 * 1024);
    assert_eq!(container_reads(&counting), 2, "{:?}", counting.requests());
    assert!(matches!(
        counting.requests()[1].kind,
        RequestKind::GetRange(GetRange::Bounded(_))
    ));
    assert_eq!(counting.count(), 3);
}

#[tokio::test]
async fn a_small_footer_costs_one_container_read() {
    let (_, counting) = open_counted(write(stations(100)).await).await;
    assert_eq!(container_reads(&counting), 1);
}

#[tokio::test]
async fn a_segment_is_opened_once_and_shared_across_tasks() {
    let (atlas, counting) = open_counted(write(stations(50)).await).await;
    let atlas = Arc::new(atlas);
    counting.reset();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let atlas = Arc::clone(&atlas);
        tasks.push(tokio::spawn(async move {
            let ds = atlas.dataset(&format!("station_{i:06}_2024")).unwrap();
            ds.read_array::<f32>("temp", vec![], vec![]).await.unwrap()[[0]]
        }));
    }
    for (i, task) in tasks.into_iter().enumerate() {
        assert_eq!(task.await.unwrap(), i as f32);
    }
    // One segment open (its tail window holds trailer and footer) plus one block read.
    assert!(counting.count() <= 2, "{:?}", counting.requests());
}

/// The Python benchmark's shape: 2,000 datasets of three 24 x 32 f32 variables. Each segment's
/// footer is about 690 KB, far past the default 64 KiB tail window; the window grows with the
/// segment's array count; and a segment this small (about 6 MB) is fetched whole, footer and
/// block together.
#[tokio::test]
async fn open_and_read_one_variable_of_one_of_2000_datasets_in_three_reads() {
    let specs = (0..2000).map(|d| {
        let mut spec = atlas_writer::DatasetSpec::new(format!("run_{d:05}"));
        for (v, name) in ["t2m", "precip", "wind"].into_iter().enumerate() {
            let values = (0..24 * 32)
                .map(|i| (d * 3 + v) as f32 + i as f32 * 1e-3)
                .collect();
            let data = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[24, 32]), values).unwrap();
            spec = spec.array(atlas_writer::ArraySpec::new(name, data).dims(["y", "x"]));
        }
        spec
    });
    let (atlas, counting) = open_counted(write(specs).await).await;
    let values = atlas
        .dataset("run_01234")
        .unwrap()
        .read_array::<f32>("precip", vec![], vec![])
        .await
        .unwrap();
    assert_eq!(values[[0, 0]], (1234 * 3 + 1) as f32);
    let requests = counting.requests();
    // Container tail, deleted.mask, the whole `precip` segment: three reads, the segment's in
    // parts fetched at once.
    assert_eq!(counting.reads(), 3, "{requests:?}");
    let (_, precip) = atlas.variables().find(|(n, _)| *n == "precip").unwrap();
    let segment = precip.seg_offset..precip.seg_offset + precip.seg_len;
    assert_eq!(
        requests.len(),
        2 + atlas_store::fetch_parts(segment).len(),
        "{requests:?}"
    );
    assert_eq!(atlas.resident_segment_bytes(), precip.seg_len);
    // Every other dataset's precip is served from the kept segment.
    counting.reset();
    let other = atlas
        .dataset("run_00007")
        .unwrap()
        .read_array::<f32>("precip", vec![], vec![])
        .await
        .unwrap();
    assert_eq!(other[[0, 0]], (7 * 3 + 1) as f32);
    assert_eq!(counting.count(), 0, "{:?}", counting.requests());
}

/// A segment past 16 MiB is not kept: its first read fetches the tail window, then the block.
#[tokio::test]
async fn a_large_segment_is_not_kept_in_memory() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let values: Vec<f32> = (0..5_000_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            f32::from_bits((state as u32 & 0x007f_ffff) | 0x3f80_0000)
        })
        .collect();
    let first = values[0];
    let data = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[5_000_000]), values).unwrap();
    let spec = atlas_writer::DatasetSpec::new("big").array(
        atlas_writer::ArraySpec::new("noise", data)
            .dims(["i"])
            .chunks(vec![250_000]),
    );
    let (atlas, counting) = open_counted(write(std::iter::once(spec)).await).await;
    let (_, noise) = atlas.variables().find(|(n, _)| *n == "noise").unwrap();
    assert!(noise.seg_len > 16 * 1024 * 1024, "{}", noise.seg_len);
    counting.reset();
    let head = atlas
        .dataset("big")
        .unwrap()
        .read_array::<f32>("noise", vec![0], vec![1])
        .await
        .unwrap();
    assert_eq!(head[[0]], first);
    assert_eq!(atlas.resident_segment_bytes(), 0);
    let requests = counting.requests();
    assert!(requests.len() >= 2, "tail, then a block: {requests:?}");
    let fetched: u64 = requests
        .iter()
        .map(|r| match &r.kind {
            RequestKind::GetRange(GetRange::Bounded(range)) => range.end - range.start,
            other => panic!("only ranged reads expected, got {other:?}"),
        })
        .sum();
    assert!(fetched < noise.seg_len, "{fetched} of {}", noise.seg_len);
}

async fn put(store: &Arc<dyn ObjectStore>, bytes: Vec<u8>) {
    store
        .put(&prefix().join("data.atlas"), PutPayload::from(bytes))
        .await
        .unwrap();
}

async fn container_bytes() -> (Arc<dyn ObjectStore>, Vec<u8>) {
    let store = write(stations(3)).await;
    let bytes = store
        .get(&prefix().join("data.atlas"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec();
    (store, bytes)
}

#[tokio::test]
async fn a_foreign_object_is_not_an_atlas_collection() {
    let (store, mut bytes) = container_bytes().await;
    let n = bytes.len();
    bytes[n - 4..].copy_from_slice(b"ARRF");
    put(&store, bytes).await;
    assert!(matches!(
        Atlas::open(store, &prefix()).await,
        Err(AtlasError::NotAnAtlasCollection { .. })
    ));
    let empty: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    assert!(matches!(
        Atlas::open(empty, &Path::from("x")).await,
        Err(AtlasError::NotAnAtlasCollection { .. })
    ));
}

#[tokio::test]
async fn the_leading_magic_is_checked_when_the_probe_covers_it() {
    let (store, mut bytes) = container_bytes().await;
    bytes[..4].copy_from_slice(b"ATLX");
    put(&store, bytes).await;
    assert!(matches!(
        Atlas::open(store, &prefix()).await,
        Err(AtlasError::NotAnAtlasCollection { .. })
    ));
}

#[tokio::test]
async fn another_version_is_unsupported() {
    let (store, mut bytes) = container_bytes().await;
    let n = bytes.len();
    bytes[n - 8..n - 4].copy_from_slice(&9u32.to_le_bytes());
    put(&store, bytes).await;
    assert!(matches!(
        Atlas::open(store, &prefix()).await,
        Err(AtlasError::UnsupportedVersion { found: 9, .. })
    ));
}

#[tokio::test]
async fn a_damaged_footer_is_corrupt() {
    let (store, mut bytes) = container_bytes().await;
    let n = bytes.len();
    bytes[n - 20] ^= 0xff;
    put(&store.clone(), bytes.clone()).await;
    assert!(matches!(
        Atlas::open(Arc::clone(&store), &prefix()).await,
        Err(AtlasError::CorruptCollection { .. })
    ));
    bytes[n - 16..n - 8].copy_from_slice(&u64::MAX.to_le_bytes());
    put(&store, bytes).await;
    match Atlas::open(store, &prefix()).await {
        Err(AtlasError::CorruptCollection { field, .. }) => {
            assert_eq!(field, "trailer.footer_size")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_damaged_segment_is_corrupt_on_first_read_never_a_panic() {
    let (store, mut bytes) = container_bytes().await;
    // The segment's own ARRF magic sits just before the Atlas footer; break it.
    let atlas = Atlas::open(Arc::clone(&store), &prefix()).await.unwrap();
    let (_, entry) = atlas.variables().next().unwrap();
    let end = (entry.seg_offset + entry.seg_len) as usize;
    bytes[end - 1] ^= 0xff;
    put(&store, bytes).await;
    let atlas = Atlas::open(store, &prefix()).await.unwrap();
    let ds = atlas.dataset("station_000000_2024").unwrap();
    assert!(matches!(
        ds.read_array::<f32>("temp", vec![], vec![]).await,
        Err(AtlasError::CorruptCollection { .. })
    ));
}
