//! Reading and writing `deleted.mask` against a naive set of deleted ordinals.
//!
//! Mask read and write. A container of 1,000,000 datasets with 1,000 (0.1%) and
//! 100,000 (10%) deleted ordinals, drawn with [`SplitMix`]. The mask bytes are the format's
//! (`ATLM`, version, count, increasing u32 LE ordinals), so both sides read and write exactly
//! the same bytes.
//!
//! - Read, `atlas_mask_decode`: `atlas_mask::decode(bytes, dataset_count)`, what an open does
//!   with the mask: magic and version checks, every entry checked increasing and in range,
//!   inserted into the bitset [`DeletedSet`](atlas::format::DeletedSet) (one bit per dataset,
//!   125 KiB here). Baseline `baseline_btreeset_decode`: magic and count, then the entries
//!   collected into a std `BTreeSet<u32>` without any check (the set a straightforward reader
//!   would keep). `vec_decode_only` copies the entries into a `Vec<u32>`: the floor.
//! - Write, `atlas_mask_encode`: `atlas_mask::encode(&set)`, what a delete PUTs after merging
//!   (the bitset walked word by word). Baseline `baseline_btreeset_encode`: the same header,
//!   then the `BTreeSet`'s ordinals appended as LE bytes.
//!
//! Both sides are checked to produce the same bytes and the same ordinals before anything is
//! timed. `ATLAS_BENCH_CLOCK=cpu` times with process CPU time instead of the wall clock (see
//! `dsrt_atlas_benches::atlas::cpu_clock`).
#![allow(missing_docs)] // criterion_group! generates undocumented items
#![allow(clippy::cast_possible_truncation)] // small known sizes

use atlas::format::DeletedSet;
use atlas_mask::{MASK_HEADER_SIZE, MASK_MAGIC, MASK_VERSION};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dsrt_atlas_benches::atlas::time_iters;
use dsrt_atlas_benches::SplitMix;
use std::collections::BTreeSet;
use std::hint::black_box;

/// Datasets in the container the mask belongs to.
const DATASETS: usize = 1_000_000;

/// `deleted` distinct ordinals below [`DATASETS`], as the bitset a delete builds.
fn deleted_set(deleted: usize, seed: u64) -> DeletedSet {
    let mut set = DeletedSet::new(DATASETS);
    let mut rng = SplitMix::new(seed);
    while set.len() < deleted {
        set.insert(rng.range(0, DATASETS as u64) as u32);
    }
    set
}

/// The naive reader: magic and count, then every entry into a `BTreeSet`, unchecked.
fn btreeset_decode(bytes: &[u8]) -> BTreeSet<u32> {
    assert_eq!(bytes[..4], MASK_MAGIC, "a mask");
    let count = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
    bytes[MASK_HEADER_SIZE..]
        .chunks_exact(4)
        .take(count)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}

/// The floor of a read: the entries copied out as a `Vec<u32>`.
fn vec_decode(bytes: &[u8]) -> Vec<u32> {
    bytes[MASK_HEADER_SIZE..]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}

/// The naive writer: the header, then the set's ordinals (increasing) as LE bytes.
fn btreeset_encode(set: &BTreeSet<u32>) -> Vec<u8> {
    let mut out = Vec::with_capacity(MASK_HEADER_SIZE + set.len() * 4);
    out.extend_from_slice(&MASK_MAGIC);
    out.extend_from_slice(&MASK_VERSION.to_le_bytes());
    out.extend_from_slice(&(set.len() as u32).to_le_bytes());
    for ordinal in set {
        out.extend_from_slice(&ordinal.to_le_bytes());
    }
    out
}

fn mask(c: &mut Criterion) {
    for (label, deleted) in [("1k", 1_000), ("100k", 100_000)] {
        let set = deleted_set(deleted, 31);
        let bytes = atlas_mask::encode(&set);
        let naive = btreeset_decode(&bytes);
        // Same bytes out, same ordinals in, on both sides.
        assert_eq!(btreeset_encode(&naive), bytes);
        let decoded = atlas_mask::decode(&bytes, DATASETS).expect("mask decodes");
        assert_eq!(decoded, set);
        assert!(decoded.ordinals().iter().copied().eq(naive.iter().copied()));
        assert_eq!(vec_decode(&bytes).len(), deleted);

        let mut group = c.benchmark_group(format!("atlas_mask_read_{label}"));
        group.sample_size(30);
        group.throughput(Throughput::Elements(deleted as u64));
        group.bench_function("baseline_btreeset_decode", |b| {
            b.iter_custom(|iters| time_iters(iters, || btreeset_decode(black_box(&bytes))));
        });
        group.bench_function("atlas_mask_decode", |b| {
            b.iter_custom(|iters| {
                time_iters(iters, || {
                    atlas_mask::decode(black_box(&bytes), DATASETS).expect("decodes")
                })
            });
        });
        group.bench_function("vec_decode_only", |b| {
            b.iter_custom(|iters| time_iters(iters, || vec_decode(black_box(&bytes))));
        });
        group.finish();

        let mut group = c.benchmark_group(format!("atlas_mask_write_{label}"));
        group.sample_size(30);
        group.throughput(Throughput::Elements(deleted as u64));
        group.bench_function("baseline_btreeset_encode", |b| {
            b.iter_custom(|iters| time_iters(iters, || btreeset_encode(black_box(&naive))));
        });
        group.bench_function("atlas_mask_encode", |b| {
            b.iter_custom(|iters| time_iters(iters, || atlas_mask::encode(black_box(&set))));
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = mask
}
criterion_main!(benches);
