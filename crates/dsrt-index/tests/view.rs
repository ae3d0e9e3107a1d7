//! The mapped view over real files.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_index::{IndexError, IndexRow, IndexView, IndexWriter};
use proptest::prelude::*;
use std::io::Write;

fn write_index(rows: &[IndexRow]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.bin");
    let mut writer = IndexWriter::new(std::fs::File::create(&path).unwrap());
    for row in rows {
        writer.push(*row).unwrap();
    }
    let (mut file, digest, count) = writer.finish().unwrap();
    file.flush().unwrap();
    assert_eq!(count, rows.len() as u64);
    assert_eq!(
        digest,
        dsrt_atlas_codec::sha::sha256(&std::fs::read(&path).unwrap())
    );
    (dir, path)
}

#[test]
fn maps_and_looks_up_rows() {
    let rows = [
        IndexRow {
            shard_id: 0,
            offset: 0,
            length: 10,
        },
        IndexRow {
            shard_id: 1,
            offset: 5,
            length: 8,
        },
    ];
    let (_dir, path) = write_index(&rows);
    let view = IndexView::open(&path).unwrap();
    assert_eq!(view.len(), 2);
    assert_eq!(view.row(1).unwrap(), rows[1]);
    assert!(matches!(
        view.row(2),
        Err(IndexError::SampleOutOfRange { sample: 2, rows: 2 })
    ));
    assert!(matches!(
        view.row(u64::MAX),
        Err(IndexError::SampleOutOfRange { .. })
    ));
    view.validate(2, &[10, 13]).unwrap();
}

#[test]
fn empty_index_is_valid() {
    let (_dir, path) = write_index(&[]);
    let view = IndexView::open(&path).unwrap();
    assert!(view.is_empty());
    view.validate(0, &[]).unwrap();
    assert!(matches!(
        view.validate(1, &[]),
        Err(IndexError::RowCount {
            expected: 1,
            found: 0
        })
    ));
}

#[test]
fn size_not_a_multiple_of_24_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.bin");
    std::fs::write(&path, [0u8; 25]).unwrap();
    assert!(matches!(
        IndexView::open(&path),
        Err(IndexError::Size { len: 25 })
    ));
}

#[test]
fn validation_names_the_bad_row() {
    let good = IndexRow {
        shard_id: 0,
        offset: 0,
        length: 8,
    };
    let cases = [
        (
            IndexRow {
                shard_id: 2,
                ..good
            },
            "names shard 2",
        ),
        (IndexRow { length: 7, ..good }, "length 7"),
        (IndexRow { offset: 93, ..good }, "run past the end"),
        (
            IndexRow {
                offset: u64::MAX,
                length: 1 << 63,
                ..good
            },
            "run past the end",
        ),
        (
            IndexRow {
                shard_id: u64::MAX,
                ..good
            },
            "names shard",
        ),
    ];
    for (bad, message) in cases {
        let view =
            IndexView::from_bytes([good, bad].iter().flat_map(|r| r.encode()).collect()).unwrap();
        let err = view.validate(2, &[100, 50]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("row 1") && text.contains(message), "{text}");
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200), lens in proptest::collection::vec(any::<u64>(), 0..4), probe in any::<u64>()) {
        if let Ok(view) = IndexView::from_bytes(bytes) {
            let _ = view.validate(view.len(), &lens);
            let _ = view.row(probe);
        }
    }
}
