//! Footer decode + validation against a naive decode of the same bytes, and footer encode
//! against a naive encode of the same content.
//!
//! Target (the performance work's; the first target was 0.6x): decoding and validating a 100,000-dataset footer (one
//! schema, five variables, names like `station_000123_2024`) takes at most 0.45x the time of a
//! naive decode of the same frame, in every run, on the wall clock and on the CPU clock. The
//! naive decode is the zstd stream decode, then rmp-serde into a mirror struct with `String`
//! names, `Vec` pools and a std `HashMap<String, u32>` for the datasets, with no validation at
//! all. 1,000 and 10,000 datasets show how both scale.
//!
//! `floor` is what no decode of these bytes can go below: the zstd frame decoded in one call
//! into a buffer of its declared size (what `wire::decode_and_validate` does first), then one
//! pass over the msgpack with `rmp::decode` that reads every field, every name as a checked
//! `&str` and every schema index, allocating nothing. `atlas_decode_validate / floor` is what
//! building the footer (name buffer, hash index, pools) and validating it costs on top.
//! `zstd_only` is the naive decode's zstd step alone (the stream decoder).
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
                .map(|(name, schema)| (name.to_owned(), schema))
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

/// The floor: the frame decoded in one call into a buffer of its declared size, then every
/// field read once, nothing allocated. Returns a fold of what it read, so nothing is skipped.
fn floor(frame: &[u8]) -> u64 {
    let size = zstd::zstd_safe::get_frame_content_size(frame)
        .expect("zstd frame")
        .expect("the writer declares the content size");
    let msgpack =
        zstd::bulk::decompress(frame, usize::try_from(size).expect("fits")).expect("zstd decodes");
    let mut rd = &msgpack[..];
    let fields = rmp::decode::read_array_len(&mut rd).expect("footer array");
    // version, codec, created_unix_ms, the three pools and the variables: a few hundred bytes.
    let mut fold = u64::from(fields);
    for _ in 0..7 {
        fold = fold.wrapping_add(walk(&mut rd));
    }
    // The datasets: `[name, schema_index]` pairs.
    let count = rmp::decode::read_array_len(&mut rd).expect("datasets array");
    for _ in 0..count {
        let pair = rmp::decode::read_array_len(&mut rd).expect("pair");
        let (name, rest) = rmp::decode::read_str_from_slice(rd).expect("name");
        rd = rest;
        let schema: u32 = rmp::decode::read_int(&mut rd).expect("schema index");
        fold = fold
            .wrapping_add(u64::from(pair))
            .wrapping_add(name.len() as u64)
            .wrapping_add(u64::from(name.as_bytes().first().copied().unwrap_or(0)))
            .wrapping_add(u64::from(schema));
    }
    assert!(rd.is_empty(), "one msgpack value");
    fold
}

/// Reads any msgpack value off the front of `rd` (the markers a footer uses), allocating
/// nothing; returns a fold of what it read.
fn walk(rd: &mut &[u8]) -> u64 {
    use rmp::Marker;
    match Marker::from_u8(rd[0]) {
        Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => {
            let n = rmp::decode::read_array_len(rd).expect("array");
            (0..n).fold(u64::from(n), |acc, _| acc.wrapping_add(walk(rd)))
        }
        Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => {
            let n = rmp::decode::read_map_len(rd).expect("map");
            (0..2 * n).fold(u64::from(n), |acc, _| acc.wrapping_add(walk(rd)))
        }
        Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
            let (s, rest) = rmp::decode::read_str_from_slice(*rd).expect("string");
            *rd = rest;
            s.len() as u64
        }
        Marker::FixNeg(_) | Marker::I8 | Marker::I16 | Marker::I32 | Marker::I64 => {
            rmp::decode::read_int::<i64, _>(rd).expect("int") as u64
        }
        _ => rmp::decode::read_int::<u64, _>(rd).expect("uint"),
    }
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
        black_box(floor(&fixture.frame));
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
        group.bench_function("floor", |b| {
            b.iter_custom(|iters| time_iters(iters, || floor(black_box(&fixture.frame))));
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
