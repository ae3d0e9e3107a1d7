//! `dsrt pack --jsonl` on real files: payload encodings, inferred and given schemas, the round
//! trip through `dsrt cat`, and the errors a user meets.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;

use common::*;
use serde_json::json;

/// Payloads of every awkward shape: empty, binary with NUL and high bytes, larger than a shard.
fn payloads() -> Vec<Vec<u8>> {
    vec![
        b"hello".to_vec(),
        Vec::new(),
        (0..=255u8).collect(),
        (0..9000u32).map(|i| (i % 7) as u8).collect(),
    ]
}

#[test]
fn path_payloads_round_trip_through_cat() {
    let payloads = payloads();
    let files: Vec<(String, Vec<u8>)> = payloads
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("data/p{i}.bin"), p.clone()))
        .collect();
    let lines: Vec<_> = files
        .iter()
        .enumerate()
        .map(|(i, (name, _))| json!({"file": name, "n": i}))
        .collect();
    let mut all: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_slice()))
        .collect();
    let jsonl_bytes = jsonl(&lines);
    all.push(("samples.jsonl", &jsonl_bytes));
    let dir = dir_with(&all);
    for compression in ["none", "lz4"] {
        let out = format!("cache-{compression}");
        let args = [
            "pack",
            "--jsonl",
            "samples.jsonl",
            "--payload-field",
            "file",
            "--out",
            &out,
            "--source",
            "t",
            "--compression",
            compression,
            "--max-shard-bytes",
            "256",
            "--json",
        ];
        let report = dsrt_in(dir.path(), &args).ok().json();
        assert_eq!(report["samples"], 4);
        assert_eq!(report["compression"], compression);
        assert!(report["shards"].as_u64().unwrap() >= 2, "{report}");
        let total: usize = payloads.iter().map(Vec::len).sum();
        assert_eq!(report["payload_bytes"], total);
        for (i, payload) in payloads.iter().enumerate() {
            assert_eq!(
                &cat(dir.path(), &out, i as u64),
                payload,
                "sample {i} with {compression}"
            );
        }
        dsrt_in(dir.path(), &["verify", "--full", &out]).ok();
    }
}

#[test]
fn payload_paths_are_relative_to_the_jsonl_file() {
    let lines = jsonl(&[json!({"file": "blob.bin", "k": 1})]);
    let dir = dir_with(&[("sub/blob.bin", b"in sub"), ("sub/list.jsonl", &lines)]);
    dsrt_in(
        dir.path(),
        &[
            "pack",
            "--jsonl",
            "sub/list.jsonl",
            "--payload-field",
            "file",
            "--out",
            "c",
            "--source",
            "t",
        ],
    )
    .ok();
    assert_eq!(cat(dir.path(), "c", 0), b"in sub");
}

#[test]
fn base64_and_text_payloads() {
    let lines = jsonl(&[
        json!({"b64": "AAEC/w==", "k": "x"}),
        json!({"b64": "aGk", "k": "y"}),
        json!({"b64": "", "k": "z"}),
    ]);
    let dir = dir_with(&[("in.jsonl", &lines)]);
    let args = [
        "pack",
        "--jsonl",
        "in.jsonl",
        "--payload-field",
        "b64",
        "--payload-encoding",
        "base64",
        "--out",
        "c",
        "--source",
        "t",
    ];
    dsrt_in(dir.path(), &args).ok();
    assert_eq!(cat(dir.path(), "c", 0), [0, 1, 2, 255]);
    assert_eq!(cat(dir.path(), "c", 1), b"hi");
    assert_eq!(cat(dir.path(), "c", 2), b"");

    let args = [
        "pack",
        "--jsonl",
        "in.jsonl",
        "--payload-field",
        "b64",
        "--payload-encoding",
        "text",
        "--out",
        "t",
        "--source",
        "t",
    ];
    dsrt_in(dir.path(), &args).ok();
    assert_eq!(cat(dir.path(), "t", 0), b"AAEC/w==");
}

#[test]
fn infers_all_four_types_with_nulls_and_unicode() {
    // Written by hand, not with json!, whose objects sort their keys: columns must follow the
    // order in which fields first appear.
    let lines = concat!(
        r#"{"p": "a", "flag": true, "count": 1, "score": 1, "name": "Zoë 🚀", "maybe": null}"#, "\n",
        r#"{"p": "b", "flag": null, "count": -9223372036854775808, "score": 2.5, "name": "日本", "maybe": 1.5}"#, "\n",
        r#"{"count": 9223372036854775807, "p": "c", "score": -0.0, "name": "\u00e9\"\\"}"#, "\n",
    )
    .as_bytes();
    let dir = dir_with(&[("in.jsonl", lines)]);
    let args = [
        "pack",
        "--jsonl",
        "in.jsonl",
        "--payload-field",
        "p",
        "--payload-encoding",
        "text",
        "--out",
        "c",
        "--source",
        "t",
    ];
    dsrt_in(dir.path(), &args).ok();
    assert_eq!(
        schema_of(dir.path(), "c"),
        [
            col("flag", "bool", true),
            col("count", "int64", false),
            col("score", "float64", false),
            col("name", "utf8", false),
            col("maybe", "float64", true),
        ]
    );
    let row = |i: &str| {
        dsrt_in(dir.path(), &["cat", "c", i, "--metadata"])
            .ok()
            .json()
    };
    assert_eq!(
        row("0"),
        json!({"flag": true, "count": 1, "score": 1.0, "name": "Zoë 🚀", "maybe": null})
    );
    assert_eq!(
        row("1"),
        json!({"flag": null, "count": i64::MIN, "score": 2.5, "name": "日本", "maybe": 1.5})
    );
    let last = row("2");
    assert_eq!(last["count"], i64::MAX);
    assert!(
        last["score"].as_f64().unwrap().is_sign_negative(),
        "-0.0 keeps its sign: {last}"
    );
    assert_eq!(last["name"], "é\"\\");
    // Field order in the metadata output is the schema's, which is the input's first-seen order.
    let text = dsrt_in(dir.path(), &["cat", "c", "0", "--metadata"])
        .ok()
        .stdout_text();
    assert!(text.starts_with("{\"flag\":true,\"count\":1,"), "{text}");
    assert_eq!(cat(dir.path(), "c", 1), b"b");
}

#[test]
fn schema_file_overrides_inference() {
    let schema = json!([
        {"name": "label", "type": "int64", "nullable": false},
        {"name": "weight", "type": "float64", "nullable": true},
        {"name": "extra", "type": "utf8", "nullable": true},
    ]);
    let lines = jsonl(&[
        json!({"p": "a", "label": 1, "weight": 2}),
        json!({"p": "b", "label": 2, "weight": null, "extra": "e"}),
    ]);
    let dir = dir_with(&[
        ("in.jsonl", &lines),
        ("schema.json", schema.to_string().as_bytes()),
    ]);
    let args = [
        "pack",
        "--jsonl",
        "in.jsonl",
        "--payload-field",
        "p",
        "--payload-encoding",
        "text",
        "--schema",
        "schema.json",
        "--out",
        "c",
        "--source",
        "t",
    ];
    dsrt_in(dir.path(), &args).ok();
    assert_eq!(
        schema_of(dir.path(), "c"),
        [
            col("label", "int64", false),
            col("weight", "float64", true),
            col("extra", "utf8", true)
        ]
    );
    assert_eq!(
        dsrt_in(dir.path(), &["cat", "c", "0", "--metadata"])
            .ok()
            .json(),
        json!({"label": 1, "weight": 2.0, "extra": null})
    );
}

#[test]
fn schema_violations_name_line_and_field() {
    let schema = json!([{"name": "label", "type": "int64", "nullable": false}]);
    let cases = [
        (
            json!({"p": "x", "label": 1.5}),
            "field \"label\" is a float, the schema says int64",
        ),
        (
            json!({"p": "x"}),
            "field \"label\" is missing, but the schema's column is not nullable",
        ),
        (json!({"p": "x", "label": null}), "field \"label\" is null"),
        (
            json!({"p": "x", "label": 1, "other": 2}),
            "field \"other\" is not a column of the schema",
        ),
    ];
    for (bad, expected) in cases {
        let lines = jsonl(&[json!({"p": "ok", "label": 7}), bad]);
        let dir = dir_with(&[
            ("in.jsonl", &lines),
            ("schema.json", schema.to_string().as_bytes()),
        ]);
        let args = [
            "pack",
            "--jsonl",
            "in.jsonl",
            "--payload-field",
            "p",
            "--payload-encoding",
            "text",
            "--schema",
            "schema.json",
            "--out",
            "c",
            "--source",
            "t",
        ];
        let run = dsrt_in(dir.path(), &args).fails(1);
        assert!(run.stderr.contains("in.jsonl, line 2: "), "{}", run.stderr);
        assert!(run.stderr.contains(expected), "{}", run.stderr);
        assert!(
            !dir.path().join("c").exists(),
            "a failed pack leaves no partial cache behind"
        );
    }
}

#[test]
fn a_bad_schema_file_is_named() {
    let dir = dir_with(&[
        ("in.jsonl", b"{\"p\": \"a\"}\n"),
        (
            "schema.json",
            br#"[{"name": "a", "type": "int32", "nullable": false}]"#,
        ),
    ]);
    let args = [
        "pack",
        "--jsonl",
        "in.jsonl",
        "--payload-field",
        "p",
        "--schema",
        "schema.json",
        "--out",
        "c",
        "--source",
        "t",
    ];
    let run = dsrt_in(dir.path(), &args).fails(1);
    assert!(
        run.stderr.contains("schema.json: not a metadata schema"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_jsonl_errors_name_the_line_and_field() {
    let cases: [(&[u8], &str); 8] = [
        (
            b"{\"p\": \"a\", \"x\": 1}\n{\"p\": \"b\", \"x\": \"one\"}\n",
            "line 2: field \"x\" is a string, but from line 1 on it held int64 values",
        ),
        (
            b"{\"p\": \"a\", \"x\": true}\n\n{\"p\": \"b\", \"x\": 0}\n",
            "line 3: field \"x\" is an integer, but from line 1 on it held bool values",
        ),
        (
            b"{\"p\": \"a\", \"x\": {\"nested\": 1}}\n",
            "line 1: field \"x\" is an object",
        ),
        (
            b"{\"p\": \"a\", \"tags\": [1, 2]}\n",
            "line 1: field \"tags\" is an array",
        ),
        (
            b"{\"p\": \"a\"}\n{\"p\": \"a\", \"x\": 1,}\n",
            "line 2: not a JSON object",
        ),
        (
            b"{\"p\": \"a\"}\n{\"q\": \"b\"}\n",
            "line 2: payload field \"p\" is missing",
        ),
        (
            b"{\"p\": 5}\n",
            "line 1: payload field \"p\" is an integer, expected a string",
        ),
        (
            b"{\"p\": \"a\", \"big\": 18446744073709551615}\n",
            "line 1: field \"big\" holds 18446744073709551615, outside the int64 range",
        ),
    ];
    for (input, expected) in cases {
        let dir = dir_with(&[("in.jsonl", input)]);
        let args = [
            "pack",
            "--jsonl",
            "in.jsonl",
            "--payload-field",
            "p",
            "--payload-encoding",
            "text",
            "--out",
            "c",
            "--source",
            "t",
        ];
        let run = dsrt_in(dir.path(), &args).fails(1);
        assert!(
            run.stderr.contains(expected),
            "expected {expected:?} in: {}",
            run.stderr
        );
        assert!(run.stderr.contains("in.jsonl"), "{}", run.stderr);
        assert!(!dir.path().join("c").exists());
    }
}

#[test]
fn payload_errors_in_the_write_pass_name_the_line_and_remove_the_partial_cache() {
    let lines = jsonl(&[
        json!({"f": "a.bin"}),
        json!({"f": "a.bin"}),
        json!({"f": "missing.bin"}),
    ]);
    let dir = dir_with(&[("in.jsonl", &lines), ("a.bin", b"a")]);
    std::fs::create_dir(dir.path().join("empty-out")).unwrap();
    let args = [
        "pack",
        "--jsonl",
        "in.jsonl",
        "--payload-field",
        "f",
        "--out",
        "empty-out",
        "--source",
        "t",
    ];
    let run = dsrt_in(dir.path(), &args).fails(1);
    assert!(
        run.stderr
            .contains("line 3: payload field \"f\": cannot read"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("missing.bin"), "{}", run.stderr);
    // The directory existed before: it stays, emptied of everything the writer made.
    let left: Vec<_> = std::fs::read_dir(dir.path().join("empty-out"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "{left:?}");

    let bad64 = jsonl(&[json!({"f": "aGk="}), json!({"f": "not base64!"})]);
    let dir = dir_with(&[("in.jsonl", &bad64)]);
    let args = [
        "pack",
        "--jsonl",
        "in.jsonl",
        "--payload-field",
        "f",
        "--payload-encoding",
        "base64",
        "--out",
        "c",
        "--source",
        "t",
    ];
    let run = dsrt_in(dir.path(), &args).fails(1);
    assert!(
        run.stderr
            .contains("line 2: payload field \"f\" is not valid base64"),
        "{}",
        run.stderr
    );
    assert!(!dir.path().join("c").exists());
}

#[test]
fn refuses_a_non_empty_out_directory_and_leaves_it_alone() {
    let dir = dir_with(&[("in.jsonl", b"{\"p\": \"a\"}\n"), ("out/keep.txt", b"mine")]);
    let args = [
        "pack",
        "--jsonl",
        "in.jsonl",
        "--payload-field",
        "p",
        "--payload-encoding",
        "text",
        "--out",
        "out",
        "--source",
        "t",
    ];
    let run = dsrt_in(dir.path(), &args).fails(1);
    assert!(
        run.stderr.contains("out: output directory is not empty"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read(dir.path().join("out/keep.txt")).unwrap(),
        b"mine"
    );
    assert_eq!(
        std::fs::read_dir(dir.path().join("out")).unwrap().count(),
        1
    );
}

#[test]
fn reads_stdin_with_and_without_a_schema() {
    let lines = jsonl(&[
        json!({"t": "first", "n": 1}),
        json!({"t": "second", "n": null}),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "pack",
        "--jsonl",
        "-",
        "--payload-field",
        "t",
        "--payload-encoding",
        "text",
        "--out",
        "c",
        "--source",
        "t",
    ];
    dsrt_stdin(dir.path(), &args, &lines).ok();
    assert_eq!(schema_of(dir.path(), "c"), [col("n", "int64", true)]);
    assert_eq!(cat(dir.path(), "c", 1), b"second");

    std::fs::write(
        dir.path().join("s.json"),
        br#"[{"name": "n", "type": "float64", "nullable": true}]"#,
    )
    .unwrap();
    let args = [
        "pack",
        "--jsonl",
        "-",
        "--payload-field",
        "t",
        "--payload-encoding",
        "text",
        "--schema",
        "s.json",
        "--out",
        "d",
        "--source",
        "t",
    ];
    dsrt_stdin(dir.path(), &args, &lines).ok();
    assert_eq!(schema_of(dir.path(), "d"), [col("n", "float64", true)]);

    let run = dsrt_stdin(
        dir.path(),
        &[
            "pack",
            "--jsonl",
            "-",
            "--payload-field",
            "t",
            "--out",
            "e",
            "--source",
            "t",
        ],
        b"{\"t\": 1}\n",
    );
    assert!(run
        .fails(1)
        .stderr
        .contains("<stdin>, line 1: payload field \"t\""));
}

#[test]
fn human_summary_names_the_numbers() {
    let dir = dir_with(&[("in.jsonl", b"{\"p\": \"abc\"}\n{\"p\": \"de\"}\n")]);
    let args = [
        "pack",
        "--jsonl",
        "in.jsonl",
        "--payload-field",
        "p",
        "--payload-encoding",
        "text",
        "--out",
        "c",
        "--source",
        "t",
    ];
    let run = dsrt_in(dir.path(), &args).ok();
    let text = run.stdout_text();
    for word in [
        "packed 2 samples",
        "shards",
        "payload",
        "5 bytes",
        "ratio",
        "elapsed",
        "MB/s",
        "samples/s",
    ] {
        assert!(text.contains(word), "{word:?} missing from:\n{text}");
    }
    // No progress bar or escape codes when stderr is not a terminal.
    assert_eq!(run.stderr, "");
}

use dsrt_atlas_test_runner::files_below as tree_bytes;

/// 2,000 lines (blank ones among them) naming payload files, over several runs of lines.
fn many_lines() -> (Vec<(String, Vec<u8>)>, Vec<u8>) {
    let mut files = Vec::new();
    let mut text = Vec::new();
    for i in 0..2_000u32 {
        let name = format!("data/{i:05}.bin");
        files.push((
            name.clone(),
            (0..(i * 31 % 3000)).map(|j| (j ^ i) as u8).collect(),
        ));
        let score = if i % 9 == 0 {
            json!(null)
        } else {
            json!(f64::from(i) / 4.0)
        };
        text.extend_from_slice(
            json!({"file": name, "n": i, "score": score, "tag": format!("t{}", i % 5)})
                .to_string()
                .as_bytes(),
        );
        text.push(b'\n');
        if i % 300 == 0 {
            text.extend_from_slice(b"\n   \n");
        }
    }
    (files, text)
}

#[test]
fn jsonl_packs_the_same_for_any_number_of_jobs_from_a_file_and_from_stdin() {
    let (files, text) = many_lines();
    let mut all: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_slice()))
        .collect();
    all.push(("samples.jsonl", &text));
    let dir = dir_with(&all);
    let pack = |out: &str, jobs: &str| {
        [
            "pack",
            "--jsonl",
            "samples.jsonl",
            "--payload-field",
            "file",
            "--out",
            out,
            "--source",
            "lines",
            "--compression",
            "lz4",
            "--max-shard-bytes",
            "64KiB",
            "--jobs",
            jobs,
            "--json",
        ]
        .map(str::to_owned)
    };
    for jobs in ["1", "2", "3"] {
        let args = pack(&format!("c{jobs}"), jobs);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let report = dsrt_in(dir.path(), &args).ok().json();
        assert_eq!(report["samples"], 2_000);
    }
    // Standard input is spooled and read by the workers the same way.
    let args = pack("stdin", "3");
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args[2] = "-";
    dsrt_stdin(dir.path(), &args, &text).ok();
    let one = tree_bytes(&dir.path().join("c1"));
    assert!(one.len() > 10, "several shards");
    assert_eq!(one, tree_bytes(&dir.path().join("c2")));
    assert_eq!(one, tree_bytes(&dir.path().join("c3")));
    for i in [0usize, 1, 255, 256, 257, 1_999] {
        assert_eq!(cat(dir.path(), "c3", i as u64), files[i].1, "sample {i}");
        assert_eq!(cat(dir.path(), "stdin", i as u64), files[i].1, "sample {i}");
    }
    let meta = dsrt_in(dir.path(), &["cat", "c2", "1234", "--metadata"])
        .ok()
        .json();
    assert_eq!(meta, json!({"n": 1234, "score": 308.5, "tag": "t4"}));
}

#[test]
fn a_bad_line_far_into_the_input_is_named_with_its_line_and_nothing_is_left() {
    let (files, mut text) = many_lines();
    text.extend_from_slice(b"{\"file\": \"data/00001.bin\", \"n\": \"oops\", \"tag\": \"x\"}\n");
    // Line numbers count the blank lines too.
    let line = text.iter().filter(|&&b| b == b'\n').count();
    let schema = br#"[{"name":"n","type":"int64","nullable":false},{"name":"score","type":"float64","nullable":true},{"name":"tag","type":"utf8","nullable":false}]"#;
    let mut all: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_slice()))
        .collect();
    all.push(("samples.jsonl", &text));
    all.push(("schema.json", schema));
    let dir = dir_with(&all);
    // With a schema the write pass meets the line (on the workers); without, the inference
    // pass does. Each names the same line.
    for (jobs, schema_args) in [("1", true), ("3", true), ("3", false)] {
        let mut args = vec![
            "pack",
            "--jsonl",
            "samples.jsonl",
            "--payload-field",
            "file",
            "--out",
            "c",
            "--source",
            "s",
            "--jobs",
            jobs,
        ];
        if schema_args {
            args.extend(["--schema", "schema.json"]);
        }
        let run = dsrt_in(dir.path(), &args).fails(1);
        let expected = format!("samples.jsonl, line {line}: field \"n\" is a string");
        assert!(run.stderr.contains(&expected), "{}", run.stderr);
        assert!(!dir.path().join("c").exists(), "nothing is left");
    }
}
