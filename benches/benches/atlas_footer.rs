//! Footer decode + validation against a naive decode of the same bytes.
//!
//! Target (issue 4, Performance): decoding and validating a 100,000-dataset footer (one schema,
//! five variables, names like `station_000123_2024`) takes at most 0.6x the time of a naive
//! decode of the same frame: the same zstd stream decode, then rmp-serde into a mirror struct
//! with `String` names, `Vec` pools and a std `HashMap<String, u32>` for the datasets, with no
//! validation at all. 1,000 and 10,000 datasets show how both scale. `ATLAS_BENCH_CLOCK=cpu`
//! times with process CPU time instead of the wall clock (see `benchmarks::atlas::cpu_clock`).
#![allow(missing_docs)] // criterion_group! generates undocumented items

use atlas::format::{wire, Codec, DType, MAX_DECODED_FOOTER};
use benchmarks::atlas::{footer_frame, time_iters};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
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

#[derive(Deserialize)]
#[allow(dead_code)]
struct NaiveSchema {
    arrays: Vec<(u32, u32)>,
    attrs: Vec<(u32, u32)>,
    array_attrs: Vec<(u32, Vec<(u32, u32)>)>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct NaiveVariable {
    name: u32,
    seg_offset: u64,
    seg_len: u64,
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

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(4));
    targets = footer_decode
}
criterion_main!(benches);
