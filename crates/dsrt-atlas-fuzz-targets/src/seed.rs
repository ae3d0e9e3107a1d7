//! Seed inputs for every target, taken from a golden fixtures folder.

use atlas::format::wire;
use dsrt_atlas_fixtures::{cache_specs, ATLAS_DIR, DATASET_DIR, SAMPLE_TABLE};
use dsrt_index::{IndexRow, ROW_BYTES};
use std::path::Path;

/// One seed input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seed {
    /// Target name (a key of [`crate::TARGETS`]).
    pub target: &'static str,
    /// File name for the corpus directory (stable, descriptive).
    pub name: String,
    /// The input bytes, in the target's framing.
    pub bytes: Vec<u8>,
}

fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

fn prefixed(head: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 1);
    out.push(head);
    out.extend_from_slice(body);
    out
}

/// Seeds for every target from the fixtures folder `root` (as `cargo xtask fixtures` writes it).
pub fn seeds(root: &Path) -> std::io::Result<Vec<Seed>> {
    let mut out = Vec::new();
    let mut push = |target: &'static str, name: String, bytes: Vec<u8>| {
        out.push(Seed {
            target,
            name,
            bytes,
        });
    };
    let mut cache_dirs: Vec<(String, std::path::PathBuf)> = cache_specs()
        .iter()
        .map(|s| (s.name.to_owned(), s.dir(root)))
        .collect();
    for dir in dsrt_atlas_fixtures::dataset_cache_dirs(&root.join(DATASET_DIR)) {
        let name = dir
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        cache_dirs.push((format!("dataset-{name}"), dir));
    }
    for (name, dir) in &cache_dirs {
        push(
            "manifest",
            format!("{name}.json"),
            read(&dir.join("manifest.json"))?,
        );
        let index = read(&dir.join("index.bin"))?;
        push("index", format!("{name}.bin"), index.clone());
        push(
            "metadata",
            format!("{name}.arrow"),
            read(&dir.join("metadata.arrow"))?,
        );
        let lz4 = name == "lz4";
        for (sample, chunk) in (0u8..).zip(index.chunks_exact(ROW_BYTES)).take(4) {
            let row = IndexRow::decode(chunk.try_into().map_err(std::io::Error::other)?);
            let shard = read(&dir.join("shards").join(format!("{:06}.bin", row.shard_id)))?;
            let range = usize::try_from(row.offset).map_err(std::io::Error::other)?
                ..usize::try_from(row.offset + row.length).map_err(std::io::Error::other)?;
            let record = shard
                .get(range)
                .ok_or_else(|| std::io::Error::other("record range"))?;
            let head = (sample << 1) | u8::from(lz4);
            if !name.starts_with("dataset") {
                push(
                    "shard_record",
                    format!("{name}-{sample}.rec"),
                    prefixed(head, record),
                );
            }
        }
    }
    let sample_table = read(&root.join(DATASET_DIR).join(SAMPLE_TABLE))?;
    push(
        "metadata",
        "sample-table.arrow".into(),
        sample_table.clone(),
    );
    push("sample_table", "sample-table.arrow".into(), sample_table);

    // Whole caches: one seed per (template, file), each the fixture's own bytes.
    for (template, (spec, files)) in [1usize, 2]
        .iter()
        .map(|i| cache_specs()[*i])
        .zip(crate::dsrt_targets::cache_files())
        .enumerate()
    {
        for (selector, file) in files.iter().enumerate() {
            let bytes = read(&spec.dir(root).join(file))?;
            let head = u8::try_from(template << 7 | selector).map_err(std::io::Error::other)?;
            let stem = file.to_string_lossy().replace('/', "_");
            push(
                "cache",
                format!("{}-{stem}", spec.name),
                prefixed(head, &bytes),
            );
        }
    }

    let atlas = root.join(ATLAS_DIR);
    let container = read(&atlas.join("data.atlas"))?;
    let mask = read(&atlas.join("deleted.mask"))?;
    push("collection", "data.atlas".into(), prefixed(0, &container));
    push("collection", "deleted.mask".into(), prefixed(1, &mask));
    push("mask", "deleted.mask".into(), prefixed(3, &mask));
    push("trailer", "data.atlas".into(), container.clone());
    let tail = &container[container.len().saturating_sub(16)..];
    push("trailer", "trailer-only".into(), tail.to_vec());
    let frame = footer_frame(&container)?;
    push("footer", "frame.zst".into(), prefixed(0, frame));
    let footer = wire::decode_footer(frame).map_err(std::io::Error::other)?;
    push(
        "footer",
        "footer.msgpack".into(),
        prefixed(1, &wire::to_msgpack(&footer)),
    );

    // Hostile kinds: small inputs that ask for far more memory than they hold,
    // each refused within its footer budget or at the segment's open.
    for (name, container) in hostile_containers()? {
        if name != "block-bomb" {
            let frame = footer_frame(&container)?;
            push("footer", format!("hostile-{name}.zst"), prefixed(0, frame));
        }
        push(
            "collection",
            format!("hostile-{name}.atlas"),
            prefixed(2, &container),
        );
    }
    Ok(out)
}

/// The footer frame of a whole container, found through its trailer.
fn footer_frame(container: &[u8]) -> std::io::Result<&[u8]> {
    let trailer =
        atlas::format::trailer::parse_trailer(container).map_err(std::io::Error::other)?;
    let location = atlas::format::trailer::locate_footer(container.len() as u64, trailer)
        .map_err(std::io::Error::other)?;
    atlas::format::trailer::slice_of_probe(container, container.len() as u64, &location.footer)
        .ok_or_else(|| std::io::Error::other("footer range"))
}

/// The hostile containers of `dsrt_atlas_fixtures::hostile` at seed size (each under 40 KB).
fn hostile_containers() -> std::io::Result<Vec<(&'static str, Vec<u8>)>> {
    use dsrt_atlas_fixtures::hostile;
    Ok(vec![
        ("empty-strings", hostile::empty_string_pool(16 << 20)),
        ("empty-schemas", hostile::empty_schema_pool(2 << 20)),
        ("zero-footer", hostile::zero_footer(1 << 30)),
        (
            "deep-attribute-types",
            hostile::deep_attribute_types(1 << 20, 30),
        ),
        (
            "block-bomb",
            hostile::block_bomb(1 << 28).map_err(std::io::Error::other)?,
        ),
    ])
}
