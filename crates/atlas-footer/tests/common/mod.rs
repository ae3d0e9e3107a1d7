//! A small valid footer shared by the footer tests.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.
#![allow(dead_code)] // Each test file uses a different part of this module.

use atlas_footer::{Codec, CollectionFooter, DType, FooterBuilder, IndexPairs, InternedSchema};

/// Two variables of 100 and 50 bytes, two datasets of one schema with one array attribute and
/// one dataset attribute, so every pool and list is non-empty.
pub(crate) fn small_footer() -> CollectionFooter {
    let mut b = FooterBuilder::new();
    let temp = b.intern_string("temp").unwrap();
    let units = b.intern_string("units").unwrap();
    let f32_ = b.intern_dtype(&DType::Float32).unwrap();
    let string = b.intern_dtype(&DType::String).unwrap();
    let schema = InternedSchema {
        arrays: IndexPairs::from_iter([(temp, f32_)]),
        attrs: IndexPairs::from_iter([(units, string)]),
        array_attrs: [(0, IndexPairs::from_iter([(units, string)]))]
            .into_iter()
            .collect(),
    };
    let schema = b.intern_schema(schema).unwrap();
    b.add_variable("temp", 8, 100).unwrap();
    b.add_variable("_datasets", 108, 50).unwrap();
    b.add_dataset("jan", schema).unwrap();
    b.add_dataset("feb", schema).unwrap();
    b.finish(Codec::Zstd, 1_700_000_000_000)
}

/// Where `small_footer`'s segments end.
pub(crate) const SMALL_SEGMENTS_END: u64 = 158;
