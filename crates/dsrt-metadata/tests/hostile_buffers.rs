//! A metadata.arrow whose record batch names a buffer outside its body is refused with a typed
//! error before arrow slices it: no panic happens, so none is printed (a caught panic still
//! prints "thread panicked" through the process's hook). Its own binary: it counts panics
//! with a process-wide hook.
#![allow(clippy::unwrap_used)]

use arrow_array::{Int64Array, RecordBatch, StringArray};
use dsrt_metadata::MetadataTable;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

static PANICS: AtomicUsize = AtomicUsize::new(0);

fn file() -> Vec<u8> {
    let batch = RecordBatch::try_from_iter([
        ("label", Arc::new(Int64Array::from(vec![1, 2, 3])) as _),
        (
            "caption",
            Arc::new(StringArray::from(vec!["a", "bb", "ccc"])) as _,
        ),
    ])
    .unwrap();
    let mut bytes = Vec::new();
    let mut writer =
        arrow_ipc::writer::FileWriter::try_new(&mut bytes, batch.schema().as_ref()).unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    drop(writer);
    bytes
}

/// Where, in `bytes`, the first record batch's buffer list lies (16 bytes per buffer:
/// offset, then length, each an i64 LE).
fn buffers_at(bytes: &[u8]) -> std::ops::Range<usize> {
    let footer_len = usize::try_from(i32::from_le_bytes(
        bytes[bytes.len() - 10..bytes.len() - 6].try_into().unwrap(),
    ))
    .unwrap();
    let footer_start = bytes.len() - 10 - footer_len;
    let footer = arrow_ipc::root_as_footer(&bytes[footer_start..bytes.len() - 10]).unwrap();
    let block = footer.recordBatches().unwrap().get(0);
    let meta = usize::try_from(block.offset()).unwrap();
    let message = arrow_ipc::root_as_message(&bytes[meta + 8..]).unwrap();
    let buffers = message.header_as_record_batch().unwrap().buffers().unwrap();
    let slice = buffers.bytes();
    let start = slice.as_ptr() as usize - bytes.as_ptr() as usize;
    start..start + slice.len()
}

#[test]
fn a_buffer_outside_its_body_is_a_typed_error_and_no_panic() {
    std::panic::set_hook(Box::new(|_| {
        PANICS.fetch_add(1, Ordering::SeqCst);
    }));
    assert!(MetadataTable::from_bytes(file()).is_ok());
    let honest = file();
    let list = buffers_at(&honest);
    assert!(list.len() >= 16 * 5, "{list:?}");
    // Every buffer in turn: its offset pushed far past the body, then its length.
    for field in (list.start..list.end).step_by(8) {
        let mut bytes = honest.clone();
        bytes[field..field + 8].copy_from_slice(&(1i64 << 40).to_le_bytes());
        let err = MetadataTable::from_bytes(bytes).unwrap_err();
        assert!(
            err.to_string().contains("lies outside the")
                && err.to_string().contains("record batch 0"),
            "{err}"
        );
    }
    assert_eq!(
        PANICS.load(Ordering::SeqCst),
        0,
        "a panic happened (and was printed)"
    );
}
