use std::fmt;
use std::path::PathBuf;
use thiserror::Error;

/// A file of a cache, named in checksum and I/O errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheFile {
    /// manifest.json.
    Manifest,
    /// index.bin.
    Index,
    /// metadata.arrow.
    Metadata,
    /// shards/NNNNNN.bin with this shard id.
    Shard(u64),
}

impl fmt::Display for CacheFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Manifest => f.write_str("manifest.json"),
            Self::Index => f.write_str("index.bin"),
            Self::Metadata => f.write_str("metadata.arrow"),
            Self::Shard(id) => write!(
                f,
                "shards/{}",
                dsrt_manifest::shard_file_name(usize::try_from(*id).unwrap_or(usize::MAX))
            ),
        }
    }
}

/// Why a cache cannot be opened or a sample cannot be served. Every variant names the cache.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The path is missing or not a directory.
    #[error("{path}: not a cache directory: {source}")]
    NotADirectory {
        /// The path as given.
        path: PathBuf,
        /// Why (not found, not a directory, no permission).
        #[source]
        source: std::io::Error,
    },
    /// No manifest.json: the cache was never published (or a writer was interrupted).
    #[error("{path}: incomplete cache: manifest.json is missing")]
    Incomplete {
        /// The cache directory.
        path: PathBuf,
    },
    /// manifest.json is not a valid manifest of a supported version.
    #[error("{path}: manifest.json: {source}")]
    Manifest {
        /// The cache directory.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: dsrt_manifest::ManifestError,
    },
    /// index.bin is unusable or one of its rows is out of bounds.
    #[error("{path}: {source}")]
    Index {
        /// The cache directory.
        path: PathBuf,
        /// What is wrong, naming the row.
        #[source]
        source: dsrt_index::IndexError,
    },
    /// metadata.arrow is unusable or disagrees with the manifest.
    #[error("{path}: {source}")]
    Metadata {
        /// The cache directory.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: dsrt_metadata::MetadataError,
    },
    /// A shard the manifest lists is absent.
    #[error("{path}: shard {shard} ({file}) is missing")]
    MissingShard {
        /// The cache directory.
        path: PathBuf,
        /// Shard id.
        shard: u64,
        /// Its file.
        file: CacheFile,
    },
    /// A shard's size differs from the manifest's byte_len.
    #[error("{path}: {file} is {found} bytes, the manifest says {expected}")]
    ShardLength {
        /// The cache directory.
        path: PathBuf,
        /// The shard's file.
        file: CacheFile,
        /// Manifest byte_len.
        expected: u64,
        /// Size on disk.
        found: u64,
    },
    /// A file's SHA-256 differs from the manifest's (only checked with `validate_cache`).
    #[error("{path}: {file} SHA-256 is {found}, the manifest says {expected}")]
    Checksum {
        /// The cache directory.
        path: PathBuf,
        /// Which file.
        file: CacheFile,
        /// Manifest checksum.
        expected: String,
        /// Computed checksum.
        found: String,
    },
    /// A sample's record is malformed, its embedded metadata disagrees with metadata.arrow, or
    /// its payload does not decode.
    #[error("{path}: sample {sample} (shard {shard}, offset {offset}): {source}")]
    Record {
        /// The cache directory.
        path: PathBuf,
        /// Sample id.
        sample: u64,
        /// Shard id.
        shard: u64,
        /// Record offset in the shard.
        offset: u64,
        /// What is wrong.
        #[source]
        source: dsrt_shard::RecordError,
    },
    /// The process ran out of file descriptors or memory mappings opening or mapping a
    /// file: a resource limit, not a property of the cache (which may be perfectly valid).
    #[error("{path}: {file}: {resource}: {source}; {}", resource.advice())]
    Resource {
        /// The cache directory.
        path: PathBuf,
        /// The file being opened or mapped.
        file: CacheFile,
        /// What ran out.
        resource: handle_pool::Exhausted,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The cache's [`ShardSource`](crate::ShardSource) (its shards live elsewhere, as a
    /// remote cache's do) could not serve a read of `file`.
    #[error("{path}: {file}: {source}")]
    Source {
        /// The cache directory (or the remote cache's local directory).
        path: PathBuf,
        /// Which shard.
        file: CacheFile,
        /// The source's error, with whether retrying may help.
        #[source]
        source: crate::SourceError,
    },
    /// Reading a file failed.
    #[error("{path}: {file}: {source}")]
    Io {
        /// The cache directory.
        path: PathBuf,
        /// Which file.
        file: CacheFile,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl CacheError {
    /// A stable name of the check that failed, the same for every message wording: what the
    /// bindings call the error's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotADirectory { .. } => "not_a_directory",
            Self::Incomplete { .. } => "incomplete",
            Self::Manifest { .. } => "manifest",
            Self::Index { .. } => "index",
            Self::Metadata { .. } => "metadata",
            Self::MissingShard { .. } => "missing_shard",
            Self::ShardLength { .. } => "shard_length",
            Self::Checksum { .. } => "checksum",
            Self::Record { .. } => "record",
            Self::Resource { .. } => "resource",
            Self::Io { .. } | Self::Source { .. } => "io",
        }
    }

    /// What is wrong, without the cache directory the message starts with.
    pub fn reason(&self) -> String {
        match self {
            Self::Incomplete { .. } => "manifest.json is missing".to_owned(),
            Self::MissingShard { shard, file, .. } => format!("shard {shard} ({file}) is missing"),
            Self::ShardLength {
                file,
                expected,
                found,
                ..
            } => format!("{file} is {found} bytes, the manifest says {expected}"),
            Self::Checksum {
                file,
                expected,
                found,
                ..
            } => format!("{file} SHA-256 is {found}, the manifest says {expected}"),
            Self::NotADirectory { source, .. }
            | Self::Resource { source, .. }
            | Self::Io { source, .. } => source.to_string(),
            Self::Source { source, .. } => source.to_string(),
            Self::Manifest { source, .. } => source.to_string(),
            Self::Index { source, .. } => source.to_string(),
            Self::Metadata { source, .. } => source.to_string(),
            Self::Record { source, .. } => source.to_string(),
        }
    }

    /// The file of the cache the error is about, when it is one file.
    pub fn file(&self) -> Option<CacheFile> {
        match self {
            Self::Incomplete { .. } | Self::Manifest { .. } => Some(CacheFile::Manifest),
            Self::Index { .. } => Some(CacheFile::Index),
            Self::Metadata { .. } => Some(CacheFile::Metadata),
            Self::MissingShard { file, .. }
            | Self::ShardLength { file, .. }
            | Self::Checksum { file, .. }
            | Self::Resource { file, .. }
            | Self::Io { file, .. }
            | Self::Source { file, .. } => Some(*file),
            Self::Record { shard, .. } => Some(CacheFile::Shard(*shard)),
            Self::NotADirectory { .. } => None,
        }
    }

    /// The sample the error is about (a record that failed its checks).
    pub fn sample(&self) -> Option<u64> {
        match self {
            Self::Record { sample, .. } => Some(*sample),
            _ => None,
        }
    }

    /// One error of every variant, for tests that check each is reported (the bindings'
    /// exception classes). Adding a variant fails to compile here until it is listed.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn examples() -> Vec<Self> {
        let path = || PathBuf::from("/caches/c");
        let io = || std::io::Error::other("example");
        let all = vec![
            Self::NotADirectory {
                path: path(),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            },
            Self::Incomplete { path: path() },
            Self::Manifest {
                path: path(),
                source: dsrt_manifest::ManifestError::CacheIdInV2,
            },
            Self::Index {
                path: path(),
                source: dsrt_index::IndexError::Size { len: 25 },
            },
            Self::Metadata {
                path: path(),
                source: dsrt_metadata::MetadataError::Arrow("example".to_owned()),
            },
            Self::MissingShard {
                path: path(),
                shard: 1,
                file: CacheFile::Shard(1),
            },
            Self::ShardLength {
                path: path(),
                file: CacheFile::Shard(0),
                expected: 10,
                found: 9,
            },
            Self::Checksum {
                path: path(),
                file: CacheFile::Index,
                expected: "00".to_owned(),
                found: "11".to_owned(),
            },
            Self::Record {
                path: path(),
                sample: 7,
                shard: 0,
                offset: 64,
                source: dsrt_shard::RecordError::JsonLength {
                    json_len: 100,
                    record_len: 10,
                },
            },
            Self::Resource {
                path: path(),
                file: CacheFile::Shard(2),
                resource: handle_pool::Exhausted::Descriptors,
                source: std::io::Error::from_raw_os_error(24),
            },
            Self::Io {
                path: path(),
                file: CacheFile::Shard(3),
                source: io(),
            },
            Self::Source {
                path: path(),
                file: CacheFile::Shard(4),
                source: crate::SourceError::new(io(), true),
            },
        ];
        for error in &all {
            match error {
                Self::NotADirectory { .. }
                | Self::Incomplete { .. }
                | Self::Manifest { .. }
                | Self::Index { .. }
                | Self::Metadata { .. }
                | Self::MissingShard { .. }
                | Self::ShardLength { .. }
                | Self::Checksum { .. }
                | Self::Record { .. }
                | Self::Resource { .. }
                | Self::Io { .. }
                | Self::Source { .. } => {}
            }
        }
        all
    }

    /// The cache directory the error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            Self::Incomplete { path }
            | Self::NotADirectory { path, .. }
            | Self::Manifest { path, .. }
            | Self::Index { path, .. }
            | Self::Metadata { path, .. }
            | Self::MissingShard { path, .. }
            | Self::ShardLength { path, .. }
            | Self::Checksum { path, .. }
            | Self::Record { path, .. }
            | Self::Resource { path, .. }
            | Self::Io { path, .. }
            | Self::Source { path, .. } => path,
        }
    }

    /// An I/O error on `file` of the cache at `path`: [`CacheError::Resource`] when a
    /// resource ran out, else [`CacheError::Io`].
    pub fn io(path: &std::path::Path, file: CacheFile, source: std::io::Error) -> Self {
        let path = path.to_path_buf();
        match handle_pool::Exhausted::of(&source) {
            Some(resource) => Self::Resource {
                path,
                file,
                resource,
                source,
            },
            None => Self::Io { path, file, source },
        }
    }

    /// `source`'s failure to serve `file` of the cache at `path`; a file of the source's own
    /// that ran into a resource limit is [`CacheError::Resource`], as a local cache's would be.
    pub fn source(path: &std::path::Path, file: CacheFile, source: crate::SourceError) -> Self {
        let retryable = source.is_retryable();
        let source = match source.downcast::<std::io::Error>() {
            Ok(io) if handle_pool::Exhausted::of(&io).is_some() => return Self::io(path, file, io),
            Ok(io) => crate::SourceError::new(io, retryable),
            Err(source) => source,
        };
        Self::Source {
            path: path.to_path_buf(),
            file,
            source,
        }
    }

    /// Whether the same operation may succeed if tried again later: only a shard source's
    /// failure can be (a store that did not answer); a cache's own files are what they are.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Source { source, .. } if source.is_retryable())
    }
}
