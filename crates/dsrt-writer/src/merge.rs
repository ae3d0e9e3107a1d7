//! Joining finished caches written side by side (parts) into one cache, moving their shards.
//!
//! Independent writers (the tasks of a distributed job) each write a whole cache of their own
//! share; the job's last step joins them in order. Shard records carry no shard id, so a part's
//! shards become the joined cache's by a rename: no payload byte is copied or re-hashed. Only
//! the index (shard ids shifted) and the metadata (rows concatenated) are rewritten, and the
//! manifest is published last, so until then the target is an incomplete cache no reader opens.
//!
//! The checks of a part ([`CheckedPart`]), the numbering of the joined shards
//! ([`joined_shards`]) and the joined index and metadata ([`write_joined_tables`]) do not care
//! where the parts are: dsrt-remote's join of parts under an object-store prefix is made of
//! the same pieces, copying shards on the store instead of renaming them.

use crate::writer::{create_file, io_error, is_shard_file_name, publish_manifest, sync_file};
use crate::{first_cache_file, CacheSummary, LocalCacheFiles, WriteError, WriterOptions};
use dsrt_index::{IndexError, IndexRow, IndexView, IndexWriter, INDEX_FILE_NAME};
use dsrt_manifest::{shard_file_name, Manifest, ShardEntry, MANIFEST_FILE_NAME};
use dsrt_metadata::{MetadataError, MetadataTable, MetadataWriter, METADATA_FILE_NAME};
use dsrt_schema::{Schema, ValueRef};
use dsrt_shard::SHARDS_DIR_NAME;
use smallvec::SmallVec;
use std::fs::{self, File};
use std::io::Write;
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

/// A part after its checks: what joining it needs. Made by [`CheckedPart::check`] from the
/// part's manifest bytes, index and metadata, wherever they were read from (a local part by
/// [`merge_parts`], a part under an object-store prefix by dsrt-remote's join), so a part is
/// held to the same rules whichever join takes it.
#[derive(Debug)]
pub struct CheckedPart {
    name: PathBuf,
    shards: Vec<ShardEntry>,
    index: IndexView,
    metadata: MetadataTable,
}

impl CheckedPart {
    /// Checks a part named `name` (its directory or URL, which every error names): its
    /// manifest (`manifest`, the bytes of its manifest.json) must be a valid one written with
    /// `options`' source, schema, manifest version and manifest keys; then its index (`index` opens it, only
    /// once the manifest passed) must have a valid row per sample within the manifest's
    /// shards, and its metadata (`metadata`) a row per sample of `options`' schema. The
    /// shards themselves are the caller's to size ([`check_shard_len`](Self::check_shard_len)).
    pub fn check(
        name: impl Into<PathBuf>,
        manifest: &[u8],
        index: impl FnOnce() -> Result<IndexView, IndexError>,
        metadata: impl FnOnce() -> Result<MetadataTable, MetadataError>,
        options: &WriterOptions,
    ) -> Result<Self, WriteError> {
        let name = name.into();
        let path = name.as_path();
        let manifest = Manifest::parse(manifest)
            .map_err(|e| part_error(path, format!("manifest.json: {e}")))?;
        let description = manifest.description();
        if manifest.format_version() != options.manifest_version.number() {
            return Err(part_error(
                path,
                format!(
                    "written as format_version {}, the joined cache is {}",
                    manifest.format_version(),
                    options.manifest_version.number()
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
        if description.extra != options.manifest_keys {
            return Err(part_error(
                path,
                format!(
                    "its manifest's other keys {} differ from the joined cache's {}",
                    serde_json::Value::Object(description.extra.clone()),
                    serde_json::Value::Object(options.manifest_keys.clone())
                ),
            ));
        }
        let index = index().map_err(|e| part_error(path, format!("index.bin: {e}")))?;
        let shard_lens: Vec<u64> = description.shards.iter().map(|s| s.byte_len).collect();
        index
            .validate(description.sample_count, &shard_lens)
            .map_err(|e| part_error(path, format!("index.bin: {e}")))?;
        let metadata = metadata().map_err(|e| part_error(path, format!("metadata.arrow: {e}")))?;
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
        let shards = description.shards.clone();
        Ok(Self {
            name,
            shards,
            index,
            metadata,
        })
    }

    /// The part's directory or URL, as given to [`check`](Self::check).
    pub fn name(&self) -> &Path {
        &self.name
    }

    /// The part's shards, as its manifest lists them.
    pub fn shards(&self) -> &[ShardEntry] {
        &self.shards
    }

    /// Its samples.
    pub fn samples(&self) -> u64 {
        self.index.len()
    }

    /// Refuses the part if its shard `entry` was found to have `len` bytes, not the
    /// manifest's `byte_len`.
    pub fn check_shard_len(&self, entry: &ShardEntry, len: u64) -> Result<(), WriteError> {
        if len == entry.byte_len {
            return Ok(());
        }
        Err(part_error(
            &self.name,
            format!(
                "shard {} has {len} bytes, its manifest entry {}",
                entry.name, entry.byte_len
            ),
        ))
    }
}

/// One shard of the joined cache: which part's shard it is, and its entry under its new name.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinedShard {
    /// The part's position in the join.
    pub part: usize,
    /// Its name in the part (`shards/<from>`).
    pub from: String,
    /// Its entry in the joined cache (the part's, renamed: bytes, SHA-256 and compression
    /// are the part's).
    pub entry: ShardEntry,
}

/// The shards of the joined cache in order: each part's, numbered on from the previous part's.
pub fn joined_shards(parts: &[CheckedPart]) -> Vec<JoinedShard> {
    let mut out = Vec::new();
    for (part, checked) in parts.iter().enumerate() {
        for entry in &checked.shards {
            out.push(JoinedShard {
                part,
                from: entry.name.clone(),
                entry: ShardEntry {
                    name: shard_file_name(out.len()),
                    ..entry.clone()
                },
            });
        }
    }
    out
}

/// The joined index.bin and metadata.arrow, written by [`write_joined_tables`].
#[derive(Debug)]
pub struct JoinedTables<I, M> {
    /// Where index.bin was written, flushed by its writer.
    pub index: I,
    /// Its SHA-256.
    pub index_digest: [u8; 32],
    /// Where metadata.arrow was written.
    pub metadata: M,
    /// Its SHA-256.
    pub metadata_digest: [u8; 32],
    /// Samples in all.
    pub samples: u64,
}

/// Writes the joined cache's index (each part's rows, shard ids shifted by the shards of the
/// parts before it, as [`joined_shards`] numbers them) into `index` and its metadata (the
/// parts' rows concatenated) into `metadata`. `out` (the joined cache's directory or URL)
/// names the joined cache in errors.
pub fn write_joined_tables<I: Write, M: Write>(
    parts: &[CheckedPart],
    index: I,
    metadata: M,
    out: &Path,
    schema: &Schema,
) -> Result<JoinedTables<I, M>, WriteError> {
    let metadata_error = |source| WriteError::Metadata {
        path: out.to_path_buf(),
        source,
    };
    let mut index = IndexWriter::new(index);
    let mut metadata = MetadataWriter::new(metadata, schema).map_err(metadata_error)?;
    let mut values: SmallVec<[ValueRef<'_>; 16]> = SmallVec::new();
    let mut first_shard = 0u64;
    let mut samples = 0u64;
    for part in parts {
        for sample in 0..part.index.len() {
            let row = part
                .index
                .row(sample)
                .map_err(|e| part_error(&part.name, format!("index.bin row {sample}: {e}")))?;
            index
                .push(IndexRow {
                    shard_id: row.shard_id + first_shard,
                    ..row
                })
                .map_err(io_error(out, "write index.bin"))?;
            let Some(view) = part.metadata.row(sample) else {
                return Err(part_error(
                    &part.name,
                    format!("metadata.arrow has no row {sample}"),
                ));
            };
            values.clear();
            values.extend(view.values());
            metadata.push(&values).map_err(metadata_error)?;
        }
        first_shard += part.shards.len() as u64;
        samples += part.index.len();
    }
    let (index, index_digest, _) = index.finish().map_err(io_error(out, "finish index.bin"))?;
    let (metadata, metadata_digest, _) = metadata.finish().map_err(metadata_error)?;
    Ok(JoinedTables {
        index,
        index_digest,
        metadata,
        metadata_digest,
        samples,
    })
}

/// Joins `parts` (published caches, in the order their samples go into the new cache) into a
/// new cache at `out` and publishes it.
///
/// Every part must have been written with `options`' source, schema, manifest version and manifest keys
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
    options.check(out)?;
    let checked = parts
        .iter()
        .map(|part| check_part(&part.path, options))
        .collect::<Result<Vec<_>, _>>()?;
    prepare_target(out)?;
    let shards_dir = out.join(SHARDS_DIR_NAME);
    fs::create_dir(&shards_dir).map_err(io_error(&shards_dir, "create shards directory"))?;

    let tables = write_joined_tables(
        &checked,
        create_file(&out.join(INDEX_FILE_NAME))?,
        create_file(&out.join(METADATA_FILE_NAME))?,
        out,
        &options.schema,
    )?;
    sync_file(tables.index, &out.join(INDEX_FILE_NAME))?;
    sync_file(tables.metadata, &out.join(METADATA_FILE_NAME))?;
    let joined = joined_shards(&checked);
    for shard in &joined {
        let from = checked[shard.part]
            .name
            .join(SHARDS_DIR_NAME)
            .join(&shard.from);
        fs::rename(&from, shards_dir.join(&shard.entry.name))
            .map_err(io_error(&from, "move shard"))?;
    }
    // The renames live in the directories' entries: both must be durable before the manifest.
    for dir in [&shards_dir, &out.to_path_buf()] {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_error(dir, "fsync directory"))?;
    }
    let shards: Vec<ShardEntry> = joined.into_iter().map(|s| s.entry).collect();
    let samples = tables.samples;
    let cache_id = publish_manifest(
        out,
        options,
        samples,
        &tables.index_digest,
        &tables.metadata_digest,
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

/// Reads a local part's manifest, index and metadata, checks them ([`CheckedPart::check`]),
/// and checks every shard is there with its recorded size.
fn check_part(path: &Path, options: &WriterOptions) -> Result<CheckedPart, WriteError> {
    let manifest_path = path.join(MANIFEST_FILE_NAME);
    let bytes = fs::read(&manifest_path).map_err(io_error(&manifest_path, "read part manifest"))?;
    let checked = CheckedPart::check(
        path,
        &bytes,
        || IndexView::open(&path.join(INDEX_FILE_NAME)),
        || MetadataTable::open(&path.join(METADATA_FILE_NAME)),
        options,
    )?;
    for entry in checked.shards() {
        let shard = path.join(SHARDS_DIR_NAME).join(&entry.name);
        let len = fs::metadata(&shard)
            .map_err(io_error(&shard, "stat part shard"))?
            .len();
        checked.check_shard_len(entry, len)?;
    }
    Ok(checked)
}

/// `out` must hold no cache file: an earlier cache or a half-finished one is never mixed in.
fn prepare_target(out: &Path) -> Result<(), WriteError> {
    fs::create_dir_all(out).map_err(io_error(out, "create cache directory"))?;
    match first_cache_file(&LocalCacheFiles::new(out)) {
        Ok(None) => Ok(()),
        Ok(Some(_)) => Err(WriteError::TargetNotEmpty {
            path: out.to_path_buf(),
        }),
        Err(error) => Err(io_error(out, "list cache files")(error)),
    }
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
