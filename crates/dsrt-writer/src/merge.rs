//! Joining finished caches written side by side (parts) into one cache, moving their shards.
//!
//! Independent writers (the tasks of a distributed job) each write a whole cache of their own
//! share; the job's last step joins them in order. Shard records carry no shard id, so a part's
//! shards become the joined cache's by a rename: no payload byte is copied or re-hashed. Only
//! the index (shard ids shifted) and the metadata (rows concatenated) are rewritten, and the
//! manifest is published last, so until then the target is an incomplete cache no reader opens.

use crate::writer::{create_file, io_error, is_shard_file_name, publish_manifest, sync_file};
use crate::{CacheSummary, ManifestVersion, WriteError, WriterOptions};
use dsrt_index::{IndexRow, IndexView, IndexWriter, INDEX_FILE_NAME};
use dsrt_manifest::{shard_file_name, Manifest, ShardEntry, MANIFEST_FILE_NAME};
use dsrt_metadata::{MetadataTable, MetadataWriter, METADATA_FILE_NAME};
use dsrt_schema::ValueRef;
use dsrt_shard::SHARDS_DIR_NAME;
use smallvec::SmallVec;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// One finished cache to join, with the payload bytes its writer was given (what
/// [`CacheSummary::payload_bytes`] reported; the files do not record it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartCache {
    /// The part's cache directory.
    pub path: PathBuf,
    /// Payload bytes its writer was given.
    pub payload_bytes: u64,
}

impl From<&CacheSummary> for PartCache {
    fn from(summary: &CacheSummary) -> Self {
        Self {
            path: summary.path.clone(),
            payload_bytes: summary.payload_bytes,
        }
    }
}

/// A part after its checks: what joining it needs.
struct CheckedPart {
    path: PathBuf,
    shards: Vec<ShardEntry>,
    index: IndexView,
    metadata: MetadataTable,
}

/// Joins `parts` (published caches, in the order their samples go into the new cache) into a
/// new cache at `out` and publishes it.
///
/// Every part must have been written with `options`' source, schema and manifest version
/// (compression and shard size may differ: each shard records its own); each is checked,
/// all of them before anything moves. `out` is created if missing and may already hold other
/// entries (the parts' staging directory, say), but no cache file. Each part's shards are
/// renamed into `out/shards/` (so parts must be on `out`'s file system), numbered on from the
/// previous part's; index.bin and metadata.arrow are written anew; the manifest goes last.
/// A part's remaining files and directory are removed once the cache is published.
///
/// On an error before publication `out` holds no manifest; the shards already moved are in
/// `out/shards/` (remove them with [`crate::remove_unpublished`]) and the parts are no longer
/// whole, so a failed join is not retried from the same parts. Sample order, index and
/// metadata are exactly the parts' concatenated; a shard ends at every part's end, whatever
/// `max_shard_bytes` would have packed together.
pub fn merge_parts(
    out: &Path,
    parts: &[PartCache],
    options: &WriterOptions,
) -> Result<CacheSummary, WriteError> {
    let checked = parts
        .iter()
        .map(|part| check_part(&part.path, options))
        .collect::<Result<Vec<_>, _>>()?;
    prepare_target(out)?;
    let shards_dir = out.join(SHARDS_DIR_NAME);
    fs::create_dir(&shards_dir).map_err(io_error(&shards_dir, "create shards directory"))?;

    let mut index = IndexWriter::new(create_file(&out.join(INDEX_FILE_NAME))?);
    let mut metadata =
        MetadataWriter::new(create_file(&out.join(METADATA_FILE_NAME))?, &options.schema).map_err(
            |source| WriteError::Metadata {
                path: out.to_path_buf(),
                source,
            },
        )?;
    let mut shards: Vec<ShardEntry> = Vec::new();
    let mut samples = 0u64;
    for part in &checked {
        let mut values: SmallVec<[ValueRef<'_>; 16]> = SmallVec::new();
        let first_shard = shards.len() as u64;
        for (local, entry) in part.shards.iter().enumerate() {
            let from = part.path.join(SHARDS_DIR_NAME).join(&entry.name);
            let name = shard_file_name(shards.len());
            fs::rename(&from, shards_dir.join(&name)).map_err(io_error(&from, "move shard"))?;
            debug_assert_eq!(entry.name, shard_file_name(local));
            shards.push(ShardEntry {
                name,
                ..entry.clone()
            });
        }
        for sample in 0..part.index.len() {
            let row = part
                .index
                .row(sample)
                .map_err(|e| part_error(&part.path, format!("index.bin row {sample}: {e}")))?;
            index
                .push(IndexRow {
                    shard_id: row.shard_id + first_shard,
                    ..row
                })
                .map_err(io_error(out, "write index.bin"))?;
            let Some(view) = part.metadata.row(sample) else {
                return Err(part_error(
                    &part.path,
                    format!("metadata.arrow has no row {sample}"),
                ));
            };
            values.clear();
            values.extend(view.values());
            metadata
                .push(&values)
                .map_err(|source| WriteError::Metadata {
                    path: out.to_path_buf(),
                    source,
                })?;
        }
        samples += part.index.len();
    }
    let (index_file, index_digest, _) =
        index.finish().map_err(io_error(out, "finish index.bin"))?;
    sync_file(index_file, &out.join(INDEX_FILE_NAME))?;
    let (metadata_file, metadata_digest, _) =
        metadata.finish().map_err(|source| WriteError::Metadata {
            path: out.to_path_buf(),
            source,
        })?;
    sync_file(metadata_file, &out.join(METADATA_FILE_NAME))?;
    // The renames live in the directories' entries: both must be durable before the manifest.
    for dir in [&shards_dir, &out.to_path_buf()] {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_error(dir, "fsync directory"))?;
    }
    let cache_id = publish_manifest(
        out,
        options,
        samples,
        &index_digest,
        &metadata_digest,
        &shards,
    )?;
    drop(checked);
    for part in parts {
        remove_emptied_part(&part.path);
    }
    tracing::debug!(
        path = %out.display(),
        parts = parts.len(),
        samples,
        shards = shards.len(),
        "parts joined"
    );
    Ok(CacheSummary {
        path: out.to_path_buf(),
        cache_id,
        samples,
        payload_bytes: parts.iter().map(|p| p.payload_bytes).sum(),
        shards,
    })
}

fn part_error(path: &Path, reason: String) -> WriteError {
    WriteError::Part {
        path: path.to_path_buf(),
        reason,
    }
}

/// Reads a part's manifest, index and metadata and checks they fit `options` and each other,
/// and that every shard is there with its recorded size.
fn check_part(path: &Path, options: &WriterOptions) -> Result<CheckedPart, WriteError> {
    let manifest_path = path.join(MANIFEST_FILE_NAME);
    let bytes = fs::read(&manifest_path).map_err(io_error(&manifest_path, "read part manifest"))?;
    let manifest =
        Manifest::parse(&bytes).map_err(|e| part_error(path, format!("manifest.json: {e}")))?;
    let version = match manifest.format_version() {
        2 => ManifestVersion::V2,
        _ => ManifestVersion::V3,
    };
    let description = manifest.description();
    if version != options.manifest_version {
        return Err(part_error(
            path,
            format!(
                "written as format_version {}, the joined cache is {}",
                manifest.format_version(),
                match options.manifest_version {
                    ManifestVersion::V2 => 2,
                    ManifestVersion::V3 => 3,
                }
            ),
        ));
    }
    if description.source != options.source {
        return Err(part_error(
            path,
            format!(
                "written for source {:?}, the joined cache's is {:?}",
                description.source, options.source
            ),
        ));
    }
    if description.metadata_schema != options.schema {
        return Err(part_error(
            path,
            "its metadata schema differs from the joined cache's".to_owned(),
        ));
    }
    let index_path = path.join(INDEX_FILE_NAME);
    let index =
        IndexView::open(&index_path).map_err(|e| part_error(path, format!("index.bin: {e}")))?;
    let shard_lens: Vec<u64> = description.shards.iter().map(|s| s.byte_len).collect();
    index
        .validate(description.sample_count, &shard_lens)
        .map_err(|e| part_error(path, format!("index.bin: {e}")))?;
    let metadata = MetadataTable::open(&path.join(METADATA_FILE_NAME))
        .map_err(|e| part_error(path, format!("metadata.arrow: {e}")))?;
    if metadata.num_rows() != description.sample_count {
        return Err(part_error(
            path,
            format!(
                "metadata.arrow has {} rows, the manifest {} samples",
                metadata.num_rows(),
                description.sample_count
            ),
        ));
    }
    metadata
        .check_schema(&options.schema)
        .map_err(|e| part_error(path, format!("metadata.arrow: {e}")))?;
    for entry in &description.shards {
        let shard = path.join(SHARDS_DIR_NAME).join(&entry.name);
        let len = fs::metadata(&shard)
            .map_err(io_error(&shard, "stat part shard"))?
            .len();
        if len != entry.byte_len {
            return Err(part_error(
                path,
                format!(
                    "shard {} has {len} bytes, its manifest entry {}",
                    entry.name, entry.byte_len
                ),
            ));
        }
    }
    Ok(CheckedPart {
        path: path.to_path_buf(),
        shards: description.shards.clone(),
        index,
        metadata,
    })
}

/// `out` must hold no cache file: an earlier cache or a half-finished one is never mixed in.
fn prepare_target(out: &Path) -> Result<(), WriteError> {
    fs::create_dir_all(out).map_err(io_error(out, "create cache directory"))?;
    for name in [
        MANIFEST_FILE_NAME,
        INDEX_FILE_NAME,
        METADATA_FILE_NAME,
        SHARDS_DIR_NAME,
    ] {
        if out.join(name).exists() {
            return Err(WriteError::TargetNotEmpty {
                path: out.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// Removes what is left of a joined part (its manifest first, so no reader takes the
/// emptied directory for a cache), and nothing it did not write. Best effort.
fn remove_emptied_part(path: &Path) {
    let _ = fs::remove_file(path.join(MANIFEST_FILE_NAME));
    let shards = path.join(SHARDS_DIR_NAME);
    if let Ok(entries) = fs::read_dir(&shards) {
        for entry in entries.flatten() {
            if is_shard_file_name(&entry.file_name().to_string_lossy()) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
    let _ = fs::remove_dir(&shards);
    let _ = fs::remove_file(path.join(INDEX_FILE_NAME));
    let _ = fs::remove_file(path.join(METADATA_FILE_NAME));
    let _ = fs::remove_dir(path);
}
