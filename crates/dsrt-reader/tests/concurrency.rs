//! Sharing: one `Cache` read by 8 threads at once, each in its own order and through both read
//! paths, returns exactly what a single thread reads; four processes reading one cache at the
//! same time all see the same bytes. The thread-safety promises are checked by the compiler.
//!
//! The reader processes are this test binary (`harness = false`, so the child is not a test)
//! re-run with `DSRT_CONCURRENCY_CHILD` set.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output

mod common;
use dsrt_atlas_test_runner as runner;

use dsrt_manifest::CompressionAlgo;
use dsrt_reader::{Cache, CacheError, OpenOptions, Sample, SampleBuf};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

/// The types a training job shares between loader threads, or moves into one.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Cache>();
    shared::<CacheError>();
    shared::<Sample>();
    const fn movable<T: Send>() {}
    movable::<SampleBuf>();
};

const SAMPLES: u64 = 500;
const THREADS: u64 = 8;
const PROCESSES: usize = 4;
const CHILD_ENV: &str = "DSRT_CONCURRENCY_CHILD";

/// SHA-256 over every sample's id, payload and metadata, in id order.
fn digest(cache: &Cache) -> String {
    let mut hash = Sha256::new();
    for i in 0..cache.len() {
        let sample = cache.sample(i).unwrap();
        hash.update(i.to_le_bytes());
        hash.update(&sample.payload);
        hash.update(format!("{:?}", sample.metadata));
    }
    format!("{:x}", hash.finalize())
}

fn main() -> ExitCode {
    if let Ok(path) = std::env::var(CHILD_ENV) {
        concurrency_child_reader(&path);
        return ExitCode::SUCCESS;
    }
    runner::run(&[
        (
            "eight_threads_share_one_cache",
            eight_threads_share_one_cache,
        ),
        (
            "four_processes_read_one_cache_at_once",
            four_processes_read_one_cache_at_once,
        ),
    ])
}

fn eight_threads_share_one_cache() {
    let root = tempfile::tempdir().unwrap();
    let (path, _) = common::write_cache(root.path(), "shared", SAMPLES, CompressionAlgo::Lz4);
    let cache = Cache::open(&path, OpenOptions::validated()).unwrap();
    let expected: Vec<Sample> = (0..SAMPLES).map(|i| cache.sample(i).unwrap()).collect();
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (cache, expected) = (&cache, &expected);
            scope.spawn(move || {
                let mut buf = SampleBuf::default();
                let mut out = Vec::new();
                // Each thread walks the whole cache 3 times with its own start and a stride
                // coprime with 500, so every thread visits every sample in its own order.
                let stride = [1, 3, 7, 9, 11, 13, 17, 19][t as usize];
                for round in 0..3 * SAMPLES {
                    let i = (t * 61 + round * stride) % SAMPLES;
                    let want = &expected[i as usize];
                    let got = cache.read(i, &mut buf).unwrap();
                    assert_eq!(got.payload, &want.payload[..], "thread {t}, sample {i}");
                    out.clear();
                    let range = cache.read_append(i, &mut buf, &mut out).unwrap();
                    assert_eq!(&out[range], &want.payload[..], "thread {t}, sample {i}");
                    assert_eq!(cache.sample(i).unwrap().metadata, want.metadata);
                }
            });
        }
    });
}

/// The child: opens the cache, validated, and prints its digest.
fn concurrency_child_reader(path: &str) {
    let cache = Cache::open(Path::new(path), OpenOptions::validated()).unwrap();
    println!("DIGEST:{}", digest(&cache));
}

fn four_processes_read_one_cache_at_once() {
    let root = tempfile::tempdir().unwrap();
    let (path, _) = common::write_cache(root.path(), "shared", SAMPLES, CompressionAlgo::None);
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .env(CHILD_ENV, &path)
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect();
    // All four are running (and may overlap) before any is waited for; this process reads too.
    let mine = digest(&Cache::open(&path, OpenOptions::validated()).unwrap());
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "a reader process failed");
        let stdout = String::from_utf8(output.stdout).unwrap();
        let theirs = stdout
            .split("DIGEST:")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no digest in {stdout:?}"));
        assert_eq!(theirs, mine);
    }
}
