//! Packing an ImageFolder against its floor: reading the files and writing their bytes once
//! with SHA-256, on the same number of threads.
//!
//! The input is an ImageFolder of 20,000 files of 20-120 KB (10 classes, about 1.4 GB) in the
//! page cache. Arms, each writing a fresh output and fsyncing it:
//!
//! - `floor`: 2 threads, each reading every other unit of 32 files (the packer's units, in the
//!   same order) and appending their bytes to a file of its own while hashing them with
//!   SHA-256: the bytes a cache must read, write and hash, with no format at all.
//! - `pack_jobs2`: `datasetrt::pack` over `ImageFolder` with 2 jobs, uncompressed, default
//!   shard size (so the shards are planned ahead and each written whole by one worker), then
//!   `finish` (index, metadata, manifest, fsync). Target: >= 0.7x the floor's samples/s.
//! - `pack_jobs1`: the same on 1 job (no target; what the threads buy).
//! - `streamed_jobs2`: `pack_jobs2` with `plan_ahead(false)`: every byte through the one
//!   appending thread, as inputs whose lengths are unknown ahead are packed (what planning the
//!   shards ahead buys).
//! - `streamed_inline_jobs2`: `streamed_jobs2` with `io_threads(false)`: the appending thread
//!   hashes and writes too.
//!
//! Each round runs every arm once, in an order that rotates from round to round (after a
//! `sync` and a second's pause, so no arm pays for the writeback of the one before), and takes
//! the ratios within the round; the report is the median ratio over the rounds with the lowest and
//! highest, and each arm's median samples/s.
//!
//! `[DSRT_BENCH_DROP_CACHES=1] cargo bench -p dsrt-atlas-benches --bench dsrt_pack [-- ROUNDS]`
//! (default 5 rounds; see `settle` for the variable). The input is written under `TMPDIR`
//! (about 1.4 GB) and removed at the end.
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // bench code
#![allow(clippy::cast_precision_loss)] // rates and ratios

use datasetrt::pack::{pack, ImageFolder, PackOptions};
use datasetrt::{CacheWriter, WriterOptions};
use dsrt_atlas_benches::median;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const FILES: usize = 20_000;
const CLASSES: usize = 10;
const UNIT: usize = 32;

fn make_input(root: &Path) -> u64 {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut bytes = 0;
    for i in 0..FILES {
        let class = format!("n{:08}", i % CLASSES);
        let dir = root.join(&class);
        std::fs::create_dir_all(&dir).unwrap();
        let len = 20_000 + (next() % 100_000) as usize;
        let data: Vec<u8> = (0..len / 8).flat_map(|_| next().to_le_bytes()).collect();
        std::fs::write(dir.join(format!("{i:06}.JPEG")), &data).unwrap();
        bytes += data.len() as u64;
    }
    bytes
}

/// The files in the packer's order (classes sorted, then paths).
fn files_in_order(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut classes: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    classes.sort();
    for class in classes {
        let mut inside: Vec<_> = std::fs::read_dir(&class)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        inside.sort();
        files.extend(inside);
    }
    files
}

fn floor(files: &[PathBuf], out: &Path) -> Duration {
    std::fs::create_dir_all(out).unwrap();
    let started = Instant::now();
    let units: Vec<&[PathBuf]> = files.chunks(UNIT).collect();
    std::thread::scope(|scope| {
        for t in 0..2 {
            let units = &units;
            scope.spawn(move || {
                let mut file = std::fs::File::create(out.join(format!("floor-{t}.bin"))).unwrap();
                let mut hash = Sha256::new();
                for unit in units.iter().skip(t).step_by(2) {
                    for path in *unit {
                        let data = std::fs::read(path).unwrap();
                        hash.update(&data);
                        file.write_all(&data).unwrap();
                    }
                }
                file.sync_all().unwrap();
                std::hint::black_box(hash.finalize());
            });
        }
    });
    let elapsed = started.elapsed();
    std::fs::remove_dir_all(out).unwrap();
    elapsed
}

fn pack_arm(input: &Path, out: &Path, jobs: usize, plan_ahead: bool, io_threads: bool) -> Duration {
    let started = Instant::now();
    let folder = ImageFolder::scan(input).unwrap();
    let options = WriterOptions::new("bench", ImageFolder::schema()).io_threads(io_threads);
    let mut writer = CacheWriter::create(out, options).unwrap();
    let pack_options = PackOptions::default().jobs(jobs).plan_ahead(plan_ahead);
    let stats = pack(&folder, &mut writer, &pack_options).unwrap();
    writer.finish().unwrap();
    let elapsed = started.elapsed();
    assert_eq!(stats.samples, FILES as u64);
    std::fs::remove_dir_all(out).unwrap();
    elapsed
}

/// Lets the disk finish the writeback of the arm before (each arm wrote 1.4 GB), so that no arm
/// pays for another's. With `DSRT_BENCH_DROP_CACHES=1` (root only) it also empties the page
/// cache and reads the input back in: every arm then starts with the same free memory, where
/// otherwise an arm that must first reclaim pages others left (builds, earlier runs) pays for
/// it in its write calls, which made single rounds range 0.3-1.4.
fn settle(files: &[PathBuf]) {
    let _ = std::process::Command::new("sync").status();
    if std::env::var_os("DSRT_BENCH_DROP_CACHES").is_some_and(|v| v == "1") {
        std::fs::write("/proc/sys/vm/drop_caches", "1\n")
            .expect("DSRT_BENCH_DROP_CACHES=1 needs a writable /proc/sys/vm/drop_caches (root)");
        for path in files {
            std::hint::black_box(std::fs::read(path).unwrap());
        }
    }
    std::thread::sleep(Duration::from_secs(1));
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5);
    let root = tempfile::tempdir().unwrap();
    let input = root.path().join("imagefolder");
    let bytes = make_input(&input);
    let files = files_in_order(&input);
    println!(
        "dsrt_pack: {FILES} files, {:.2} GB, {CLASSES} classes; {rounds} rounds",
        bytes as f64 / 1e9
    );
    // Warm the page cache and each code path once, untimed.
    floor(&files, &root.path().join("warm-floor"));
    pack_arm(&input, &root.path().join("warm-pack"), 2, true, true);
    let arms = [
        "floor",
        "pack_jobs2",
        "pack_jobs1",
        "streamed_jobs2",
        "streamed_inline_jobs2",
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); arms.len()];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); arms.len()];
    for round in 0..rounds {
        let mut this_round = [0.0f64; 5];
        for k in 0..arms.len() {
            let arm = (round + k) % arms.len();
            let out = root.path().join(format!("out-{arm}"));
            settle(&files);
            let took = match arm {
                0 => floor(&files, &out),
                1 => pack_arm(&input, &out, 2, true, true),
                2 => pack_arm(&input, &out, 1, true, true),
                3 => pack_arm(&input, &out, 2, false, true),
                _ => pack_arm(&input, &out, 2, false, false),
            };
            this_round[arm] = took.as_secs_f64();
        }
        for arm in 0..arms.len() {
            times[arm].push(this_round[arm]);
            ratios[arm].push(this_round[0] / this_round[arm]);
        }
    }
    for (arm, name) in arms.iter().enumerate() {
        let rate = FILES as f64 / median(&mut times[arm].clone());
        let mut r = ratios[arm].clone();
        let (low, high) = (
            r.iter().copied().fold(f64::INFINITY, f64::min),
            r.iter().copied().fold(0.0, f64::max),
        );
        println!(
            "{name:>11}: {rate:>9.0} samples/s ({:.0} MB/s); / floor: median {:.3} (low {low:.3}, high {high:.3})",
            rate * bytes as f64 / FILES as f64 / 1e6,
            median(&mut r)
        );
    }
}
