//! Basic array write and read.
//!
//! ```sh
//! cargo run --example 01_basic
//! ```
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime

use std::sync::Arc;

use array_format::{ArrayWriter, NoCompression, WriterConfig};
use ndarray::Array;
use object_store::memory::InMemory;

#[tokio::main]
async fn main() {
    let mut writer = ArrayWriter::new(WriterConfig::new(NoCompression));

    // 1-D float array
    writer
        .define_array::<f64>("temperature", vec!["time".into()], vec![6], None, None)
        .unwrap();
    let temps = Array::from_vec(vec![20.1f64, 21.3, 19.8, 22.4, 18.9, 23.1]).into_dyn();
    writer
        .write_array("temperature", vec![0], temps.view())
        .unwrap();

    // 2-D integer array
    writer
        .define_array::<i32>("grid", vec!["x".into(), "y".into()], vec![3, 4], None, None)
        .unwrap();
    let grid = Array::from_shape_vec(ndarray::IxDyn(&[3, 4]), (0i32..12).collect()).unwrap();
    writer.write_array("grid", vec![0, 0], grid.view()).unwrap();

    // Finish writes the file once and returns it open for reading. Any
    // object_store backend works; this one is in memory.
    let store = Arc::new(InMemory::new());
    let file = writer
        .finish(store, object_store::path::Path::from("basic.af"))
        .await
        .unwrap();

    let t = file
        .read_array::<f64>("temperature", vec![], vec![])
        .await
        .unwrap();
    let g = file
        .read_array::<i32>("grid", vec![], vec![])
        .await
        .unwrap();

    println!("temperature = {:?}", t.as_slice().unwrap());
    println!("grid[1, 2]  = {}", g[[1, 2]]);
    assert!((t[[2]] - 19.8).abs() < 1e-10);
    assert_eq!(g[[1, 2]], 6);
}
