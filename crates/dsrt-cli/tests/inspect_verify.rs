//! `dsrt inspect` and `dsrt verify` on good and damaged caches.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use common::*;
use serde_json::json;
use std::path::Path;

/// A directory holding cache `c` of 30 text samples over several lz4 shards.
fn packed() -> tempfile::TempDir {
    let lines: Vec<_> = (0..30)
        .map(|i| json!({"t": format!("sample number {i} ").repeat(10), "i": i}))
        .collect();
    let dir = dir_with(&[("in.jsonl", &jsonl(&lines))]);
    let args = [
        "pack",
        "--jsonl",
        "in.jsonl",
        "--payload-field",
        "t",
        "--payload-encoding",
        "text",
        "--out",
        "c",
        "--source",
        "verify-me",
        "--compression",
        "lz4",
        "--max-shard-bytes",
        "1024",
    ];
    dsrt_in(dir.path(), &args).ok();
    dir
}

fn flip_byte(path: &Path, at: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at as usize] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn inspect_json_describes_the_cache() {
    let dir = packed();
    let info = inspect(dir.path(), "c");
    assert_eq!(info["format_version"], 3);
    assert_eq!(info["source"], "verify-me");
    assert_eq!(info["samples"], 30);
    assert!(info["cache_id"].as_u64().unwrap() < 1 << 63);
    assert_eq!(
        info["schema"],
        json!([{"name": "i", "type": "int64", "nullable": false}])
    );
    let shards = info["shards"].as_array().unwrap();
    assert!(shards.len() > 1);
    assert_eq!(shards[0]["name"], "000000.bin");
    assert_eq!(shards[0]["algo"], "lz4");
    assert!(shards[0]["ratio"].as_f64().unwrap() > 1.0);
    let on_disk: u64 = shards.iter().map(|s| s["byte_len"].as_u64().unwrap()).sum();
    assert_eq!(info["shard_bytes"], on_disk);

    let text = dsrt_in(dir.path(), &["inspect", "c"]).ok().stdout_text();
    for word in [
        "version     3",
        "verify-me",
        "samples     30",
        "int64",
        "000000.bin",
        "lz4",
    ] {
        assert!(text.contains(word), "{word:?} missing from:\n{text}");
    }
}

#[test]
fn inspect_names_a_v2_cache_positional() {
    let dir = packed();
    let manifest_path = dir.path().join("c/manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    manifest["format_version"] = json!(2);
    manifest.as_object_mut().unwrap().remove("cache_id");
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    assert!(dsrt_in(dir.path(), &["inspect", "c"])
        .ok()
        .stdout_text()
        .contains("cache id    positional (v2)"));
    assert_eq!(
        inspect(dir.path(), "c")["cache_id"],
        serde_json::Value::Null
    );
}

#[test]
fn verify_passes_a_good_cache() {
    let dir = packed();
    let run = dsrt_in(dir.path(), &["verify", "c"]).ok();
    assert_eq!(run.stdout_text(), "c: ok\n");
    dsrt_in(dir.path(), &["verify", "--full", "c"]).ok();
    let report = dsrt_in(dir.path(), &["verify", "--full", "--json", "c"])
        .ok()
        .json();
    assert_eq!(
        report,
        json!({"valid": true, "full": true, "caches": [{"path": "c", "valid": true, "samples": 30, "error": null}]})
    );
}

#[test]
fn a_flipped_shard_byte_fails_full_verification() {
    let dir = packed();
    flip_byte(&shard_path(&dir.path().join("c"), 1), 20);
    // The default open hashes nothing (checksums are opt-in), so only --full sees it.
    dsrt_in(dir.path(), &["verify", "c"]).ok();
    let run = dsrt_in(dir.path(), &["verify", "--full", "c"]).fails(1);
    assert!(
        run.stderr.contains("c: shards/000001.bin SHA-256 is"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout_text(), "");
}

#[test]
fn full_verification_reads_every_record() {
    // A consistent manifest over a damaged record: the checksums are recomputed to match, so
    // only reading the sample finds the broken embedded metadata.
    let dir = packed();
    let cache = dir.path().join("c");
    let shard = shard_path(&cache, 0);
    // Byte 8 starts the first record's JSON envelope: `{"i":0}` becomes `{"i":1}` or similar.
    let mut bytes = std::fs::read(&shard).unwrap();
    let digit = bytes.iter().position(|&b| b == b'0').unwrap();
    bytes[digit] = b'7';
    std::fs::write(&shard, &bytes).unwrap();
    let manifest_path = cache.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    manifest["shards"][0]["sha256"] = json!(sha256_hex(&bytes));
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();

    let run = dsrt_in(dir.path(), &["verify", "--full", "c"]).fails(1);
    assert!(run.stderr.contains("sample 0"), "{}", run.stderr);
    assert!(
        run.stderr.contains("\"i\""),
        "the message names the column: {}",
        run.stderr
    );
}

/// SHA-256 through the system's sha256sum, so the test does not need a hashing crate.
fn sha256_hex(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, bytes).unwrap();
    let out = std::process::Command::new("sha256sum")
        .arg(&path)
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

#[test]
fn a_missing_manifest_fails_verification() {
    let dir = packed();
    std::fs::remove_file(dir.path().join("c/manifest.json")).unwrap();
    let run = dsrt_in(dir.path(), &["verify", "c"]).fails(1);
    assert!(
        run.stderr
            .contains("c: incomplete cache: manifest.json is missing"),
        "{}",
        run.stderr
    );
}

#[test]
fn verify_reports_each_cache_and_fails_if_any_fails() {
    let dir = packed();
    let run = dsrt_in(dir.path(), &["verify", "c", "no-such-cache", "c"]).fails(1);
    assert_eq!(run.stdout_text(), "c: ok\nc: ok\n");
    assert!(
        run.stderr
            .contains("dsrt: no-such-cache: open cache: No such file or directory"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("dsrt: 1 of 3 caches failed verification"),
        "{}",
        run.stderr
    );

    let report = dsrt_in(dir.path(), &["verify", "--json", "c", "no-such-cache"]);
    assert_eq!(report.code, 1);
    assert_eq!(report.stderr, "", "--json carries the errors itself");
    let report = report.json();
    assert_eq!(report["valid"], false);
    assert_eq!(report["caches"][0]["valid"], true);
    assert_eq!(report["caches"][1]["valid"], false);
    assert!(report["caches"][1]["error"]
        .as_str()
        .unwrap()
        .contains("no-such-cache"));
}

#[test]
fn a_truncated_shard_fails_even_the_default_check() {
    let dir = packed();
    let shard = shard_path(&dir.path().join("c"), 0);
    let bytes = std::fs::read(&shard).unwrap();
    std::fs::write(&shard, &bytes[..bytes.len() - 1]).unwrap();
    let run = dsrt_in(dir.path(), &["inspect", "c"]).fails(1);
    assert!(
        run.stderr.contains("shards/000000.bin is"),
        "{}",
        run.stderr
    );
    dsrt_in(dir.path(), &["verify", "c"]).fails(1);
}

#[test]
fn inspect_shows_a_token_caches_token_info() {
    use datasetrt::tokens::{TokenInfo, TokenWriter};
    let dir = tempfile::tempdir().unwrap();
    let info = TokenInfo {
        eos_id: Some(50_256),
        tokenizer: Some("gpt2".into()),
        ..TokenInfo::for_vocab(50_257)
    };
    let options = datasetrt::WriterOptions::new("tok", datasetrt::Schema::default());
    let mut writer = TokenWriter::create(dir.path().join("t"), options, info).unwrap();
    for n in [3usize, 0, 40] {
        let ids: Vec<u32> = (0..n as u32).collect();
        writer.add(&ids, &datasetrt::Row::new()).unwrap();
    }
    writer.finish().unwrap();
    let json = inspect(dir.path(), "t");
    assert_eq!(
        json["tokens"],
        json!({"dtype": "uint16", "vocab_size": 50257, "bos_id": null, "eos_id": 50256,
               "pad_id": null, "tokenizer": "gpt2", "total": 43})
    );
    let text = dsrt_in(dir.path(), &["inspect", "t"]).ok().stdout_text();
    assert!(
        text.contains("tokens      43 in all, uint16, vocab_size 50257, bos -, eos 50256"),
        "{text}"
    );
    let plain = packed();
    assert_eq!(
        inspect(plain.path(), "c")["tokens"],
        serde_json::Value::Null
    );
}
