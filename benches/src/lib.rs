//! Shared fixtures for the criterion benchmarks in `benches/`.
//!
//! What it is for: building the caches and input sets that benchmark groups and their
//! baselines share, deterministically (a fixed-seed generator, no `rand`), so every run
//! measures the same bytes.
//!
//! What it is not for: measuring anything itself, or being depended on by library crates.
//!
//! Layering: a leaf of the workspace; it depends on the facades and `dsrt-remote` (and, for
//! one bench, on `atlas-mask`, whose codec the facade does not re-export).
#![forbid(unsafe_code)]
// A tool that owns its output and drives its own runtime.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]
// Fixture sizes are small known values; `as` conversions here cannot truncate.
#![allow(clippy::cast_possible_truncation)]
pub mod atlas;
pub mod remote;

use datasetrt::{CacheWriter, Column, ColumnType, Schema, ValueRef, WriterOptions};
use std::path::Path;

/// A small deterministic generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `low..high`.
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low)
    }
}

/// The schema benchmark caches use: a label, a weight and a short caption.
pub fn bench_schema() -> Schema {
    Schema::new(vec![
        Column::new("label", ColumnType::Int64, false),
        Column::new("weight", ColumnType::Float64, false),
        Column::new("caption", ColumnType::Utf8, true),
    ])
    .expect("static schema is valid")
}

/// `count` payloads of 256 B to 4 KiB of mixed bytes.
pub fn payloads(count: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = SplitMix::new(seed);
    (0..count)
        .map(|_| {
            let len = rng.range(256, 4097) as usize;
            (0..len).map(|_| (rng.next_u64() % 64) as u8).collect()
        })
        .collect()
}

/// Writes `payloads` as a cache at `path` with the benchmark schema.
pub fn write_cache(
    path: &Path,
    payloads: &[Vec<u8>],
    options: WriterOptions,
) -> datasetrt::CacheSummary {
    let mut writer = CacheWriter::create(path, options).expect("bench cache directory is new");
    let captions = ["a cat", "a dog on a mat", "ünïcode caption", "x"];
    for (i, payload) in payloads.iter().enumerate() {
        let values = [
            ValueRef::Int64(i as i64),
            ValueRef::Float64(1.0 / (i as f64 + 1.0)),
            ValueRef::Utf8(captions[i % captions.len()]),
        ];
        writer
            .add_values(payload, &values)
            .expect("bench rows fit the schema");
    }
    writer.finish().expect("bench cache finishes")
}

/// Writes a cache of `samples` tiny payloads (`payload_len` bytes each, the sample number
/// repeated) at `path` with the benchmark schema and 64 MiB shards: for open and scaling
/// measurements, where the payload size does not matter and a million samples must write fast.
pub fn write_tiny_cache(path: &Path, samples: u64, payload_len: usize) -> datasetrt::CacheSummary {
    let options = WriterOptions::new("tiny", bench_schema()).max_shard_bytes(64 << 20);
    let mut writer = CacheWriter::create(path, options).expect("bench cache directory is new");
    let mut payload = vec![0u8; payload_len];
    for i in 0..samples {
        for (k, byte) in payload.iter_mut().enumerate() {
            *byte = i.to_le_bytes()[k % 8];
        }
        let values = [
            ValueRef::Int64(i as i64),
            ValueRef::Float64(0.5),
            ValueRef::Utf8("c"),
        ];
        writer
            .add_values(&payload, &values)
            .expect("bench rows fit the schema");
    }
    writer.finish().expect("bench cache finishes")
}

/// The random-read workload shared by the read and iteration benches.
#[derive(Debug)]
pub struct ReadWorkload {
    /// The cache directory.
    pub path: std::path::PathBuf,
    /// Payload bytes in the cache (the throughput unit).
    pub payload_bytes: u64,
    /// A shuffled read order over every sample.
    pub order: Vec<u64>,
}

/// Writes `samples` payloads of 256 B to 4 KiB into `dir/cache` with `max_shard_bytes` shards,
/// and draws a shuffled order over them; fixed seeds, so every run reads the same bytes.
pub fn read_workload(dir: &Path, samples: usize, max_shard_bytes: u64) -> ReadWorkload {
    let path = dir.join("cache");
    let data = payloads(samples, 7);
    let payload_bytes = data.iter().map(|p| p.len() as u64).sum();
    let options = WriterOptions::new("bench", bench_schema()).max_shard_bytes(max_shard_bytes);
    write_cache(&path, &data, options);
    ReadWorkload {
        path,
        payload_bytes,
        order: shuffled(samples as u64, 11),
    }
}

/// A random permutation of `0..count`.
pub fn shuffled(count: u64, seed: u64) -> Vec<u64> {
    let mut order: Vec<u64> = (0..count).collect();
    let mut rng = SplitMix::new(seed);
    for i in (1..order.len()).rev() {
        let j = rng.range(0, i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

/// The middle of `values` (the upper one of an even count), sorting them in place: the figure
/// the interleaved benches report per arm.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Folds every byte of `payload` into `acc` (a wrapping sum of its 8-byte words and tail): the
/// work a consumer does with a payload, done alike by every arm of a read bench, so an arm
/// that hands out a slice cannot look faster by never touching the bytes it stands for.
pub fn fold_payload(acc: u64, payload: &[u8]) -> u64 {
    let mut words = payload.chunks_exact(8);
    let mut sum = acc;
    for word in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        sum = sum.wrapping_add(u64::from_le_bytes(bytes));
    }
    words
        .remainder()
        .iter()
        .fold(sum, |s, &b| s.wrapping_add(u64::from(b)))
}
