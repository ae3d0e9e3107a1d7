//! Round trips of arbitrary footers, and decodes of arbitrary bytes.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

use atlas_footer::validate::validate;
use atlas_footer::wire::{
    decode_and_validate, decode_footer, encode_footer, from_msgpack, to_msgpack,
};
use atlas_footer::{
    Codec, CollectionFooter, DType, DatasetMap, IndexPairs, InternedSchema, VariableEntry,
};
use proptest::prelude::*;

fn dtype() -> impl Strategy<Value = DType> {
    let leaf = prop_oneof![
        Just(DType::Bool),
        Just(DType::Int8),
        Just(DType::Int64),
        Just(DType::UInt16),
        Just(DType::Float32),
        Just(DType::Float64),
        Just(DType::String),
        Just(DType::Binary),
        Just(DType::TimestampNs),
    ];
    leaf.prop_recursive(3, 8, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|child| DType::List {
                child: Box::new(child)
            }),
            (inner, any::<u32>()).prop_map(|(child, size)| DType::FixedSizeList {
                child: Box::new(child),
                size
            }),
        ]
    })
}

fn pairs() -> impl Strategy<Value = IndexPairs> {
    proptest::collection::vec(any::<(u32, u32)>(), 0..7).prop_map(IndexPairs::from_iter)
}

fn schema() -> impl Strategy<Value = InternedSchema> {
    (
        pairs(),
        pairs(),
        proptest::collection::vec((any::<u32>(), pairs()), 0..4),
    )
        .prop_map(|(arrays, attrs, array_attrs)| InternedSchema {
            arrays,
            attrs,
            array_attrs: array_attrs.into_iter().collect(),
        })
}

fn footer() -> impl Strategy<Value = CollectionFooter> {
    (
        any::<u32>(),
        prop_oneof![Just(Codec::None), Just(Codec::Lz4), Just(Codec::Zstd)],
        any::<i64>(),
        proptest::collection::vec(".{0,30}", 0..6),
        proptest::collection::vec(dtype(), 0..5),
        proptest::collection::vec(schema(), 0..4),
        proptest::collection::vec(any::<(u32, u64, u64)>(), 0..5),
        proptest::collection::vec((".{0,40}", any::<u32>()), 0..40),
    )
        .prop_map(
            |(
                version,
                codec,
                created_unix_ms,
                string_pool,
                dtype_pool,
                schema_pool,
                variables,
                datasets,
            )| {
                let mut map = DatasetMap::default();
                for (name, schema) in datasets {
                    // A repeated name keeps its first ordinal and schema.
                    let _ = map.insert(&name, schema);
                }
                CollectionFooter {
                    version,
                    codec,
                    created_unix_ms,
                    string_pool,
                    dtype_pool,
                    schema_pool,
                    variables: variables
                        .into_iter()
                        .map(|(name, seg_offset, seg_len)| VariableEntry {
                            name,
                            seg_offset,
                            seg_len,
                        })
                        .collect(),
                    datasets: map,
                }
            },
        )
}

/// Footers that pass every rule but the datasets' schema indices, which may point one or two
/// past the pool: names of every msgpack string width, schema indices of every int width.
fn footer_with_datasets() -> impl Strategy<Value = CollectionFooter> {
    (
        1usize..4,
        proptest::collection::vec(
            (
                prop_oneof![".{0,40}", "[a-z]{30,300}", "[a-z_0-9]{0,8}"],
                prop_oneof![0u32..6, 120u32..140, Just(u32::MAX)],
            ),
            0..200,
        ),
    )
        .prop_map(|(schemas, datasets)| {
            let mut map = DatasetMap::default();
            for (name, schema) in datasets {
                let _ = map.insert(&name, schema);
            }
            CollectionFooter {
                version: atlas_footer::FORMAT_VERSION,
                codec: Codec::Zstd,
                created_unix_ms: 0,
                string_pool: vec![],
                dtype_pool: vec![],
                schema_pool: vec![InternedSchema::default(); schemas],
                variables: vec![],
                datasets: map,
            }
        })
}

/// `decode_and_validate` checks the datasets while it reads them; the result (footer or the
/// error and the field it names) must be what decoding and then validating gives.
fn same_as_decode_then_validate(msgpack: &[u8], segments_end: u64) -> Result<(), TestCaseError> {
    let frame = dsrt_atlas_codec::zstd_frame::compress(msgpack, 3);
    let in_one_pass = decode_and_validate(&frame, segments_end).map(|(footer, _)| footer);
    let in_two = from_msgpack(msgpack).and_then(|footer| {
        validate(&footer, segments_end)?;
        Ok(footer)
    });
    prop_assert_eq!(in_one_pass, in_two);
    Ok(())
}

proptest! {
    #[test]
    fn one_pass_validation_agrees(footer in footer_with_datasets()) {
        same_as_decode_then_validate(&to_msgpack(&footer), 8)?;
    }

    #[test]
    fn one_pass_validation_agrees_on_damaged_bytes(
        footer in footer_with_datasets(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut bytes = to_msgpack(&footer);
        let i = at.index(bytes.len());
        bytes[i] = byte;
        same_as_decode_then_validate(&bytes, 8)?;
    }

    /// The hand-written decode of the dataset pairs accepts what serde's derived decode of the
    /// same struct accepts, and reads the same footer.
    #[test]
    fn decode_agrees_with_the_derived_deserialize(
        footer in footer_with_datasets(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let bytes = to_msgpack(&footer);
        let derived: CollectionFooter = rmp_serde::from_slice(&bytes).unwrap();
        prop_assert_eq!(&derived, &footer);
        let mut damaged = bytes;
        let i = at.index(damaged.len());
        damaged[i] = byte;
        if let Ok(ours) = from_msgpack(&damaged) {
            let derived: CollectionFooter = rmp_serde::from_slice(&damaged).unwrap();
            prop_assert_eq!(ours, derived);
        }
    }

    #[test]
    fn footers_round_trip(footer in footer()) {
        prop_assert_eq!(&from_msgpack(&to_msgpack(&footer)).unwrap(), &footer);
        prop_assert_eq!(decode_footer(&encode_footer(&footer)).unwrap(), footer);
    }

    #[test]
    fn arbitrary_msgpack_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = from_msgpack(&bytes);
    }

    #[test]
    fn mutated_footers_never_panic(footer in footer(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut bytes = to_msgpack(&footer);
        if !bytes.is_empty() {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        if let Ok(decoded) = from_msgpack(&bytes) {
            let _ = atlas_footer::validate::validate(&decoded, 1 << 20);
        }
    }

    #[test]
    fn arbitrary_frames_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_footer(&bytes);
    }
}

/// Array headers that claim 2^32 - 1 elements must not reserve for them: every list in the
/// footer, schema index lists included, is hit here in turn.
#[test]
fn hostile_lengths_do_not_allocate() {
    let huge_array = [0xdd, 0xff, 0xff, 0xff, 0xff];
    // string_pool claims u32::MAX strings.
    let mut bytes = vec![0x98, 0x08, 0xa4, b'Z', b's', b't', b'd', 0x00];
    bytes.extend_from_slice(&huge_array);
    assert!(from_msgpack(&bytes).is_err());
    // schema_pool[0].arrays claims u32::MAX pairs.
    let mut bytes = vec![
        0x98, 0x08, 0xa4, b'Z', b's', b't', b'd', 0x00, 0x90, 0x90, 0x91, 0x93,
    ];
    bytes.extend_from_slice(&huge_array);
    assert!(from_msgpack(&bytes).is_err());
    // datasets claims u32::MAX pairs.
    let mut bytes = vec![
        0x98, 0x08, 0xa4, b'Z', b's', b't', b'd', 0x00, 0x90, 0x90, 0x90, 0x90,
    ];
    bytes.extend_from_slice(&huge_array);
    assert!(from_msgpack(&bytes).is_err());
}

/// A deeply nested dtype is refused by the depth bound, not by the stack.
#[test]
fn deep_nesting_is_refused() {
    let mut bytes = vec![0x98, 0x08, 0xa4, b'Z', b's', b't', b'd', 0x00, 0x90, 0x91];
    for _ in 0..100_000 {
        bytes.extend_from_slice(&[0x81, 0xa4, b'L', b'i', b's', b't', 0x91]);
    }
    assert!(from_msgpack(&bytes).is_err());
}
