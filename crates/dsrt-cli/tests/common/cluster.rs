//! Jobs of many ranks as many `dsrt iterate` processes at once, each node a local cache
//! directory of its own, and what they read: keys per rank, states, shard files per node.
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output

use super::command;
use datasetrt::{Cache, CacheWriter, Column, ColumnType, OpenOptions, Row, Schema, WriterOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// A cache written for a job: its path and the shard of each sample.
pub(crate) struct JobCache {
    pub(crate) path: PathBuf,
    pub(crate) shard_of: Vec<u64>,
    pub(crate) shard_bytes: u64,
}

/// Writes a cache of `shards` shards of exactly `per_shard` samples of 1,000 bytes each.
pub(crate) fn write_equal_shards(path: &Path, shards: u64, per_shard: u64) -> JobCache {
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let payload = |i: u64| {
        let mut bytes = format!("sample {i:08} ").into_bytes();
        bytes.resize(1000, b'.');
        bytes
    };
    // Record size and shard overhead, measured on two probe caches.
    let probe = |n: u64| {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("p");
        let mut writer = CacheWriter::create(&at, WriterOptions::new("p", schema.clone())).unwrap();
        for i in 0..n {
            writer
                .add(&payload(i), &Row::new().with("n", i as i64))
                .unwrap();
        }
        writer.finish().unwrap();
        let cache = Cache::open(&at, OpenOptions::default()).unwrap();
        cache.manifest().description().shards[0].byte_len
    };
    // A record grows by a byte per digit of its sample id and metadata (8 bytes at most
    // below 10,000 samples); the slack takes that without room for one more record.
    let record = probe(2) - probe(1);
    assert!(shards * per_shard < 10_000);
    let max_shard_bytes = per_shard * (record + 8) + record / 4;
    let options = WriterOptions::new("job", schema).max_shard_bytes(max_shard_bytes);
    let mut writer = CacheWriter::create(path, options).unwrap();
    for i in 0..shards * per_shard {
        writer
            .add(&payload(i), &Row::new().with("n", i as i64))
            .unwrap();
    }
    writer.finish().unwrap();
    let cache = Cache::open(path, OpenOptions::default()).unwrap();
    let shard_of: Vec<u64> = (0..cache.len())
        .map(|i| cache.index().row(i).unwrap().shard_id)
        .collect();
    let shards_written = cache.manifest().description().shards.len() as u64;
    assert_eq!(shards_written, shards, "{per_shard} samples per shard");
    let shard_bytes = cache
        .manifest()
        .description()
        .shards
        .iter()
        .map(|s| s.byte_len)
        .sum();
    JobCache {
        path: path.to_path_buf(),
        shard_of,
        shard_bytes,
    }
}

/// What one rank read.
pub(crate) struct RankRun {
    pub(crate) keys: Vec<(u64, u64)>,
    pub(crate) state: String,
}

/// A job's topology.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Job {
    pub(crate) nodes: u64,
    pub(crate) ranks_per_node: u64,
}

impl Job {
    pub(crate) fn world(&self) -> u64 {
        self.nodes * self.ranks_per_node
    }
}

/// Runs every rank of `job` over `source` at once (`dsrt iterate --keys --save-state`), node
/// `n`'s ranks with `--cache-dir root/name-node{n}` when `cache_dirs`, plus `extra` flags.
pub(crate) fn run_job(
    root: &Path,
    name: &str,
    source: &str,
    job: Job,
    cache_dirs: bool,
    extra: &[String],
) -> Vec<RankRun> {
    let world = job.world().to_string();
    let per_node = job.ranks_per_node.to_string();
    let children: Vec<_> = (0..job.world())
        .map(|rank| {
            let state = root.join(format!("{name}-state-{rank}.json"));
            let mut command = command();
            command
                .args(["iterate", source, "--keys", "--workers", "2"])
                .args(["--world-size", &world, "--ranks-per-node", &per_node])
                .args(["--rank", &rank.to_string()])
                .arg("--save-state")
                .arg(&state)
                .args(extra)
                .current_dir(root)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if cache_dirs {
                let node = rank / job.ranks_per_node;
                command.arg("--cache-dir").arg(node_dir(root, name, node));
            }
            (command.spawn().unwrap(), state)
        })
        .collect();
    children
        .into_iter()
        .map(|(child, state)| {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let keys = String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(|line| {
                    let (c, s) = line.split_once(' ').unwrap();
                    (c.parse().unwrap(), s.parse().unwrap())
                })
                .collect();
            RankRun {
                keys,
                state: std::fs::read_to_string(state).unwrap(),
            }
        })
        .collect()
}

/// Node `node`'s local cache directory in job `name`.
pub(crate) fn node_dir(root: &Path, name: &str, node: u64) -> PathBuf {
    root.join(format!("{name}-node{node}"))
}

/// Per shard, the nodes whose ranks read it.
pub(crate) fn readers(
    cache: &JobCache,
    job: Job,
    runs: &[RankRun],
) -> BTreeMap<u64, BTreeSet<u64>> {
    let mut readers: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for (rank, run) in runs.iter().enumerate() {
        for &(_, sample) in &run.keys {
            readers
                .entry(cache.shard_of[sample as usize])
                .or_default()
                .insert(rank as u64 / job.ranks_per_node);
        }
    }
    readers
}

/// Shard files under `dir` (recursively, `shards/*.bin`), by file name, with their sizes.
pub(crate) fn shard_files(dir: &Path) -> BTreeMap<String, u64> {
    let mut found = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(shard_files(&path));
        } else if path.parent().and_then(Path::file_name) == Some("shards".as_ref())
            && path.extension().is_some_and(|x| x == "bin")
            // Not the shard cache's own files (seals, partial downloads).
            && !entry.file_name().to_string_lossy().starts_with(".shard-cache")
        {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            found.insert(name, entry.metadata().unwrap().len());
        }
    }
    found
}

/// Checks a whole epoch of `job`: equal counts, every sample read, padding fewer than one round.
pub(crate) fn assert_covers(runs: &[RankRun], samples: u64) {
    let count = runs[0].keys.len();
    assert!(runs.iter().all(|r| r.keys.len() == count), "equal counts");
    let all: BTreeSet<u64> = runs
        .iter()
        .flat_map(|r| r.keys.iter().map(|k| k.1))
        .collect();
    assert_eq!(all.len() as u64, samples, "the ranks' keys cover the epoch");
    assert!(((count * runs.len()) as u64) < samples + runs.len() as u64);
}

/// The elastic-resume checks shared by the local and S3 runs: 4 nodes x 2 ranks stop at 40%,
/// every rank's state is equal, and resuming from one of them on 3 x 2, 6 x 2 and 1 x 1 reads
/// exactly the rest of the epoch plus fewer than one round of padding.
pub(crate) fn stop_and_resume_on_other_topologies(
    root: &Path,
    source: &str,
    cache: &JobCache,
    cache_dirs: bool,
) {
    let samples = cache.shard_of.len() as u64;
    let first = Job {
        nodes: 4,
        ranks_per_node: 2,
    };
    let steps = samples / first.world();
    let limit = (steps * 2 / 5).to_string();
    let stopped = run_job(
        root,
        "stop",
        source,
        first,
        cache_dirs,
        &["--limit".into(), limit],
    );
    let consumed: BTreeSet<u64> = stopped
        .iter()
        .flat_map(|r| r.keys.iter().map(|k| k.1))
        .collect();
    assert_eq!(
        consumed.len() as u64,
        (steps * 2 / 5) * first.world(),
        "no repeat before the end"
    );
    assert!(
        stopped.iter().all(|r| r.state == stopped[0].state),
        "every rank saves the same state"
    );
    let saved = root.join("stop-state-3.json");
    for (nodes, ranks_per_node) in [(3, 2), (6, 2), (1, 1)] {
        let job = Job {
            nodes,
            ranks_per_node,
        };
        let name = format!("resume{nodes}x{ranks_per_node}");
        let extra = ["--resume".to_string(), saved.to_str().unwrap().to_string()];
        let runs = run_job(root, &name, source, job, cache_dirs, &extra);
        let count = runs[0].keys.len();
        assert!(
            runs.iter().all(|r| r.keys.len() == count),
            "{name}: equal counts"
        );
        let read: Vec<u64> = runs
            .iter()
            .flat_map(|r| r.keys.iter().map(|k| k.1))
            .collect();
        let distinct: BTreeSet<u64> = read.iter().copied().collect();
        let rest: BTreeSet<u64> = (0..samples).filter(|s| !consumed.contains(s)).collect();
        assert_eq!(distinct, rest, "{name}: exactly the rest of the epoch");
        assert!(
            (read.len() as u64) < rest.len() as u64 + job.world(),
            "{name}: {} read for {} left",
            read.len(),
            rest.len()
        );
        let shared = readers(cache, job, &runs)
            .values()
            .filter(|n| n.len() > 1)
            .count();
        eprintln!("{name}: {shared} shards read by more than one node");
    }
}
