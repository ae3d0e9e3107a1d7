//! `dsrt profile`: a loader over a local cache keeps up with a consumer taking 50 batches a
//! second, and the report (`--json` and human) says so with every figure; with `--seq-len`
//! the same over a token cache, in tokens.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code.

mod common;

use common::*;
use datasetrt::tokens::{TokenInfo, TokenWriter};
use datasetrt::{Row, Schema, WriterOptions};

fn check_keeps_up(report: &serde_json::Value) {
    assert_eq!(report["keeps_up"], true, "{report}");
    assert!(report["stall_share"].as_f64().unwrap() < 0.05, "{report}");
    assert!(report["time_to_first_batch_s"].as_f64().unwrap() > 0.0);
    // About 50 a second for 1.5 s.
    let batches = report["batches"].as_u64().unwrap();
    assert!((50..=80).contains(&batches), "{report}");
    let stages: Vec<&str> = report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[0].as_str().unwrap())
        .collect();
    for stage in ["open", "plan", "download", "read", "assemble"] {
        assert!(stages.contains(&stage), "{stages:?}");
    }
}

#[test]
fn a_local_loader_keeps_up_with_fifty_batches_a_second() {
    let dir = tempfile::tempdir().unwrap();
    pack_text(dir.path(), "train", 5000, 4096);
    let args = [
        "profile",
        "train",
        "--batch-size",
        "16",
        "--seconds",
        "1.5",
        "--consumer-rate",
        "50",
        "--json",
    ];
    let report = dsrt_in(dir.path(), &args).ok().json();
    check_keeps_up(&report);
    assert_eq!(report["samples"].as_u64().unwrap() % 16, 0, "{report}");
    assert!(report["bytes_read"].as_u64().unwrap() > 0);
    assert_eq!(report["source_shares"], serde_json::json!([1.0]));

    let human = dsrt_in(dir.path(), &args[..args.len() - 1])
        .ok()
        .stdout_text();
    assert!(
        human.starts_with("keeps up (consumer at 50 batches/s)"),
        "{human}"
    );
    assert!(human.contains("stall share"), "{human}");
}

#[test]
fn token_rows_are_profiled_in_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Schema::new(vec![]).unwrap();
    let options = WriterOptions::new("tokens", schema).max_shard_bytes(16 << 10);
    let path = dir.path().join("tokens");
    let mut writer = TokenWriter::create(&path, options, TokenInfo::for_vocab(1000)).unwrap();
    for doc in 0..2000u32 {
        let ids: Vec<u32> = (0..(doc % 300 + 1)).map(|i| (doc + i) % 1000).collect();
        writer.add(&ids, &Row::new()).unwrap();
    }
    writer.finish().unwrap();
    let args = [
        "profile",
        "tokens",
        "--seq-len",
        "64",
        "--batch-size",
        "4",
        "--seconds",
        "1.5",
        "--consumer-rate",
        "50",
        "--json",
    ];
    let report = dsrt_in(dir.path(), &args).ok().json();
    check_keeps_up(&report);
    let samples = report["samples"].as_u64().unwrap();
    assert_eq!(report["tokens"].as_u64().unwrap(), samples * 64);
    assert_eq!(samples, report["batches"].as_u64().unwrap() * 4);
}
