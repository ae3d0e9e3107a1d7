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

use dsrt_atlas_test_runner::files_below as tree_bytes;

#[test]
fn packs_an_image_folder_with_labels_the_same_for_any_number_of_jobs() {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for i in 0..300u32 {
        let class = ["tulip", "daisy", "rose"][(i % 3) as usize];
        let bytes: Vec<u8> = (0..(i * 37 % 4000)).map(|j| (j * i % 251) as u8).collect();
        files.push((format!("flowers/{class}/{i:04}.jpg"), bytes));
    }
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let dir = dir_with(&refs);
    for jobs in ["1", "2", "3"] {
        let out = format!("c{jobs}");
        let args = [
            "pack",
            "--from-imagefolder",
            "flowers",
            "--out",
            &out,
            "--source",
            "flowers",
            "--compression",
            "lz4",
            "--max-shard-bytes",
            "16KiB",
            "--jobs",
            jobs,
            "--json",
        ];
        let report = dsrt_in(dir.path(), &args).ok().json();
        assert_eq!(report["samples"], 300);
    }
    let one = tree_bytes(&dir.path().join("c1"));
    assert!(one.len() > 5, "several shards");
    assert_eq!(one, tree_bytes(&dir.path().join("c2")));
    assert_eq!(one, tree_bytes(&dir.path().join("c3")));
    assert_eq!(
        schema_of(dir.path(), "c2"),
        [
            col("label", "int64", false),
            col("class", "utf8", false),
            col("path", "utf8", false)
        ]
    );
    // Classes in sorted order: daisy 0, rose 1, tulip 2; daisy's files first.
    let first = dsrt_in(dir.path(), &["cat", "c3", "0", "--metadata"])
        .ok()
        .json();
    assert_eq!(
        first,
        json!({"label": 0, "class": "daisy", "path": "daisy/0001.jpg"})
    );
    assert_eq!(cat(dir.path(), "c3", 0), files[1].1);
    let last = dsrt_in(dir.path(), &["cat", "c3", "299", "--metadata"])
        .ok()
        .json();
    assert_eq!(
        last,
        json!({"label": 2, "class": "tulip", "path": "tulip/0297.jpg"})
    );
    dsrt_in(dir.path(), &["verify", "--full", "c3"]).ok();
}

#[test]
fn an_image_folder_with_a_stray_file_is_refused_and_nothing_is_written() {
    let dir = dir_with(&[("f/cat/1.jpg", b"x"), ("f/readme.txt", b"?")]);
    let run = dsrt_in(
        dir.path(),
        &[
            "pack",
            "--from-imagefolder",
            "f",
            "--out",
            "c",
            "--source",
            "s",
        ],
    )
    .fails(1);
    assert!(
        run.stderr.contains("readme.txt") && run.stderr.contains("no class"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("c").exists());
    let run = dsrt_in(
        dir.path(),
        &[
            "pack",
            "--from-imagefolder",
            "f",
            "--jobs",
            "0",
            "--out",
            "c",
            "--source",
            "s",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn ctrl_c_stops_a_pack_and_removes_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    let chunk = vec![7u8; 8192];
    for i in 0..20_000 {
        let sub = root.join(format!("{}", i % 50));
        if i < 50 {
            std::fs::create_dir_all(&sub).unwrap();
        }
        std::fs::write(sub.join(format!("{i}.bin")), &chunk).unwrap();
    }
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_dsrt"))
        .current_dir(dir.path())
        .args([
            "pack",
            "--from-dir",
            "tree",
            "--out",
            "c",
            "--source",
            "s",
            "--jobs",
            "1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the pack has begun writing, interrupt it as a terminal's Ctrl-C would.
    let started = std::time::Instant::now();
    while !dir.path().join("c/shards").exists() {
        assert!(
            started.elapsed().as_secs() < 60,
            "the pack never started writing"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("cancelled"), "{stderr}");
    assert!(
        !dir.path().join("c").exists(),
        "the partial cache was removed"
    );
}
