//! Hostile Atlas containers: small files that ask a reader for far more than they hold.
//!
//! Each function returns the bytes of a whole `data.atlas`, built in milliseconds: the zstd
//! frames that decode to hundreds of megabytes are written by hand as run-length blocks
//! ([`rle_frame`]), never by compressing that much. The tests of the reader, the `atlas` CLI and
//! the fuzz seeds (`cargo xtask fuzz-seed`) use them; `docs/reliability.md` ("Hostile inputs",
//! Atlas) lists what each now gets. The Python tests build the same kinds in Python
//! (`python/atlas/tests/hostile.py`).

use atlas::format::trailer::{encode_header, encode_trailer};
use atlas::format::FOOTER_ZSTD_LEVEL;
use atlas::ndarray::{ArrayD, IxDyn};
use atlas::object_store::memory::InMemory;
use atlas::object_store::path::Path as StorePath;
use atlas::object_store::{ObjectStore, ObjectStoreExt};
use atlas::{ArraySpec, AtlasWriter, DatasetSpec, WriterOptions};
use dsrt_atlas_codec::zstd_frame;
use std::sync::Arc;

use crate::Error;

/// A piece of a frame's content: bytes as they are, or one byte repeated.
#[derive(Debug, Clone, Copy)]
pub enum Part<'a> {
    /// These bytes, stored raw.
    Raw(&'a [u8]),
    /// `count` copies of one byte, stored as run-length blocks (4 bytes per 128 KiB).
    Run(u8, u64),
}

/// Largest block content zstd allows (and the window this frame declares).
const BLOCK_MAX: usize = 128 * 1024;

/// One zstd frame whose content is `parts` in order, declaring its content size: raw blocks for
/// [`Part::Raw`], RLE blocks for [`Part::Run`]. A gigabyte of one byte takes 32 KB.
pub fn rle_frame(parts: &[Part<'_>]) -> Vec<u8> {
    let content: u64 = parts
        .iter()
        .map(|part| match part {
            Part::Raw(bytes) => bytes.len() as u64,
            Part::Run(_, count) => *count,
        })
        .sum();
    // Magic; frame header descriptor: an 8-byte content size, not single-segment, no
    // checksum, no dictionary; window descriptor 0x38 (2^17 bytes); the content size.
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0xc0, 0x38];
    frame.extend_from_slice(&content.to_le_bytes());
    // (block type, size, the byte of an RLE block or where raw bytes start)
    let mut blocks: Vec<(u32, u64, &[u8], u8)> = Vec::new();
    for part in parts {
        match *part {
            Part::Raw(mut bytes) => {
                while !bytes.is_empty() {
                    let (head, rest) = bytes.split_at(bytes.len().min(BLOCK_MAX));
                    blocks.push((0, head.len() as u64, head, 0));
                    bytes = rest;
                }
            }
            Part::Run(byte, mut count) => {
                while count > 0 {
                    let size = count.min(BLOCK_MAX as u64);
                    blocks.push((1, size, &[], byte));
                    count -= size;
                }
            }
        }
    }
    if blocks.is_empty() {
        blocks.push((0, 0, &[], 0));
    }
    let last = blocks.len() - 1;
    for (i, (kind, size, raw, byte)) in blocks.into_iter().enumerate() {
        // Block header: last-block bit, 2-bit type, 21-bit size (RLE: the repeat count).
        // `size` is at most 128 KiB: it fits the 21 bits.
        let size = u32::try_from(size).unwrap_or(0);
        let header = u32::from(i == last) | (kind << 1) | (size << 3);
        frame.extend_from_slice(&header.to_le_bytes()[..3]);
        if kind == 0 {
            frame.extend_from_slice(raw);
        } else {
            frame.push(byte);
        }
    }
    frame
}

/// A container with no segments whose footer frame is `frame`.
pub fn container_with_footer(frame: &[u8]) -> Vec<u8> {
    let mut container = encode_header().to_vec();
    container.extend_from_slice(frame);
    container.extend_from_slice(&encode_trailer(frame.len() as u64));
    container
}

/// The msgpack head of a footer (an 8-field array, version 8, codec, time 0) whose string pool
/// is a `str32`-headed list of `strings` strings: the pool's items follow.
fn head_with_string_pool(strings: u32) -> Vec<u8> {
    let mut head = vec![0x98, 0x08, 0xa4, b'Z', b's', b't', b'd', 0x00, 0xdd];
    head.extend_from_slice(&strings.to_be_bytes());
    head
}

/// A valid footer of `strings` empty strings and nothing else: each is one byte of msgpack and
/// a 24-byte `String` in a decoded footer (32 MiB of them made 400-770 MiB of heap). About
/// 4 bytes stored per 128 KiB decoded.
pub fn empty_string_pool(strings: u32) -> Vec<u8> {
    let head = head_with_string_pool(strings);
    let tail = [0x90, 0x90, 0x90, 0x90];
    container_with_footer(&rle_frame(&[
        Part::Raw(&head),
        Part::Run(0xa0, u64::from(strings)),
        Part::Raw(&tail),
    ]))
}

/// A valid footer of `schemas` empty schemas (`[[], [], []]`: four bytes of msgpack, 184 bytes
/// decoded each), zstd-compressed as a writer would (the repeated four bytes are not one run).
pub fn empty_schema_pool(schemas: u32) -> Vec<u8> {
    let mut msgpack = vec![
        0x98, 0x08, 0xa4, b'Z', b's', b't', b'd', 0x00, 0x90, 0x90, 0xdd,
    ];
    msgpack.extend_from_slice(&schemas.to_be_bytes());
    for _ in 0..schemas {
        msgpack.extend_from_slice(&[0x93, 0x90, 0x90, 0x90]);
    }
    msgpack.extend_from_slice(&[0x90, 0x90]);
    container_with_footer(&zstd_frame::compress(&msgpack, FOOTER_ZSTD_LEVEL))
}

/// A valid footer whose one schema declares `attributes` dataset attributes, every one keyed
/// `_datasets` and typed by a list nested `depth` deep: three bytes of msgpack each, and a
/// reader that resolves each pair to its own copy of the type allocates `depth` boxes per
/// attribute (a million attributes of a 60-deep list: about 2 GB). One 1-byte `_datasets`
/// segment makes the attributes valid.
pub fn deep_attribute_types(attributes: u32, depth: usize) -> Vec<u8> {
    let mut msgpack = vec![0x98, 0x08, 0xa4, b'Z', b's', b't', b'd', 0x00];
    msgpack.extend_from_slice(&[0x91, 0xa9]);
    msgpack.extend_from_slice(b"_datasets");
    msgpack.push(0x91);
    for _ in 0..depth {
        msgpack.extend_from_slice(&[0x81, 0xa4, b'L', b'i', b's', b't', 0x91]);
    }
    msgpack.extend_from_slice(&[0xa4, b'I', b'n', b't', b'8']);
    // schema_pool: one schema, no arrays, `attributes` pairs [0, 0], no array attributes.
    msgpack.extend_from_slice(&[0x91, 0x93, 0x90, 0xdd]);
    msgpack.extend_from_slice(&attributes.to_be_bytes());
    for _ in 0..attributes {
        msgpack.extend_from_slice(&[0x92, 0x00, 0x00]);
    }
    msgpack.push(0x90);
    // variables: `_datasets` at 8, one byte; datasets: none.
    msgpack.extend_from_slice(&[0x91, 0x93, 0x00, 0x08, 0x01, 0x90]);
    let frame = zstd_frame::compress(&msgpack, FOOTER_ZSTD_LEVEL);
    let mut container = encode_header().to_vec();
    container.push(0);
    container.extend_from_slice(&frame);
    container.extend_from_slice(&encode_trailer(frame.len() as u64));
    container
}

/// A footer frame of `zeros` zero bytes: not msgpack at all, but a reader learns that only
/// once it has decoded it (the 1 GiB decode limit let an 83 KB frame cost 1 GiB).
pub fn zero_footer(zeros: u64) -> Vec<u8> {
    container_with_footer(&rle_frame(&[Part::Run(0, zeros)]))
}

/// The dataset whose array a block bomb targets: 32 `f32` (128 bytes).
pub const BLOCK_BOMB_SMALL: &str = "small";
/// The dataset written before it into the same block: random `f32`, as many as the block's
/// stored bytes need to hold the frame of run-length blocks (about 4 bytes per 128 KiB
/// claimed; 64 KB for 1.5 GiB).
pub const BLOCK_BOMB_BIG: &str = "big";
/// The variable (segment) both datasets' arrays are in.
pub const BLOCK_BOMB_VARIABLE: &str = "v";

/// A collection of [`BLOCK_BOMB_BIG`] and [`BLOCK_BOMB_SMALL`], whose one block's zstd frame is
/// replaced by one that really decodes to `claim` bytes of zeros (padded to the stored size by
/// a skippable frame), and whose block table says so: a reader trusting the table decodes
/// `claim` bytes to read 128. Returns the container's bytes.
pub fn block_bomb(claim: u64) -> Result<Vec<u8>, Error> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut random = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let frame_len = rle_frame(&[Part::Run(0, claim)]).len();
    let big_len = (frame_len + 8) / 4 + 256;
    let big: Vec<f32> = (0..big_len)
        .map(|_| f32::from_bits(u32::try_from(random() >> 32).unwrap_or(0)))
        .collect();
    let small: Vec<f32> = (0..32u8).map(f32::from).collect();
    let spec = |name: &str, values: Vec<f32>| -> Result<DatasetSpec, Error> {
        let len = values.len();
        Ok(DatasetSpec::new(name).array(ArraySpec::new(
            BLOCK_BOMB_VARIABLE,
            ArrayD::from_shape_vec(IxDyn(&[len]), values)?,
        )))
    };
    let store = Arc::new(InMemory::new());
    let prefix = StorePath::from("bomb");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut container = runtime.block_on(async {
        let mut writer = AtlasWriter::new(
            Arc::clone(&store) as Arc<dyn ObjectStore>,
            &prefix,
            WriterOptions::default(),
        );
        writer.write_dataset(spec(BLOCK_BOMB_BIG, big)?)?;
        writer.write_dataset(spec(BLOCK_BOMB_SMALL, small)?)?;
        writer.finish().await?;
        let bytes = store.get(&prefix.clone().join("data.atlas")).await?;
        Ok::<_, Error>(bytes.bytes().await?.to_vec())
    })?;
    // The block table entry: `file_offset` 0, `compressed_size`, `uncompressed_size` = both
    // arrays' bytes, consecutive u64s in the segment footer.
    let decoded = (big_len as u64 + 32) * 4;
    let entry = container
        .windows(24)
        .position(|w| {
            w[..8] == 0u64.to_le_bytes()
                && w[16..] == decoded.to_le_bytes()
                && (1..2 * decoded)
                    .contains(&u64::from_le_bytes(w[8..16].try_into().unwrap_or([0; 8])))
        })
        .ok_or("no block table entry for the two arrays")?;
    let stored = usize::try_from(u64::from_le_bytes(
        container[entry + 8..entry + 16].try_into()?,
    ))?;
    let mut frame = rle_frame(&[Part::Run(0, claim)]);
    let padding = stored
        .checked_sub(frame.len() + 8)
        .ok_or("the claim needs more frame bytes than the block stores")?;
    // A skippable frame (magic 0x184D2A50) fills the rest: decoders pass over it.
    frame.extend_from_slice(&0x184d_2a50_u32.to_le_bytes());
    frame.extend_from_slice(&u32::try_from(padding)?.to_le_bytes());
    frame.resize(stored, 0);
    // The segment starts at 8 and its one block at the segment's start.
    container[8..8 + stored].copy_from_slice(&frame);
    container[entry + 16..entry + 24].copy_from_slice(&claim.to_le_bytes());
    Ok(container)
}

/// The dataset name of [`escaping_names`]: clears the screen and turns text red.
pub const ESCAPING_DATASET: &str = "evil\u{1b}[2J\u{1b}[31mred";
/// Its array's name: a carriage return that overprints the line.
pub const ESCAPING_ARRAY: &str = "t2m\rFAKE";
/// Its dataset attribute's key.
pub const ESCAPING_KEY: &str = "note";
/// That attribute's value: retitles the terminal (OSC 0).
pub const ESCAPING_VALUE: &str = "\u{1b}]0;pwned\u{7}";

/// A valid collection (as `AtlasWriter` writes it) whose names and attribute value carry
/// terminal escapes: a dataset [`ESCAPING_DATASET`] with a 4-element `f32` array
/// [`ESCAPING_ARRAY`] and the string attribute [`ESCAPING_KEY`] = [`ESCAPING_VALUE`], beside a
/// plain dataset `plain`. Returns `data.atlas`.
pub fn escaping_names() -> Result<Vec<u8>, Error> {
    let store = Arc::new(InMemory::new());
    let prefix = StorePath::from("escapes");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut writer = AtlasWriter::new(
            Arc::clone(&store) as Arc<dyn ObjectStore>,
            &prefix,
            WriterOptions::default(),
        );
        for name in [ESCAPING_DATASET, "plain"] {
            let values = ArrayD::from_shape_vec(IxDyn(&[4]), vec![1.0f32, 2.0, 3.0, 4.0])?;
            writer.write_dataset(
                DatasetSpec::new(name)
                    .array(ArraySpec::new(ESCAPING_ARRAY, values))
                    .attr(ESCAPING_KEY, atlas::Attr::String(ESCAPING_VALUE.to_owned())),
            )?;
        }
        writer.finish().await?;
        let bytes = store.get(&prefix.clone().join("data.atlas")).await?;
        Ok(bytes.bytes().await?.to_vec())
    })
}
