//! Writes about 1 GiB of f32 array data to a collection on local disk and reports peak RSS.
//!
//! Memory stays bounded while writing, whatever the amount of data. 4 variables x 256 datasets of
//! 256 x 1024 f32 (1 MiB each), generated one dataset at a time, to a `LocalFileSystem`
//! collection in a temp dir (or in the directory given as the first argument). Peak RSS is
//! the kernel's high-water mark, `VmHWM` in `/proc/self/status` (Linux). `WRITE_GIB_DATASETS`
//! changes the dataset count (4 MiB each), to show the peak does not grow with the data.
//!
//! ```text
//! cargo run --release -p atlas-writer --example write_gib
//! WRITE_GIB_DATASETS=512 cargo run --release -p atlas-writer --example write_gib
//! ```
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::print_stdout)] // a test or tool that owns its output
#![allow(clippy::print_stderr)] // a test or tool that owns its output
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Example: small known values.

use atlas_writer::{ArraySpec, AtlasWriter, DatasetSpec, WriterOptions};
use ndarray::{ArrayD, IxDyn};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::ObjectStore;
use std::sync::Arc;
use std::time::Instant;

const VARIABLES: [&str; 4] = ["temperature", "pressure", "humidity", "wind_speed"];
const DEFAULT_DATASETS: usize = 256;
const ROWS: usize = 256;
const COLS: usize = 1024;

/// A kB figure from `/proc/self/status`, e.g. `VmHWM` (peak RSS) or `VmRSS`.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A smooth field plus a little noise: compressible, but not to nothing.
fn field(dataset: usize, variable: usize) -> ArrayD<f32> {
    let mut state = (dataset as u64) << 8 | variable as u64;
    let values: Vec<f32> = (0..ROWS * COLS)
        .map(|k| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let noise = (state >> 41) as f32 / (1u64 << 23) as f32;
            let (r, c) = ((k / COLS) as f32, (k % COLS) as f32);
            (r * 0.01 + dataset as f32).sin() * 20.0 + (c * 0.003).cos() + noise
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(&[ROWS, COLS]), values).unwrap()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let temp = tempfile::tempdir()?;
    let root = std::env::args()
        .nth(1)
        .map_or_else(|| temp.path().to_path_buf(), std::path::PathBuf::from);
    std::fs::create_dir_all(&root)?;
    let store: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new_with_prefix(&root)?);
    let prefix = Path::from("gib");
    let datasets = std::env::var("WRITE_GIB_DATASETS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_DATASETS);
    let before = status_kib("VmHWM").unwrap_or(0);
    let started = Instant::now();

    let mut writer = AtlasWriter::new(store, &prefix, WriterOptions::default());
    let mut data_bytes = 0u64;
    let mut peak_while_adding = 0;
    for d in 0..datasets {
        let mut dataset = DatasetSpec::new(format!("station_{d:06}_2024"));
        for (v, name) in VARIABLES.iter().enumerate() {
            dataset = dataset.array(
                ArraySpec::new(*name, field(d, v))
                    .dims(["y", "x"])
                    .chunks(vec![64, COLS]),
            );
            data_bytes += (ROWS * COLS * 4) as u64;
        }
        writer.write_dataset(dataset)?;
        peak_while_adding = status_kib("VmHWM").unwrap_or(0);
    }
    let summary = writer.finish().await?;
    let elapsed = started.elapsed();
    let peak = status_kib("VmHWM").unwrap_or(0);

    println!("array data written: {} MiB", data_bytes >> 20);
    println!(
        "container: {} MiB in {} segments, footer {} bytes, {} datasets",
        summary.container_bytes >> 20,
        summary.segments,
        summary.footer_bytes,
        summary.datasets
    );
    println!("elapsed: {:.1} s", elapsed.as_secs_f64());
    println!("peak RSS before writing (VmHWM): {} MiB", before >> 10);
    println!(
        "peak RSS after adding datasets (VmHWM): {} MiB",
        peak_while_adding >> 10
    );
    println!("peak RSS after finish (VmHWM): {} MiB", peak >> 10);
    println!(
        "peak RSS / array data: {:.1}%",
        peak as f64 * 1024.0 / data_bytes as f64 * 100.0
    );
    Ok(())
}
