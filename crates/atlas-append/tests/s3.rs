//! Growing collections on the S3 test server: 16 processes appending 50 datasets each to one
//! collection at once lose nothing (the manifest commits with `If-None-Match: *` /
//! `If-Match`, a lost race retried after catching up), and every dataset reads back as
//! written; deleters racing across parts lose nothing (each part's mask commits with
//! conditional PUT); gc removes exactly a part no version names. Ignored unless `--ignored`: it needs the S3 test server (`cargo xtask test`, or
//! `bash .ci/s3-server.sh start DIR` and `source DIR/env`).
#![allow(clippy::disallowed_methods)] // a test drives its own runtime
#![allow(
    clippy::unwrap_used,
    clippy::cast_possible_truncation,
    clippy::print_stdout
)] // test code: reports figures

mod common;

use atlas_reader::Atlas;
use common::*;
use dsrt_atlas_test_runner as runner;
use object_access::StoreLocation;
use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

const PROCESSES: usize = 16;
const PER_PROCESS: usize = 50;

fn main() -> ExitCode {
    if std::env::var(CHILD_LOCATION).is_ok() {
        child_append();
        return ExitCode::SUCCESS;
    }
    runner::run_ignored(
        &[
            (
                "sixteen_processes_appending_at_once_on_s3_lose_nothing",
                sixteen_processes_appending_at_once_on_s3_lose_nothing,
            ),
            (
                "racing_deletes_across_parts_on_s3_lose_nothing",
                racing_deletes_across_parts_on_s3_lose_nothing,
            ),
            (
                "gc_on_s3_removes_exactly_an_unreferenced_part",
                gc_on_s3_removes_exactly_an_unreferenced_part,
            ),
            (
                "compaction_on_s3_is_byte_identical_to_a_fresh_write",
                compaction_on_s3_is_byte_identical_to_a_fresh_write,
            ),
        ],
        "needs the S3 test server; cargo xtask test runs them",
    )
}

fn url(test: &str) -> String {
    let Ok(bucket) = std::env::var("ATLAS_S3_TEST_BUCKET") else {
        panic!(
            "{test}: ATLAS_S3_TEST_BUCKET is not set, so no S3 server is configured. Run \
             `cargo xtask test`, or `bash .ci/s3-server.sh start DIR` and `source DIR/env` first."
        );
    };
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        endpoint.starts_with("http://127.0.0.1") || endpoint.starts_with("http://localhost"),
        "AWS_ENDPOINT_URL ('{endpoint}') is not on loopback; these tests only talk to a local server"
    );
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "s3://{bucket}/atlas-append-tests/{test}-{}-{nanos}",
        std::process::id()
    )
}

fn sixteen_processes_appending_at_once_on_s3_lose_nothing() {
    let url = url("sixteen_processes");
    let location = StoreLocation::parse(&url).unwrap();
    let rt = runtime();
    rt.block_on(append(&location, 99, 10));
    let results = append_in_processes(&url, 0..PROCESSES, PER_PROCESS);
    let versions: BTreeSet<u64> = results.iter().map(|(v, _)| *v).collect();
    assert_eq!(versions, (2..=PROCESSES as u64 + 1).collect());
    let retried = results.iter().filter(|(_, a)| *a > 1).count();
    println!("  {PROCESSES} appenders on S3: {retried} retried after a conflict");
    rt.block_on(async {
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(atlas.version(), Some(PROCESSES as u64 + 1));
        let mut expected: BTreeSet<String> = (0..10).map(|i| name(99, i)).collect();
        for writer in 0..PROCESSES {
            expected.extend((0..PER_PROCESS).map(|i| name(writer, i)));
        }
        assert_eq!(expected.len(), 10 + 800);
        assert_eq!(names(&atlas), expected);
        check_contents(&atlas).await;
    });
}

fn racing_deletes_across_parts_on_s3_lose_nothing() {
    const DELETERS: usize = 6;
    let url = url("racing_deletes");
    let location = StoreLocation::parse(&url).unwrap();
    let rt = runtime();
    rt.block_on(async {
        for writer in 0..3 {
            append(&location, writer, 4).await;
        }
    });
    let all: Vec<String> = (0..3)
        .flat_map(|w| (0..4).map(move |i| name(w, i)))
        .collect();
    // Tasks on one runtime (a store's connections belong to the runtime that made them),
    // each with its own open, released together.
    let barrier = tokio::sync::Barrier::new(DELETERS);
    rt.block_on(futures::future::join_all((0..DELETERS).map(|d| {
        let (all, barrier, location) = (&all, &barrier, &location);
        async move {
            // Names `d`, `d + 6`: two parts per deleter, no name shared.
            let names: Vec<&String> = all.iter().skip(d).step_by(DELETERS).collect();
            let atlas = Atlas::open_location(location, |s| s).await.unwrap();
            barrier.wait().await;
            let report = atlas.delete(&names).await.unwrap();
            assert_eq!(report.newly_deleted, names.len());
        }
    })));
    rt.block_on(async {
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(atlas.dataset_count(), 0, "left: {:?}", names(&atlas));
    });
}

fn gc_on_s3_removes_exactly_an_unreferenced_part() {
    use atlas_append::{collect_garbage, GcOptions};
    use object_store::ObjectStoreExt;
    let url = url("gc");
    let location = StoreLocation::parse(&url).unwrap();
    let remote = location.as_remote().unwrap().clone();
    let rt = runtime();
    rt.block_on(async {
        append(&location, 0, 3).await;
        append(&location, 1, 3).await;
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        let store = remote.store();
        let part = &atlas.commits()[0].part;
        let bytes = store
            .get(&remote.object(&format!("parts/{part}/data.atlas")))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let orphan = remote.object("parts/orphan/data.atlas");
        store.put(&orphan, bytes.into()).await.unwrap();
        let careful = collect_garbage(&location, &GcOptions::default())
            .await
            .unwrap();
        assert_eq!(careful.young_parts, ["orphan"]);
        let options = GcOptions {
            grace: std::time::Duration::ZERO,
            ..GcOptions::default()
        };
        let report = collect_garbage(&location, &options).await.unwrap();
        assert_eq!(report.removed_parts, ["orphan"]);
        assert!(store.head(&orphan).await.is_err());
        let after = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(names(&after), names(&atlas));
        check_contents(&after).await;
    });
}

fn compaction_on_s3_is_byte_identical_to_a_fresh_write() {
    use atlas_writer::{AtlasWriter, WriterOptions};
    use object_store::ObjectStoreExt;
    let url = url("compact");
    let location = StoreLocation::parse(&url).unwrap();
    let remote = location.as_remote().unwrap().clone();
    let rt = runtime();
    rt.block_on(async {
        for writer in 0..5 {
            append(&location, writer, 4).await;
        }
        let gone = [name(0, 1), name(2, 0), name(4, 3)];
        let atlas = Atlas::open_location(&location, |s| s).await.unwrap();
        atlas.delete(&gone).await.unwrap();
        let live: Vec<(usize, String)> = (0..5)
            .flat_map(|w| (0..4).map(move |i| (w, name(w, i))))
            .filter(|(_, n)| !gone.contains(n))
            .collect();

        let report = atlas_append::compact(&location, &mut |_, _| {})
            .await
            .unwrap();
        assert_eq!((report.version, report.datasets), (6, live.len()));
        let compacted = Atlas::open_location(&location, |s| s).await.unwrap();
        assert_eq!(compacted.part_commits().len(), 1);
        let created = compacted.parts().next().unwrap().1.footer().created_unix_ms;
        check_contents(&compacted).await;

        let store = remote.store();
        let mut fresh = AtlasWriter::new(
            store.clone(),
            &remote.object("fresh"),
            WriterOptions {
                created_unix_ms: created,
                ..WriterOptions::default()
            },
        );
        for (writer, name) in &live {
            fresh.write_dataset(dataset(name, *writer)).unwrap();
        }
        fresh.finish().await.unwrap();
        let get = |path: String| {
            let store = store.clone();
            let object = remote.object(&path);
            async move { store.get(&object).await.unwrap().bytes().await.unwrap() }
        };
        let part = get(format!("parts/{}/data.atlas", report.part)).await;
        let written = get("fresh/data.atlas".to_owned()).await;
        assert!(
            part == written,
            "the compacted part differs from a fresh write"
        );
    });
}
