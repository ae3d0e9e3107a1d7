//! The mask's bytes and the lenient reading rules of the pinned page.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

use atlas_mask::{decode, encode, DeletedSet, MaskError};
use proptest::prelude::*;

fn raw(count: u32, ordinals: &[u32]) -> Vec<u8> {
    let mut out = b"ATLM\x01\0\0\0".to_vec();
    out.extend_from_slice(&count.to_le_bytes());
    for o in ordinals {
        out.extend_from_slice(&o.to_le_bytes());
    }
    out
}

fn set_of(count: usize, ordinals: &[u32]) -> DeletedSet {
    let mut set = DeletedSet::new(count);
    set.merge(ordinals.iter().copied());
    set
}

#[test]
fn golden_bytes() {
    assert_eq!(
        encode(&set_of(10, &[7, 2])),
        b"ATLM\x01\0\0\0\x02\0\0\0\x02\0\0\0\x07\0\0\0"
    );
    assert_eq!(encode(&DeletedSet::new(3)), b"ATLM\x01\0\0\0\0\0\0\0");
}

#[test]
fn wrong_magic_is_the_one_error() {
    assert!(matches!(
        decode(b"ATLS\x01\0\0\0\0\0\0\0", 5),
        Err(MaskError::NotAMask(_))
    ));
    assert!(matches!(decode(b"AT", 5), Err(MaskError::NotAMask(_))));
    assert_eq!(
        decode(b"ATLM\x02\0\0\0\0\0\0\0", 5),
        Err(MaskError::UnsupportedVersion(2))
    );
}

#[test]
fn ordinals_past_the_end_are_dropped() {
    let set = decode(&raw(3, &[1, 4, 5]), 5).unwrap();
    assert_eq!(set.ordinals(), [1, 4]);
}

#[test]
fn a_truncated_body_keeps_its_complete_entries() {
    let mut bytes = raw(3, &[1, 2, 3]);
    bytes.truncate(bytes.len() - 2);
    assert_eq!(decode(&bytes, 10).unwrap().ordinals(), [1, 2]);
    assert_eq!(decode(&raw(5, &[1]), 10).unwrap().ordinals(), [1]);
    assert!(decode(b"ATLM\x01\0", 10).unwrap().is_empty());
    assert!(decode(b"ATLM\x01\0\0\0\x01", 10).unwrap().is_empty());
}

#[test]
fn non_increasing_entries_are_dropped() {
    assert_eq!(
        decode(&raw(4, &[3, 3, 1, 4]), 10).unwrap().ordinals(),
        [3, 4]
    );
}

#[test]
fn the_set_answers_membership_and_merges() {
    let mut set = set_of(130, &[0, 64, 129]);
    assert!(set.contains(64) && set.contains(129) && !set.contains(1));
    assert!(!set.insert(130), "past the end");
    assert_eq!(set.merge([1, 64]), 1);
    assert_eq!(set.len(), 4);
    assert!(!set.contains(u32::MAX));
}

proptest! {
    #[test]
    // Up to 5,000 datasets: many 512-dataset blocks, so the encoder's skipping of empty blocks
    // meets sets that are empty, dense, and set only at block edges.
    fn masks_round_trip(count in 0usize..5000, ordinals in proptest::collection::vec(0u32..6000, 0..200)) {
        let set = set_of(count, &ordinals);
        let back = decode(&encode(&set), count).unwrap();
        prop_assert_eq!(&back, &set);
        let mut expected: Vec<u32> = ordinals.into_iter().filter(|&o| (o as usize) < count).collect();
        expected.sort_unstable();
        expected.dedup();
        prop_assert_eq!(back.ordinals(), expected);
    }

    #[test]
    fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..64), count in 0usize..100) {
        let mut bytes = b"ATLM\x01\0\0\0".to_vec();
        bytes.extend(tail.iter().copied());
        let _ = decode(&bytes, count);
        let _ = decode(&tail, count);
    }
}
