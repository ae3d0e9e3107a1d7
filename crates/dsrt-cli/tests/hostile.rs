//! Hostile and damaged inputs through the `dsrt` command (issue: no input may make it use
//! more than 256 MB beyond what the honest data needs, run longer than 5 s, hang, abort, print
//! a panic or accept corrupt bytes; each gets a typed error naming what and where). Memory
//! bounds are checked under `ulimit -v` in the child, hangs under `timeout`, and every run
//! must end by exiting, not by a signal.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

mod common;

use common::{dsrt_in, Run};
use datasetrt::{CacheWriter, Column, ColumnType, Row, Schema, WriterOptions};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `dsrt args...` in `dir` under `ulimit -v kib` (address space) and a 20 s `timeout`.
fn dsrt_limited(dir: &Path, kib: u64, args: &[&str]) -> (Run, Duration) {
    let started = Instant::now();
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {kib} && exec timeout -s KILL 20 \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_dsrt"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    let Some(code) = output.status.code() else {
        use std::os::unix::process::ExitStatusExt;
        panic!(
            "dsrt {args:?} was killed by signal {:?}: {stderr}",
            output.status.signal()
        );
    };
    let run = Run {
        code,
        stdout: output.stdout,
        stderr,
    };
    assert_ne!(run.code, 137, "dsrt ran past 20 s (killed): {}", run.stderr);
    (run, started.elapsed())
}

/// A GiB of address space, in KiB for `ulimit -v`.
const GIB: u64 = 1 << 20;

fn assert_no_panic(run: &Run) {
    assert!(
        !run.stderr.contains("panicked") && !run.stderr.contains("RUST_BACKTRACE"),
        "{}",
        run.stderr
    );
}

fn tar_member(tar: &mut tar::Builder<std::fs::File>, name: &str, data: &[u8]) {
    let mut header = tar::Header::new_gnu();
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, name, data).unwrap();
}

/// A WebDataset tar of five samples (`NNNNNN.jpg` of 20,000 bytes, `.cls`); returns where
/// each member's data starts.
fn write_tar(path: &Path) -> Vec<(String, u64)> {
    let mut tar = tar::Builder::new(std::fs::File::create(path).unwrap());
    for i in 0..5u8 {
        tar_member(&mut tar, &format!("{i:06}.jpg"), &vec![i; 20_000]);
        tar_member(&mut tar, &format!("{i:06}.cls"), b"1");
    }
    tar.finish().unwrap();
    drop(tar);
    let mut archive = tar::Archive::new(std::fs::File::open(path).unwrap());
    archive
        .entries()
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.path().unwrap().to_string_lossy().into_owned(),
                e.raw_file_position(),
            )
        })
        .collect()
}

#[test]
fn a_tar_cut_inside_a_member_is_refused_or_skipped_never_packed_short() {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("shard.tar");
    let members = write_tar(&tar);
    let (_, at) = members
        .iter()
        .find(|(name, _)| name == "000003.jpg")
        .unwrap();
    // Cut in the middle of sample 3's image: a copy interrupted, a disk full.
    let file = std::fs::OpenOptions::new().write(true).open(&tar).unwrap();
    file.set_len(at + 7_000).unwrap();
    let pack = |out: &str, extra: &[&str]| {
        let args = [
            &[
                "pack",
                "--from-webdataset",
                "shard.tar",
                "--payload-ext",
                "jpg",
            ][..],
            &["--out", out, "--source", "wds"],
            extra,
        ]
        .concat();
        dsrt_in(dir.path(), &args)
    };
    let refused = pack("out", &[]).fails(1);
    assert!(
        refused.stderr.contains("shard.tar")
            && refused.stderr.contains("000003.jpg")
            && refused.stderr.contains("ends inside"),
        "{}",
        refused.stderr
    );
    assert!(!dir.path().join("out/manifest.json").exists());
    // Skipped, and counted: the three whole samples are packed, byte for byte.
    let skipped = pack("skipped", &["--skip-bad"]);
    assert_eq!(skipped.code, 0, "{}", skipped.stderr);
    assert!(skipped.stderr.contains("000003"), "{}", skipped.stderr);
    let info = common::inspect(dir.path(), "skipped");
    assert_eq!(info["samples"], 3, "{info}");
    for i in 0..3u8 {
        assert_eq!(
            common::cat(dir.path(), "skipped", u64::from(i)),
            vec![i; 20_000]
        );
    }
    let verify = dsrt_in(dir.path(), &["verify", "--full", "skipped"]).ok();
    assert!(verify.stdout_text().contains("ok"));
}

#[test]
fn a_member_declaring_a_terabyte_is_an_error_not_an_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("huge.tar");
    {
        let mut builder = tar::Builder::new(std::fs::File::create(&tar).unwrap());
        tar_member(&mut builder, "000000.jpg", b"fine");
        builder.finish().unwrap();
    }
    // Append a header that declares 1 TiB and a few bytes of "data".
    let mut header = tar::Header::new_gnu();
    header.set_path("000001.jpg").unwrap();
    header.set_size(1 << 40);
    header.set_mode(0o644);
    header.set_cksum();
    let mut bytes = std::fs::read(&tar).unwrap();
    bytes.truncate(512 + 512); // the first member's header and data block
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[0xAB; 4096]);
    std::fs::write(&tar, bytes).unwrap();
    let args = [
        "pack",
        "--from-webdataset",
        "huge.tar",
        "--payload-ext",
        "jpg",
        "--out",
        "out",
        "--source",
        "wds",
    ];
    let (run, took) = dsrt_limited(dir.path(), GIB, &args);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("000001.jpg") && run.stderr.contains("1099511627776"),
        "{}",
        run.stderr
    );
    assert_no_panic(&run);
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// A stored LZ4 payload (size prefix and block) that decodes to `decoded` zero bytes: one
/// literal, one match of offset 1 spelled with 0xFF length bytes (255 output bytes per stored
/// byte, the most LZ4 allows), and the five closing literals.
fn lz4_zeros(decoded: usize) -> Vec<u8> {
    let mut out = (decoded as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&[0x1F, 0x00, 0x01, 0x00]);
    let mut rest = decoded - 6 - 19;
    while rest >= 255 {
        out.push(255);
        rest -= 255;
    }
    out.push(rest as u8);
    out.extend_from_slice(&[0x50, 0, 0, 0, 0, 0]);
    out
}

/// A cache at `path` whose `samples` payloads each decode to `decoded` bytes: written with
/// crafted LZ4 payloads stored as they are, then its manifest says `lz4` (the shards' bytes,
/// and so their SHA-256, are those of a real LZ4 cache of zeros).
fn lz4_cache(path: &Path, samples: u64, decoded: usize) {
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let options = WriterOptions::new("lz4-bomb", schema).max_shard_bytes(64 << 20);
    let mut writer = CacheWriter::create(path, options).unwrap();
    let stored = lz4_zeros(decoded);
    for i in 0..samples {
        writer
            .add(&stored, &Row::new().with("n", i as i64))
            .unwrap();
    }
    writer.finish().unwrap();
    let manifest_path = path.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    let shards = manifest["shards"].as_array_mut().unwrap();
    assert_eq!(shards.len(), 1, "the test's caches fit one shard");
    for shard in shards {
        let byte_len = shard["byte_len"].as_u64().unwrap();
        let uncompressed = byte_len + samples * (decoded - stored.len()) as u64;
        shard["uncompressed_byte_len"] = uncompressed.into();
        shard["compression"] =
            serde_json::json!({"algo": "lz4", "ratio": uncompressed as f64 / byte_len as f64});
    }
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
}

#[test]
fn lz4_payloads_that_decode_to_gigabytes_are_refused_as_memory_not_aborts() {
    let dir = tempfile::tempdir().unwrap();
    // One sample: 12 MB stored, 3 GiB decoded, under a 1.5 GiB address-space limit.
    lz4_cache(&dir.path().join("bomb"), 1, 3 << 30);
    for args in [&["cat", "bomb", "0"][..], &["verify", "--full", "bomb"]] {
        let (run, _) = dsrt_limited(dir.path(), 3 * GIB / 2, args);
        assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("out of memory") && run.stderr.contains("3221225472"),
            "{args:?}: {}",
            run.stderr
        );
        assert_no_panic(&run);
    }
    // The crafted payload is a real LZ4 block: a small one decodes to its zeros.
    lz4_cache(&dir.path().join("small"), 1, 1 << 20);
    assert_eq!(common::cat(dir.path(), "small", 0), vec![0; 1 << 20]);
}

/// `dsrt args...` in `dir`, and the most resident memory it used, in KiB (from the
/// resource usage of the children of a Python that ran it).
fn dsrt_max_rss(dir: &Path, args: &[&str]) -> (Run, u64) {
    let script = "import resource, subprocess, sys\n\
                  done = subprocess.run(sys.argv[1:], capture_output=True)\n\
                  sys.stdout.buffer.write(done.stdout)\n\
                  sys.stderr.buffer.write(done.stderr)\n\
                  sys.stderr.write('\\nmaxrss %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
                  sys.exit(done.returncode if done.returncode >= 0 else 128 - done.returncode)\n";
    let output = Command::new("python3")
        .args(["-c", script, env!("CARGO_BIN_EXE_dsrt")])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    let (stderr, rss) = stderr.rsplit_once("\nmaxrss ").unwrap();
    let rss = rss.trim().parse().unwrap();
    let run = Run {
        code: output.status.code().unwrap(),
        stdout: output.stdout,
        stderr: stderr.to_owned(),
    };
    (run, rss)
}

#[test]
fn iterate_bounds_its_read_ahead_in_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // 24 samples of 16 MiB decoded each (384 MiB, 1.5 MB stored): --prefetch 512 alone would
    // read them all ahead; --prefetch-bytes 32MiB keeps a few of them in memory at a time.
    lz4_cache(&dir.path().join("c"), 24, 16 << 20);
    for workers in ["0", "2"] {
        let args = [
            "iterate",
            "c",
            "--workers",
            workers,
            "--prefetch-bytes",
            "32MiB",
            "--json",
        ];
        let (run, rss_kib) = dsrt_max_rss(dir.path(), &args);
        assert_eq!(run.code, 0, "--workers {workers}: {}", run.stderr);
        let summary = run.json();
        assert_eq!(summary["samples"], 24);
        assert_eq!(summary["payload_bytes"], 24u64 << 24);
        // The workers' pieces in flight (at most 2 x 3 + 1, each one 16 MiB sample) and the
        // process itself: far below the 384 MiB the epoch decodes to.
        assert!(
            rss_kib < 200 << 10,
            "--workers {workers}: {} MiB resident",
            rss_kib >> 10
        );
    }
}

/// A small cache of 20 samples in 4 shards.
fn small_cache(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("c");
    let schema = Schema::new(vec![Column::new("n", ColumnType::Int64, false)]).unwrap();
    let mut writer =
        CacheWriter::create(&path, WriterOptions::new("s", schema).max_shard_bytes(300)).unwrap();
    for i in 0..20 {
        writer
            .add(&[i as u8; 60], &Row::new().with("n", i as i64))
            .unwrap();
    }
    writer.finish().unwrap();
    path
}

#[test]
fn verify_checks_sizes_before_hashing_and_never_reads_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let cache = small_cache(dir.path());
    // A sparse 24 GB index.bin, then /dev/zero in its place; a sparse metadata.arrow.
    let index = cache.join("index.bin");
    let honest = std::fs::read(&index).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&index)
        .unwrap()
        .set_len(24_000_000_000)
        .unwrap();
    let (run, took) = dsrt_limited(dir.path(), GIB, &["verify", "--full", "c"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("index"), "{}", run.stderr);
    assert!(took < Duration::from_secs(5), "{took:?}");
    std::fs::remove_file(&index).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &index).unwrap();
    let (run, took) = dsrt_limited(dir.path(), GIB, &["verify", "--full", "c"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("index.bin") && run.stderr.contains("not a regular file"),
        "{}",
        run.stderr
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    std::fs::remove_file(&index).unwrap();
    std::fs::write(&index, honest).unwrap();
    let metadata = cache.join("metadata.arrow");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&metadata)
        .unwrap()
        .set_len(24_000_000_000)
        .unwrap();
    let (run, took) = dsrt_limited(dir.path(), GIB, &["verify", "--full", "c"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("metadata"), "{}", run.stderr);
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_fifo_in_place_of_any_cache_file_fails_at_once() {
    for file in [
        "manifest.json",
        "index.bin",
        "metadata.arrow",
        "shards/000000.bin",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cache = small_cache(dir.path());
        let path = cache.join(file);
        std::fs::remove_file(&path).unwrap();
        let made = Command::new("mkfifo").arg(&path).status().unwrap();
        assert!(made.success());
        for args in [
            &["inspect", "c"][..],
            &["verify", "--full", "c"],
            &["cat", "c", "0"],
        ] {
            let (run, took) = dsrt_limited(dir.path(), GIB, args);
            assert_eq!(run.code, 1, "{file}, {args:?}: {}", run.stderr);
            assert!(took < Duration::from_secs(5), "{file}, {args:?}: {took:?}");
            assert_no_panic(&run);
        }
    }
}

#[test]
fn a_megabyte_shard_name_is_not_echoed_whole() {
    let dir = tempfile::tempdir().unwrap();
    let cache = small_cache(dir.path());
    let manifest_path = cache.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    manifest["shards"][0]["name"] = "x".repeat(1 << 20).into();
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let run = dsrt_in(dir.path(), &["inspect", "c"]).fails(1);
    assert!(
        run.stderr.len() < 2_000 && run.stderr.contains("1048576 bytes in all"),
        "{} bytes of stderr: {}",
        run.stderr.len(),
        &run.stderr[..run.stderr.len().min(300)]
    );
}

/// Where, in an Arrow IPC file, its first record batch's buffer list lies.
fn buffer_list(bytes: &[u8]) -> std::ops::Range<usize> {
    let trailer = bytes.len() - 10;
    let footer_len = usize::try_from(i32::from_le_bytes(
        bytes[trailer..trailer + 4].try_into().unwrap(),
    ))
    .unwrap();
    let footer = arrow_ipc::root_as_footer(&bytes[trailer - footer_len..trailer]).unwrap();
    let block = footer.recordBatches().unwrap().get(0);
    let start = usize::try_from(block.offset()).unwrap() + 8;
    let message = arrow_ipc::root_as_message(&bytes[start..]).unwrap();
    let list = message
        .header_as_record_batch()
        .unwrap()
        .buffers()
        .unwrap()
        .bytes();
    let at = list.as_ptr() as usize - bytes.as_ptr() as usize;
    at..at + list.len()
}

#[test]
fn hostile_metadata_arrow_gets_a_typed_error_and_prints_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    let cache = small_cache(dir.path());
    let metadata = cache.join("metadata.arrow");
    let honest = std::fs::read(&metadata).unwrap();
    // A buffer offset pushed outside the batch's body.
    let list = buffer_list(&honest);
    let mut bytes = honest.clone();
    bytes[list.start..list.start + 8].copy_from_slice(&(1i64 << 40).to_le_bytes());
    std::fs::write(&metadata, &bytes).unwrap();
    let run = dsrt_in(dir.path(), &["inspect", "c"]).fails(1);
    assert!(run.stderr.contains("lies outside"), "{}", run.stderr);
    assert_no_panic(&run);
    // The rows, then 200,000 empty record batches: refused at once, in bounded memory.
    let table = datasetrt::MetadataTable::from_bytes(honest).unwrap();
    let batch = table.record_batches()[0].clone();
    let mut bytes = Vec::new();
    let mut writer =
        arrow_ipc::writer::FileWriter::try_new(&mut bytes, batch.schema().as_ref()).unwrap();
    writer.write(&batch).unwrap();
    let empty = batch.slice(0, 0);
    for _ in 0..200_000 {
        writer.write(&empty).unwrap();
    }
    writer.finish().unwrap();
    drop(writer);
    std::fs::write(&metadata, bytes).unwrap();
    let (run, took) = dsrt_limited(dir.path(), GIB, &["inspect", "c"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("more batches than rows"),
        "{}",
        run.stderr
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn names_that_carry_terminal_escapes_are_escaped_in_human_output_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c");
    let evil = "\u{1b}]0;pwned\u{7}\u{1b}[2Jcol\r\u{202e}";
    let schema = Schema::new(vec![Column::new(evil, ColumnType::Int64, false)]).unwrap();
    let mut writer = CacheWriter::create(&path, WriterOptions::new("s", schema)).unwrap();
    writer
        .add(b"payload", &Row::new().with(evil, 1i64))
        .unwrap();
    writer.finish().unwrap();
    let run = dsrt_in(dir.path(), &["inspect", "c"]).ok();
    let stdout = run.stdout_text();
    assert!(!stdout.contains('\u{1b}'), "{stdout:?}");
    assert!(!stdout.contains('\r') && !stdout.contains('\u{202e}'));
    assert!(
        stdout.contains(r#""\u{1b}]0;pwned\u{7}\u{1b}[2Jcol\r\u{202e}""#),
        "{stdout}"
    );
    // The JSON output keeps the name exact (JSON escapes it itself).
    let json = dsrt_in(dir.path(), &["inspect", "c", "--json"]).ok();
    assert!(
        json.stdout_text().contains(r"\u001b]0;pwned"),
        "{}",
        json.stdout_text()
    );
    assert!(json
        .json()
        .to_string()
        .contains(&serde_json::to_string(evil).unwrap()));

    // An error quoting a name from the cache (a shard named with an escape sequence).
    let manifest_path = path.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    manifest["shards"][0]["name"] = "\u{1b}[31mred.bin".into();
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let run = dsrt_in(dir.path(), &["inspect", "c"]).fails(1);
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
    assert!(run.stderr.contains(r"\u{1b}[31mred.bin"), "{}", run.stderr);
}
