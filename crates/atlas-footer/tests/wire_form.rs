//! The footer's bytes, pinned.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use atlas_footer::wire::{decode_footer, encode_footer, from_msgpack, to_msgpack};
use atlas_footer::{Codec, DType};
use common::small_footer;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn golden_bytes_of_a_small_footer() {
    let bytes = to_msgpack(&small_footer());
    let expected = concat!(
        "98", // CollectionFooter: array of 8 fields
        "08", // version 8
        "a4",
        "5a737464", // codec "Zstd"
        "cf",
        "0000018bcfe56800", // created_unix_ms (u64 form for a positive i64)
        "93",
        "a474656d70",
        "a5756e697473",
        "a95f6461746173657473", // string_pool
        "92",
        "a7466c6f61743332",
        "a6537472696e67", // dtype_pool ["Float32", "String"]
        "91",
        "93", // schema_pool: one schema of 3 fields
        "91",
        "920000", //   arrays [(0, 0)]
        "91",
        "920101", //   attrs [(1, 1)]
        "91",
        "9200",
        "91",
        "920101", //   array_attrs [(0, [(1, 1)])]
        "92",
        "93",
        "00",
        "08",
        "64", // variables: (0, 8, 100)
        "93",
        "02",
        "6c",
        "32", //            (2, 108, 50)
        "92",
        "92",
        "a36a616e",
        "00", // datasets: ["jan", 0]
        "92",
        "a3666562",
        "00", //           ["feb", 0]
    );
    assert_eq!(hex(&bytes), expected);
    assert_eq!(from_msgpack(&bytes).unwrap(), small_footer());
}

#[test]
fn the_wire_form_of_the_dataset_map_is_a_sequence() {
    let bytes = to_msgpack(&small_footer());
    // The datasets field is last: a msgpack array (0x92) of two 2-element arrays, never a map
    // (0x8_). A map would collapse a repeated name and shift every later ordinal.
    assert!(hex(&bytes).ends_with("9292a36a616e0092a366656200"));

    // The same bytes with the second name changed to the first must fail the decode.
    let mut repeated = bytes.clone();
    let at = repeated.len() - 4;
    repeated[at..at + 3].copy_from_slice(b"jan");
    let err = from_msgpack(&repeated).unwrap_err().to_string();
    assert!(err.contains("datasets") && err.contains("'jan'"), "{err}");
}

#[test]
fn dtype_and_codec_wire_forms_are_names() {
    let list = DType::List {
        child: Box::new(DType::Int32),
    };
    assert_eq!(
        hex(&rmp_serde::to_vec(&list).unwrap()),
        "81a44c69737491a5496e743332"
    );
    let fixed = DType::FixedSizeList {
        child: Box::new(DType::UInt8),
        size: 3,
    };
    assert_eq!(
        hex(&rmp_serde::to_vec(&fixed).unwrap()),
        "81ad466978656453697a654c69737492a555496e743803"
    );
    assert_eq!(
        hex(&rmp_serde::to_vec(&DType::TimestampNs).unwrap()),
        "ab54696d657374616d704e73"
    );
    assert_eq!(hex(&rmp_serde::to_vec(&Codec::Lz4).unwrap()), "a34c7a34");
}

#[test]
fn the_container_form_is_a_zstd_frame_of_the_msgpack() {
    let frame = encode_footer(&small_footer());
    assert_eq!(&frame[..4], &[0x28, 0xb5, 0x2f, 0xfd], "zstd frame magic");
    assert_eq!(decode_footer(&frame).unwrap(), small_footer());
    let msgpack = dsrt_atlas_codec::zstd_frame::decompress(&frame, 1 << 20).unwrap();
    assert_eq!(msgpack, to_msgpack(&small_footer()));
}

#[test]
fn trailing_bytes_after_the_footer_are_refused() {
    let mut bytes = to_msgpack(&small_footer());
    bytes.push(0xc0);
    assert!(from_msgpack(&bytes).is_err());
}
