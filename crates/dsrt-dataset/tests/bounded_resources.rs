//! Bounded resources at the scale users run: a 5,000-shard cache and a dataset of 2,000
//! caches, read in full under `ulimit -n 256`, with the descriptors in use counted from
//! `/proc/self/fd` throughout. Each test writes its fixtures, then re-runs this binary
//! (`harness = false`, so the child is not a test) as a child under that limit with
//! `DSRT_BOUNDED_CHILD` naming the checks to make.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_atlas_test_runner as runner;
use dsrt_dataset::{Dataset, Loader, LoaderConfig};
use dsrt_plan::{PlanConfig, Shuffle};
use dsrt_reader::{Cache, CacheError, HandlePool, OpenOptions, SampleBuf};
use dsrt_schema::{Column, ColumnType, Row, Schema};
use dsrt_writer::{CacheWriter, WriterOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;

/// Descriptors a test process holds besides shard files (stdio, the harness, the loader's
/// in-flight reads).
const SLACK: usize = 24;

const CHILD_ENV: &str = "DSRT_BOUNDED_CHILD";
const ROOT_ENV: &str = "DSRT_BOUNDED_ROOT";

fn payload(cache: usize, sample: u64) -> Vec<u8> {
    let mut bytes = format!("c{cache}s{sample}:").into_bytes();
    bytes.resize(40 + (sample % 17) as usize, b'0' + (sample % 10) as u8);
    bytes
}

/// A cache of `samples` samples, `per_shard` to a shard.
fn write_cache(path: &Path, source: &str, cache: usize, samples: u64, per_shard: u64) {
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    // A record is its payload, the envelope JSON and a header: about 100 bytes.
    let options = WriterOptions::new(source, schema).max_shard_bytes(per_shard * 100 - 50);
    let mut writer = CacheWriter::create(path, options).unwrap();
    for i in 0..samples {
        writer
            .add(&payload(cache, i), &Row::new().with("n", i as i64))
            .unwrap();
    }
    writer.finish().unwrap();
}

/// Fixtures live on tmpfs where there is one: thousands of fsyncs cost nothing there.
fn scratch() -> tempfile::TempDir {
    match Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").unwrap(),
        false => tempfile::tempdir().unwrap(),
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn assert_bounded(context: &str) {
    let open = open_fds();
    let bound = HandlePool::global().capacity() + SLACK;
    assert!(
        open <= bound,
        "{context}: {open} descriptors open, bound {bound}"
    );
}

/// One test: what the parent writes into a scratch directory, and what the child checks
/// there under the limit.
struct Case {
    name: &'static str,
    /// The shell's `ulimit` commands the child runs under.
    limits: &'static str,
    setup: fn(&Path),
    check: fn(&Path),
}

/// The limits most children run under: the hard one too, so that the pool cannot raise the
/// soft one.
const AT_ULIMIT: &str = "ulimit -n 256";

const CASES: [Case; 5] = [
    Case {
        name: "a_5000_shard_cache_is_read_whole_under_ulimit_256",
        limits: AT_ULIMIT,
        setup: write_big_cache,
        check: read_big_cache,
    },
    Case {
        name: "a_dataset_of_2000_caches_opens_and_iterates_under_ulimit_256",
        limits: AT_ULIMIT,
        setup: write_many_caches,
        check: iterate_many_caches,
    },
    Case {
        name: "a_payload_held_across_its_shards_eviction_keeps_its_bytes",
        limits: AT_ULIMIT,
        setup: |dir| write_cache(&dir.join("c"), "c", 0, 400, 2),
        check: hold_a_payload,
    },
    Case {
        name: "running_out_of_descriptors_is_a_resource_error",
        limits: AT_ULIMIT,
        setup: |dir| write_cache(&dir.join("c"), "c", 0, 40, 2),
        check: run_out_of_descriptors,
    },
    Case {
        name: "a_low_soft_limit_is_raised_toward_the_hard_one",
        limits: "ulimit -Sn 256 && ulimit -Hn 4096",
        setup: |dir| write_cache(&dir.join("c"), "c", 0, 1_200, 2),
        check: keep_every_shard_under_a_raised_limit,
    },
];

fn main() -> ExitCode {
    if let Ok(name) = std::env::var(CHILD_ENV) {
        let root = PathBuf::from(std::env::var(ROOT_ENV).unwrap());
        let case = CASES.iter().find(|c| c.name == name).unwrap();
        (case.check)(&root);
        return ExitCode::SUCCESS;
    }
    runner::run(&[
        (CASES[0].name, || in_child(&CASES[0])),
        (CASES[1].name, || in_child(&CASES[1])),
        (CASES[2].name, || in_child(&CASES[2])),
        (CASES[3].name, || in_child(&CASES[3])),
        (CASES[4].name, || in_child(&CASES[4])),
    ])
}

/// Writes `case`'s fixtures into a scratch directory and runs its checks in a child under
/// `case.limits`.
fn in_child(case: &Case) {
    let dir = scratch();
    (case.setup)(dir.path());
    let exe = std::env::current_exe().unwrap();
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{} && exec \"$0\"", case.limits))
        .arg(exe)
        .env(CHILD_ENV, case.name)
        .env(ROOT_ENV, dir.path())
        .status()
        .unwrap();
    assert!(status.success(), "child {} failed: {status}", case.name);
}

fn epoch_config(workers: usize) -> LoaderConfig {
    LoaderConfig {
        plan: PlanConfig {
            seed: 3,
            shuffle: Shuffle::Full,
            ..PlanConfig::default()
        },
        workers,
        prefetch: 64,
        ..LoaderConfig::default()
    }
}

const SHARDS: u64 = 5_000;
const PER_SHARD: u64 = 2;

fn write_big_cache(dir: &Path) {
    write_cache(&dir.join("big"), "big", 0, SHARDS * PER_SHARD, PER_SHARD);
    let cache = Cache::open(dir.join("big"), OpenOptions::default()).unwrap();
    assert_eq!(cache.manifest().description().shards.len() as u64, SHARDS);
}

fn read_big_cache(root: &Path) {
    let cache = Cache::open(root.join("big"), OpenOptions::default()).unwrap();
    let n = cache.len();
    let mut buf = SampleBuf::new();
    // Random order (a full-period stride), positional reads.
    for k in 0..n {
        let i = (k * 7_919) % n;
        assert_eq!(cache.read(i, &mut buf).unwrap().payload, payload(0, i));
        if k % 1_000 == 0 {
            assert_bounded("random reads");
        }
    }
    // Mapped reads, a different stride.
    for k in 0..n {
        let i = (k * 104_729) % n;
        assert_eq!(
            cache.read_mapped(i, &mut buf).unwrap().payload,
            payload(0, i)
        );
        if k % 1_000 == 0 {
            assert_bounded("mapped reads");
        }
    }
    assert!(cache.open_shard_files() <= HandlePool::global().capacity());
    // An epoch through the Loader with two workers.
    let dataset = Arc::new(Dataset::open(&[root.join("big")], OpenOptions::default()).unwrap());
    let mut seen = vec![false; n as usize];
    for (k, sample) in Loader::new(dataset, epoch_config(2)).unwrap().enumerate() {
        let sample = sample.unwrap();
        assert_eq!(*sample.payload, *payload(0, sample.key.sample_id));
        seen[sample.key.sample_id as usize] = true;
        if k % 1_000 == 0 {
            assert_bounded("loader epoch");
        }
    }
    assert!(seen.iter().all(|&s| s), "the epoch missed samples");
}

const CACHES: usize = 2_000;

fn write_many_caches(dir: &Path) {
    for c in 0..CACHES {
        write_cache(&dir.join(format!("c{c:04}")), &format!("src{c}"), c, 3, 4);
    }
}

fn iterate_many_caches(root: &Path) {
    let paths: Vec<PathBuf> = (0..CACHES).map(|c| root.join(format!("c{c:04}"))).collect();
    let dataset = Arc::new(Dataset::open(&paths, OpenOptions::default()).unwrap());
    // Open, the dataset holds no descriptor per cache.
    assert!(
        open_fds() <= SLACK,
        "{} descriptors after the open",
        open_fds()
    );
    let mut seen = std::collections::HashSet::new();
    for (k, sample) in Loader::new(Arc::clone(&dataset), epoch_config(2))
        .unwrap()
        .enumerate()
    {
        let sample = sample.unwrap();
        let cache = dataset.position(sample.key.cache_id).unwrap();
        assert_eq!(*sample.payload, *payload(cache, sample.key.sample_id));
        seen.insert((cache, sample.key.sample_id));
        if k % 500 == 0 {
            assert_bounded("loader epoch over 2,000 caches");
        }
    }
    assert_eq!(seen.len(), CACHES * 3);
}

fn hold_a_payload(root: &Path) {
    HandlePool::global().set_capacity(4);
    let cache = Cache::open(root.join("c"), OpenOptions::default()).unwrap();
    let mut held = SampleBuf::new();
    let mut buf = SampleBuf::new();
    let first = cache.read_mapped(0, &mut held).unwrap();
    let dsrt_reader::MappedPayload::InShard {
        map, offset, len, ..
    } = cache.read_mapped_location(1, &mut buf).unwrap()
    else {
        panic!("uncompressed payloads lie in the shard");
    };
    // Every other shard is read, so shard 0 is released many times over.
    for i in 2..400 {
        cache.read_mapped(i, &mut buf).unwrap();
    }
    assert!(cache.open_shard_files() <= 4);
    assert_eq!(first.payload, payload(0, 0));
    assert_eq!(&map[offset as usize..offset as usize + len], payload(0, 1));
}

fn run_out_of_descriptors(root: &Path) {
    let cache = Cache::open(root.join("c"), OpenOptions::default()).unwrap();
    // Every descriptor the limit allows is taken.
    let mut hogs = Vec::new();
    while let Ok(file) = std::fs::File::open("/dev/null") {
        hogs.push(file);
    }
    let mut buf = SampleBuf::new();
    let err = cache.read(5, &mut buf).unwrap_err();
    assert!(matches!(err, CacheError::Resource { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("out of file descriptors"), "{text}");
    assert!(text.contains("DSRT_MAX_OPEN_SHARDS"), "{text}");
    let err = Cache::open(root.join("c"), OpenOptions::default()).unwrap_err();
    assert!(matches!(err, CacheError::Resource { .. }), "{err:?}");
    drop(hogs);
    assert_eq!(cache.read(5, &mut buf).unwrap().payload, payload(0, 5));
}

/// The soft limit on open files, from `/proc/self/limits`.
fn soft_open_file_limit() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    line.split_whitespace().nth(3).unwrap().parse().unwrap()
}

fn keep_every_shard_under_a_raised_limit(root: &Path) {
    assert_eq!(soft_open_file_limit(), 256);
    let cache = Cache::open(root.join("c"), OpenOptions::default()).unwrap();
    // The pool, made on the first read, raised the soft limit to twice its capacity, which
    // the hard limit (4096) and the mappings allow: 2,048 handles, room for all 600 shards.
    let mut buf = SampleBuf::new();
    for k in 0..cache.len() {
        let i = (k * 7_919) % cache.len();
        assert_eq!(cache.read(i, &mut buf).unwrap().payload, payload(0, i));
    }
    assert_eq!(soft_open_file_limit(), 4_096);
    assert_eq!(HandlePool::global().capacity(), 2_048);
    assert_eq!(cache.open_shard_files(), 600, "every shard stays open");
    assert!(open_fds() > 600);
}
