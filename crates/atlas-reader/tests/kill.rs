//! A deleter killed with SIGKILL in the middle of a commit leaves `deleted.mask` either
//! as it was or as the commit made it, never torn; the kernel drops its directory lock, so the
//! next delete succeeds; and that delete clears any temp file the dead one left behind.
//!
//! The deleter is this test binary run again as a child process (`harness = false`: `main` runs
//! `child_deleter` when the parent sets [`CHILD_DIR`], so the child is not a test). Its committer carries a step hook that,
//! at the chosen [`CommitStep`], prints a marker and blocks on stdin with the lock held, so the
//! parent kills it at exactly that point instead of at a racy moment.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.
#![cfg_attr(not(unix), allow(dead_code, unused_imports))]
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime

mod common;
use dsrt_atlas_test_runner as runner;

use atlas_reader::{Atlas, CommitStep, LocalFlockCommitter};
use common::*;
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{mpsc, Arc};
use std::time::Duration;

const CHILD_DIR: &str = "ATLAS_KILL_TEST_DIR";
const CHILD_STEP: &str = "ATLAS_KILL_TEST_STEP";
const CHILD_NAME: &str = "ATLAS_KILL_TEST_NAME";
const MARKER: &str = "ATLAS-KILL-TEST-PAUSED";

const STEPS: [(&str, CommitStep); 4] = [
    ("locked", CommitStep::Locked),
    ("merged", CommitStep::Merged),
    ("temp_written", CommitStep::TempWritten),
    ("renamed", CommitStep::Renamed),
];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Unix only: the test relies on SIGKILL and on the local committer's `flock`.
#[cfg(not(unix))]
fn main() {}

#[cfg(unix)]
fn main() -> ExitCode {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        child_deleter(&dir);
        return ExitCode::SUCCESS;
    }
    runner::run(&[(
        "a_deleter_killed_mid_commit_leaves_the_old_or_the_new_mask",
        a_deleter_killed_mid_commit_leaves_the_old_or_the_new_mask,
    )])
}

/// The child's body: deletes one dataset and stops at the chosen step until killed.
fn child_deleter(dir: &str) {
    let wanted = std::env::var(CHILD_STEP).unwrap();
    let name = std::env::var(CHILD_NAME).unwrap();
    let (_, step) = STEPS.into_iter().find(|(n, _)| *n == wanted).unwrap();
    let hook = move |at: CommitStep| {
        if at == step {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{MARKER}").unwrap();
            out.flush().unwrap();
            // Blocks with the directory lock held until the parent kills this process.
            let mut line = String::new();
            let _ = std::io::stdin().read_line(&mut line);
        }
    };
    let dir = std::fs::canonicalize(dir).unwrap();
    let committer = LocalFlockCommitter::new(dir.clone()).with_step_hook(Arc::new(hook));
    runtime().block_on(async {
        let atlas = Atlas::open_local(&dir).await.unwrap();
        atlas
            .with_committer(Arc::new(committer))
            .delete(&[name])
            .await
            .unwrap();
    });
    panic!("the parent was meant to kill this deleter before it finished");
}

/// Mask bytes (version 1) holding `ordinals`.
fn mask_bytes(ordinals: &[u32]) -> Vec<u8> {
    let mut out = b"ATLM".to_vec();
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(ordinals.len() as u32).to_le_bytes());
    for o in ordinals {
        out.extend_from_slice(&o.to_le_bytes());
    }
    out
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Starts a deleter of `name` that stops at `step`, and returns once it has stopped there.
fn start_paused_deleter(collection: &Path, step: &str, name: &str) -> std::process::Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_DIR, collection)
        .env(CHILD_STEP, step)
        .env(CHILD_NAME, name)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains(MARKER) {
                let _ = tx.send(());
            }
        }
    });
    if rx.recv_timeout(Duration::from_secs(120)).is_err() {
        let _ = child.kill();
        panic!("the deleter never reached step {step}");
    }
    child
}

fn local_collection(datasets: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    runtime().block_on(write_to(store, stations(datasets)));
    let collection = std::fs::canonicalize(dir.path().join("collections/demo")).unwrap();
    (dir, collection)
}

fn a_deleter_killed_mid_commit_leaves_the_old_or_the_new_mask() {
    for (step, at) in STEPS {
        let (_dir, collection) = local_collection(8);
        let rt = runtime();
        // An earlier delete, so "old" is a real mask rather than an absent one.
        rt.block_on(async {
            let atlas = Atlas::open_local(&collection).await.unwrap();
            atlas.delete(&["station_000000_2024"]).await.unwrap();
        });
        let mask = collection.join("deleted.mask");
        let old = std::fs::read(&mask).unwrap();
        assert_eq!(old, mask_bytes(&[0]));

        let mut child = start_paused_deleter(&collection, step, "station_000003_2024");
        child.kill().unwrap(); // SIGKILL on Unix: no destructor, no unwinding, no cleanup.
        let status = child.wait().unwrap();
        assert!(!status.success(), "{step}: the deleter was killed");

        let now = std::fs::read(&mask).unwrap();
        let new = mask_bytes(&[0, 3]);
        assert!(now == old || now == new, "{step}: a torn mask {now:?}");
        let committed = at == CommitStep::Renamed;
        assert_eq!(
            now == new,
            committed,
            "{step}: the rename is the commit point"
        );
        let left = entries(&collection);
        let temps = left
            .iter()
            .filter(|n| n.starts_with(".deleted.mask."))
            .count();
        assert_eq!(
            temps,
            usize::from(at == CommitStep::TempWritten),
            "{step}: only a kill between temp write and rename leaves a temp file: {left:?}"
        );

        // The kernel dropped the dead deleter's lock: the next delete goes straight through,
        // removes the stale temp file, and keeps whatever the dead one committed.
        rt.block_on(async {
            let atlas = Atlas::open_local(&collection).await.unwrap();
            assert_eq!(atlas.deleted().len(), 1 + usize::from(committed));
            tokio::time::timeout(
                Duration::from_secs(30),
                atlas.delete(&["station_000005_2024"]),
            )
            .await
            .expect("the next delete is not blocked by the dead deleter")
            .unwrap();
        });
        let expected: &[u32] = if committed { &[0, 3, 5] } else { &[0, 5] };
        assert_eq!(
            std::fs::read(&mask).unwrap(),
            mask_bytes(expected),
            "{step}"
        );
        assert_eq!(
            entries(&collection),
            ["data.atlas", "deleted.mask"],
            "{step}: no lock or temp file left behind"
        );
    }
}
