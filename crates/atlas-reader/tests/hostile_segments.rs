//! Segments whose own tables lie: a block claiming 1 TiB, a block placed past the end of the
//! file or at 2^64 - 4, a segment footer larger than the segment, a chunk outside its array's
//! grid. array-format 0.15.0 as published aborted, panicked or wrapped on each of these (see
//! `crates/atlas-array-format/HARDENING.md`); with the patched reader each is a non-retryable `CorruptCollection` that
//! names the segment, and nothing is allocated by the hostile size.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: small known values

mod common;

use atlas_reader::{Atlas, AtlasError};
use atlas_writer::{ArraySpec, DatasetSpec};
use common::{prefix, write};
use ndarray::{ArrayD, IxDyn};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::sync::Arc;

/// 1001 f32 values in one chunk: the only block decodes to 4004 bytes, a size that occurs once.
const VALUES: usize = 1001;
const BLOCK_BYTES: u64 = VALUES as u64 * 4;

fn dataset() -> DatasetSpec {
    let values: Vec<f32> = (0..VALUES).map(|i| (i % 7) as f32).collect();
    DatasetSpec::new("d").array(ArraySpec::new(
        "v",
        ArrayD::from_shape_vec(IxDyn(&[VALUES]), values).unwrap(),
    ))
}

async fn container() -> Vec<u8> {
    let store = write([dataset()]).await;
    let path = prefix().join("data.atlas");
    store
        .get(&path)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec()
}

/// Every position of `needle` in `haystack`.
fn find_all(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

fn find_once(haystack: &[u8], needle: &[u8]) -> usize {
    let hits = find_all(haystack, needle);
    assert_eq!(hits.len(), 1, "{needle:?} occurs at {hits:?}");
    hits[0]
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// Opens `container` and reads the array whole; the error it must come to.
async fn read_error(container: Vec<u8>) -> AtlasError {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let path: Path = prefix().join("data.atlas");
    store.put(&path, PutPayload::from(container)).await.unwrap();
    let atlas = Atlas::open(store, &prefix()).await.unwrap();
    let view = atlas.dataset("d").unwrap();
    view.read_array::<f32>("v", vec![], vec![])
        .await
        .expect_err("a hostile segment must not read")
}

fn assert_corrupt_segment(error: &AtlasError, detail: &str) {
    let text = error.to_string();
    assert!(
        matches!(error, AtlasError::CorruptCollection { .. }),
        "{error:?}"
    );
    assert!(!error.is_retryable(), "{error:?}");
    assert!(text.contains("segment 'v'"), "{text}");
    assert!(text.contains(detail), "{text} lacks {detail:?}");
}

/// Where the block table entry of the only block lies: `(file_offset, compressed_size,
/// uncompressed_size)` positions. The entry is three consecutive u64s: an offset at the start of
/// the segment, a size below the decoded size, and the decoded size (which occurs elsewhere in
/// the segment footer too, but not after such a pair).
fn block_entry(bytes: &[u8]) -> (usize, usize, usize) {
    let entries: Vec<usize> = find_all(bytes, &BLOCK_BYTES.to_le_bytes())
        .into_iter()
        .filter(|&at| at >= 16)
        .filter(|&at| {
            (1..BLOCK_BYTES).contains(&u64_at(bytes, at - 8)) && u64_at(bytes, at - 16) < 64
        })
        .collect();
    assert_eq!(entries.len(), 1, "block entries at {entries:?}");
    let uncompressed = entries[0];
    (uncompressed - 16, uncompressed - 8, uncompressed)
}

#[tokio::test]
async fn the_located_block_entry_is_the_real_one() {
    // The untouched collection reads back: the positions below are the real block entry.
    let bytes = container().await;
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    store
        .put(
            &prefix().join("data.atlas"),
            PutPayload::from(bytes.clone()),
        )
        .await
        .unwrap();
    let atlas = Atlas::open(store, &prefix()).await.unwrap();
    let values = atlas
        .dataset("d")
        .unwrap()
        .read_array::<f32>("v", vec![], vec![])
        .await
        .unwrap();
    assert_eq!(values.len(), VALUES);
    block_entry(&bytes);
}

#[tokio::test]
async fn a_block_claiming_a_tebibyte_is_refused_without_allocating_it() {
    let mut bytes = container().await;
    let (_, _, uncompressed) = block_entry(&bytes);
    put_u64(&mut bytes, uncompressed, 1 << 40);
    let error = read_error(bytes).await;
    assert_corrupt_segment(
        &error,
        "block 0 claims to decode to 1099511627776 bytes, but its last chunk, of array 'd', \
         ends at 4004",
    );
}

#[tokio::test]
async fn a_block_claiming_a_byte_past_its_chunks_is_refused_at_open() {
    // A block decodes to at most what its chunk table says it holds: one byte more than the
    // only chunk reaches is refused before any block is read (the decode would otherwise run
    // to the claim: 1.5 GiB for a 128-byte array in the CLI test of the same).
    let mut bytes = container().await;
    let (_, _, uncompressed) = block_entry(&bytes);
    put_u64(&mut bytes, uncompressed, BLOCK_BYTES + 1);
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let path: Path = prefix().join("data.atlas");
    store.put(&path, PutPayload::from(bytes)).await.unwrap();
    let atlas = Atlas::open(store, &prefix()).await.unwrap();
    let error = atlas
        .dataset("d")
        .unwrap()
        .array_layout("v")
        .await
        .unwrap_err();
    assert_corrupt_segment(&error, "block 0 claims to decode to 4005 bytes");
    assert!(error.to_string().contains("array 'd'"), "{error}");
    let report = atlas.verify(atlas_reader::VerifyDepth::Full).await;
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    let problem = report.problems[0].error.to_string();
    assert!(problem.contains("block 0 claims"), "{problem}");
}

#[tokio::test]
async fn a_block_placed_past_the_data_region_is_refused() {
    let mut bytes = container().await;
    let (offset, _, _) = block_entry(&bytes);
    put_u64(&mut bytes, offset, 1 << 20);
    assert_corrupt_segment(&read_error(bytes).await, "outside the data region");
}

#[tokio::test]
async fn a_block_offset_near_2_pow_64_does_not_overflow() {
    let mut bytes = container().await;
    let (offset, _, _) = block_entry(&bytes);
    put_u64(&mut bytes, offset, u64::MAX - 3);
    assert_corrupt_segment(&read_error(bytes).await, "outside the data region");
}

#[tokio::test]
async fn a_compressed_size_of_2_pow_64_minus_1_does_not_overflow() {
    let mut bytes = container().await;
    let (_, compressed, _) = block_entry(&bytes);
    put_u64(&mut bytes, compressed, u64::MAX);
    assert_corrupt_segment(&read_error(bytes).await, "outside the data region");
}

#[tokio::test]
async fn a_segment_footer_larger_than_the_segment_is_refused() {
    let mut bytes = container().await;
    // The segment's trailer: u64 footer size, then the magic "ARRF".
    let magic = find_once(&bytes, b"ARRF");
    put_u64(&mut bytes, magic - 8, u64::MAX - 5);
    assert_corrupt_segment(&read_error(bytes).await, "exceeds the file size");
}
