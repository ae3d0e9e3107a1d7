//! The exception classes of `datasetrt`, and the table from every Rust error variant to its
//! class and attributes (see `py_support` for the pattern).

use datasetrt::pack::PackError;
use datasetrt::token_stream::TokenStreamError;
use datasetrt::tokens::TokenError;
use datasetrt::{
    CacheError, CacheFile, DatasetError, Exhausted, HandlePool, ManifestUpdateEntry,
    ManifestUpdateError, UpdateCause, WriteError,
};
use dsrt_remote::RemoteError;
use py_support::{BindingError, ErrorFields, ExceptionClass, Fields};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::{Path, PathBuf};

py_support::exception_classes! {
    pub(crate) CLASSES in "datasetrt" {
        ERROR = "Error" (Exception):
            "Base class of every DatasetRT error. Attributes: `path` (the file or directory concerned, or None) and `reason` (what is wrong).";
        CACHE_ERROR = "CacheError" (ERROR):
            "A cache cannot be opened or a sample cannot be served. `kind` names the check that failed: not_a_directory, incomplete, manifest, index, metadata, missing_shard, shard_length, checksum, record or io.";
        RESOURCE_ERROR = "ResourceError" (CACHE_ERROR):
            "The process ran out of file descriptors, memory mappings or memory opening, mapping or reading a cache file: a resource limit, not a fault of the cache. `resource` is \"descriptors\", \"mappings\" or \"memory\", `max_open_shards` the bound on idle shard files kept open (datasetrt.set_max_open_shards, DSRT_MAX_OPEN_SHARDS); raise the limit (ulimit -n, vm.max_map_count) or lower the bound.";
        INCOMPLETE_CACHE_ERROR = "IncompleteCacheError" (CACHE_ERROR):
            "The directory has no manifest.json: the cache was never published (or its writer was interrupted).";
        CHECKSUM_ERROR = "ChecksumError" (CACHE_ERROR):
            "A file's SHA-256 differs from the manifest's (checked with validate_cache=True). `file` names it.";
        CORRUPT_CACHE_ERROR = "CorruptCacheError" (CACHE_ERROR):
            "A cache file is malformed or disagrees with another: manifest, index, metadata, shard or record.";
        DATASET_ERROR = "DatasetError" (ERROR):
            "A dataset, key, sample table or iteration plan is unusable (duplicate cache ids or paths, unknown cache id, bad sample table, invalid plan or resume state).";
        MANIFEST_UPDATE_ERROR = "ManifestUpdateError" (ERROR):
            "update_manifests stopped. `done` lists the caches completed before (dicts like the report's entries), `failed` is the cache being processed (None when the whole request was refused before writing anything), `kind` and `reason` give the cause, and `causes` maps every cache path named by the cause to the reason.";
        WRITE_ERROR = "WriteError" (ERROR):
            "A cache could not be written. `kind` names what failed: target_not_empty, invalid_option, row, payload_too_large, io, metadata, poisoned, publish or durability_unknown.";
        REMOTE_ERROR = "RemoteError" (ERROR):
            "A cache on object storage (an s3://, gs://, az://, http(s):// URL) could not be opened, read or published, for a reason on the store's side or in the local cache directory. `url` names the object or prefix concerned, `kind` the failure (location, not_found, store, integrity, manifest_changed, cache_limit, local_cache, manifest, too_large, short_range, already_published, prefix_not_empty, upload, ...), `retryable` says whether trying again later may help; a failed read also sets `file` (the shard, e.g. shards/000001.bin) and `cache` (the cache's URL).";
        REMOTE_INTEGRITY_ERROR = "RemoteIntegrityError" (REMOTE_ERROR):
            "A file downloaded from object storage does not match its manifest entry (size or SHA-256); nothing of it was kept in the local cache.";
        MANIFEST_CHANGED_ERROR = "ManifestChangedError" (REMOTE_ERROR):
            "The remote manifest.json changed since the cache was opened (the cache was replaced while in use); reopen it.";
        CACHE_LIMIT_ERROR = "CacheLimitError" (REMOTE_ERROR):
            "The local cache directory's byte limit (cache_limit) cannot hold the cache's largest shard. `needed` and `limit` give the bytes.";
        INTERNAL_ERROR = "InternalError" (ERROR):
            "A bug: the Rust code panicked. The message carries the panic's text.";
        UNKNOWN_CACHE_ERROR = "UnknownCacheError" (DATASET_ERROR, KeyError):
            "A key names a cache id that is not in the dataset. Also a KeyError. `kind` is \"unknown_cache\", `cache_id` the id.";
        SAMPLE_INDEX_ERROR = "SampleIndexError" (DATASET_ERROR, IndexError):
            "A sample index or id past a cache's end (`kind` \"sample_index\"), or a step past a rank's share of an epoch (`kind` \"step_index\"). Also an IndexError.";
        TOKEN_STREAM_ERROR = "TokenStreamError" (DATASET_ERROR):
            "A token stream cannot be planned as asked: a boundary token some of a cache's documents carry and others do not (kind `boundary`), a document longer than seq_len with long_docs=\"refuse\" (`long_document`), a source given a share of the epoch but holding no tokens (`empty_source`). `path` names the cache, `sample_id` the document where there is one.";
    }
}

/// Everything a call of this module raises, one variant per Rust error type (nested errors
/// unwrapped when they are made, so each variant is what Python sees).
#[derive(Debug)]
pub(crate) enum Error {
    /// A cache (`url`: a remote cache whose local copy failed its checks).
    Cache {
        error: CacheError,
        url: Option<String>,
    },
    /// A dataset, key, sample table or plan (never a cache error: those are `Cache`).
    Dataset(DatasetError),
    /// A writer or a join.
    Write(WriteError),
    /// A converter (never a writer error: those are `Write`).
    Pack(PackError),
    /// A remote cache, at open or publish (never a local cache's, dataset's or writer's).
    Remote(RemoteError),
    /// A read whose shard source (a remote cache) failed, reading `file`.
    RemoteRead { error: RemoteError, file: CacheFile },
    /// A manifest migration.
    Update(ManifestUpdateError),
    /// A shard file opened or mapped outside a cache (`_shard_view`).
    ShardFile {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A shard file that is not the one a DataLoader worker checked.
    ShardChanged { path: PathBuf, reason: String },
    /// A sample index or id past a cache's end; the message says which.
    SampleIndex(String),
    /// A token cache's layout or ids (never a writer's or reader's error: those are `Write`
    /// and `Cache`).
    Tokens(TokenError),
    /// A token stream that cannot be planned or read as asked (never a plan's, cache's or
    /// token cache's own error, nor a stopped worker: those have their variants).
    TokenStream(TokenStreamError),
    /// A Rust panic.
    Panicked(String),
}

impl From<TokenError> for Error {
    fn from(error: TokenError) -> Self {
        match error {
            TokenError::Write(inner) => Self::Write(*inner),
            TokenError::Read(inner) => (*inner).into(),
            error => Self::Tokens(error),
        }
    }
}

/// Settings a token stream refuses are the caller's `ValueError` (see
/// `token_stream::enter_stream`), never this conversion's.
impl From<TokenStreamError> for Error {
    fn from(error: TokenStreamError) -> Self {
        match error {
            TokenStreamError::Plan(plan) => Self::Dataset(DatasetError::Plan(plan)),
            TokenStreamError::Interrupted { .. } | TokenStreamError::WorkerStopped => {
                Self::Dataset(DatasetError::WorkerStopped)
            }
            TokenStreamError::Read(inner) => match inner.downcast::<TokenError>() {
                Ok(error) => (*error).into(),
                Err(inner) => match inner.downcast::<CacheError>() {
                    Ok(error) => (*error).into(),
                    Err(inner) => Self::TokenStream(TokenStreamError::Read(inner)),
                },
            },
            error => Self::TokenStream(error),
        }
    }
}

impl From<CacheError> for Error {
    fn from(error: CacheError) -> Self {
        match error {
            // A read through a remote cache's shard source: the store's (or the shard
            // cache's) failure, which the RemoteError classes describe.
            CacheError::Source { path, file, source } => match source.downcast::<RemoteError>() {
                Ok(error) => Self::RemoteRead { error, file },
                Err(source) => Self::Cache {
                    error: CacheError::Source { path, file, source },
                    url: None,
                },
            },
            error => Self::Cache { error, url: None },
        }
    }
}

impl From<DatasetError> for Error {
    fn from(error: DatasetError) -> Self {
        match error {
            DatasetError::Cache(inner) => inner.into(),
            error => Self::Dataset(error),
        }
    }
}

impl From<WriteError> for Error {
    fn from(error: WriteError) -> Self {
        Self::Write(error)
    }
}

impl From<PackError> for Error {
    fn from(error: PackError) -> Self {
        match error {
            PackError::Write(inner) => Self::Write(inner),
            error => Self::Pack(error),
        }
    }
}

impl From<RemoteError> for Error {
    fn from(error: RemoteError) -> Self {
        match error {
            RemoteError::Cache(inner) => (*inner).into(),
            RemoteError::Dataset(inner) => (*inner).into(),
            RemoteError::Write(inner) => Self::Write(inner),
            RemoteError::Opened { url, source } => match Self::from(*source) {
                Self::Cache { error, .. } => Self::Cache {
                    error,
                    url: Some(url),
                },
                other => other,
            },
            error => Self::Remote(error),
        }
    }
}

impl From<ManifestUpdateError> for Error {
    fn from(error: ManifestUpdateError) -> Self {
        Self::Update(error)
    }
}

impl From<Error> for PyErr {
    fn from(error: Error) -> Self {
        Python::attach(|py| py_support::raise(py, &error))
    }
}

impl BindingError for Error {
    fn panicked(message: String) -> Self {
        Self::Panicked(message)
    }
}

/// Runs `work` with the GIL released, its error raised as its class (`py_support::enter`).
pub(crate) fn enter<T: Send, E: Into<Error> + Send>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, E> + Send,
) -> PyResult<T> {
    py_support::enter(py, || work().map_err(Into::into))
}

impl ErrorFields for Error {
    fn class(&self) -> &'static ExceptionClass {
        match self {
            Self::Cache { error, .. } => match error {
                CacheError::Resource { .. } => &RESOURCE_ERROR,
                CacheError::Incomplete { .. } => &INCOMPLETE_CACHE_ERROR,
                CacheError::Checksum { .. } => &CHECKSUM_ERROR,
                CacheError::NotADirectory { .. }
                | CacheError::Io { .. }
                | CacheError::Source { .. } => &CACHE_ERROR,
                _ => &CORRUPT_CACHE_ERROR,
            },
            Self::Dataset(DatasetError::UnknownCache { .. }) => &UNKNOWN_CACHE_ERROR,
            Self::Dataset(DatasetError::SampleIndex { .. } | DatasetError::StepIndex { .. }) => {
                &SAMPLE_INDEX_ERROR
            }
            Self::Dataset(_) => &DATASET_ERROR,
            Self::Write(_) => &WRITE_ERROR,
            Self::Pack(PackError::WorkerPanicked(_)) | Self::Panicked(_) => &INTERNAL_ERROR,
            Self::Pack(_) => &WRITE_ERROR,
            Self::Remote(error) | Self::RemoteRead { error, .. } => match error {
                RemoteError::Integrity { .. } => &REMOTE_INTEGRITY_ERROR,
                RemoteError::ManifestChanged { .. } => &MANIFEST_CHANGED_ERROR,
                RemoteError::CacheLimit { .. } => &CACHE_LIMIT_ERROR,
                _ => &REMOTE_ERROR,
            },
            Self::Update(_) => &MANIFEST_UPDATE_ERROR,
            Self::ShardFile { source, .. } if Exhausted::of(source).is_some() => &RESOURCE_ERROR,
            Self::ShardFile { .. } => &CACHE_ERROR,
            Self::ShardChanged { .. } => &CORRUPT_CACHE_ERROR,
            Self::SampleIndex(_) => &SAMPLE_INDEX_ERROR,
            Self::Tokens(_) => &WRITE_ERROR,
            Self::TokenStream(_) => &TOKEN_STREAM_ERROR,
        }
    }

    fn message(&self) -> String {
        match self {
            Self::Cache {
                error,
                url: Some(url),
            } => format!("{url}: {error}"),
            Self::Cache { error, .. } => error.to_string(),
            Self::Dataset(error) => error.to_string(),
            Self::Write(error) => error.to_string(),
            Self::Pack(error) => error.to_string(),
            Self::Remote(error) => error.to_string(),
            Self::RemoteRead { error, file } => {
                format!("reading {file} of a remote cache: {error}")
            }
            Self::Update(error) => error.to_string(),
            Self::ShardFile { path, source } => match Exhausted::of(source) {
                Some(resource) => format!(
                    "{}: {resource}: {source}; {}",
                    path.display(),
                    resource.advice()
                ),
                None => format!("{}: {source}", path.display()),
            },
            Self::ShardChanged { path, reason } => format!("{}: {reason}", path.display()),
            Self::SampleIndex(message) => message.clone(),
            Self::Tokens(error) => error.to_string(),
            Self::TokenStream(error) => error.to_string(),
            Self::Panicked(text) => format!("internal error (Rust panic): {text}"),
        }
    }

    fn fields(&self, f: &mut Fields<'_>) {
        match self {
            Self::Cache { error, url } => {
                f.set("path", text(error.path()))
                    .set("reason", error.reason())
                    .set("kind", error.kind())
                    .set("file", error.file().map(|file| file.to_string()))
                    .set("sample", error.sample())
                    .set_some("url", url.as_deref());
                if let CacheError::Resource {
                    resource, source, ..
                } = error
                {
                    resource_fields(f, *resource, source);
                }
            }
            Self::Dataset(error) => {
                f.set("path", error.path().map(text))
                    .set("reason", error.to_string())
                    .set("kind", error.kind());
                if let DatasetError::UnknownCache { cache_id } = error {
                    f.set("cache_id", cache_id);
                }
            }
            Self::Write(error) => {
                // `input`, `column` and `key` name what a conversion refused; the writer's own
                // errors have them as None, so every WriteError carries the same attributes.
                f.set("path", error.path().map(text))
                    .set("input", None::<&str>)
                    .set("column", None::<&str>)
                    .set("key", None::<&str>)
                    .set("reason", error.reason())
                    .set("kind", error.kind());
            }
            Self::Pack(error) => {
                f.set("path", error.path().map(text))
                    .set("input", error.input())
                    .set("column", error.column())
                    .set("key", error.key())
                    .set("reason", error.reason())
                    .set("kind", error.kind());
            }
            Self::Remote(error) => remote_fields(f, error),
            Self::RemoteRead { error, file } => {
                let shard = file.to_string();
                let cache = error.url().map(|url| {
                    url.strip_suffix(&format!("/{shard}"))
                        .or_else(|| url.strip_suffix("/manifest.json"))
                        .unwrap_or(url)
                        .to_owned()
                });
                remote_fields(f, error);
                f.set("file", shard).set("cache", cache);
            }
            Self::Update(error) => update_fields(f, error),
            Self::ShardFile { path, source } => {
                f.set("path", text(path))
                    .set("file", text(path))
                    .set("sample", None::<u64>);
                f.set("reason", source.to_string());
                match Exhausted::of(source) {
                    Some(resource) => {
                        f.set("kind", "resource");
                        resource_fields(f, resource, source);
                    }
                    None => {
                        f.set("kind", "io").set("errno", source.raw_os_error());
                    }
                }
            }
            Self::ShardChanged { path, reason } => {
                f.set("path", text(path)).set("reason", reason);
            }
            Self::SampleIndex(message) => {
                f.set("path", None::<&str>)
                    .set("reason", message)
                    .set("kind", "sample_index");
            }
            Self::Panicked(text) => {
                f.set("path", None::<&str>)
                    .set("reason", text)
                    .set("kind", "panic");
            }
            Self::Tokens(error) => {
                let path = error.path().map(text);
                f.set("path", path)
                    .set("input", None::<&str>)
                    .set("column", None::<&str>)
                    .set("key", None::<&str>)
                    .set("reason", self.message())
                    .set("kind", error.kind());
            }
            Self::TokenStream(error) => {
                // Only what `From` leaves here reaches Python: a refusal of the data, a read.
                let kind = match error.kind() {
                    kind @ ("boundary" | "long_document" | "empty_source" | "read") => kind,
                    _ => "other",
                };
                f.set("path", error.source_name())
                    .set("reason", error.to_string())
                    .set("kind", kind)
                    .set("sample_id", error.sample_id());
            }
        }
    }
}

/// A path as Python gets it in an attribute: a `str`.
fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// What a `ResourceError` carries beside `CacheError`'s attributes.
fn resource_fields(f: &mut Fields<'_>, resource: Exhausted, source: &std::io::Error) {
    let name = match resource {
        Exhausted::Descriptors => "descriptors",
        Exhausted::Mappings => "mappings",
        Exhausted::Memory => "memory",
    };
    f.set("resource", name)
        .set("max_open_shards", HandlePool::global().capacity())
        .set("errno", source.raw_os_error());
}

/// A `RemoteError`'s attributes: `path` and `url` (the object or prefix), `reason`, `kind`,
/// `retryable`, and the bytes of a `CacheLimitError`.
fn remote_fields(f: &mut Fields<'_>, error: &RemoteError) {
    f.set("path", error.url())
        .set("url", error.url())
        .set("reason", error.reason())
        .set("kind", error.kind())
        .set("retryable", error.is_retryable());
    if let RemoteError::CacheLimit {
        shard,
        needed,
        limit,
        ..
    } = error
    {
        f.set("shard", shard)
            .set("needed", needed)
            .set("limit", limit);
    }
}

/// A stopped migration's attributes: the cache that failed, every cache the cause names (each
/// with the reason) and the caches done before.
fn update_fields(f: &mut Fields<'_>, error: &ManifestUpdateError) {
    let py = f.py();
    let reason = error.cause.to_string();
    let causes = PyDict::new(py);
    let named: Vec<&str> = match error.cause.as_ref() {
        UpdateCause::DuplicateId { first, second, .. }
        | UpdateCause::DuplicateCache { first, second } => vec![first, second],
        _ => error.failed.as_deref().into_iter().collect(),
    };
    for path in named {
        let _ = causes.set_item(path, &reason);
    }
    let done = PyList::empty(py);
    for entry in &error.done {
        if let Ok(entry) = entry_dict(py, entry) {
            let _ = done.append(entry);
        }
    }
    f.set("path", error.failed.as_deref())
        .set("failed", error.failed.as_deref())
        .set("reason", reason)
        .set("kind", error.cause.kind())
        .set("done", done)
        .set("causes", causes);
}

/// One report entry as a dict: `path`, `manifest`, `cache_id`, `outcome` and `error`.
pub(crate) fn entry_dict<'py>(
    py: Python<'py>,
    entry: &ManifestUpdateEntry,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("path", &entry.cache)?;
    dict.set_item("manifest", &entry.manifest)?;
    dict.set_item("cache_id", entry.cache_id)?;
    dict.set_item("outcome", entry.outcome.name())?;
    dict.set_item("error", entry.outcome.error())?;
    Ok(dict)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_remote_read_is_a_remote_error_naming_its_shard_and_cache() {
        Python::initialize();
        Python::attach(|py| {
            let store = RemoteError::ShortRange {
                url: "s3://b/c/shards/000001.bin".into(),
                offset: 0,
                expected: 8,
                found: 2,
            };
            let read = CacheError::source(
                Path::new("/lc/x"),
                CacheFile::Shard(1),
                datasetrt::SourceError::from(store),
            );
            let error: PyErr = Error::from(read).into();
            let value = error.value(py);
            assert!(error.get_type(py).is(REMOTE_ERROR.get(py).unwrap()));
            let cache: String = value.getattr("cache").unwrap().extract().unwrap();
            let file: String = value.getattr("file").unwrap().extract().unwrap();
            assert_eq!(
                (cache.as_str(), file.as_str()),
                ("s3://b/c", "shards/000001.bin")
            );
            assert!(value.getattr("retryable").unwrap().is_truthy().unwrap());
            let unknown: PyErr = Error::from(DatasetError::UnknownCache { cache_id: 9 }).into();
            assert!(unknown.is_instance_of::<pyo3::exceptions::PyKeyError>(py));
            assert!(unknown.is_instance(py, &DATASET_ERROR.get(py).unwrap()));
            let cache_id: u64 = (unknown.value(py).getattr("cache_id").unwrap())
                .extract()
                .unwrap();
            assert_eq!(cache_id, 9);
            let past = DatasetError::SampleIndex {
                cache_id: 1,
                sample_id: 5,
                len: 5,
            };
            let past: PyErr = Error::from(past).into();
            assert!(past.is_instance_of::<pyo3::exceptions::PyIndexError>(py));
        });
    }

    #[test]
    fn token_errors_keep_their_readers_classes_and_a_stream_refusal_names_the_document() {
        Python::initialize();
        Python::attach(|py| {
            let long = TokenStreamError::LongDocument {
                source_name: "/caches/web".into(),
                sample_id: 7,
                tokens: 90,
                seq_len: 64,
            };
            let error: PyErr = Error::from(long).into();
            assert!(error.get_type(py).is(TOKEN_STREAM_ERROR.get(py).unwrap()));
            assert!(error.is_instance(py, &DATASET_ERROR.get(py).unwrap()));
            let value = error.value(py);
            let kind: String = value.getattr("kind").unwrap().extract().unwrap();
            let sample: u64 = value.getattr("sample_id").unwrap().extract().unwrap();
            let path: String = value.getattr("path").unwrap().extract().unwrap();
            assert_eq!(
                (kind.as_str(), sample, path.as_str()),
                ("long_document", 7, "/caches/web")
            );
            // A document the stream could not read is the token cache's own error, and that
            // one's reader failure the cache's.
            let missing = TokenError::NotATokenCache {
                path: "/caches/images".into(),
            };
            let error: PyErr = Error::from(TokenStreamError::read(missing)).into();
            assert!(error.get_type(py).is(WRITE_ERROR.get(py).unwrap()));
            let kind: String = error.value(py).getattr("kind").unwrap().extract().unwrap();
            assert_eq!(kind, "not_a_token_cache");
            let incomplete = CacheError::Incomplete {
                path: "/caches/half".into(),
            };
            let error: PyErr = Error::from(TokenError::from(incomplete)).into();
            assert!(error
                .get_type(py)
                .is(INCOMPLETE_CACHE_ERROR.get(py).unwrap()));
        });
    }
}
