use crate::validate::{check_shard_files, verify_checksums};
use crate::{CacheError, CacheFile, ShardSource};
use dsrt_index::{IndexView, INDEX_FILE_NAME};
use dsrt_manifest::{CompressionAlgo, Manifest, MANIFEST_FILE_NAME};
use dsrt_metadata::{MetadataTable, RowView, METADATA_FILE_NAME};
use dsrt_schema::Schema;
use dsrt_shard::{EnvelopeCodec, SHARDS_DIR_NAME};
use handle_pool::{Exhausted, LazyFiles};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest manifest.json a reader accepts; a real one is a few KiB per thousand shards.
const MAX_MANIFEST_BYTES: u64 = 256 << 20;

/// How a cache is opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Hash index.bin, metadata.arrow and every shard and compare with the manifest before
    /// serving the first sample. Off by default: without it no SHA-256 is computed.
    pub validate_cache: bool,
}

impl OpenOptions {
    /// Options with full checksum validation.
    pub fn validated() -> Self {
        Self {
            validate_cache: true,
        }
    }
}

pub(crate) struct Shard {
    pub(crate) algo: CompressionAlgo,
}

/// An open, validated cache. Cheap to share between threads (`Send + Sync`); every read is a
/// positional read, so threads never contend on a file offset.
pub struct Cache {
    pub(crate) path: PathBuf,
    manifest: Manifest,
    pub(crate) index: IndexView,
    pub(crate) metadata: MetadataTable,
    pub(crate) shards: Vec<Shard>,
    /// The shard files, opened and mapped on demand, idle ones closed by the process's
    /// [`HandlePool`](handle_pool::HandlePool) (unused when `source` serves the shards).
    pub(crate) files: Arc<LazyFiles>,
    /// Where shard bytes come from when they are not the files under `shards/`.
    pub(crate) source: Option<Arc<dyn ShardSource>>,
    pub(crate) envelope: EnvelopeCodec,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("path", &self.path)
            .field("format_version", &self.manifest.format_version())
            .field("samples", &self.len())
            .field("shards", &self.shards.len())
            .finish()
    }
}

impl Cache {
    /// Opens and validates the cache at `path`; see [`OpenOptions`].
    pub fn open(path: impl AsRef<Path>, options: OpenOptions) -> Result<Self, CacheError> {
        Self::open_inner(path.as_ref(), options, None)
    }

    /// Opens the cache at `path` (its manifest.json, index.bin and metadata.arrow) with its
    /// shards served by `source` instead of the files under `path/shards/`, which need not
    /// exist. Everything [`Cache::open`] validates is validated, except what the source
    /// vouches for (see [`ShardSource`]): the shard files' presence and lengths, and, with
    /// [`OpenOptions::validate_cache`], their SHA-256. Mapped reads fall back to positional
    /// reads through the source, and [`Cache::shard_path`] is `None`.
    pub fn open_with_source(
        path: impl AsRef<Path>,
        options: OpenOptions,
        source: Arc<dyn ShardSource>,
    ) -> Result<Self, CacheError> {
        Self::open_inner(path.as_ref(), options, Some(source))
    }

    fn open_inner(
        path: &Path,
        options: OpenOptions,
        source: Option<Arc<dyn ShardSource>>,
    ) -> Result<Self, CacheError> {
        let path = path.to_path_buf();
        let manifest = read_manifest(&path)?;
        let description = manifest.description();
        tracing::debug!(
            path = %path.display(),
            shards = description.shards.len(),
            validate = options.validate_cache,
            "opening a cache"
        );
        let shard_lens = match source {
            None => check_shard_files(&path, description)?,
            Some(_) => description.shards.iter().map(|s| s.byte_len).collect(),
        };
        let index_error = |source| CacheError::Index {
            path: path.clone(),
            source,
        };
        let index = IndexView::open(&path.join(INDEX_FILE_NAME)).map_err(|e| match e {
            dsrt_index::IndexError::Io(source) if Exhausted::of(&source).is_some() => {
                CacheError::io(&path, CacheFile::Index, source)
            }
            e => index_error(e),
        })?;
        index
            .validate(description.sample_count, &shard_lens)
            .map_err(index_error)?;
        let metadata_error = |source| CacheError::Metadata {
            path: path.clone(),
            source,
        };
        let metadata =
            MetadataTable::open(&path.join(METADATA_FILE_NAME)).map_err(|e| match e {
                dsrt_metadata::MetadataError::Io(source) if Exhausted::of(&source).is_some() => {
                    CacheError::io(&path, CacheFile::Metadata, source)
                }
                e => metadata_error(e),
            })?;
        if metadata.num_rows() != description.sample_count {
            let found = metadata.num_rows();
            return Err(metadata_error(dsrt_metadata::MetadataError::RowCount {
                expected: description.sample_count,
                found,
            }));
        }
        metadata
            .check_schema(&description.metadata_schema)
            .map_err(metadata_error)?;
        // Hashing comes after every size and structure check, so a file of the wrong size
        // (a sparse giant, a device) is refused at once, not read to its end first. A source
        // checks the shards it serves itself (see `ShardSource`).
        if options.validate_cache {
            verify_checksums(&path, description, source.is_none())?;
        }
        let shards_dir = path.join(SHARDS_DIR_NAME);
        let shards = description
            .shards
            .iter()
            .map(|entry| Shard {
                algo: entry.compression.algo,
            })
            .collect();
        let files = LazyFiles::new(
            description
                .shards
                .iter()
                .map(|entry| shards_dir.join(&entry.name))
                .collect(),
        );
        let envelope = EnvelopeCodec::new(&description.metadata_schema);
        Ok(Self {
            path,
            manifest,
            index,
            metadata,
            shards,
            files,
            source,
            envelope,
        })
    }

    /// The cache directory as given to [`Cache::open`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The parsed manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The metadata schema.
    pub fn schema(&self) -> &Schema {
        &self.manifest.description().metadata_schema
    }

    /// Number of samples.
    pub fn len(&self) -> u64 {
        self.index.len()
    }

    /// Whether the cache holds no sample.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The file of shard `shard`, or `None` if the manifest lists no such shard or the cache's
    /// shards come from a [`ShardSource`].
    pub fn shard_path(&self, shard: u64) -> Option<&Path> {
        if self.source.is_some() {
            return None;
        }
        usize::try_from(shard).ok().and_then(|i| self.files.path(i))
    }

    /// Whether the shards come from a [`ShardSource`] (see [`Cache::open_with_source`]).
    pub fn has_shard_source(&self) -> bool {
        self.source.is_some()
    }

    /// Passes a hint on to the [`ShardSource`], if any: the shards a reader will need next,
    /// in order. Does nothing for a local cache.
    pub fn will_need(&self, shards: &[u64]) {
        if let Some(source) = &self.source {
            source.will_need(shards);
        }
    }

    /// The mapped index.bin (validated at open).
    pub fn index(&self) -> &IndexView {
        &self.index
    }

    /// The whole metadata table; reading it opens no shard.
    pub fn metadata(&self) -> &MetadataTable {
        &self.metadata
    }

    /// Sample `sample`'s metadata from metadata.arrow, without opening a shard.
    pub fn metadata_row(&self, sample: u64) -> Result<RowView<'_>, CacheError> {
        self.metadata.row(sample).ok_or_else(|| CacheError::Index {
            path: self.path.clone(),
            source: dsrt_index::IndexError::SampleOutOfRange {
                sample,
                rows: self.len(),
            },
        })
    }

    pub(crate) fn io_error(&self, file: CacheFile) -> impl FnOnce(io::Error) -> CacheError + '_ {
        move |source| CacheError::io(&self.path, file, source)
    }

    pub(crate) fn source_error(
        &self,
        file: CacheFile,
    ) -> impl FnOnce(crate::SourceError) -> CacheError + '_ {
        move |source| CacheError::source(&self.path, file, source)
    }

    /// How many of this cache's shard files have a descriptor or a mapping held for them by
    /// the process's handle pool now (for tests and diagnostics).
    pub fn open_shard_files(&self) -> usize {
        self.files.open_count()
    }
}

/// A missing manifest means an incomplete cache only inside an existing directory; a mistyped
/// path is reported as such.
fn missing_manifest(path: &Path) -> CacheError {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => CacheError::Incomplete {
            path: path.to_path_buf(),
        },
        Ok(_) => CacheError::NotADirectory {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
        },
        Err(source) => CacheError::NotADirectory {
            path: path.to_path_buf(),
            source,
        },
    }
}

fn read_manifest(path: &Path) -> Result<Manifest, CacheError> {
    let manifest_path = path.join(MANIFEST_FILE_NAME);
    let io_error = |source| CacheError::io(path, CacheFile::Manifest, source);
    let file = match durable_fs::open_regular(&manifest_path) {
        Ok(file) => file,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Err(missing_manifest(path));
        }
        Err(e) => return Err(io_error(e)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        let message = format!("manifest.json exceeds {MAX_MANIFEST_BYTES} bytes");
        return Err(io_error(io::Error::new(
            io::ErrorKind::InvalidData,
            message,
        )));
    }
    Manifest::parse(&bytes).map_err(|source| CacheError::Manifest {
        path: path.to_path_buf(),
        source,
    })
}
