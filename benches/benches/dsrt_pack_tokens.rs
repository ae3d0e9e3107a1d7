//! Packing a Parquet token column (`dsrt pack --tokens-column`) against its floor: decoding
//! the same column and writing the ids' bytes once with SHA-256, on the same number of threads.
//!
//! The input is Parquet files of 40,000 documents of 1-4,000 token ids (long-tailed, 50.4M
//! ids in all), a `list<int32>` column `ids` and an `int64` column `doc`, in row groups of
//! 1,000 documents, in the page cache. Arms, each writing a fresh output and fsyncing it:
//!
//! - `floor`: 2 threads, each decoding every other row group (the packer's units, in the same
//!   order, the same two columns) and appending each document's ids as little-endian `u16` to
//!   a file of its own while hashing them with SHA-256: what a token cache must read, write
//!   and hash, with no check, no index and no metadata.
//! - `pack_jobs2`: `datasetrt::pack` over `Tables` with `TableOptions::tokens` (every id
//!   checked against `vocab_size` 50,257, `uint16`), 2 jobs, then `finish`. Target: >= 0.7x
//!   the floor's tokens/s.
//! - `pack_jobs1`: the same on 1 job.
//!
//! Rounds as `dsrt_pack`'s: every arm once per round after a `sync` and a second's pause, in
//! an order rotating from round to round; the ratios are taken within a round and reported as
//! the median over the rounds with the lowest and highest.
//!
//! `cargo bench -p dsrt-atlas-benches --bench dsrt_pack_tokens [-- ROUNDS]` (default 5).
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // bench code
#![allow(clippy::cast_precision_loss, clippy::cast_sign_loss)] // rates, ratios, ids
#![allow(clippy::print_stdout)] // a test or tool that owns its output
use arrow_array::builder::{Int32Builder, ListBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use datasetrt::pack::{pack, Convert, PackOptions, TableOptions, Tables, TokenColumn};
use datasetrt::tokens::TokenInfo;
use datasetrt::{CacheWriter, WriterOptions};
use dsrt_atlas_benches::median;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const DOCUMENTS: usize = 40_000;
const FILES: usize = 4;
const GROUP_ROWS: usize = 1_000;
const VOCAB: u64 = 50_257;

fn make_input(dir: &Path) -> u64 {
    std::fs::create_dir_all(dir).unwrap();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut tokens = 0u64;
    let per_file = DOCUMENTS / FILES;
    for f in 0..FILES {
        let mut ids = ListBuilder::new(Int32Builder::new());
        for _ in 0..per_file {
            let u = (next() % 1_000_000) as f64 / 1e6;
            let len = 1 + (4_000.0 * u.powi(3)) as usize;
            for _ in 0..len {
                ids.values().append_value((next() % VOCAB) as i32);
            }
            ids.append(true);
            tokens += len as u64;
        }
        let ids: ArrayRef = Arc::new(ids.finish());
        let doc: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..per_file as i64).map(|d| d + (f * per_file) as i64),
        ));
        let schema = Arc::new(Schema::new(vec![
            Field::new("ids", ids.data_type().clone(), false),
            Field::new("doc", DataType::Int64, false),
        ]));
        let batch = RecordBatch::try_new(schema, vec![ids, doc]).unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(GROUP_ROWS))
            .build();
        let path = dir.join(format!("part-{f:03}.parquet"));
        let mut writer = ArrowWriter::try_new(
            std::fs::File::create(path).unwrap(),
            batch.schema(),
            Some(props),
        )
        .unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    }
    tokens
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

fn floor(inputs: &[PathBuf], out: &Path) -> Duration {
    std::fs::create_dir_all(out).unwrap();
    let started = Instant::now();
    let units: Vec<(PathBuf, usize)> = inputs
        .iter()
        .flat_map(|f| (0..DOCUMENTS / FILES / GROUP_ROWS).map(move |g| (f.clone(), g)))
        .collect();
    std::thread::scope(|scope| {
        for t in 0..2 {
            let units = &units;
            scope.spawn(move || {
                let mut file = std::io::BufWriter::new(
                    std::fs::File::create(out.join(format!("floor-{t}.bin"))).unwrap(),
                );
                let mut hash = Sha256::new();
                let mut bytes = Vec::new();
                for (path, group) in units.iter().skip(t).step_by(2) {
                    let reader = ParquetRecordBatchReaderBuilder::try_new(
                        std::fs::File::open(path).unwrap(),
                    )
                    .unwrap()
                    .with_row_groups(vec![*group])
                    .with_batch_size(128)
                    .build()
                    .unwrap();
                    for batch in reader {
                        let batch = batch.unwrap();
                        let lists = batch.column(0).as_list::<i32>();
                        let values = lists.values().as_primitive::<Int32Type>().values();
                        let offsets = lists.value_offsets();
                        for row in 0..lists.len() {
                            bytes.clear();
                            let (a, b) = (offsets[row] as usize, offsets[row + 1] as usize);
                            bytes.extend(
                                values[a..b].iter().flat_map(|&v| (v as u16).to_le_bytes()),
                            );
                            hash.update(&bytes);
                            file.write_all(&bytes).unwrap();
                        }
                    }
                }
                file.into_inner().unwrap().sync_all().unwrap();
                std::hint::black_box(hash.finalize());
            });
        }
    });
    let elapsed = started.elapsed();
    std::fs::remove_dir_all(out).unwrap();
    elapsed
}

fn pack_arm(input: &Path, out: &Path, jobs: usize) -> Duration {
    let started = Instant::now();
    let options = TableOptions::tokens("ids", TokenColumn::Ids(Some(TokenInfo::for_vocab(VOCAB))));
    let tables = Tables::scan(&[input.to_path_buf()], &options).unwrap();
    let mut writer_options = WriterOptions::new("bench", tables.schema().clone())
        .io_threads(datasetrt::pack::writer_io_threads(Some(jobs)));
    for (key, value) in tables.manifest_keys() {
        writer_options = writer_options.manifest_key(key, value);
    }
    let mut writer = CacheWriter::create(out, writer_options).unwrap();
    let stats = pack(&tables, &mut writer, &PackOptions::default().jobs(jobs)).unwrap();
    writer.finish().unwrap();
    let elapsed = started.elapsed();
    assert_eq!(stats.samples, DOCUMENTS as u64);
    std::fs::remove_dir_all(out).unwrap();
    elapsed
}

fn settle() {
    let _ = std::process::Command::new("sync").status();
    std::thread::sleep(Duration::from_secs(1));
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5);
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("parquet");
    let tokens = make_input(&input);
    let inputs = files(&input);
    println!("dsrt_pack_tokens: {DOCUMENTS} documents, {tokens} tokens in {FILES} Parquet files; {rounds} rounds");
    floor(&inputs, &root.path().join("warm-floor"));
    pack_arm(&input, &root.path().join("warm-pack"), 2);
    let arms = ["floor", "pack_jobs2", "pack_jobs1"];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); arms.len()];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); arms.len()];
    for round in 0..rounds {
        let mut this_round = [0.0f64; 3];
        for k in 0..arms.len() {
            let arm = (round + k) % arms.len();
            let out = root.path().join(format!("out-{arm}"));
            settle();
            let took = match arm {
                0 => floor(&inputs, &out),
                1 => pack_arm(&input, &out, 2),
                _ => pack_arm(&input, &out, 1),
            };
            this_round[arm] = took.as_secs_f64();
        }
        for arm in 0..arms.len() {
            times[arm].push(this_round[arm]);
            ratios[arm].push(this_round[0] / this_round[arm]);
        }
    }
    for (arm, name) in arms.iter().enumerate() {
        let rate = tokens as f64 / median(&mut times[arm].clone());
        let mut r = ratios[arm].clone();
        let (low, high) = (
            r.iter().copied().fold(f64::INFINITY, f64::min),
            r.iter().copied().fold(0.0, f64::max),
        );
        println!(
            "{name:>11}: {:>7.1} M tokens/s; / floor: median {:.3} (low {low:.3}, high {high:.3})",
            rate / 1e6,
            median(&mut r)
        );
    }
}
