//! The `dsrt` commands over a 5,000-shard cache and a dataset of 1,500 one-shard caches under
//! `ulimit -n 256`, and a limit too low for any read giving a runtime error, not a failed
//! verification.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: small known values

use datasetrt::{CacheWriter, Column, ColumnType, Row, Schema, WriterOptions};
use std::path::Path;
use std::process::{Command, Output};

fn payload(cache: usize, i: u64) -> Vec<u8> {
    let mut bytes = format!("c{cache}s{i}:").into_bytes();
    bytes.resize(40 + (i % 11) as usize, b'z');
    bytes
}

fn write(path: &Path, source: &str, cache: usize, samples: u64, max_shard_bytes: u64) {
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let options = WriterOptions::new(source, schema).max_shard_bytes(max_shard_bytes);
    let mut writer = CacheWriter::create(path, options).unwrap();
    for i in 0..samples {
        writer
            .add(&payload(cache, i), &Row::new().with("n", i as i64))
            .unwrap();
    }
    writer.finish().unwrap();
}

fn scratch() -> tempfile::TempDir {
    match Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").unwrap(),
        false => tempfile::tempdir().unwrap(),
    }
}

/// `dsrt args...` in `dir` under `ulimit -n limit`.
fn dsrt_limited(dir: &Path, limit: u32, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_dsrt"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn verify_iterate_and_cat_read_5000_shards_under_ulimit_256() {
    let dir = scratch();
    write(&dir.path().join("big"), "big", 0, 5_000, 1);
    let out = ok(&dsrt_limited(dir.path(), 256, &["verify", "--full", "big"]));
    assert_eq!(out.trim(), "big: ok");
    let keys = ok(&dsrt_limited(
        dir.path(),
        256,
        &[
            "iterate",
            "big",
            "--keys",
            "--workers",
            "2",
            "--shuffle",
            "full",
        ],
    ));
    assert_eq!(
        keys.lines().count(),
        5_000,
        "{}",
        &keys[..keys.len().min(400)]
    );
    for i in [0u64, 1_234, 4_999] {
        let out = dsrt_limited(dir.path(), 256, &["cat", "big", &i.to_string()]);
        ok(&out);
        assert_eq!(out.stdout, payload(0, i));
    }
}

#[test]
fn iterate_reads_a_dataset_of_1500_caches_under_ulimit_256() {
    let dir = scratch();
    let mut names = Vec::new();
    for c in 0..1_500 {
        let name = format!("c{c:04}");
        write(&dir.path().join(&name), &format!("src{c}"), c, 2, 1 << 20);
        names.push(name);
    }
    let mut args = vec!["iterate", "--keys"];
    args.extend(names.iter().map(String::as_str));
    let keys = ok(&dsrt_limited(dir.path(), 256, &args));
    assert_eq!(keys.lines().count(), 3_000);
}

#[test]
fn a_limit_below_one_read_is_a_runtime_error_naming_the_limit() {
    let dir = scratch();
    write(&dir.path().join("c"), "c", 0, 20, 1);
    // stdin, stdout and stderr take three of the four descriptors allowed: the first shard
    // read keeps the fourth (the handle pool keeps it for reuse), the second cannot open.
    for args in [
        &["verify", "--full", "c"][..],
        &[
            "--max-open-shards",
            "8",
            "iterate",
            "c",
            "--keys",
            "--workers",
            "0",
            "--shuffle",
            "sequential",
        ][..],
    ] {
        let out = dsrt_limited(dir.path(), 4, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("out of file descriptors"),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("--max-open-shards"), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("failed verification"),
            "{args:?}: {stderr}"
        );
    }
}
