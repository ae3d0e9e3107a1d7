//! Round trips of arbitrary footers, and decodes of arbitrary bytes.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

use atlas_footer::wire::{decode_footer, encode_footer, from_msgpack, to_msgpack};
use atlas_footer::{
    Codec, CollectionFooter, DType, DatasetMap, IndexPairs, InternedSchema, VariableEntry,
};
use proptest::prelude::*;
use smol_str::SmolStr;

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
                    map.entry(SmolStr::new(name)).or_insert(schema);
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

proptest! {
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
