//! `dsrt pack --from-dir`: one sample per regular file, with `path` and `size` metadata.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use common::*;
use serde_json::json;

#[test]
fn packs_every_regular_file_in_path_order() {
    let big: Vec<u8> = (0..20_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let files: [(&str, &[u8]); 5] = [
        ("tree/b.txt", b"bee"),
        ("tree/a/z.bin", &big),
        ("tree/a/y", b""),
        ("tree/c/d/e.txt", "é".as_bytes()),
        ("tree/a.txt", b"A"),
    ];
    let dir = dir_with(&files);
    std::os::unix::fs::symlink("b.txt", dir.path().join("tree/link")).unwrap();
    let args = [
        "pack",
        "--from-dir",
        "tree",
        "--out",
        "c",
        "--source",
        "files",
        "--compression",
        "lz4",
        "--max-shard-bytes",
        "8KiB",
        "--json",
    ];
    let report = dsrt_in(dir.path(), &args).ok().json();
    assert_eq!(report["samples"], 5);
    assert_eq!(report["payload_bytes"], 20_000 + 3 + 2 + 1);
    assert!(
        report["compression_ratio"].as_f64().unwrap() > 1.0,
        "{report}"
    );

    assert_eq!(
        schema_of(dir.path(), "c"),
        [col("path", "utf8", false), col("size", "int64", false)]
    );
    let expected = [
        ("a/y", b"".as_slice()),
        ("a/z.bin", &big),
        ("a.txt", b"A"),
        ("b.txt", b"bee"),
        ("c/d/e.txt", "é".as_bytes()),
    ];
    for (i, (path, bytes)) in expected.iter().enumerate() {
        let meta = dsrt_in(dir.path(), &["cat", "c", &i.to_string(), "--metadata"])
            .ok()
            .json();
        assert_eq!(meta, json!({"path": path, "size": bytes.len()}));
        assert_eq!(cat(dir.path(), "c", i as u64), *bytes, "sample {i}");
    }
    dsrt_in(dir.path(), &["verify", "--full", "c"]).ok();
}

#[test]
fn from_dir_refuses_jsonl_only_flags_and_a_missing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let run = dsrt_in(
        dir.path(),
        &[
            "pack",
            "--from-dir",
            ".",
            "--payload-field",
            "x",
            "--out",
            "c",
            "--source",
            "s",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = dsrt_in(
        dir.path(),
        &["pack", "--from-dir", "nope", "--out", "c", "--source", "s"],
    )
    .fails(1);
    assert!(
        run.stderr.contains("nope: read directory"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("c").exists());
}
