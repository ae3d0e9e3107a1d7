//! What appending 1,000 datasets to a collection of 20,000 (`APPEND_COST_BASE`: another size,
//! 100,000 for the figure) costs, against rewriting the
//! collection whole with them, measured in one run on one store (`InMemory`, every request
//! counted): the append writes the new part's bytes and one small manifest, and reads the
//! manifest twice and every part's tail once; the rewrite writes everything again. Prints the
//! figures `docs/benchmarks.md` records ("Appending to a growing collection"); run with
//! `cargo test -p atlas-append --test append_cost -- --nocapture`.
#![allow(clippy::disallowed_methods)] // a test drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_precision_loss, clippy::print_stdout)] // test code

use atlas_append::Appender;
use atlas_reader::Atlas;
use atlas_store::{CountingStore, RequestKind};
use atlas_writer::{ArraySpec, AtlasWriter, DatasetSpec, WriterOptions};
use ndarray::{ArrayD, IxDyn};
use object_access::{RemotePrefix, StoreLocation};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use std::sync::Arc;
use std::time::Instant;

/// The datasets already in the collection: 20,000 by default (the suite's run), or
/// `APPEND_COST_BASE`.
fn base() -> usize {
    std::env::var("APPEND_COST_BASE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}
const APPENDED: usize = 1_000;

/// Dataset `i`: a `[16, 16]` `f32` field (1 KiB raw) and an attribute.
fn dataset(i: usize) -> DatasetSpec {
    let values: Vec<f32> = (0..256)
        .map(|j| ((i * 7 + j * 13) % 1000) as f32 * 0.25)
        .collect();
    DatasetSpec::new(format!("d{i:06}"))
        .array(ArraySpec::new(
            "field",
            ArrayD::from_shape_vec(IxDyn(&[16, 16]), values).unwrap(),
        ))
        .attr("index", i as i64)
}

async fn bytes_under(store: &dyn ObjectStore, prefix: &str) -> u64 {
    use futures::TryStreamExt;
    let listed: Vec<_> = store
        .list(Some(&Path::from(prefix)))
        .try_collect()
        .await
        .unwrap();
    listed.iter().map(|o| o.size).sum()
}

async fn manifest_size(store: &dyn ObjectStore) -> u64 {
    store
        .head(&Path::from("grown/collection.manifest"))
        .await
        .unwrap()
        .size
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appending_costs_the_new_part_and_one_manifest_write() {
    let memory: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let counting = Arc::new(CountingStore::new(Arc::clone(&memory)));
    let location = StoreLocation::Remote(RemotePrefix::new(
        counting.clone(),
        Path::from("grown"),
        "memory:///grown",
    ));
    // The large collection: one part of `base()` datasets.
    let mut appender = Appender::open(&location, WriterOptions::default())
        .await
        .unwrap();
    for i in 0..base() {
        appender.write_dataset(dataset(i)).unwrap();
    }
    appender.commit().await.unwrap();
    let before = bytes_under(memory.as_ref(), "grown").await;
    let old_manifest = manifest_size(memory.as_ref()).await;

    counting.reset();
    let started = Instant::now();
    let mut appender = Appender::open(&location, WriterOptions::default())
        .await
        .unwrap();
    for i in base()..base() + APPENDED {
        appender.write_dataset(dataset(i)).unwrap();
    }
    let report = appender.commit().await.unwrap();
    let append_time = started.elapsed();
    let requests = counting.requests();
    let after = bytes_under(memory.as_ref(), "grown").await;
    let manifest = manifest_size(memory.as_ref()).await;
    let writes: Vec<_> = requests
        .iter()
        .filter(|r| matches!(r.kind, RequestKind::Put | RequestKind::PutMultipart))
        .collect();
    let metadata_writes = writes
        .iter()
        .filter(|r| !r.path.ends_with("data.atlas"))
        .count();

    // The rewrite: every dataset again, into a new plain collection, on the same store.
    let started = Instant::now();
    let mut writer = AtlasWriter::new(
        Arc::clone(&memory),
        &Path::from("rewritten"),
        WriterOptions::default(),
    );
    for i in 0..base() + APPENDED {
        writer.write_dataset(dataset(i)).unwrap();
    }
    let rewrite = writer.finish().await.unwrap();
    let rewrite_time = started.elapsed();

    let atlas = Atlas::open(Arc::clone(&memory), &Path::from("grown"))
        .await
        .unwrap();
    assert_eq!(atlas.dataset_count(), base() + APPENDED);

    println!(
        "append {APPENDED} to {}: {:.3} s, {} bytes written ({} part + {} manifest, the old manifest {} bytes), {} write requests ({metadata_writes} metadata), {} requests in all",
        base(),
        append_time.as_secs_f64(),
        report.container_bytes + manifest,
        report.container_bytes,
        manifest,
        old_manifest,
        writes.len(),
        requests.len(),
    );
    println!(
        "rewrite {} datasets: {:.3} s, {} bytes written",
        base() + APPENDED,
        rewrite_time.as_secs_f64(),
        rewrite.container_bytes
    );
    println!(
        "append / rewrite: time {:.3}, bytes {:.3}",
        append_time.as_secs_f64() / rewrite_time.as_secs_f64(),
        (report.container_bytes + manifest) as f64 / rewrite.container_bytes as f64
    );
    // The part's bytes plus one small metadata write (the manifest): nothing else is written.
    assert_eq!(metadata_writes, 1, "{writes:?}");
    assert_eq!(
        after + old_manifest - before,
        report.container_bytes + manifest
    );
    assert!(manifest < 200, "{manifest}");
    assert!((report.container_bytes as f64) < 0.1 * rewrite.container_bytes as f64);
    assert!(append_time.as_secs_f64() < 0.5 * rewrite_time.as_secs_f64());
}
