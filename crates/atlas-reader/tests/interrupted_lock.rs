//! A local delete whose directory `flock` a signal interrupts (`EINTR`) retries it and commits:
//! the deleter is this binary run again under strace, which fails every other `flock` call with
//! `EINTR`, as a signal delivered to the waiting thread does.
//!
//! `harness = false`: `main` runs the child when [`ROLE`] is set, so it is not a test.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

mod common;
use dsrt_atlas_test_runner as runner;

use atlas_reader::Atlas;
use common::*;
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

const ROLE: &str = "ATLAS_EINTR_ROLE";
const DIR: &str = "ATLAS_EINTR_DIR";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn child() -> ExitCode {
    let collection = PathBuf::from(std::env::var(DIR).unwrap());
    runtime().block_on(async {
        let atlas = Atlas::open_local(&collection).await.unwrap();
        let first = atlas.delete(&["station_000001_2024"]).await.unwrap();
        let second = atlas
            .delete(&["station_000002_2024", "station_000003_2024"])
            .await
            .unwrap();
        assert_eq!((first.newly_deleted, second.newly_deleted), (1, 2));
    });
    ExitCode::SUCCESS
}

fn deletes_commit_although_each_lock_wait_is_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ObjectStore> =
        Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    let rt = runtime();
    rt.block_on(write_to(store, stations(6)));
    let collection = std::fs::canonicalize(dir.path().join("collections/demo")).unwrap();
    let run = runner::run_with_flocks_interrupted(ROLE, "deleter", &[(DIR, &collection)]);
    assert!(run.succeeded, "{}", run.stderr);
    assert!(run.injected >= 2, "{run:?}");
    let atlas = rt.block_on(Atlas::open_local(&collection)).unwrap();
    assert_eq!(atlas.deleted().len(), 3);
    let names: Vec<String> = (0..6)
        .map(|i| format!("station_{i:06}_2024"))
        .filter(|name| atlas.dataset(name).is_none())
        .collect();
    assert_eq!(
        names,
        [
            "station_000001_2024",
            "station_000002_2024",
            "station_000003_2024"
        ]
    );
}

fn main() -> ExitCode {
    if std::env::var(ROLE).is_ok() {
        return child();
    }
    runner::run(&[(
        "deletes_commit_although_each_lock_wait_is_interrupted",
        deletes_commit_although_each_lock_wait_is_interrupted,
    )])
}
