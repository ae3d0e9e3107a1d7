//! DatasetRT: immutable caches of training samples (payload bytes plus primitive metadata).
//!
//! What it is for: the one crate an application depends on to write caches ([`CacheWriter`]),
//! open and validate them ([`Cache::open`]), read samples in O(1) ([`Cache::read`]), join
//! caches into a [`Dataset`] addressed by `(cache_id, sample_id)`, select and save sample
//! tables, migrate manifests ([`Dataset::update_manifests`]) and iterate epochs
//! reproducibly on every rank ([`Loader`]). It re-exports the public API of the `dsrt-*`
//! crates; nothing here re-implements them.
//!
//! Caches on object storage: with the `remote` feature (on by default) the `remote` module
//! (the `dsrt-remote` crate) opens caches and datasets named by URLs (`s3://`, `gs://`,
//! `az://`, `file://`) or paths as ordinary [`Cache`]s and [`Dataset`]s, their files kept in a
//! bounded local cache directory, and publishes caches to a store prefix. It brings tokio and
//! object_store; `default-features = false` leaves them out.
//!
//! What it is not for: Atlas collections (the `atlas-collections` facade).
//!
//! Layering: the top of the DatasetRT stack; the `dsrt` CLI builds on it.
//!
//! ```
//! use datasetrt::{Cache, CacheWriter, Column, ColumnType, OpenOptions, Row, Schema, WriterOptions};
//!
//! let dir = tempfile::tempdir()?;
//! let schema = Schema::new(vec![Column::new("label", ColumnType::Int64, false)])?;
//! let mut writer = CacheWriter::create(dir.path().join("cache"), WriterOptions::new("demo", schema))?;
//! writer.add(b"first payload", &Row::new().with("label", 7i64))?;
//! writer.finish()?;
//!
//! let cache = Cache::open(dir.path().join("cache"), OpenOptions::validated())?;
//! let sample = cache.sample(0)?;
//! assert_eq!(sample.payload, b"first payload");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

pub use dsrt_dataset::{
    read_arrow, read_copied, read_located, BatchRow, Dataset, DatasetCache, DatasetError,
    FetchTotals, LoadedSample, Loader, LoaderConfig, LoaderStats, LocatedColumns, LocatedPayloads,
    PastEnd, PayloadAt, PayloadRange, RankPlan, SampleKey, SampleTable, SelectRow, ShardHints,
    Stage, StatsReport, StatsSnapshot, DEFAULT_PREFETCH_BYTES, HINT_SHARDS,
};
pub use dsrt_manifest::{
    cache_id_for_source, CacheDescription, CompressionAlgo, ExtraKeys, Manifest, ManifestError,
    ManifestV2, ManifestV3, ShardEntry,
};
pub use dsrt_metadata::{gather_column, ColumnView, MetadataError, MetadataTable, RowView};
pub use dsrt_migrate::{
    update_local_manifests, update_manifests, LocalManifest, ManifestStore, ManifestUpdateEntry,
    ManifestUpdateError, ManifestUpdateReport, ReadManifest, Stored, UpdateCause, UpdateOutcome,
    VersionToken,
};
pub use dsrt_plan::{
    CacheShape, ConsumedStream, Continuation, EpochPlan, IterState, Mixture, MixtureChange,
    NodeReport, Partition, Phase, PhaseReport, PlanConfig, PlanCursor, PlanError, PlanPhase,
    PlanReport, PlannedCache, PlannedSample, RemainderPolicy, RemovedCache, ReportOptions,
    Sampling, Schedule, Shuffle, ShuffleQuality, Topology, UnknownName, DEFAULT_PREFETCH_SHARDS,
};
pub use dsrt_reader::{
    map_file, Cache, CacheError, CacheFile, Exhausted, FileIdentity, FileMap, HandlePool,
    MappedPayload, OpenOptions, PooledTable, Sample, SampleBuf, SampleRef, SourceError,
};
pub use dsrt_schema::{
    Column, ColumnType, Row, RowError, RowProblem, Schema, SchemaError, Value, ValueRef,
};
pub use dsrt_writer::{
    first_cache_file, merge_parts, parse_byte_size, remove_unpublished, write_new_cache,
    ByteSizeError, CacheFiles, CacheSummary, CacheWriter, LocalCacheFiles, ManifestVersion,
    PartCache, WriteError, WriterOptions, DEFAULT_MAX_SHARD_BYTES,
};
pub use durable_fs::{CancelToken, FileSystem, StdFileSystem};

pub mod token_stream {
    //! Token streams for language-model training: the documents of token caches cut into
    //! windows of `seq_len + 1` tokens or packed into bins, with their boundaries, mixed by
    //! token shares and split over ranks and nodes, resumable (the `dsrt-token-stream` crate;
    //! `docs/tokens.md`).
    pub use dsrt_token_stream::*;
}

pub mod pack {
    //! Converters into caches, run in parallel with the same bytes for every number of jobs:
    //! the `dsrt-pack` crate. [`pack`] fills a [`CacheWriter`](crate::CacheWriter) from a
    //! [`Convert`] (input units, each turned into samples in order); [`FileTree`] and
    //! [`ImageFolder`] are the converters of directory trees, [`Tables`] of Parquet files and
    //! Hugging Face `save_to_disk` datasets (one sample per row), [`WebDataset`] of tar shards
    //! (one sample per key).
    //!
    //! ```no_run
    //! use datasetrt::pack::{pack, ImageFolder, PackOptions};
    //! use datasetrt::{CacheWriter, WriterOptions};
    //!
    //! let folder = ImageFolder::scan("imagenet/train".as_ref())?;
    //! let options = WriterOptions::new("imagenet-train", ImageFolder::schema());
    //! let mut writer = CacheWriter::create("imagenet-train.cache", options)?;
    //! pack(&folder, &mut writer, &PackOptions::default().jobs(8))?;
    //! writer.finish()?;
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```
    pub use dsrt_pack::*;
}

pub mod tokens {
    //! Token caches, the layout of LLM training documents over ordinary caches: the
    //! `dsrt-tokens` crate. A document's payload is its token ids (little-endian `u16` or
    //! `u32`), its first metadata column `n_tokens`, and the manifest's `tokens` key records
    //! the width and the tokenizer ([`TokenInfo`]). [`TokenWriter`] writes one; [`TokenCache`]
    //! reads one with every document's length checked.
    //!
    //! ```
    //! use datasetrt::tokens::{TokenBuf, TokenCache, TokenInfo, TokenWriter};
    //! use datasetrt::{OpenOptions, Row, Schema, WriterOptions};
    //!
    //! let dir = tempfile::tempdir()?;
    //! let info = TokenInfo { eos_id: Some(50256), ..TokenInfo::for_vocab(50257) };
    //! let options = WriterOptions::new("web", Schema::default());
    //! let mut writer = TokenWriter::create(dir.path().join("web"), options, info)?;
    //! writer.add(&[15496u32, 995, 50256], &Row::new())?;
    //! writer.finish()?;
    //!
    //! let cache = TokenCache::open(dir.path().join("web"), OpenOptions::default())?;
    //! assert_eq!(cache.n_tokens(0)?, 3);
    //! let mut buf = TokenBuf::new();
    //! assert_eq!(cache.read(0, &mut buf)?.iter().collect::<Vec<u32>>(), [15496, 995, 50256]);
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```
    pub use dsrt_tokens::*;
}

#[cfg(feature = "remote")]
pub mod remote {
    //! Caches on object storage, used like local ones: the `dsrt-remote` crate (feature
    //! `remote`, on by default).
    //!
    //! [`open_cache`] and [`open_dataset`] take local paths, `file://` URLs and store URLs
    //! (`s3://bucket/prefix` configured from the `AWS_*` variables, `gs://`, `az://`); a remote
    //! cache is a plain [`Cache`](crate::Cache) whose manifest, index and metadata are fetched
    //! at open and whose shards are downloaded (checked against their SHA-256) into the local
    //! cache directory of [`RemoteOptions`] when first read, or read record by record with
    //! [`ShardFetch::Range`]. [`publish_cache`] and [`LocationWriter`] write caches to a
    //! prefix, manifest.json last; [`RemoteManifest`] is a prefix's manifest for
    //! [`update_manifests`](crate::update_manifests), which migrates prefixes and directories
    //! in one list.
    //!
    //! ```no_run
    //! use datasetrt::remote::{open_cache, open_dataset, RemoteOptions, ShardFetch};
    //! use datasetrt::SampleBuf;
    //!
    //! let options = RemoteOptions::new("/scratch/dsrt-cache")
    //!     .cache_limit(50 << 30)
    //!     .fetch(ShardFetch::Whole);
    //! let cache = open_cache("s3://bucket/caches/train", &options)?;
    //! let mut buf = SampleBuf::new();
    //! let sample = cache.read(0, &mut buf)?;
    //! println!("sample 0: {} payload bytes", sample.payload.len());
    //!
    //! // Store URLs and local directories mix in one dataset.
    //! let dataset = open_dataset(&["s3://bucket/caches/train", "data/val.cache"], &options)?;
    //! println!("{} caches", dataset.caches().len());
    //! # Ok::<(), Box<dyn std::error::Error>>(())
    //! ```
    pub use dsrt_remote::*;
}

/// The lower-level pieces, for tools that inspect caches byte by byte: only what the crate root
/// does not export.
pub mod raw {
    pub use dsrt_index::{IndexError, IndexRow, IndexView, INDEX_FILE_NAME, ROW_BYTES};
    pub use dsrt_manifest::{MANIFEST_FILE_NAME, MANIFEST_TEMP_PREFIX};
    pub use dsrt_metadata::METADATA_FILE_NAME;
    pub use dsrt_shard::{
        check_envelope, parse_envelope, split_record, EnvelopeError, RecordError, SHARDS_DIR_NAME,
    };
}

/// Compile-time checks of the public surface (doctests only).
///
/// Error enums grow: a match from outside the crate needs a wildcard arm.
/// ```compile_fail,E0004
/// fn kind(e: &datasetrt::DatasetError) -> u8 {
///     use datasetrt::DatasetError::*;
///     match e {
///         Cache(_) | DuplicateCacheId { .. } | DuplicatePath { .. } | UnknownCache { .. } => 0,
///         Path { .. } | Table { .. } | Plan(_) | WorkerStopped | TableWrite(_) => 1,
///     }
/// }
/// ```
/// `raw` holds only what the root does not export.
/// ```compile_fail,E0432
/// use datasetrt::raw::Dataset; // it is `datasetrt::Dataset`
/// ```
/// The fault-injection entry point of migration is a test hook, not part of the API.
/// ```compile_fail,E0599
/// fn migrate(dataset: &datasetrt::Dataset) {
///     let fs = datasetrt::StdFileSystem;
///     let _ = dataset.update_manifests_with(3, &fs, &datasetrt::CancelToken::new());
/// }
/// ```
#[cfg(doctest)]
pub struct SurfaceChecks;
