//! Trees and a writer shared by the planned-packing tests.

use dsrt_manifest::CompressionAlgo;
use dsrt_pack::{pack, Convert, PackError, PackOptions};
use dsrt_schema::Schema;
use dsrt_writer::{CacheWriter, WriterOptions};
use std::path::Path;

/// An ImageFolder of `files` files of 0-`max_len` bytes over 4 classes, some nested, a few
/// empty.
pub(crate) fn image_folder(root: &Path, files: usize, max_len: u64) {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..files {
        let class = ["owl", "bee", "cod", "elk"][i % 4];
        let sub = if i % 9 == 0 { "deep/er/" } else { "" };
        let path = root.join(format!("{class}/{sub}{i:05}.bin"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let len = if i % 50 == 3 { 0 } else { next() % max_len };
        let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        std::fs::write(path, bytes).unwrap();
    }
}

pub(crate) fn write<C: Convert>(
    convert: &C,
    schema: Schema,
    out: &Path,
    max_shard_bytes: u64,
    compression: CompressionAlgo,
    options: &PackOptions<'_>,
) -> Result<(), PackError> {
    let writer_options = WriterOptions::new("planned", schema)
        .compression(compression)
        .max_shard_bytes(max_shard_bytes);
    let mut writer = CacheWriter::create(out, writer_options)?;
    pack(convert, &mut writer, options)?;
    writer.finish()?;
    Ok(())
}
