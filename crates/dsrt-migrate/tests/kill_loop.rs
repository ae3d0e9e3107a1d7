//! Crash consistency under random kills: a migrating process SIGKILLs itself 100 times, each
//! time after a seeded random number of manifest bytes (mid-write included: the partial temp
//! file is flushed to disk first). After every kill each manifest is byte for byte the old
//! one or the new one, symlinks stay symlinks, and a retry in the original order completes
//! with exactly the bytes an uninterrupted migration writes.
//!
//! `kill.rs` kills before each file operation through a handshake; this loop kills inside the
//! byte stream, at points no handshake names. The mix: six caches, one already v3, one reached
//! through a symlink. The child is this test binary (`harness = false`, so the child is not a
//! test) re-run with `DSRT_MIGRATE_KILL_LOOP_CHILD` set. Unix only (it reads the kill signal).
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values
#![cfg_attr(not(unix), allow(dead_code, unused_imports))]
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output

use dsrt_atlas_test_runner as runner;

use dsrt_migrate::update_local_manifests;
use durable_fs::{CancelToken, DurableFile, FileSystem, StdFileSystem};
use std::io::{self, Write};
#[cfg(unix)]
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const CHILD_ENV: &str = "DSRT_MIGRATE_KILL_LOOP_CHILD";
const BUDGET_ENV: &str = "DSRT_MIGRATE_KILL_LOOP_BYTES";
const KILLS: u64 = 100;
const SEED: u64 = 0x00c0_ffee_5eed;
const CACHES: usize = 6;
const ALREADY_V3: usize = 2;
const SYMLINKED: usize = 4;
const HEX: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// A v2 manifest (or a v3 one with `cache_id`), padded so a write spans many kill points.
fn manifest_text(position: usize) -> String {
    let (version, id) = if position == ALREADY_V3 {
        (3, format!("  \"cache_id\": {position},\n"))
    } else {
        (2, String::new())
    };
    let padding: Vec<String> = (0..40).map(|i| format!("\"pad-{position}-{i}\"")).collect();
    format!(
        "{{\n  \"format_version\": {version},\n{id}  \"source\": \"s{position}\",\n  \"sample_count\": 0,\n  \"metadata_schema\": [],\n  \"index_sha256\": \"{HEX}\",\n  \"metadata_sha256\": \"{HEX}\",\n  \"shards\": [],\n  \"unknown_key\": [{}]\n}}\n",
        padding.join(", ")
    )
}

/// The listed cache paths under `root`; one of them is a symlink to `root/elsewhere/real`.
fn caches_under(root: &Path) -> Vec<PathBuf> {
    (0..CACHES)
        .map(|i| root.join(format!("cache{i}")))
        .collect()
}

fn setup() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for (position, cache) in caches_under(root.path()).iter().enumerate() {
        let dir = if position == SYMLINKED {
            let real = root.path().join("elsewhere").join("real");
            std::fs::create_dir_all(&real).unwrap();
            std::os::unix::fs::symlink(&real, cache).unwrap();
            real
        } else {
            std::fs::create_dir(cache).unwrap();
            cache.clone()
        };
        std::fs::write(dir.join("manifest.json"), manifest_text(position)).unwrap();
    }
    root
}

fn manifests(root: &Path) -> Vec<Vec<u8>> {
    caches_under(root)
        .iter()
        .map(|c| std::fs::read(c.join("manifest.json")).unwrap())
        .collect()
}

/// Passes everything to the real file system, counting the bytes written; when the count
/// reaches the budget it flushes what it has so far (a torn temporary file on disk) and
/// SIGKILLs its own process.
struct DyingFs {
    written: Arc<AtomicU64>,
    budget: u64,
}

struct DyingFile {
    inner: Box<dyn DurableFile>,
    written: Arc<AtomicU64>,
    budget: u64,
}

impl Write for DyingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self
            .budget
            .saturating_sub(self.written.load(Ordering::SeqCst));
        if (buf.len() as u64) < left {
            self.written.fetch_add(buf.len() as u64, Ordering::SeqCst);
            return self.inner.write(buf);
        }
        self.inner.write_all(&buf[..left as usize])?;
        self.inner.flush()?;
        die()
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl DurableFile for DyingFile {
    fn sync_all(&mut self) -> io::Result<()> {
        self.inner.sync_all()
    }
}

/// SIGKILL, not a clean exit: no destructor, no buffered write, no temp-file cleanup runs.
fn die() -> ! {
    let _ = Command::new("kill")
        .args(["-KILL", &std::process::id().to_string()])
        .status();
    // Only reached if `kill` is missing; abort is just as abrupt.
    std::process::abort()
}

impl FileSystem for DyingFs {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        Ok(Box::new(DyingFile {
            inner: StdFileSystem.create_new(path)?,
            written: Arc::clone(&self.written),
            budget: self.budget,
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        StdFileSystem.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        StdFileSystem.sync_dir(dir)
    }
    fn sync_existing(&self, path: &Path) -> io::Result<()> {
        StdFileSystem.sync_existing(path)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        StdFileSystem.remove_file(path)
    }
}

fn migrate(root: &Path, fs: &dyn FileSystem) {
    update_local_manifests(&caches_under(root), 3, fs, &CancelToken::new()).unwrap();
}

#[cfg(not(unix))]
fn main() {}

#[cfg(unix)]
fn main() -> ExitCode {
    if let (Ok(root), Ok(budget)) = (std::env::var(CHILD_ENV), std::env::var(BUDGET_ENV)) {
        kill_loop_child_migration(&root, &budget);
        return ExitCode::SUCCESS;
    }
    runner::run(&[(
        "a_hundred_random_kills_leave_every_manifest_old_or_new",
        a_hundred_random_kills_leave_every_manifest_old_or_new,
    )])
}

/// The child: migrates with a byte budget, dying when it runs out.
fn kill_loop_child_migration(root: &str, budget: &str) {
    let fs = DyingFs {
        written: Arc::new(AtomicU64::new(0)),
        budget: budget.parse().unwrap(),
    };
    migrate(Path::new(root), &fs);
}

/// Runs the child with `budget` bytes; true if it was killed, false if it finished.
fn run_child(root: &Path, budget: u64) -> bool {
    let status = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, root)
        .env(BUDGET_ENV, budget.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    #[cfg(unix)]
    let signal = status.signal();
    #[cfg(not(unix))]
    let signal: Option<i32> = None;
    match signal {
        Some(9) => true,
        _ => {
            assert!(
                status.success(),
                "budget {budget}: the child failed: {status}"
            );
            false
        }
    }
}

/// splitmix64: a seeded, dependency-free source of kill points.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn a_hundred_random_kills_leave_every_manifest_old_or_new() {
    // An uninterrupted migration: the new bytes, and how many bytes it writes in all.
    let reference = setup();
    let old = manifests(reference.path());
    let counter = DyingFs {
        written: Arc::new(AtomicU64::new(0)),
        budget: u64::MAX,
    };
    migrate(reference.path(), &counter);
    let total = counter.written.load(Ordering::SeqCst);
    let new = manifests(reference.path());
    assert_eq!(old[ALREADY_V3], new[ALREADY_V3]);
    assert!(total > 0);

    let (mut killed, mut changed_before_kill) = (0, 0);
    for round in 0..KILLS {
        // Up to 10 % past the total, so some runs finish.
        let budget = splitmix(SEED ^ round) % (total + total / 10 + 1);
        let root = setup();
        if run_child(root.path(), budget) {
            killed += 1;
        }
        let now = manifests(root.path());
        for (position, bytes) in now.iter().enumerate() {
            assert!(
                *bytes == old[position] || *bytes == new[position],
                "budget {budget}: cache {position} is torn:\n{}",
                String::from_utf8_lossy(bytes)
            );
        }
        changed_before_kill += now.iter().zip(&old).filter(|(now, old)| now != old).count();
        let link = root.path().join(format!("cache{SYMLINKED}"));
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
        // A retry in the original order completes with exactly the uninterrupted bytes.
        migrate(root.path(), &StdFileSystem);
        assert_eq!(manifests(root.path()), new, "budget {budget}: retry");
    }
    println!(
        "{KILLS} runs over {total} manifest bytes (seed {SEED:#x}): {killed} killed, \
         {changed_before_kill} manifests already new at the kill"
    );
    assert!(killed >= KILLS * 8 / 10, "only {killed} kills");
    assert!(changed_before_kill > 0, "no kill landed after a rename");
}
