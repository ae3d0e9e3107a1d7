//! A migrating process SIGKILLed before each of its file operations leaves every manifest
//! either the old v2 or the new v3, never torn, and a retry in the original order completes.
//!
//! The child is this test binary (`harness = false`, so the child is not a test) re-run with
//! `DSRT_MIGRATE_CHILD` set; its file system announces each operation on stdout and waits for a
//! go-ahead on stdin, so the kill lands exactly there.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_atlas_test_runner as runner;

use dsrt_manifest::Manifest;
use dsrt_migrate::update_local_manifests;
use durable_fs::{CancelToken, DurableFile, FileSystem, StdFileSystem};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

const CHILD_ENV: &str = "DSRT_MIGRATE_CHILD";
const HEX: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

fn v2_text(source: &str) -> String {
    format!(
        "{{\n  \"format_version\": 2,\n  \"source\": \"{source}\",\n  \"sample_count\": 0,\n  \"metadata_schema\": [],\n  \"index_sha256\": \"{HEX}\",\n  \"metadata_sha256\": \"{HEX}\",\n  \"shards\": [],\n  \"extra\": [1, 2, 3]\n}}\n"
    )
}

/// Announces each operation and waits for the parent.
struct SteppingFs;

fn step(name: &str, path: &Path) {
    let mut out = io::stdout().lock();
    writeln!(out, "STEP:{name} {}", path.display()).unwrap();
    out.flush().unwrap();
    let mut go = String::new();
    io::stdin().read_line(&mut go).unwrap();
}

struct SteppingFile(Box<dyn DurableFile>, PathBuf);

impl Write for SteppingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        step("write", &self.1);
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl DurableFile for SteppingFile {
    fn sync_all(&mut self) -> io::Result<()> {
        step("fsync", &self.1);
        self.0.sync_all()
    }
}

impl FileSystem for SteppingFs {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        step("create", path);
        Ok(Box::new(SteppingFile(
            StdFileSystem.create_new(path)?,
            path.to_path_buf(),
        )))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        step("rename", to);
        StdFileSystem.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        step("fsync-dir", dir);
        StdFileSystem.sync_dir(dir)
    }
    fn sync_existing(&self, path: &Path) -> io::Result<()> {
        step("fsync-existing", path);
        StdFileSystem.sync_existing(path)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        step("remove", path);
        StdFileSystem.remove_file(path)
    }
}

fn caches_under(root: &Path) -> Vec<PathBuf> {
    (0..3).map(|i| root.join(format!("cache{i}"))).collect()
}

fn main() -> ExitCode {
    if let Ok(root) = std::env::var(CHILD_ENV) {
        migrate_child(&root);
        return ExitCode::SUCCESS;
    }
    runner::run(&[(
        "sigkill_at_every_step_leaves_old_or_new_manifests",
        sigkill_at_every_step_leaves_old_or_new_manifests,
    )])
}

/// The child: migrates, announcing every file operation.
fn migrate_child(root: &str) {
    update_local_manifests(
        &caches_under(Path::new(root)),
        3,
        &SteppingFs,
        &CancelToken::new(),
    )
    .unwrap();
    step("done", Path::new(root));
}

/// Starts a child migration and kills it at its `kill_at`-th step; returns how many steps it
/// announced in all (`None` when it finished before `kill_at`).
fn run_child(root: &Path, kill_at: usize) -> usize {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut steps = 0;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        if !line.unwrap().contains("STEP:") {
            continue;
        }
        if steps == kill_at {
            child.kill().unwrap();
            break;
        }
        steps += 1;
        // The child may already be gone after its last step.
        let _ = stdin.write_all(b"go\n").and_then(|()| stdin.flush());
    }
    child.wait().unwrap();
    steps
}

fn sigkill_at_every_step_leaves_old_or_new_manifests() {
    let texts: Vec<String> = (0..3).map(|i| v2_text(&format!("s{i}"))).collect();
    let setup = || {
        let root = tempfile::tempdir().unwrap();
        for (cache, text) in caches_under(root.path()).iter().zip(&texts) {
            std::fs::create_dir(cache).unwrap();
            std::fs::write(cache.join("manifest.json"), text).unwrap();
        }
        root
    };
    // A full run tells how many steps there are.
    let total = run_child(setup().path(), usize::MAX);
    assert!(total >= 15, "only {total} steps");
    for kill_at in 0..total {
        let root = setup();
        run_child(root.path(), kill_at);
        let caches = caches_under(root.path());
        for (position, (cache, text)) in caches.iter().zip(&texts).enumerate() {
            let now = std::fs::read_to_string(cache.join("manifest.json")).unwrap();
            let manifest = Manifest::parse(now.as_bytes())
                .unwrap_or_else(|e| panic!("step {kill_at}: torn manifest: {e}\n{now}"));
            match manifest.stored_cache_id() {
                None => assert_eq!(&now, text, "step {kill_at}: v2 manifest changed"),
                Some(id) => assert_eq!(id, position as u64, "step {kill_at}"),
            }
        }
        // A retry in the original order completes; leftover temporary files are left alone.
        let report =
            update_local_manifests(&caches, 3, &StdFileSystem, &CancelToken::new()).unwrap();
        assert_eq!(
            report
                .entries
                .iter()
                .map(|e| e.cache_id)
                .collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
    }
}
