//! Running the real `dsrt` binary on real files.
#![allow(dead_code)] // Each test file uses a different part.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

pub(crate) mod cluster;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The output of one `dsrt` run.
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn stdout_text(&self) -> String {
        String::from_utf8(self.stdout.clone()).unwrap()
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout_text()))
    }

    /// Asserts exit 0 and no error text.
    pub(crate) fn ok(self) -> Self {
        assert_eq!(
            self.code,
            0,
            "stderr: {}\nstdout: {}",
            self.stderr,
            self.stdout_text()
        );
        self
    }

    /// Asserts exit `code` and a `dsrt: ` message on stderr.
    pub(crate) fn fails(self, code: i32) -> Self {
        assert_eq!(
            self.code,
            code,
            "stderr: {}\nstdout: {}",
            self.stderr,
            self.stdout_text()
        );
        if code == 1 {
            assert!(self.stderr.starts_with("dsrt: "), "stderr: {}", self.stderr);
        }
        self
    }
}

fn finish(output: Output) -> Run {
    Run {
        code: output
            .status
            .code()
            .expect("dsrt exited normally, not by a signal"),
        stdout: output.stdout,
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

pub(crate) fn command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dsrt"))
}

/// Runs `dsrt args...` in `dir`.
pub(crate) fn dsrt_in(dir: &Path, args: &[&str]) -> Run {
    finish(
        command()
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .unwrap(),
    )
}

/// Runs `dsrt args...` with `input` on stdin.
pub(crate) fn dsrt_stdin(dir: &Path, args: &[&str], input: &[u8]) -> Run {
    let mut child = command()
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    finish(child.wait_with_output().unwrap())
}

/// A temp dir with `files` (relative name, bytes) written into it.
pub(crate) fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    dir
}

/// Packs `count` text samples (`"{name}-{i}"`, metadata `n = i`) into `dir/name`, source
/// `name`, in shards of at most `max_shard_bytes`.
pub(crate) fn pack_text(dir: &Path, name: &str, count: usize, max_shard_bytes: u64) {
    let lines: Vec<_> = (0..count)
        .map(|i| serde_json::json!({"text": format!("{name}-{i}"), "n": i}))
        .collect();
    let max_shard_bytes = max_shard_bytes.to_string();
    let args = [
        "pack",
        "--jsonl",
        "-",
        "--payload-field",
        "text",
        "--payload-encoding",
        "text",
        "--out",
        name,
        "--source",
        name,
        "--max-shard-bytes",
        &max_shard_bytes,
    ];
    dsrt_stdin(dir, &args, &jsonl(&lines)).ok();
}

/// JSONL text from JSON values.
pub(crate) fn jsonl(lines: &[serde_json::Value]) -> Vec<u8> {
    lines
        .iter()
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .into_bytes()
}

/// `dsrt cat DIR/CACHE INDEX` stdout bytes.
pub(crate) fn cat(dir: &Path, cache: &str, index: u64) -> Vec<u8> {
    dsrt_in(dir, &["cat", cache, &index.to_string()])
        .ok()
        .stdout
}

/// `dsrt inspect --json` of a cache.
pub(crate) fn inspect(dir: &Path, cache: &str) -> serde_json::Value {
    dsrt_in(dir, &["inspect", cache, "--json"]).ok().json()
}

/// The schema in `inspect --json` as (name, type, nullable).
pub(crate) fn schema_of(dir: &Path, cache: &str) -> Vec<(String, String, bool)> {
    inspect(dir, cache)["schema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["type"].as_str().unwrap().to_owned(),
                c["nullable"].as_bool().unwrap(),
            )
        })
        .collect()
}

pub(crate) fn col(name: &str, ty: &str, nullable: bool) -> (String, String, bool) {
    (name.to_owned(), ty.to_owned(), nullable)
}

/// Path of shard `id` of a cache.
pub(crate) fn shard_path(cache: &Path, id: u64) -> PathBuf {
    cache.join("shards").join(format!("{id:06}.bin"))
}

/// Rewrites a packed (v3) cache's manifest as v2, as an older writer would have left it.
pub(crate) fn make_v2(cache: &Path) {
    let path = cache.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["format_version"] = serde_json::json!(2);
    manifest.as_object_mut().unwrap().remove("cache_id");
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
}
