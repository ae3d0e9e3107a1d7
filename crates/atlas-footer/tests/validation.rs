//! One test per footer-validation rule: each damage is a `CorruptCollection` naming its field.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use atlas_footer::validate::validate;
use atlas_footer::wire::{decode_and_validate, encode_footer, from_msgpack, to_msgpack};
use atlas_footer::{CollectionFooter, FooterError};
use common::{small_footer, SMALL_SEGMENTS_END};

fn field_of(result: Result<impl std::fmt::Debug, FooterError>) -> String {
    match result {
        Err(FooterError::CorruptCollection { field, .. }) => field,
        other => panic!("expected CorruptCollection, got {other:?}"),
    }
}

fn check(damage: impl FnOnce(&mut CollectionFooter)) -> String {
    let mut footer = small_footer();
    damage(&mut footer);
    field_of(validate(&footer, SMALL_SEGMENTS_END))
}

#[test]
fn the_small_footer_is_valid() {
    let index = validate(&small_footer(), SMALL_SEGMENTS_END).unwrap();
    assert_eq!(index.variable_of(0), Some(0));
    assert_eq!(index.variable_of(1), None, "units names no segment");
    assert_eq!(index.variable_of(2), Some(1));
    let (footer, _) =
        decode_and_validate(&encode_footer(&small_footer()), SMALL_SEGMENTS_END).unwrap();
    assert_eq!(footer, small_footer());
}

#[test]
fn version_must_be_8() {
    assert_eq!(check(|f| f.version = 7), "version");
}

#[test]
fn every_dataset_schema_index_resolves() {
    assert_eq!(
        check(|f| f.datasets.schemas_mut()[1] = 1),
        "datasets[1] ('feb').schema"
    );
}

#[test]
fn every_array_name_index_is_in_the_string_pool() {
    assert_eq!(
        check(|f| f.schema_pool[0].arrays[0].0 = 3),
        "schema_pool[0].arrays[0].name"
    );
}

#[test]
fn every_array_dtype_index_is_in_the_dtype_pool() {
    assert_eq!(
        check(|f| f.schema_pool[0].arrays[0].1 = 2),
        "schema_pool[0].arrays[0].dtype"
    );
}

#[test]
fn every_attribute_key_index_is_in_the_string_pool() {
    assert_eq!(
        check(|f| f.schema_pool[0].attrs[0].0 = 9),
        "schema_pool[0].attrs[0].name"
    );
    assert_eq!(
        check(|f| f.schema_pool[0].array_attrs[0].1[0].0 = 9),
        "schema_pool[0].array_attrs[0].keys[0].name"
    );
}

#[test]
fn every_attribute_dtype_index_is_in_the_dtype_pool() {
    assert_eq!(
        check(|f| f.schema_pool[0].attrs[0].1 = 5),
        "schema_pool[0].attrs[0].dtype"
    );
}

#[test]
fn every_annotated_array_position_exists() {
    assert_eq!(
        check(|f| f.schema_pool[0].array_attrs[0].0 = 1),
        "schema_pool[0].array_attrs[0].position"
    );
}

#[test]
fn no_segment_is_empty() {
    assert_eq!(
        check(|f| f.variables[1].seg_len = 0),
        "variables[1].seg_len"
    );
}

#[test]
fn segments_sit_inside_the_container_back_to_back() {
    assert_eq!(
        check(|f| f.variables[1].seg_len = 51),
        "variables[1].seg_len"
    );
    assert_eq!(
        check(|f| f.variables[1].seg_offset = 109),
        "variables[1].seg_offset"
    );
    assert_eq!(
        check(|f| f.variables[0].seg_offset = 0),
        "variables[0].seg_offset"
    );
    assert_eq!(check(|f| f.variables[1].seg_len = 49), "variables");
    assert_eq!(
        check(|f| f.variables[1].seg_len = u64::MAX),
        "variables[1].seg_len"
    );
}

#[test]
fn a_variable_name_resolves_and_does_not_repeat() {
    assert_eq!(check(|f| f.variables[1].name = 7), "variables[1].name");
    assert_eq!(check(|f| f.variables[1].name = 0), "variables[1].name");
}

#[test]
fn every_schema_array_names_a_segment() {
    assert_eq!(
        check(|f| f.schema_pool[0].arrays[0].0 = 1),
        "schema_pool[0].arrays[0].name"
    );
}

#[test]
fn an_array_name_does_not_repeat_within_a_schema() {
    assert_eq!(
        check(|f| {
            let first = f.schema_pool[0].arrays[0];
            f.schema_pool[0].arrays.push(first);
        }),
        "schema_pool[0].arrays[1].name"
    );
}

#[test]
fn dataset_attributes_need_the_datasets_segment() {
    assert_eq!(
        check(|f| f.string_pool[2] = "other".into()),
        "schema_pool[0].attrs"
    );
}

#[test]
fn no_dataset_name_repeats() {
    let mut bytes = to_msgpack(&small_footer());
    let at = bytes.len() - 4;
    bytes[at..at + 3].copy_from_slice(b"jan");
    assert_eq!(field_of(from_msgpack(&bytes)), "footer");
    let message = from_msgpack(&bytes).unwrap_err().to_string();
    assert!(
        message.contains("datasets: name 'jan' at ordinal 1 repeats ordinal 0"),
        "{message}"
    );
}

#[test]
fn a_dataset_name_that_is_not_utf8_is_named() {
    let bytes = to_msgpack(&small_footer());
    // "feb" (the last name, 4 bytes before the end) becomes "\xffeb".
    let mut bad = bytes.clone();
    let at = bad.len() - 4;
    bad[at] = 0xff;
    assert_eq!(field_of(from_msgpack(&bad)), "datasets[1]");
    // Both names "\xffan": the first one is reported (as a bad name), not the repeat.
    let mut bad = bytes.clone();
    let at = bad.len() - 4;
    bad[at..at + 3].copy_from_slice(b"\xffan");
    let first = bad.len() - 9;
    bad[first..first + 3].copy_from_slice(b"\xffan");
    let error = from_msgpack(&bad).unwrap_err();
    assert_eq!(field_of(Err::<(), _>(error.clone())), "datasets[0]");
    assert!(
        error.to_string().contains("error while decoding string"),
        "{error}"
    );
}

#[test]
fn a_bad_schema_index_is_named_after_the_earlier_rules() {
    // A dataset's schema index past the pool, found while decoding, is reported where
    // `validate` reports it: after the version, the segments and the schemas.
    let mut footer = small_footer();
    footer.datasets.schemas_mut()[1] = 1;
    let frame = encode_footer(&footer);
    assert_eq!(
        field_of(decode_and_validate(&frame, SMALL_SEGMENTS_END)),
        "datasets[1] ('feb').schema"
    );
    footer.version = 7;
    let frame = encode_footer(&footer);
    assert_eq!(
        field_of(decode_and_validate(&frame, SMALL_SEGMENTS_END)),
        "version"
    );
}
