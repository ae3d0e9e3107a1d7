//! Footer decode + validation against a naive decode of the same bytes, and footer encode
//! against a naive encode of the same content.
//!
//! Target: decoding and validating a 100,000-dataset footer (one schema,
//! five variables, names like `station_000123_2024`) takes at most 0.6x the time of a naive
//! decode of the same frame: the same zstd stream decode, then rmp-serde into a mirror struct
//! with `String` names, `Vec` pools and a std `HashMap<String, u32>` for the datasets, with no
//! validation at all. 1,000 and 10,000 datasets show how both scale.
//!
//! Encode (`atlas_footer_encode_*`): `atlas_encode` is `wire::encode_footer`, what
//! `AtlasWriter::finish` calls on the built footer (rmp-serde compact of `CollectionFooter`
//! with its `SmolStr`-keyed `IndexMap`, then a zstd frame at `FOOTER_ZSTD_LEVEL`). The baseline
//! serializes the same content from a naive mirror (`String` pools and names, `Vec` schemas,
//! the datasets as a `Vec<(String, u32)>` in ordinal order: a `HashMap` would lose the
//! ordinals) with `rmp_serde::to_vec`, then compresses with `zstd::bulk` at the same level.
//! Both frames are checked to decode (and validate) to the same footer before anything is
//! timed. `zstd_only` compresses the same msgpack bytes: the floor both sides share.
//!
//! `ATLAS_BENCH_CLOCK=cpu` times with process CPU time instead of the wall clock (see
//! `dsrt_atlas_benches::atlas::cpu_clock`).
#![allow(missing_docs)] // criterion_group! generates undocumented items

use atlas::format::{wire, Codec, CollectionFooter, DType, FOOTER_ZSTD_LEVEL, MAX_DECODED_FOOTER};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dsrt_atlas_benches::atlas::{footer_frame, time_iters};
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::hint::black_box;
use std::io::Read;

/// The footer as a straightforward decoder would mirror it.
#[derive(Deserialize)]
#[allow(dead_code)] // Decoded to be measured, never read.
struct NaiveFooter {
    version: u32,
    codec: Codec,
    created_unix_ms: i64,
    string_pool: Vec<String>,
    dtype_pool: Vec<DType>,
    schema_pool: Vec<NaiveSchema>,
    variables: Vec<NaiveVariable>,
    #[serde(deserialize_with = "pairs_into_map")]
    datasets: HashMap<String, u32>,
}

#[derive(Deserialize, Serialize)]
#[allow(dead_code)]
struct NaiveSchema {
    arrays: Vec<(u32, u32)>,
    attrs: Vec<(u32, u32)>,
    array_attrs: Vec<(u32, Vec<(u32, u32)>)>,
}

#[derive(Deserialize, Serialize)]
#[allow(dead_code)]
struct NaiveVariable {
    name: u32,
    seg_offset: u64,
    seg_len: u64,
}

/// The footer as a straightforward encoder would hold it: owned `String`s and `Vec`s, the
/// datasets as `(name, schema)` pairs in ordinal order.
#[derive(Serialize)]
struct NaiveFooterOut {
    version: u32,
    codec: Codec,
    created_unix_ms: i64,
    string_pool: Vec<String>,
    dtype_pool: Vec<DType>,
    schema_pool: Vec<NaiveSchema>,
    variables: Vec<NaiveVariable>,
    datasets: Vec<(String, u32)>,
}

impl NaiveFooterOut {
    /// The same content as `footer`, copied into the naive mirror (outside any timing).
    fn mirror(footer: &CollectionFooter) -> Self {
        let pairs = |list: &[(u32, u32)]| list.to_vec();
        Self {
            version: footer.version,
            codec: footer.codec,
            created_unix_ms: footer.created_unix_ms,
            string_pool: footer.string_pool.clone(),
            dtype_pool: footer.dtype_pool.clone(),
            schema_pool: footer
                .schema_pool
                .iter()
                .map(|s| NaiveSchema {
                    arrays: pairs(&s.arrays),
                    attrs: pairs(&s.attrs),
                    array_attrs: s
                        .array_attrs
                        .iter()
                        .map(|(at, list)| (*at, pairs(list)))
                        .collect(),
                })
                .collect(),
            variables: footer
                .variables
                .iter()
                .map(|v| NaiveVariable {
                    name: v.name,
                    seg_offset: v.seg_offset,
                    seg_len: v.seg_len,
                })
                .collect(),
            datasets: footer
                .datasets
                .iter()
                .map(|(name, schema)| (name.to_string(), *schema))
                .collect(),
        }
    }
}

/// rmp-serde compact form of the mirror, then one zstd frame at the writer's level.
fn naive_encode(footer: &NaiveFooterOut) -> Vec<u8> {
    let msgpack = rmp_serde::to_vec(footer).expect("naive encode");
    zstd::bulk::compress(&msgpack, FOOTER_ZSTD_LEVEL).expect("zstd compresses")
}

/// `[name, index]` pairs straight into a std `HashMap` sized by the header.
fn pairs_into_map<'de, D: Deserializer<'de>>(d: D) -> Result<HashMap<String, u32>, D::Error> {
    struct Pairs;
    impl<'de> Visitor<'de> for Pairs {
        type Value = HashMap<String, u32>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a sequence of pairs")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut map = HashMap::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some((name, schema)) = seq.next_element::<(String, u32)>()? {
                map.insert(name, schema);
            }
            Ok(map)
        }
    }
    d.deserialize_seq(Pairs)
}

/// The same zstd decode the reader uses: a stream decoder, bounded by the same limit.
fn unzstd(frame: &[u8]) -> Vec<u8> {
    let decoder = zstd::stream::read::Decoder::new(frame).expect("zstd frame");
    let mut out = Vec::new();
    decoder
        .take(MAX_DECODED_FOOTER + 1)
        .read_to_end(&mut out)
        .expect("zstd decodes");
    out
}

fn naive_decode(frame: &[u8]) -> NaiveFooter {
    rmp_serde::from_slice(&unzstd(frame)).expect("naive decode")
}

fn footer_decode(c: &mut Criterion) {
    for (label, datasets, samples) in [
        ("1k", 1_000, 50),
        ("10k", 10_000, 30),
        ("100k", 100_000, 15),
    ] {
        let fixture = footer_frame(datasets);
        // Both decoders must accept the frame before anything is timed.
        let naive = naive_decode(&fixture.frame);
        let (ours, _) = wire::decode_and_validate(&fixture.frame, fixture.segments_end)
            .expect("fixture footer is valid");
        assert_eq!(
            (naive.datasets.len(), ours.datasets.len()),
            (datasets, datasets)
        );

        let mut group = c.benchmark_group(format!("atlas_footer_{label}"));
        group.sample_size(samples);
        group.throughput(Throughput::Elements(datasets as u64));
        group.bench_function("baseline_naive_decode", |b| {
            b.iter_custom(|iters| time_iters(iters, || naive_decode(black_box(&fixture.frame))));
        });
        group.bench_function("atlas_decode_validate", |b| {
            b.iter_custom(|iters| {
                time_iters(iters, || {
                    wire::decode_and_validate(black_box(&fixture.frame), fixture.segments_end)
                        .expect("valid")
                })
            });
        });
        group.bench_function("zstd_only", |b| {
            b.iter_custom(|iters| time_iters(iters, || unzstd(black_box(&fixture.frame))));
        });
        group.finish();
    }
}

fn footer_encode(c: &mut Criterion) {
    for (label, datasets, samples) in [
        ("1k", 1_000, 50),
        ("10k", 10_000, 30),
        ("100k", 100_000, 15),
    ] {
        let fixture = footer_frame(datasets);
        let (footer, _) = wire::decode_and_validate(&fixture.frame, fixture.segments_end)
            .expect("fixture footer is valid");
        let naive = NaiveFooterOut::mirror(&footer);
        // Both encoders' frames must decode and validate to the same footer before anything
        // is timed (the mirror spells the same positional msgpack, so the real decoder reads
        // the naive frame too).
        let ours = wire::encode_footer(&footer);
        let theirs = naive_encode(&naive);
        for frame in [&ours, &theirs] {
            let (decoded, _) = wire::decode_and_validate(frame, fixture.segments_end)
                .expect("encoded footer decodes");
            assert_eq!(decoded, footer);
        }
        assert_eq!(naive_decode(&theirs).datasets.len(), datasets);
        let msgpack = wire::to_msgpack(&footer);

        let mut group = c.benchmark_group(format!("atlas_footer_encode_{label}"));
        group.sample_size(samples);
        group.throughput(Throughput::Elements(datasets as u64));
        group.bench_function("baseline_naive_encode", |b| {
            b.iter_custom(|iters| time_iters(iters, || naive_encode(black_box(&naive))));
        });
        group.bench_function("atlas_encode", |b| {
            b.iter_custom(|iters| time_iters(iters, || wire::encode_footer(black_box(&footer))));
        });
        group.bench_function("zstd_only", |b| {
            b.iter_custom(|iters| {
                time_iters(iters, || {
                    zstd::bulk::compress(black_box(&msgpack), FOOTER_ZSTD_LEVEL).expect("zstd")
                })
            });
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(4));
    targets = footer_decode, footer_encode
}
criterion_main!(benches);
