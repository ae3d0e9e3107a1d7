//! Hostile and damaged inputs, run as a user would, each in a child held to an
//! address-space limit and a time limit: footers and blocks that ask for far more memory than
//! they hold, FIFOs in place of a collection's files, a regular file named as a collection,
//! names that carry terminal escapes, and `demo` pointed at a collection that exists.
//!
//! The memory limit is what an honest run of the same command needs (checked here too) plus
//! 256 MiB; before the fixes, each bomb aborted under it or took seconds, and the FIFOs hung.
//! `ATLAS_UNDER_TEST=/path/to/atlas` runs the tests against another build of the binary (how
//! they were seen to fail on the code before the fixes).
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

use dsrt_atlas_fixtures::hostile;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;
/// What an honest `atlas ls`/`read` of a small collection reserves (threads' stacks, the
/// runtime, the binary; measured about 150 MiB with `MALLOC_ARENA_MAX=2`) plus the 256 MiB a
/// hostile input may add, rounded up.
const ADDRESS_SPACE: u64 = 512 * MIB;
/// A child's whole run.
const SECONDS: Duration = Duration::from_secs(5);

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// `atlas args...` under `prlimit --as`, killed after [`SECONDS`].
fn atlas_limited(args: &[&str]) -> Run {
    let limit = format!("--as={ADDRESS_SPACE}");
    let start = Instant::now();
    let mut child = Command::new("prlimit")
        .arg(limit)
        .arg("--")
        .arg(
            std::env::var_os("ATLAS_UNDER_TEST")
                .unwrap_or_else(|| env!("CARGO_BIN_EXE_atlas").into()),
        )
        .args(args)
        .env("MALLOC_ARENA_MAX", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux) runs");
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > SECONDS {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "atlas {args:?} still running after {SECONDS:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: start.elapsed(),
    }
}

fn assert_fails_with(run: &Run, code: i32, needles: &[&str]) {
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_eq!(
        run.code,
        Some(code),
        "stdout {} stderr {}",
        run.stdout,
        run.stderr
    );
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "stderr lacks {needle:?}: {}",
            run.stderr
        );
    }
}

/// A directory holding `data.atlas` = `bytes`.
fn collection(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("data.atlas"), bytes).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn an_honest_collection_reads_under_the_same_limit() {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("c").to_str().unwrap().to_owned();
    let demo = atlas_limited(&["demo", &c, "--datasets", "20"]);
    assert_eq!(demo.code, Some(0), "{}", demo.stderr);
    for args in [
        vec!["ls", c.as_str()],
        vec!["read", c.as_str(), "month_003", "temperature"],
        vec!["verify", "--full", c.as_str()],
    ] {
        let run = atlas_limited(&args);
        assert_eq!(run.code, Some(0), "{args:?}: {}", run.stderr);
    }
}

#[test]
fn footer_bombs_are_refused_naming_the_footer_within_memory_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, Vec<u8>); 5] = [
        // 16 MiB decoded took 419-771 MiB per open; 128 MiB aborted under 4 GiB.
        ("strings-16MiB", hostile::empty_string_pool(16 << 20)),
        ("strings-128MiB", hostile::empty_string_pool(128 << 20)),
        // 2 Mi empty schemas: 8 MiB decoded, 368 MiB of schemas.
        ("schemas", hostile::empty_schema_pool(2 << 20)),
        // 1 GiB of zeros in a 32 KB frame, decoded whole before the msgpack was looked at.
        ("zeros", hostile::zero_footer(1 << 30)),
        // 1 Mi attributes of a 30-deep list: about 1 GB once each is resolved.
        ("deep-types", hostile::deep_attribute_types(1 << 20, 30)),
    ];
    for (name, bytes) in cases {
        assert!(bytes.len() < 256 * 1024, "{name}: {} bytes", bytes.len());
        let c = collection(dir.path(), name, &bytes);
        for command in ["ls", "info"] {
            let run = atlas_limited(&[command, &c]);
            assert_fails_with(
                &run,
                1,
                &["corrupt Atlas collection: footer:", "stored bytes may take"],
            );
            assert!(run.took < SECONDS, "{name}: {:?}", run.took);
        }
        let verify = atlas_limited(&["verify", &c]);
        assert_eq!(verify.code, Some(1), "{name}: {}", verify.stderr);
        assert!(
            verify.stdout.contains("footer") && verify.stdout.contains("FAILED"),
            "{name}: {}",
            verify.stdout
        );
    }
}

#[test]
fn a_block_that_decodes_past_its_chunks_is_refused_naming_dataset_variable_and_block() {
    let dir = tempfile::tempdir().unwrap();
    // The 128-byte array's block really decodes to 1.5 GiB: `read` took 1.5 GiB and
    // `verify --full` passed; a 6 GiB claim ran past 40 s.
    for claim in [3 * 512 * MIB, 6 * 1024 * MIB] {
        let c = collection(
            dir.path(),
            &format!("bomb-{claim}"),
            &hostile::block_bomb(claim).unwrap(),
        );
        let read = atlas_limited(&[
            "read",
            &c,
            hostile::BLOCK_BOMB_SMALL,
            hostile::BLOCK_BOMB_VARIABLE,
        ]);
        assert_fails_with(
            &read,
            1,
            &[
                "segment 'v'",
                "block 0 claims to decode to",
                &claim.to_string(),
                "array 'small'",
            ],
        );
        let verify = atlas_limited(&["verify", "--full", &c]);
        assert_eq!(verify.code, Some(1), "{}", verify.stderr);
        assert!(
            verify.stdout.contains("FAILED") && verify.stdout.contains("block 0"),
            "{}",
            verify.stdout
        );
    }
}

#[test]
fn fifos_and_directories_in_place_of_the_collection_files_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("c").to_str().unwrap().to_owned();
    assert_eq!(
        atlas_limited(&["demo", &c, "--datasets", "2"]).code,
        Some(0)
    );
    let mask = Path::new(&c).join("deleted.mask");
    let container = Path::new(&c).join("data.atlas");
    mkfifo(&mask);
    for args in [
        vec!["ls", c.as_str()],
        vec!["delete", c.as_str(), "month_000"],
    ] {
        let run = atlas_limited(&args);
        assert_fails_with(&run, 1, &["deleted.mask", "a FIFO, not a regular file"]);
    }
    std::fs::remove_file(&mask).unwrap();
    std::fs::create_dir(&mask).unwrap();
    assert_fails_with(
        &atlas_limited(&["ls", &c]),
        1,
        &["a directory, not a regular file"],
    );
    std::fs::remove_dir(&mask).unwrap();
    std::fs::remove_file(&container).unwrap();
    mkfifo(&container);
    assert_fails_with(
        &atlas_limited(&["info", &c]),
        1,
        &[
            "data.atlas",
            "not an Atlas collection",
            "a FIFO, not a regular file",
        ],
    );
    // The collection argument itself a FIFO.
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    assert_fails_with(
        &atlas_limited(&["ls", fifo.to_str().unwrap()]),
        1,
        &["a FIFO, not a collection directory"],
    );
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

#[test]
fn a_regular_file_is_not_a_collection_and_no_retry_helps() {
    // `delete` on a regular file exited 75 ("retry later"): object_store reports the path
    // through a file as a generic store error, which counted as retryable.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, b"not a collection").unwrap();
    let file = file.to_str().unwrap();
    for args in [
        vec!["delete", file, "x"],
        vec!["ls", file],
        vec!["info", file],
        vec!["read", file, "d", "v"],
        vec!["stats", file, "v"],
        vec!["attrs", file, "k"],
    ] {
        let run = atlas_limited(&args);
        assert_fails_with(
            &run,
            1,
            &[
                file,
                "not an Atlas collection",
                "a regular file, not a collection directory",
            ],
        );
    }
    let verify = atlas_limited(&["verify", file]);
    assert_eq!(verify.code, Some(1), "{}", verify.stderr);
    assert_eq!(
        std::fs::read(file).unwrap(),
        b"not a collection",
        "nothing changed"
    );
}

#[test]
fn demo_refuses_a_directory_that_holds_anything() {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("c").to_str().unwrap().to_owned();
    assert_eq!(
        atlas_limited(&["demo", &c, "--datasets", "3"]).code,
        Some(0)
    );
    assert_eq!(atlas_limited(&["delete", &c, "month_000"]).code, Some(0));
    let before = files(Path::new(&c));
    // Before: the second demo overwrote the write-once data.atlas, and the old mask then hid
    // the new collection's first dataset.
    let again = atlas_limited(&["demo", &c, "--datasets", "5"]);
    assert_fails_with(&again, 1, &[&c, "not empty", "write-once"]);
    assert_eq!(files(Path::new(&c)), before, "nothing changed");
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("README"), b"mine").unwrap();
    let run = atlas_limited(&["demo", other.to_str().unwrap()]);
    assert_fails_with(&run, 1, &["not empty", "README"]);
    assert_eq!(std::fs::read(other.join("README")).unwrap(), b"mine");
    // A new or empty directory is fine.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_eq!(
        atlas_limited(&["demo", empty.to_str().unwrap()]).code,
        Some(0)
    );
}

/// Every file below `dir` with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn names_that_carry_terminal_escapes_are_escaped_in_human_output_and_exact_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let c = collection(dir.path(), "c", &hostile::escaping_names().unwrap());
    let evil_dataset = hostile::ESCAPING_DATASET;
    let evil_array = hostile::ESCAPING_ARRAY;
    for args in [
        vec!["ls", c.as_str()],
        vec!["info", c.as_str()],
        vec!["attrs", c.as_str(), hostile::ESCAPING_KEY],
        vec!["verify", c.as_str()],
    ] {
        let run = atlas_limited(&args);
        assert_eq!(run.code, Some(0), "{args:?}: {}", run.stderr);
        assert!(
            !run.stdout.contains('\u{1b}') && !run.stdout.contains('\r'),
            "{args:?} printed a raw escape: {:?}",
            run.stdout
        );
    }
    let ls = atlas_limited(&["ls", &c]).stdout;
    assert!(ls.contains(r"\u{1b}[2J"), "{ls:?}");
    let attrs = atlas_limited(&["attrs", &c, hostile::ESCAPING_KEY]).stdout;
    assert!(attrs.contains(r"\u{1b}]0;"), "{attrs:?}");
    // JSON stays exact: the names parse back to what the collection holds.
    let json: serde_json::Value =
        serde_json::from_str(&atlas_limited(&["ls", &c, "--json"]).stdout).unwrap();
    assert_eq!(json[0]["name"], evil_dataset);
    assert_eq!(
        json[0]["arrays"][0],
        format!("{evil_array}:Float32").as_str()
    );
    // An error quoting a name from the collection is escaped on stderr too.
    let run = atlas_limited(&["read", &c, evil_dataset, "missing"]);
    assert_eq!(run.code, Some(1));
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
}
