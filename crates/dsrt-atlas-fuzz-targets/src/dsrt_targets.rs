//! Targets for the DatasetRT parsers and the whole-cache read path.

use crate::MAX_VISITS;
use dsrt_atlas_fixtures::{cache_row, cache_schema, cache_specs, CacheSpec};
use dsrt_dataset::SampleTable;
use dsrt_index::IndexView;
use dsrt_manifest::{CompressionAlgo, Manifest};
use dsrt_metadata::MetadataTable;
use dsrt_reader::{Cache, OpenOptions, SampleBuf};
use dsrt_schema::{Schema, ValueRef};
use dsrt_shard::{check_envelope, load_payload, parse_envelope, split_record};
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// `manifest.json`: parse; a parsed manifest must survive its own write-then-parse unchanged.
pub fn manifest(data: &[u8]) {
    let Ok(parsed) = Manifest::parse(data) else {
        return;
    };
    let description = parsed.description();
    for position in [0usize, 1, usize::MAX] {
        let _ = parsed.resolved_cache_id(position);
    }
    let _ = (description.shards.len(), parsed.stored_cache_id());
    let bytes = match &parsed {
        Manifest::V2(m) => m.to_json_bytes(),
        Manifest::V3(m) => m.to_json_bytes(),
    };
    let again = Manifest::parse(&bytes);
    assert_eq!(again.as_ref().ok(), Some(&parsed), "manifest round trip");
}

/// Shard lengths the index target validates against: four shards of 4 KiB.
const INDEX_SHARD_LENS: [u64; 4] = [4096; 4];

/// `index.bin`: the view, its validation against four 4 KiB shards, and row lookups (in range,
/// at the end, and far past it).
pub fn index(data: &[u8]) {
    let Ok(view) = IndexView::from_bytes(data.to_vec()) else {
        return;
    };
    let rows = view.len();
    let _ = view.validate(rows, &INDEX_SHARD_LENS);
    let _ = view.validate(rows.wrapping_add(1), &INDEX_SHARD_LENS);
    let _ = view.validate(rows, &[]);
    for sample in (0..rows.min(MAX_VISITS)).chain([rows, rows + 1, u64::MAX]) {
        if let Ok(row) = view.row(sample) {
            let _ = row.end();
            assert_eq!(dsrt_index::IndexRow::decode(&row.encode()), row);
        }
    }
}

/// One shard record. Byte 0: bit 0 chooses the algorithm (0 none, 1 lz4), the other bits the
/// sample `i` whose fixture row the envelope is checked against. The rest is the record.
pub fn shard_record(data: &[u8]) {
    let Some((&head, record)) = data.split_first() else {
        return;
    };
    let algo = if head & 1 == 0 {
        CompressionAlgo::None
    } else {
        CompressionAlgo::Lz4
    };
    let schema = cache_schema();
    let row = schema_values(&schema, u64::from(head >> 1));
    let expected = |c: usize| row.get(c).map_or(ValueRef::Null, as_ref);
    let Ok((json, stored)) = split_record(record) else {
        return;
    };
    let _ = check_envelope(json, &schema, expected);
    let _ = parse_envelope(json, &schema);
    let mut decoded = Vec::new();
    let _ = load_payload(algo, stored, &mut decoded);
}

fn schema_values(schema: &Schema, i: u64) -> Vec<dsrt_schema::Value> {
    let row = cache_row(i);
    schema
        .columns()
        .iter()
        .map(|c| {
            row.get(&c.name)
                .cloned()
                .unwrap_or(dsrt_schema::Value::Null)
        })
        .collect()
}

fn as_ref(value: &dsrt_schema::Value) -> ValueRef<'_> {
    match value {
        dsrt_schema::Value::Null => ValueRef::Null,
        dsrt_schema::Value::Bool(v) => ValueRef::Bool(*v),
        dsrt_schema::Value::Int64(v) => ValueRef::Int64(*v),
        dsrt_schema::Value::Float64(v) => ValueRef::Float64(*v),
        dsrt_schema::Value::Utf8(v) => ValueRef::Utf8(v),
    }
}

/// `metadata.arrow`: decode, check against the fixture schema, visit rows and columns.
pub fn metadata(data: &[u8]) {
    let Ok(table) = MetadataTable::from_bytes(data.to_vec()) else {
        return;
    };
    let _ = table.check_schema(&cache_schema());
    let columns = table.schema().len();
    let rows = table.num_rows();
    for row in (0..rows.min(MAX_VISITS)).chain([rows, u64::MAX]) {
        if let Some(view) = table.row(row) {
            assert_eq!(view.len(), columns, "row width");
            let _ = view.values().count();
            let _ = view.get(columns);
        }
        let _ = table.value(row, 0);
    }
    for column in 0..=columns {
        if let Some(view) = table.column(column) {
            let _ = view.values().take(4096).count();
        }
    }
}

/// `sample_table`: the input is a whole sample table file (Arrow IPC, `cache_id` and
/// `sample_id` `UInt64` columns), as `SampleTable::load` reads it. A table that decodes must
/// encode and decode back to itself.
pub fn sample_table(data: &[u8]) {
    let Ok(table) = SampleTable::from_ipc_bytes(data) else {
        return;
    };
    let _ = table.keys().iter().take(4096).count();
    let bytes = table.to_ipc_bytes().expect("a decoded table encodes");
    assert_eq!(
        SampleTable::from_ipc_bytes(&bytes).as_ref(),
        Ok(&table),
        "sample table round trip"
    );
}

/// The caches the whole-cache target overwrites one file of: the multi-shard `v3` fixture and
/// the multi-shard `lz4` fixture.
fn template_specs() -> [CacheSpec; 2] {
    let [_, v3, lz4] = cache_specs();
    [v3, lz4]
}

/// A template cache: its directory and its files (relative path, original bytes), sorted.
type TemplateCache = (PathBuf, Vec<(PathBuf, Vec<u8>)>);

struct Templates {
    _dir: tempfile::TempDir,
    /// Per template: its directory and its files (relative path, original bytes), sorted.
    caches: Vec<TemplateCache>,
}

impl Templates {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory for the cache target");
        let caches = template_specs()
            .iter()
            .map(|spec| {
                let path = dir.path().join(spec.name);
                dsrt_atlas_fixtures::write_cache(spec, &path).expect("writing a fixture cache");
                let mut files = Vec::new();
                collect(&path, &path, &mut files);
                files.sort();
                (path, files)
            })
            .collect();
        Self { _dir: dir, caches }
    }
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).expect("template directory") {
        let path = entry.expect("template entry").path();
        if path.is_dir() {
            collect(root, &path, out);
        } else {
            let bytes = std::fs::read(&path).expect("template file");
            let relative = path.strip_prefix(root).expect("below root").to_path_buf();
            out.push((relative, bytes));
        }
    }
}

thread_local! {
    static TEMPLATES: RefCell<Option<Templates>> = const { RefCell::new(None) };
}

/// The file names the whole-cache target can replace, per template, in selector order.
pub fn cache_files() -> Vec<Vec<PathBuf>> {
    with_templates(|t| {
        t.caches
            .iter()
            .map(|(_, files)| files.iter().map(|(p, _)| p.clone()).collect())
            .collect()
    })
}

fn with_templates<R>(f: impl FnOnce(&Templates) -> R) -> R {
    TEMPLATES.with(|cell| {
        let mut slot = cell.borrow_mut();
        f(slot.get_or_insert_with(Templates::new))
    })
}

/// A whole cache: byte 0 chooses the template (bit 7: 0 the `v3` fixture, 1 the `lz4` fixture),
/// whether to open with `validate_cache` (bit 6), and the file (bits 0-5, modulo the file count)
/// that the remaining bytes replace. Opens the cache and reads every sample and metadata row.
pub fn cache(data: &[u8]) {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    with_templates(|templates| {
        let (dir, files) = &templates.caches[usize::from(head >> 7)];
        let (name, original) = &files[usize::from(head & 0x3f) % files.len()];
        let target = dir.join(name);
        std::fs::write(&target, body).expect("writing the fuzzed file");
        let options = OpenOptions {
            validate_cache: head & 0x40 != 0,
        };
        read_everything(dir, options);
        std::fs::write(&target, original).expect("restoring the template file");
    });
}

fn read_everything(dir: &Path, options: OpenOptions) {
    let Ok(cache) = Cache::open(dir, options) else {
        return;
    };
    let _ = (cache.manifest().format_version(), cache.schema().len());
    let mut buf = SampleBuf::new();
    let len = cache.len();
    for sample in (0..len.min(MAX_VISITS)).chain([len, u64::MAX]) {
        if let Ok(read) = cache.read(sample, &mut buf) {
            let _ = read.to_owned();
        }
        if let Ok(row) = cache.metadata_row(sample) {
            let _ = row.values().count();
        }
    }
}
