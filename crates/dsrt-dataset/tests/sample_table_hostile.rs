//! A sample table is untrusted input: damaged bytes load as a typed error, never a panic.
//!
//! arrow's IPC decoder panics on some malformed files (flipping byte 449 of the saved fixture
//! table is one); `SampleTable::load` goes through `dsrt-metadata`, which catches that.
#![allow(clippy::unwrap_used)]

use dsrt_dataset::{DatasetError, SampleKey, SampleTable};

fn saved() -> Vec<u8> {
    let keys = (0..7u64)
        .map(|i| SampleKey {
            cache_id: i % 3,
            sample_id: i * 10,
        })
        .collect();
    SampleTable::new(keys).to_ipc_bytes().unwrap()
}

fn fixture() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/dsrt/dataset/val.table.arrow"
    ))
    .unwrap()
}

/// Silences the default hook for panics arrow raises and `dsrt-metadata` catches.
fn quiet() {
    std::panic::set_hook(Box::new(|_| {}));
}

#[test]
fn a_flip_that_makes_arrow_panic_is_a_table_error() {
    quiet();
    let mut bytes = fixture();
    bytes[449] ^= 0x01;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.arrow");
    std::fs::write(&path, &bytes).unwrap();
    let loaded = std::panic::catch_unwind(|| SampleTable::load(&path));
    let _ = std::panic::take_hook();
    match loaded {
        Ok(Err(DatasetError::Table { path: p, reason })) => {
            assert_eq!(p, path);
            assert!(reason.contains("not a valid Arrow IPC file"), "{reason}");
        }
        Ok(other) => panic!("expected a table error, got {other:?}"),
        Err(_) => panic!("SampleTable::load panicked on a damaged file"),
    }
}

#[test]
fn every_flip_and_truncation_loads_or_errors() {
    quiet();
    assert_eq!(SampleTable::from_ipc_bytes(&saved()).unwrap().len(), 7);
    let original = fixture();
    {
        for at in 0..original.len() {
            for mask in [0x01u8, 0xff] {
                let mut bytes = original.clone();
                bytes[at] ^= mask;
                let _ = std::panic::catch_unwind(|| SampleTable::from_ipc_bytes(&bytes))
                    .unwrap_or_else(|_| panic!("flip {mask:#x} at {at} panicked"));
            }
        }
        for len in 0..original.len() {
            let _ = std::panic::catch_unwind(|| SampleTable::from_ipc_bytes(&original[..len]))
                .unwrap_or_else(|_| panic!("truncation at {len} panicked"));
        }
    }
    let _ = std::panic::take_hook();
}
