//! Jobs across nodes on local caches: `dsrt iterate --ranks-per-node` as many processes at
//! once (each shard read by one node, equal counts, the epoch covered), elastic resume on other
//! topologies, order independent of workers and prefetch, and `dsrt plan` (its counts equal
//! what the ranks read; a billion-sample plan and half a billion token documents in bounded
//! memory). The S3 runs are in `s3.rs`.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code.

mod common;

use common::cluster::{
    assert_covers, readers, run_job, stop_and_resume_on_other_topologies, write_equal_shards, Job,
};
use common::{command, dsrt_in};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

#[test]
fn four_nodes_of_two_ranks_read_disjoint_shards_covering_the_epoch() {
    let root = tempfile::tempdir().unwrap();
    let cache = write_equal_shards(&root.path().join("c"), 64, 50);
    let job = Job {
        nodes: 4,
        ranks_per_node: 2,
    };
    let runs = run_job(root.path(), "epoch", "c", job, false, &[]);
    assert_covers(&runs, 3200);
    let readers = readers(&cache, job, &runs);
    assert_eq!(readers.len(), 64);
    assert!(
        readers.values().all(|nodes| nodes.len() == 1),
        "each shard is read by one node: {readers:?}"
    );
}

#[test]
fn a_job_stopped_at_40_percent_resumes_on_any_topology_with_exactly_the_rest() {
    let root = tempfile::tempdir().unwrap();
    let cache = write_equal_shards(&root.path().join("c"), 64, 50);
    stop_and_resume_on_other_topologies(root.path(), "c", &cache, false);
}

#[test]
fn each_ranks_order_does_not_depend_on_workers_or_prefetch() {
    let root = tempfile::tempdir().unwrap();
    write_equal_shards(&root.path().join("c"), 16, 37);
    let keys = |rank: &str, workers: &str, prefetch: &str| {
        let args = [
            "iterate",
            "c",
            "--keys",
            "--world-size",
            "6",
            "--ranks-per-node",
            "3",
            "--rank",
            rank,
            "--workers",
            workers,
            "--prefetch",
            prefetch,
            "--seed",
            "11",
        ];
        dsrt_in(root.path(), &args).ok().stdout_text()
    };
    for rank in ["0", "4"] {
        let reference = keys(rank, "0", "512");
        assert!(reference.lines().count() > 90);
        for (workers, prefetch) in [("1", "1"), ("3", "7"), ("3", "512"), ("0", "3")] {
            assert_eq!(
                keys(rank, workers, prefetch),
                reference,
                "rank {rank}, {workers} workers, prefetch {prefetch}"
            );
        }
    }
}

/// Per node, the shards its ranks read according to `dsrt iterate`.
fn iterated_shards(
    root: &std::path::Path,
    cache: &common::cluster::JobCache,
    job: Job,
    flags: &[String],
) -> Vec<BTreeSet<u64>> {
    let runs = run_job(root, "plan-check", "c", job, false, flags);
    let mut per_node = vec![BTreeSet::new(); job.nodes as usize];
    for (shard, nodes) in readers(cache, job, &runs) {
        for node in nodes {
            per_node[node as usize].insert(shard);
        }
    }
    per_node
}

#[test]
fn plan_counts_equal_what_the_ranks_read() {
    let root = tempfile::tempdir().unwrap();
    let cache = write_equal_shards(&root.path().join("c"), 24, 33);
    let manifest_bytes: Vec<u64> = {
        let info = dsrt_in(root.path(), &["inspect", "c", "--json"])
            .ok()
            .json();
        info["shards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["byte_len"].as_u64().unwrap())
            .collect()
    };
    let cases: [(Job, &[&str]); 5] = [
        (
            Job {
                nodes: 4,
                ranks_per_node: 2,
            },
            &[],
        ),
        (
            Job {
                nodes: 3,
                ranks_per_node: 2,
            },
            &["--seed", "5", "--window-shards", "3"],
        ),
        (
            Job {
                nodes: 5,
                ranks_per_node: 1,
            },
            &["--policy", "drop"],
        ),
        (
            Job {
                nodes: 2,
                ranks_per_node: 3,
            },
            &["--shuffle", "full"],
        ),
        (
            Job {
                nodes: 3,
                ranks_per_node: 1,
            },
            &[
                "--replacement",
                "--samples-per-epoch",
                "500",
                "--weights",
                "1",
            ],
        ),
    ];
    for (job, flags) in cases {
        let flags: Vec<String> = flags.iter().map(|f| (*f).to_string()).collect();
        let per_node = iterated_shards(root.path(), &cache, job, &flags);
        let mut args: Vec<String> = ["plan", "c", "--json", "--world-size"]
            .iter()
            .map(|s| (*s).to_string())
            .collect();
        args.extend([
            job.world().to_string(),
            "--ranks-per-node".into(),
            job.ranks_per_node.to_string(),
        ]);
        args.extend(flags.iter().cloned());
        let borrowed: Vec<&str> = args.iter().map(String::as_str).collect();
        let report = dsrt_in(root.path(), &borrowed).ok().json();
        let nodes = report["nodes"].as_array().unwrap();
        assert_eq!(nodes.len() as u64, job.nodes);
        for (node, shards) in per_node.iter().enumerate() {
            assert_eq!(
                nodes[node]["shards"].as_u64().unwrap(),
                shards.len() as u64,
                "{job:?} {flags:?} node {node}"
            );
            let bytes: u64 = shards.iter().map(|&s| manifest_bytes[s as usize]).sum();
            assert_eq!(
                nodes[node]["bytes"].as_u64().unwrap(),
                bytes,
                "{job:?} {flags:?} node {node}"
            );
        }
        let mut count: BTreeMap<u64, u64> = BTreeMap::new();
        for &shard in per_node.iter().flatten() {
            *count.entry(shard).or_default() += 1;
        }
        let shared = count.values().filter(|&&c| c > 1).count() as u64;
        assert_eq!(
            report["shards_read_by_more_than_one_node"]
                .as_u64()
                .unwrap(),
            shared,
            "{job:?} {flags:?}"
        );
        let downloaded: u64 = nodes.iter().map(|n| n["bytes"].as_u64().unwrap()).sum();
        assert_eq!(report["downloaded_bytes"].as_u64().unwrap(), downloaded);
        let mut iterate: Vec<String> = ["iterate", "c", "--json", "--world-size"]
            .iter()
            .map(|s| (*s).to_string())
            .collect();
        iterate.extend([
            job.world().to_string(),
            "--ranks-per-node".into(),
            job.ranks_per_node.to_string(),
        ]);
        iterate.extend(flags.iter().cloned());
        let iterate: Vec<&str> = iterate.iter().map(String::as_str).collect();
        let runs_steps = dsrt_in(root.path(), &iterate).ok().json();
        assert_eq!(
            report["steps_per_rank"], runs_steps["samples_per_rank"],
            "{job:?} {flags:?}"
        );
    }
    let _ = cache;
}

#[test]
fn a_billion_sample_plan_takes_under_a_minute_in_256_mb() {
    // `ulimit -v` caps the address space, so the process's resident memory stays below it too.
    let started = Instant::now();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 262144 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_dsrt"))
        .args([
            "plan",
            "--synthetic",
            "1000000000,100000",
            "--world-size",
            "512",
            "--ranks-per-node",
            "8",
            "--json",
        ])
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(elapsed.as_secs() < 60, "{elapsed:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["steps_per_rank"], 1_953_125);
    assert_eq!(report["padding"], 0);
    assert!(
        report["shards_read_by_more_than_one_node"]
            .as_u64()
            .unwrap()
            < 64,
        "{report}"
    );
    assert!(
        report["egress_factor"].as_f64().unwrap() <= 1.01,
        "{report}"
    );
    assert!(report["peak_local_bytes_per_node"].as_u64().unwrap() > 0);
    assert!(report["plan_bytes"].as_u64().unwrap() < 8 << 20, "{report}");
    let _ = command;
}

#[test]
fn a_plan_of_half_a_billion_token_documents_takes_under_a_minute_in_256_mb() {
    let started = Instant::now();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 262144 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_dsrt"))
        .args([
            "plan",
            "--synthetic-tokens",
            "500000000,100000,2000",
            "--seq-len",
            "2048",
            "--world-size",
            "512",
            "--ranks-per-node",
            "8",
            "--json",
        ])
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(elapsed.as_secs() < 60, "{elapsed:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tokens = report["epoch_tokens"].as_u64().unwrap();
    let rows = report["rows"].as_u64().unwrap();
    assert!((tokens as f64 / 5e8 - 2000.0).abs() < 20.0, "{report}");
    assert_eq!(rows, tokens.div_ceil(2048));
    assert_eq!(
        report["rows_per_rank"].as_u64().unwrap(),
        rows.div_ceil(512)
    );
    assert!(report["padding_rows"].as_u64().unwrap() < 512);
    assert_eq!(report["shards_read"], 100_000);
    // Each of the 63 node boundaries splits one shard (two at most).
    let shared = report["shards_read_by_more_than_one_node"]
        .as_u64()
        .unwrap();
    assert!(shared <= 2 * 63, "{report}");
    assert!(
        report["egress_factor"].as_f64().unwrap() <= 1.01,
        "{report}"
    );
    assert!(
        report["plan_bytes"].as_u64().unwrap() < 32 << 20,
        "{report}"
    );
    let shuffle = &report["shuffle"];
    assert!(
        shuffle["physical_rank_correlation"].as_f64().unwrap().abs() < 0.1,
        "{report}"
    );
    assert_eq!(report["sources"][0]["share"], 1.0);
    assert_eq!(report["nodes"].as_array().unwrap().len(), 64);
}

#[test]
fn a_token_plan_of_packed_caches_counts_their_tokens_and_weights() {
    let root = tempfile::tempdir().unwrap();
    let mut lengths = Vec::new();
    for (name, docs) in [("a", 300u64), ("b", 120)] {
        let lines: String = (0..docs)
            .map(|d| {
                let n = 1 + (d * 7919) % 97;
                lengths.push(n);
                let ids: Vec<u64> = (0..n).map(|i| (d + i) % 1000).collect();
                format!("{}\n", serde_json::json!({ "ids": ids }))
            })
            .collect();
        std::fs::write(root.path().join(format!("{name}.jsonl")), lines).unwrap();
        let jsonl = format!("{name}.jsonl");
        let args = [
            "pack",
            "--jsonl",
            &jsonl,
            "--tokens-column",
            "ids",
            "--out",
            name,
            "--vocab-size",
            "1000",
            "--max-shard-bytes",
            "4096",
            "--source",
            name,
        ];
        dsrt_in(root.path(), &args).ok();
    }
    let args = [
        "plan",
        "a",
        "b",
        "--seq-len",
        "64",
        "--eos-id",
        "999",
        "--weights",
        "0.7,0.3",
        "--world-size",
        "4",
        "--ranks-per-node",
        "2",
        "--json",
    ];
    let report: serde_json::Value =
        serde_json::from_str(&dsrt_in(root.path(), &args).ok().stdout_text()).unwrap();
    // Every document gets an EOS (none ends with token 999).
    let natural: u64 = lengths.iter().map(|n| n + 1).sum();
    let budgets: u64 = report["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["budget"].as_u64().unwrap())
        .sum();
    assert_eq!(budgets, natural, "{report}");
    let share = report["sources"][0]["share"].as_f64().unwrap();
    assert!((share - 0.7).abs() < 0.02, "{report}");
    let tokens = report["epoch_tokens"].as_u64().unwrap();
    assert_eq!(report["rows"].as_u64().unwrap(), tokens.div_ceil(64));
    assert_eq!(
        report["rows_per_rank"].as_u64().unwrap(),
        tokens.div_ceil(64).div_ceil(4)
    );
    assert!(report["shards_read"].as_u64().unwrap() > 4, "{report}");
}

#[test]
fn token_plans_refuse_sample_budgets_and_bad_shapes() {
    let root = tempfile::tempdir().unwrap();
    let run = dsrt_in(
        root.path(),
        &["plan", "--synthetic-tokens", "10,20,5", "--seq-len", "8"],
    )
    .fails(2);
    assert!(run.stderr.contains("shards"), "{}", run.stderr);
    let run = dsrt_in(root.path(), &["plan", "--synthetic-tokens", "100,2,5"]).fails(2);
    assert!(run.stderr.contains("--seq-len"), "{}", run.stderr);
    let args = [
        "plan",
        "--synthetic-tokens",
        "100,2,5",
        "--seq-len",
        "8",
        "--samples-per-epoch",
        "5",
    ];
    let run = dsrt_in(root.path(), &args).fails(1);
    assert!(run.stderr.contains("--tokens-per-epoch"), "{}", run.stderr);
    let run = dsrt_in(
        root.path(),
        &["plan", "--synthetic-tokens", "100,2,5", "--seq-len", "0"],
    )
    .fails(1);
    assert!(run.stderr.contains("seq_len"), "{}", run.stderr);
}

#[test]
fn plan_refuses_bad_topologies_and_states() {
    let root = tempfile::tempdir().unwrap();
    write_equal_shards(&root.path().join("c"), 4, 10);
    let run = dsrt_in(
        root.path(),
        &["plan", "c", "--world-size", "6", "--ranks-per-node", "4"],
    )
    .fails(1);
    assert!(run.stderr.contains("--ranks-per-node 4"), "{}", run.stderr);
    std::fs::write(
        root.path().join("s.json"),
        r#"{"seed":1,"epoch":0,"position":0,"epoch_len":40}"#,
    )
    .unwrap();
    let run = dsrt_in(root.path(), &["plan", "c", "--resume", "s.json"]).fails(1);
    assert!(run.stderr.contains("seed 1"), "{}", run.stderr);
    let run = dsrt_in(root.path(), &["plan", "--synthetic", "10,20"]).fails(2);
    assert!(run.stderr.contains("shards"), "{}", run.stderr);
}
