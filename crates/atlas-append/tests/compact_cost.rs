//! What compacting a growing collection costs against writing the same datasets fresh, in one
//! run on one store (`InMemory`): `COMPACT_COST_PARTS` parts (default 20) of
//! `COMPACT_COST_PER_PART` datasets (default 500), one dataset in ten deleted; then (a)
//! `compact`, timed from its start to its commit, and (b) one `AtlasWriter` writing the live
//! datasets from memory, timed the same way. The compaction reads and decodes every dataset and
//! then does the fresh write's work, so the ratio is about 2. Prints the figures
//! `docs/benchmarks.md` records ("Compacting a growing collection"); run with
//! `COMPACT_COST_PARTS=20 COMPACT_COST_PER_PART=500 cargo test --release -p atlas-append --test compact_cost -- --nocapture`.
#![allow(clippy::disallowed_methods)] // a test drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_precision_loss, clippy::print_stdout)] // test code

use atlas_append::{compact, Appender};
use atlas_reader::Atlas;
use atlas_writer::{ArraySpec, AtlasWriter, DatasetSpec, WriterOptions};
use ndarray::{ArrayD, IxDyn};
use object_access::{RemotePrefix, StoreLocation};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStore;
use std::sync::Arc;
use std::time::Instant;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Dataset `i`: a `[16, 16]` `f32` field (1 KiB raw) with a unit, and an attribute.
fn dataset(i: usize) -> DatasetSpec {
    let values: Vec<f32> = (0..256)
        .map(|j| ((i * 7 + j * 13) % 1000) as f32 * 0.25)
        .collect();
    DatasetSpec::new(format!("d{i:06}"))
        .array(
            ArraySpec::new(
                "field",
                ArrayD::from_shape_vec(IxDyn(&[16, 16]), values).unwrap(),
            )
            .attr("units", "K"),
        )
        .attr("index", i as i64)
}

#[test]
fn compaction_costs_about_two_fresh_writes() {
    let parts = setting("COMPACT_COST_PARTS", 20);
    let per_part = setting("COMPACT_COST_PER_PART", 500);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let location = StoreLocation::Remote(RemotePrefix::new(
            Arc::clone(&store),
            Path::from("grown"),
            "memory:///grown",
        ));
        for part in 0..parts {
            let mut appender = Appender::open(&location, WriterOptions::default())
                .await
                .unwrap();
            for i in part * per_part..(part + 1) * per_part {
                appender.write_dataset(dataset(i)).unwrap();
            }
            appender.commit().await.unwrap();
        }
        let gone: Vec<String> = (0..parts * per_part)
            .step_by(10)
            .map(|i| format!("d{i:06}"))
            .collect();
        Atlas::open_location(&location, |s| s)
            .await
            .unwrap()
            .delete(&gone)
            .await
            .unwrap();
        let live: Vec<usize> = (0..parts * per_part).filter(|i| i % 10 != 0).collect();

        let started = Instant::now();
        let report = compact(&location, &mut |_, _| {}).await.unwrap();
        let compact_time = started.elapsed();
        assert_eq!(report.datasets, live.len());
        assert_eq!(report.replaced_parts, parts);

        // The compaction's creation time, so that the two containers are the same bytes.
        let compacted = Atlas::open_location(&location, |s| s).await.unwrap();
        let created = compacted.parts().next().unwrap().1.footer().created_unix_ms;
        let started = Instant::now();
        let options = WriterOptions {
            created_unix_ms: created,
            ..WriterOptions::default()
        };
        let mut writer = AtlasWriter::new(Arc::clone(&store), &Path::from("fresh"), options);
        for &i in &live {
            writer.write_dataset(dataset(i)).unwrap();
        }
        let summary = writer.finish().await.unwrap();
        let fresh_time = started.elapsed();
        assert_eq!(summary.container_bytes, report.container_bytes);

        let ratio = compact_time.as_secs_f64() / fresh_time.as_secs_f64();
        println!(
            "compact {} datasets of {parts} parts: {:.3} s; fresh write: {:.3} s; \
             compact / fresh {ratio:.2}; {} bytes",
            live.len(),
            compact_time.as_secs_f64(),
            fresh_time.as_secs_f64(),
            report.container_bytes
        );
    });
}
