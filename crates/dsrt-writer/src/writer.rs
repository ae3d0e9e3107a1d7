use crate::{remove_unpublished, LocalCacheFiles, ManifestVersion, WriteError, WriterOptions};
use dsrt_index::{IndexWriter, INDEX_FILE_NAME};
use dsrt_manifest::{
    cache_id_for_source, CacheDescription, CompressionAlgo, ManifestV2, ManifestV3, ShardEntry,
    MANIFEST_FILE_NAME, MANIFEST_TEMP_PREFIX,
};
use dsrt_metadata::{MetadataWriter, METADATA_FILE_NAME};
use dsrt_schema::{Row, ValueRef};
use dsrt_shard::{EnvelopeCodec, MaxShardBytes, ShardSetWriter, SHARDS_DIR_NAME};
use durable_fs::{publish, Published, StdFileSystem};
use smallvec::SmallVec;
use std::fs::{self, File};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

/// Values of one row in schema order; inline up to 16 columns so a sample costs no allocation.
type OrderedValues<'r> = SmallVec<[ValueRef<'r>; 16]>;

/// What a finished cache holds.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheSummary {
    /// The cache directory.
    pub path: PathBuf,
    /// The v3 cache id, or `None` for a v2 cache.
    pub cache_id: Option<u64>,
    /// Samples written.
    pub samples: u64,
    /// Payload bytes handed to the writer.
    pub payload_bytes: u64,
    /// The shards, as the manifest lists them.
    pub shards: Vec<ShardEntry>,
}

impl CacheSummary {
    /// Bytes of all shard files on disk.
    pub fn shard_bytes(&self) -> u64 {
        self.shards.iter().map(|s| s.byte_len).sum()
    }

    /// Uncompressed shard bytes over stored shard bytes (1.0 for an empty cache).
    #[allow(clippy::cast_precision_loss)]
    pub fn ratio(&self) -> f64 {
        let stored = self.shard_bytes();
        if stored == 0 {
            return 1.0;
        }
        self.shards
            .iter()
            .map(|s| s.uncompressed_byte_len)
            .sum::<u64>() as f64
            / stored as f64
    }
}

/// Packs samples into a new cache directory and publishes it with [`CacheWriter::finish`].
///
/// Dropping the writer without `finish` leaves an unpublished directory (no manifest.json),
/// which every reader refuses as incomplete.
pub struct CacheWriter {
    pub(crate) path: PathBuf,
    pub(crate) options: WriterOptions,
    pub(crate) shards: ShardSetWriter,
    pub(crate) index: IndexWriter<BufWriter<File>>,
    pub(crate) metadata: MetadataWriter<BufWriter<File>>,
    pub(crate) codec: EnvelopeCodec,
    pub(crate) encoder: crate::SampleEncoder,
    pub(crate) envelope: Vec<u8>,
    pub(crate) samples: u64,
    pub(crate) payload_bytes: u64,
    pub(crate) poisoned: bool,
    /// Set once a sample is planned ahead (see `planned.rs`).
    pub(crate) plan: Option<crate::planned::Plan>,
}

impl std::fmt::Debug for CacheWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CacheWriter")
            .field("path", &self.path)
            .field("samples", &self.samples)
            .finish_non_exhaustive()
    }
}

impl CacheWriter {
    /// Creates the cache directory (or takes an empty existing one) and opens its files.
    pub fn create(path: impl AsRef<Path>, options: WriterOptions) -> Result<Self, WriteError> {
        let path = path.as_ref().to_path_buf();
        options.check(&path)?;
        let max_shard_bytes = MaxShardBytes::new(options.max_shard_bytes).ok_or_else(|| {
            WriteError::InvalidOption {
                path: path.clone(),
                option: "max_shard_bytes",
                reason: "must be greater than 0".into(),
            }
        })?;
        prepare_empty_dir(&path)?;
        let shards_dir = path.join(SHARDS_DIR_NAME);
        fs::create_dir(&shards_dir).map_err(io_error(&shards_dir, "create shards directory"))?;
        let index = IndexWriter::new(create_file(&path.join(INDEX_FILE_NAME))?);
        let metadata_file = create_file(&path.join(METADATA_FILE_NAME))?;
        let metadata = MetadataWriter::new(metadata_file, &options.schema).map_err(|source| {
            WriteError::Metadata {
                path: path.clone(),
                source,
            }
        })?;
        Ok(Self {
            shards: ShardSetWriter::new(&shards_dir, options.compression, max_shard_bytes)
                .io_threads(options.io_threads),
            codec: EnvelopeCodec::new(&options.schema),
            encoder: crate::SampleEncoder::new(&options.schema, options.compression),
            path,
            options,
            index,
            metadata,
            envelope: Vec::new(),
            samples: 0,
            payload_bytes: 0,
            poisoned: false,
            plan: None,
        })
    }

    /// The cache directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Samples added so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Adds a sample whose metadata is a named row; returns its sample id.
    ///
    /// A row that does not fit the schema is refused before anything is written, and the
    /// writer stays usable.
    pub fn add(&mut self, payload: &[u8], row: &Row) -> Result<u64, WriteError> {
        let mut values = OrderedValues::new();
        row.check_into(&self.options.schema, &mut values)
            .map_err(|source| self.row_error(source))?;
        self.append(payload, &values)
    }

    /// Adds a sample whose metadata values are given in schema order; returns its sample id.
    pub fn add_values(
        &mut self,
        payload: &[u8],
        values: &[ValueRef<'_>],
    ) -> Result<u64, WriteError> {
        self.options
            .schema
            .check_values(values)
            .map_err(|source| self.row_error(source))?;
        self.append(payload, values)
    }

    pub(crate) fn row_error(&self, source: dsrt_schema::RowError) -> WriteError {
        WriteError::Row {
            path: self.path.clone(),
            sample: self.samples,
            source,
        }
    }

    fn append(&mut self, payload: &[u8], values: &[ValueRef<'_>]) -> Result<u64, WriteError> {
        let mut envelope = std::mem::take(&mut self.envelope);
        envelope.clear();
        self.codec.encode(|i| values[i], &mut envelope);
        let added = self.place(payload.len(), values, |shards| {
            shards.append(&envelope, payload)
        });
        self.envelope = envelope;
        added
    }

    /// Appends a record whose envelope and stored payload were made elsewhere (see
    /// [`Self::add_encoded`]).
    pub(crate) fn append_stored(
        &mut self,
        envelope: &[u8],
        stored: &[u8],
        payload_len: usize,
        values: &[ValueRef<'_>],
    ) -> Result<u64, WriteError> {
        self.place(payload_len, values, |shards| {
            shards.append_stored(envelope, stored, payload_len)
        })
    }

    /// Places one record with `write` (into the shards), then its index row and metadata.
    fn place(
        &mut self,
        payload_len: usize,
        values: &[ValueRef<'_>],
        write: impl FnOnce(&mut ShardSetWriter) -> io::Result<dsrt_index::IndexRow>,
    ) -> Result<u64, WriteError> {
        if self.poisoned {
            return Err(WriteError::Poisoned {
                path: self.path.clone(),
            });
        }
        if self.plan.is_some() {
            return Err(WriteError::InvalidOption {
                path: self.path.clone(),
                option: "planned shards",
                reason: "samples were planned ahead; appended samples cannot follow them".into(),
            });
        }
        let sample = self.samples;
        if self.options.compression == CompressionAlgo::Lz4 && u32::try_from(payload_len).is_err() {
            return Err(WriteError::PayloadTooLarge {
                path: self.path.clone(),
                sample,
                len: payload_len,
            });
        }
        // Any failure below may leave a partial record behind: the writer is done for.
        self.poisoned = true;
        let location = write(&mut self.shards).map_err(io_error(&self.path, "write shard"))?;
        self.poisoned = false;
        self.record_row(location, payload_len, values)?;
        Ok(sample)
    }

    /// Writes a sample's index row and metadata row and counts it; a failure leaves the writer
    /// poisoned (the files may hold half a row).
    pub(crate) fn record_row(
        &mut self,
        location: dsrt_index::IndexRow,
        payload_len: usize,
        values: &[ValueRef<'_>],
    ) -> Result<(), WriteError> {
        self.poisoned = true;
        self.index
            .push(location)
            .map_err(io_error(&self.path, "write index.bin"))?;
        self.metadata
            .push(values)
            .map_err(|source| WriteError::Metadata {
                path: self.path.clone(),
                source,
            })?;
        self.poisoned = false;
        self.samples += 1;
        self.payload_bytes += payload_len as u64;
        Ok(())
    }

    /// Makes every file durable, then publishes manifest.json (temp file, fsync, rename,
    /// directory fsync). Only after this returns `Ok` is the cache complete.
    pub fn finish(self) -> Result<CacheSummary, WriteError> {
        if self.poisoned {
            return Err(WriteError::Poisoned { path: self.path });
        }
        if let Some(plan) = &self.plan {
            let adopted = self.shards.finished_shards();
            if adopted != plan.shards() {
                return Err(WriteError::InvalidOption {
                    path: self.path,
                    option: "planned shards",
                    reason: format!(
                        "{} shards were planned, {adopted} written and adopted",
                        plan.shards()
                    ),
                });
            }
        }
        let path = self.path;
        let (index, metadata, shards) = (self.index, self.metadata, self.shards);
        // The three files flush and fsync side by side: the disk, not the CPU, is the limit here.
        let (shards, index_digest, metadata_digest) = std::thread::scope(|scope| {
            let index = scope.spawn(|| {
                let (file, digest, _) = index
                    .finish()
                    .map_err(io_error(&path, "finish index.bin"))?;
                sync_file(file, &path.join(INDEX_FILE_NAME))?;
                Ok::<_, WriteError>(digest)
            });
            let metadata = scope.spawn(|| {
                let (file, digest, _) =
                    metadata.finish().map_err(|source| WriteError::Metadata {
                        path: path.clone(),
                        source,
                    })?;
                sync_file(file, &path.join(METADATA_FILE_NAME))?;
                Ok::<_, WriteError>(digest)
            });
            let shards = shards.finish().map_err(io_error(&path, "finish shards"));
            let joined = |handle: std::thread::ScopedJoinHandle<'_, Result<_, WriteError>>| {
                handle.join().unwrap_or_else(|_| {
                    Err(io_error(&path, "finish")(std::io::Error::other(
                        "writer thread panicked",
                    )))
                })
            };
            let index = joined(index);
            let metadata = joined(metadata);
            Ok::<_, WriteError>((shards?, index?, metadata?))
        })?;
        File::open(&path)
            .and_then(|dir| dir.sync_all())
            .map_err(io_error(&path, "fsync cache directory"))?;

        let cache_id = publish_manifest(
            &path,
            &self.options,
            self.samples,
            &index_digest,
            &metadata_digest,
            &shards,
        )?;
        tracing::debug!(
            path = %path.display(),
            cache_id,
            samples = self.samples,
            shards = shards.len(),
            "cache written"
        );
        Ok(CacheSummary {
            path,
            cache_id,
            samples: self.samples,
            payload_bytes: self.payload_bytes,
            shards,
        })
    }
}

/// Publishes the manifest of a cache whose other files are durable (temp file, fsync, rename,
/// directory fsync); returns its v3 cache id.
pub(crate) fn publish_manifest(
    path: &Path,
    options: &WriterOptions,
    samples: u64,
    index_digest: &[u8; 32],
    metadata_digest: &[u8; 32],
    shards: &[ShardEntry],
) -> Result<Option<u64>, WriteError> {
    let (cache_id, manifest) =
        manifest_bytes(options, samples, index_digest, metadata_digest, shards);
    match publish(
        &StdFileSystem,
        &path.join(MANIFEST_FILE_NAME),
        MANIFEST_TEMP_PREFIX,
        &manifest,
    )? {
        Published::Durable => Ok(cache_id),
        Published::DurabilityUnknown(source) => Err(WriteError::DurabilityUnknown {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The manifest.json bytes a writer with `options` publishes for these files, and the v3
/// cache id in it (`None` for v2). Every writer of this crate (and dsrt-remote's join on a
/// store) makes its manifest here, so the same files always get the same bytes.
pub fn manifest_bytes(
    options: &WriterOptions,
    samples: u64,
    index_digest: &[u8; 32],
    metadata_digest: &[u8; 32],
    shards: &[ShardEntry],
) -> (Option<u64>, Vec<u8>) {
    let description = CacheDescription {
        source: options.source.clone(),
        sample_count: samples,
        metadata_schema: options.schema.clone(),
        index_sha256: dsrt_atlas_codec::to_hex(index_digest),
        metadata_sha256: dsrt_atlas_codec::to_hex(metadata_digest),
        shards: shards.to_vec(),
        extra: options.manifest_keys.clone(),
    };
    match options.manifest_version {
        ManifestVersion::V3 => {
            let cache_id = cache_id_for_source(&options.source);
            (
                Some(cache_id),
                ManifestV3 {
                    cache_id,
                    description,
                }
                .to_json_bytes(),
            )
        }
        ManifestVersion::V2 => (None, ManifestV2 { description }.to_json_bytes()),
    }
}

pub(crate) fn io_error<'p>(
    path: &'p Path,
    action: &'static str,
) -> impl FnOnce(io::Error) -> WriteError + 'p {
    move |source| WriteError::Io {
        path: path.to_path_buf(),
        action,
        source,
    }
}

fn prepare_empty_dir(path: &Path) -> Result<(), WriteError> {
    match fs::read_dir(path) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(WriteError::TargetNotEmpty {
                    path: path.to_path_buf(),
                });
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(path).map_err(io_error(path, "create cache directory"))
        }
        Err(e) => Err(io_error(path, "read target directory")(e)),
    }
}

pub(crate) fn create_file(path: &Path) -> Result<BufWriter<File>, WriteError> {
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io_error(path, "create file"))?;
    Ok(BufWriter::with_capacity(1 << 16, file))
}

pub(crate) fn sync_file(buffered: BufWriter<File>, path: &Path) -> Result<(), WriteError> {
    let file = buffered
        .into_inner()
        .map_err(|e| io_error(path, "flush")(e.into_error()))?;
    file.sync_all().map_err(io_error(path, "fsync"))
}

/// Writes a new cache at `dir`: creates the writer with `options`, lets `fill` add the
/// samples, and publishes the cache. Whatever fails after the writer made its first file (in
/// `fill`, in publishing, or a panic unwinding through here), what this run wrote is removed
/// ([`remove_unpublished`]; `dir` too when this run made it), so a failed run leaves nothing
/// behind. Two outcomes keep the directory as it is: a writer that could not be created
/// (`dir` was not this run's to clean: another cache's files may be in it), and a published
/// manifest whose durability is unknown (the cache is whole; the error says so).
pub fn write_new_cache<E: From<WriteError>>(
    dir: &Path,
    options: WriterOptions,
    fill: impl FnOnce(&mut CacheWriter) -> Result<(), E>,
) -> Result<CacheSummary, E> {
    let created = !dir.exists();
    let mut writer = CacheWriter::create(dir, options)?;
    // Declared after the writer so it drops after it: files close before they are removed.
    let mut cleanup = RemoveOnDrop {
        dir,
        created,
        armed: true,
    };
    fill(&mut writer)?;
    match writer.finish() {
        Ok(summary) => {
            cleanup.armed = false;
            Ok(summary)
        }
        Err(error) => {
            cleanup.armed = !matches!(error, WriteError::DurabilityUnknown { .. });
            Err(error.into())
        }
    }
}

/// Removes an unpublished cache when dropped armed (an error return or an unwinding panic).
struct RemoveOnDrop<'a> {
    dir: &'a Path,
    created: bool,
    armed: bool,
}

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            // Best effort: a file that cannot be removed stays, and the run's own error is
            // the one to report.
            let _ = remove_unpublished(&LocalCacheFiles::new(self.dir), self.created);
        }
    }
}

/// Whether `name` is a shard file's name (`000000.bin` and up): what removing an unpublished
/// cache may delete under `shards/`.
pub fn is_shard_file_name(name: &str) -> bool {
    name.strip_suffix(".bin")
        .is_some_and(|digits| digits.len() >= 6 && digits.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::first_cache_file;

    #[test]
    fn only_shard_names_count_as_shards() {
        assert!(is_shard_file_name("000000.bin"));
        assert!(is_shard_file_name("1234567.bin"));
        assert!(!is_shard_file_name("00000.bin"));
        assert!(!is_shard_file_name("notes.bin"));
        assert!(!is_shard_file_name("000000.bin.bak"));
    }

    #[test]
    fn removing_an_unpublished_cache_keeps_other_files_and_published_caches() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("c");
        fs::create_dir_all(dir.join(SHARDS_DIR_NAME)).unwrap();
        for name in [
            "shards/000000.bin",
            INDEX_FILE_NAME,
            METADATA_FILE_NAME,
            "notes.txt",
        ] {
            fs::write(dir.join(name), b"x").unwrap();
        }
        remove_unpublished(&LocalCacheFiles::new(&dir), true).unwrap();
        // The stranger's file stays, so the directory does too.
        assert!(dir.join("notes.txt").exists());
        assert!(!dir.join(INDEX_FILE_NAME).exists() && !dir.join(SHARDS_DIR_NAME).exists());
        fs::write(dir.join(MANIFEST_FILE_NAME), b"{}").unwrap();
        fs::write(dir.join(INDEX_FILE_NAME), b"x").unwrap();
        remove_unpublished(&LocalCacheFiles::new(&dir), true).unwrap();
        assert!(
            dir.join(INDEX_FILE_NAME).exists(),
            "a published cache is never touched"
        );
    }

    #[test]
    fn the_first_cache_file_names_what_a_new_cache_would_be_mixed_with() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path();
        let first = |dir| first_cache_file(&LocalCacheFiles::new(dir)).unwrap();
        fs::write(dir.join("notes.txt"), b"x").unwrap();
        assert_eq!(first(dir), None, "other files are no cache's");
        fs::create_dir(dir.join(SHARDS_DIR_NAME)).unwrap();
        assert_eq!(
            first(dir).as_deref(),
            Some("shards"),
            "even an empty shards/"
        );
        fs::write(dir.join("shards/000000.bin"), b"x").unwrap();
        assert_eq!(first(dir).as_deref(), Some("shards/000000.bin"));
        fs::write(dir.join(METADATA_FILE_NAME), b"x").unwrap();
        assert_eq!(first(dir).as_deref(), Some(METADATA_FILE_NAME));
        fs::write(dir.join(MANIFEST_FILE_NAME), b"x").unwrap();
        assert_eq!(first(dir).as_deref(), Some(MANIFEST_FILE_NAME));
    }
}
