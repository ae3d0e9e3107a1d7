//! Writing and reading an on-disk file with Lz4 compression.
//!
//! ```sh
//! cargo run --example 07_on_disk
//! ```
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime

use std::sync::Arc;

use array_format::{ArrayFile, ArrayWriter, Lz4Codec, ReadConfig, WriterConfig};
use ndarray::Array;
use object_store::local::LocalFileSystem;

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap())
        as Arc<dyn object_store::ObjectStore>;
    let path = object_store::path::Path::from("data.af");

    // Write. The codec is chosen here; every block records which one it used.
    {
        let mut writer = ArrayWriter::new(WriterConfig::new(Lz4Codec));
        writer
            .define_array::<f32>(
                "matrix",
                vec!["r".into(), "c".into()],
                vec![4, 4],
                None,
                None,
            )
            .unwrap();
        let data: Vec<f32> = (0..16).map(|x| x as f32 * 0.5).collect();
        let nd = Array::from_shape_vec(ndarray::IxDyn(&[4, 4]), data).unwrap();
        writer.write_array("matrix", vec![0, 0], nd.view()).unwrap();
        let file = writer
            .finish(Arc::clone(&store), path.clone())
            .await
            .unwrap();
        println!("wrote {} array(s)", file.arrays().len());
    }

    // Re-open and read. No codec is needed to open a file.
    {
        let file = ArrayFile::open(Arc::clone(&store), path, ReadConfig::default())
            .await
            .unwrap();
        let out = file
            .read_array::<f32>("matrix", vec![], vec![])
            .await
            .unwrap();
        println!("matrix[3, 2] = {}", out[[3, 2]]); // 3*4 + 2 = 14 → 7.0
        assert!((out[[3, 2]] - 7.0).abs() < 1e-6);
    }
}
