//! `atlas read`'s size limit and `.npy` output; tables that stay aligned whatever the names.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // Test code: small known values.

use atlas::ndarray::{ArrayD, IxDyn};
use atlas::object_store::local::LocalFileSystem;
use atlas::object_store::path::Path as StorePath;
use atlas::{ArraySpec, AtlasWriter, DatasetSpec, WriterOptions};
use std::path::Path;
use std::process::Output;
use std::sync::Arc;

mod common;
use common::atlas;

fn ok(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

const LONG_DATASET: &str = "a_dataset_whose_name_is_far_longer_than_thirty_two_characters";
const LONG_ARRAY: &str = "an_array_name_longer_than_the_old_twenty_four_columns";

/// A collection with a long dataset name, a long array name, a short one, and an array
/// declared 100,000 x 100,000 (never written: reading it whole would need 80 GB).
fn collection(dir: &Path) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = Arc::new(LocalFileSystem::new_with_prefix(dir).unwrap());
        let mut writer = AtlasWriter::new(store, &StorePath::default(), WriterOptions::default());
        for name in ["short", LONG_DATASET] {
            let values =
                ArrayD::from_shape_vec(IxDyn(&[2, 3]), (0..6).map(|i| i as f32).collect()).unwrap();
            let words =
                ArrayD::from_shape_vec(IxDyn(&[2]), vec!["é".to_owned(), "ab".into()]).unwrap();
            writer
                .write_dataset(
                    DatasetSpec::new(name)
                        .array(ArraySpec::new(LONG_ARRAY, values))
                        .array(ArraySpec::new("words", words))
                        .array(ArraySpec::declared::<f64>("huge", vec![100_000, 100_000])),
                )
                .unwrap();
        }
        writer.finish().await.unwrap();
    });
    dir.to_str().unwrap().to_owned()
}

/// Every row's cell `text` starts in the header's column `column`.
fn assert_aligned(out: &str, column: &str, cells: &[&str]) {
    let lines: Vec<&str> = out.lines().collect();
    let header = lines.iter().find(|l| l.contains(column)).unwrap();
    let at = header.find(column).unwrap();
    for cell in cells {
        let row = lines.iter().find(|l| l.contains(cell)).unwrap();
        assert_eq!(
            row.find(cell),
            Some(at),
            "{cell} is not under {column}:\n{out}"
        );
    }
}

#[test]
fn long_names_keep_the_columns_aligned() {
    let dir = tempfile::tempdir().unwrap();
    let c = collection(dir.path());
    let ls = ok(&atlas(&["ls", &c]));
    assert_aligned(&ls, "ARRAYS", &[&format!("{LONG_ARRAY}:Float32")]);
    let info = ok(&atlas(&["info", &c]));
    // The sizes column starts after the longest segment name, and sizes are human-readable.
    let size_header = info.lines().find(|l| l.contains("SEGMENT")).unwrap();
    let long_row = info.lines().find(|l| l.contains(LONG_ARRAY)).unwrap();
    assert!(
        size_header.find("OFFSET").unwrap() > LONG_ARRAY.len(),
        "{info}"
    );
    assert_eq!(
        size_header.find("SIZE").unwrap() + "SIZE".len(),
        long_row.len(),
        "right-aligned sizes end under the header:\n{info}"
    );
    assert!(
        long_row.ends_with(" B") || long_row.ends_with("iB"),
        "{info}"
    );
    let stats = ok(&atlas(&["stats", &c, LONG_ARRAY]));
    assert!(stats.lines().nth(1).unwrap().starts_with(LONG_ARRAY));
}

#[test]
fn printing_past_the_limit_is_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let c = collection(dir.path());
    // 10^10 elements: refused from the declared shape, without reading (or allocating) them.
    let huge = atlas(&["read", &c, "short", "huge"]);
    assert_eq!(huge.status.code(), Some(2));
    let message = String::from_utf8_lossy(&huge.stderr);
    assert!(
        message.contains("10000000000 elements, more than --max-elements 10000"),
        "{message}"
    );
    // A selected region counts, not the array.
    let region = [
        "read", &c, "short", "huge", "--start", "5,5", "--shape", "2,2",
    ];
    assert!(ok(&atlas(&region)).contains("shape [2, 2]"));
    let small = ["read", &c, "short", LONG_ARRAY, "--max-elements", "5"];
    assert_eq!(atlas(&small).status.code(), Some(2));
    let all = [
        "read",
        &c,
        "short",
        LONG_ARRAY,
        "--max-elements",
        "5",
        "--all",
    ];
    assert!(ok(&atlas(&all)).contains("0.0 1.0 2.0 3.0 4.0 5.0"));
}

/// The header text and the data of a `.npy` file, after checking NumPy's 1.0 framing.
fn npy(bytes: &[u8]) -> (String, &[u8]) {
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "magic and version 1.0");
    let len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    assert_eq!((10 + len) % 64, 0, "the data starts 64-byte aligned");
    assert_eq!(bytes[10 + len - 1], b'\n');
    let header = String::from_utf8(bytes[10..10 + len].to_vec()).unwrap();
    assert!(header[..header.len() - 1].trim_end().ends_with('}'));
    (header, &bytes[10 + len..])
}

#[test]
fn npy_output_is_numpys_format() {
    let dir = tempfile::tempdir().unwrap();
    let c = collection(dir.path());
    let out = dir.path().join("values.npy");
    let path = out.to_str().unwrap();
    let wrote = ok(&atlas(&[
        "read",
        &c,
        LONG_DATASET,
        LONG_ARRAY,
        "--npy",
        path,
    ]));
    assert!(wrote.contains("shape [2, 3]"), "{wrote}");
    let bytes = std::fs::read(&out).unwrap();
    let (header, data) = npy(&bytes);
    assert!(
        header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
        "{header}"
    );
    let values: Vec<f32> = data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(values, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);

    // No size limit for a file; strings as fixed-width UCS-4.
    ok(&atlas(&[
        "read",
        &c,
        "short",
        "words",
        "--max-elements",
        "1",
        "--npy",
        path,
    ]));
    let bytes = std::fs::read(&out).unwrap();
    let (header, data) = npy(&bytes);
    assert!(header.starts_with("{'descr': '<U2', 'fortran_order': False, 'shape': (2,), }"));
    assert_eq!(
        data,
        [0xe9, 0, 0, 0, 0, 0, 0, 0, b'a', 0, 0, 0, b'b', 0, 0, 0]
    );
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(
        files, 2,
        "data.atlas, values.npy and nothing else (no temp file)"
    );
}
