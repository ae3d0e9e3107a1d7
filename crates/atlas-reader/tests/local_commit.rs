//! The local delete committer waits for the collection's directory lock off the async threads:
//! while another holder keeps the `flock`, a delete on a one-thread runtime must leave that
//! thread free to run other tasks (it waits on Tokio's blocking pool instead).
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![cfg(target_os = "linux")] // Reads /proc/locks to see the delete waiting for the lock.
#![allow(clippy::unwrap_used)] // Test code.

mod common;

use atlas_reader::Atlas;
use common::*;
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether some thread of this process is blocked waiting for a `flock` (a `->` line of
/// /proc/locks with our process id).
fn waiting_for_a_flock() -> bool {
    let pid = format!(" {} ", std::process::id());
    std::fs::read_to_string("/proc/locks")
        .unwrap()
        .lines()
        .any(|line| line.contains("-> FLOCK") && line.contains(&pid))
}

#[test]
fn a_delete_waiting_for_the_directory_lock_does_not_block_the_runtime() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    runtime.block_on(write_to(store, stations(4)));
    let collection = std::fs::canonicalize(dir.path().join("collections/demo")).unwrap();
    let atlas = runtime.block_on(Atlas::open_local(&collection)).unwrap();

    // Another deleter holds the lock until told to let go (or, should this runtime's only
    // thread be stuck in flock, for 20 s, so that the test fails instead of hanging).
    let held = std::fs::File::open(&collection).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let _ = released.recv_timeout(Duration::from_secs(20));
        drop(held);
    });

    runtime.block_on(async {
        let delete = tokio::spawn(async move { atlas.delete(&["station_000002_2024"]).await });
        // This task keeps running on the same (only) thread while the delete waits.
        let started = Instant::now();
        let mut waited = false;
        while started.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(10)).await;
            if waiting_for_a_flock() {
                waited = true;
                break;
            }
        }
        let responsive = started.elapsed() < Duration::from_secs(10);
        let _ = release.send(()); // Gone already if the holder timed out.
        let report = delete.await.unwrap().unwrap();
        assert!(
            responsive,
            "the runtime's thread was blocked for {:?}: the delete waited for the lock on it",
            started.elapsed()
        );
        assert!(waited, "the delete never waited for the lock");
        assert_eq!(report.newly_deleted, 1);
    });
    holder.join().unwrap();
    let reopened = runtime.block_on(Atlas::open_local(&collection)).unwrap();
    assert_eq!(reopened.deleted().ordinals(), [2]);
}
