//! Publishing a finished local cache to an object-store prefix: every data file first, each
//! checked by size, `manifest.json` last and only if the prefix has none, so no reader ever
//! sees a manifest before every file it names is complete.

use crate::error::block_on;
use crate::error::RemoteError;
use crate::local_files::{read_local_cache, LocalFile};
use crate::upload::{upload_file, Uploaded};
use crate::RemotePrefix;
use dsrt_manifest::MANIFEST_FILE_NAME;
use futures::stream::{self, StreamExt};
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a publish reports as it goes (for progress displays).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PublishEvent {
    /// The prefix was checked; `files` data files of `bytes` bytes in all are about to go up.
    Started {
        /// Data files (shards, index.bin, metadata.arrow).
        files: usize,
        /// Their bytes.
        bytes: u64,
    },
    /// One data file is uploaded and checked.
    Uploaded {
        /// Its path under the prefix.
        file: String,
        /// Its bytes.
        bytes: u64,
    },
    /// manifest.json is written: the cache is published.
    Published,
}

/// A progress callback; called from the crate's runtime threads.
pub type PublishProgress = Arc<dyn Fn(&PublishEvent) + Send + Sync>;

/// How a cache is published.
#[derive(Clone)]
pub struct PublishOptions {
    /// Files larger than this go up as multipart uploads (default 16 MiB).
    pub multipart_threshold: u64,
    /// Part size of a multipart upload (default 8 MiB; S3 needs at least 5 MiB).
    pub part_size: usize,
    /// Parts of one file in flight at once (default 4).
    pub part_concurrency: usize,
    /// Files uploaded at once (default 4).
    pub file_concurrency: usize,
    /// Retries of a file after a transient store error (default 3). HTTP stores also retry
    /// single requests themselves (object_store's `RetryConfig`); this retries the whole file.
    pub retries: u32,
    /// Wait before the first retry, doubled for each further one (default 200 ms).
    pub backoff: Duration,
    /// Publish even if the prefix already holds objects (but no manifest.json), replacing
    /// them: what a failed publish leaves behind. Off by default, so an unrelated prefix is
    /// never written into.
    pub overwrite_partial: bool,
    /// Called as the publish progresses.
    pub progress: Option<PublishProgress>,
}

impl Default for PublishOptions {
    fn default() -> Self {
        Self {
            multipart_threshold: 16 << 20,
            part_size: 8 << 20,
            part_concurrency: 4,
            file_concurrency: 4,
            retries: 3,
            backoff: Duration::from_millis(200),
            overwrite_partial: false,
            progress: None,
        }
    }
}

impl fmt::Debug for PublishOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublishOptions")
            .field("multipart_threshold", &self.multipart_threshold)
            .field("part_size", &self.part_size)
            .field("part_concurrency", &self.part_concurrency)
            .field("file_concurrency", &self.file_concurrency)
            .field("retries", &self.retries)
            .field("backoff", &self.backoff)
            .field("overwrite_partial", &self.overwrite_partial)
            .finish_non_exhaustive()
    }
}

/// What a publish did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishReport {
    /// The prefix's URL.
    pub url: String,
    /// Objects written, manifest.json included.
    pub files: usize,
    /// Bytes written, manifest.json included.
    pub bytes: u64,
    /// Files that went up as multipart uploads.
    pub multipart_files: usize,
    /// File retries after transient errors, over all files.
    pub retries: u32,
    /// Whether manifest.json was written with create-if-absent (`false`: the store has no
    /// conditional PUT; it was checked absent by a HEAD, then written, which two concurrent
    /// publishers could both pass).
    pub manifest_atomic: bool,
}

/// Publishes the finished cache in `local_dir` to the prefix `to`.
///
/// Refuses a prefix that holds a manifest.json (caches are write-once) or, unless
/// `overwrite_partial`, any object. Uploads every shard, then index.bin and metadata.arrow
/// (up to `file_concurrency` at a time), checks each object's size, and writes manifest.json
/// last with create-if-absent. On any failure before that no manifest is written, so no
/// reader sees a cache; the objects already uploaded stay (see `overwrite_partial`).
pub fn publish_cache(
    local_dir: &Path,
    to: &RemotePrefix,
    options: &PublishOptions,
) -> Result<PublishReport, RemoteError> {
    let cache = read_local_cache(local_dir)?;
    block_on(async {
        check_target_async(to, options).await?;
        let mut report = upload_data(to, &cache.files, options).await?;
        report.manifest_atomic = put_manifest(to, cache.manifest.clone(), options).await?;
        report.files += 1;
        report.bytes += cache.manifest.len() as u64;
        emit(options, &PublishEvent::Published);
        Ok(report)
    })
}

/// Checks that `to` can receive a cache: no manifest.json there, and (unless
/// `overwrite_partial`) no object at all. `publish_cache` checks this itself; callers that
/// do long work first (packing) call it to fail early.
pub fn check_publish_target(
    to: &RemotePrefix,
    options: &PublishOptions,
) -> Result<(), RemoteError> {
    block_on(check_target_async(to, options))
}

async fn check_target_async(
    to: &RemotePrefix,
    options: &PublishOptions,
) -> Result<(), RemoteError> {
    let manifest = to.object(MANIFEST_FILE_NAME);
    match to.store().head(&manifest).await {
        Ok(_) => {
            return Err(RemoteError::AlreadyPublished {
                url: to.url().to_owned(),
            })
        }
        Err(object_store::Error::NotFound { .. }) => {}
        Err(source) => return Err(store_error(to, MANIFEST_FILE_NAME, source)),
    }
    if options.overwrite_partial {
        return Ok(());
    }
    match to.store().list(Some(to.prefix())).next().await {
        None => Ok(()),
        Some(Ok(object)) => Err(RemoteError::PrefixNotEmpty {
            url: to.url().to_owned(),
            object: object.location.to_string(),
        }),
        Some(Err(source)) => Err(RemoteError::Store {
            url: to.url().to_owned(),
            source,
        }),
    }
}

/// Uploads the data files, at most `file_concurrency` at once; after the first failure no
/// further file starts, those in flight finish (or abort their multipart upload).
pub(crate) async fn upload_data(
    to: &RemotePrefix,
    files: &[LocalFile],
    options: &PublishOptions,
) -> Result<PublishReport, RemoteError> {
    let bytes = files.iter().map(|f| f.len).sum();
    emit(
        options,
        &PublishEvent::Started {
            files: files.len(),
            bytes,
        },
    );
    let failed = AtomicBool::new(false);
    let results: Vec<Option<Result<Uploaded, RemoteError>>> = stream::iter(files)
        .map(|file| upload_unless_failed(to, file, options, &failed))
        .buffered(options.file_concurrency.max(1))
        .collect()
        .await;
    let mut report = PublishReport {
        url: to.url().to_owned(),
        files: files.len(),
        bytes,
        multipart_files: 0,
        retries: 0,
        manifest_atomic: false,
    };
    for result in results.into_iter().flatten() {
        let uploaded = result?;
        report.multipart_files += usize::from(uploaded.multipart);
        report.retries += uploaded.retries;
    }
    Ok(report)
}

async fn upload_unless_failed(
    to: &RemotePrefix,
    file: &LocalFile,
    options: &PublishOptions,
    failed: &AtomicBool,
) -> Option<Result<Uploaded, RemoteError>> {
    if failed.load(Ordering::Relaxed) {
        return None;
    }
    let result = upload_file(to, file, options).await;
    match &result {
        Ok(_) => emit(
            options,
            &PublishEvent::Uploaded {
                file: file.relative.clone(),
                bytes: file.len,
            },
        ),
        Err(_) => failed.store(true, Ordering::Relaxed),
    }
    Some(result)
}

/// Writes manifest.json with create-if-absent; returns whether the store made that atomic.
pub(crate) async fn put_manifest(
    to: &RemotePrefix,
    bytes: Vec<u8>,
    options: &PublishOptions,
) -> Result<bool, RemoteError> {
    let location = to.object(MANIFEST_FILE_NAME);
    let payload = PutPayload::from(bytes);
    let mut attempt = 0;
    loop {
        let create = PutOptions::from(PutMode::Create);
        match to
            .store()
            .put_opts(&location, payload.clone(), create)
            .await
        {
            Ok(_) => return Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) if attempt > 0 => {
                // A retried create whose first try landed after all: ours if the bytes match.
                return confirm_ours(to, &payload).await.map(|()| true);
            }
            Err(object_store::Error::AlreadyExists { .. }) => {
                return Err(RemoteError::AlreadyPublished {
                    url: to.url().to_owned(),
                })
            }
            Err(
                object_store::Error::NotImplemented { .. }
                | object_store::Error::NotSupported { .. },
            ) => {
                return put_manifest_unconditionally(to, payload)
                    .await
                    .map(|()| false)
            }
            Err(source)
                if attempt < options.retries
                    && object_access::is_retryable_store_error(&source) =>
            {
                tracing::debug!(url = %to.object_url(MANIFEST_FILE_NAME), error = %source, attempt, "retrying an upload");
                tokio::time::sleep(options.backoff.saturating_mul(1 << attempt.min(16))).await;
                attempt += 1;
            }
            Err(source) => {
                return Err(RemoteError::Upload {
                    url: to.object_url(MANIFEST_FILE_NAME),
                    attempts: attempt + 1,
                    source,
                })
            }
        }
    }
}

/// The store has no create-if-absent: check by HEAD, then PUT. Not atomic against another
/// publisher to the same prefix at the same moment.
async fn put_manifest_unconditionally(
    to: &RemotePrefix,
    payload: PutPayload,
) -> Result<(), RemoteError> {
    let location = to.object(MANIFEST_FILE_NAME);
    match to.store().head(&location).await {
        Ok(_) => Err(RemoteError::AlreadyPublished {
            url: to.url().to_owned(),
        }),
        Err(object_store::Error::NotFound { .. }) => to
            .store()
            .put(&location, payload)
            .await
            .map(drop)
            .map_err(|source| store_error(to, MANIFEST_FILE_NAME, source)),
        Err(source) => Err(store_error(to, MANIFEST_FILE_NAME, source)),
    }
}

async fn confirm_ours(to: &RemotePrefix, payload: &PutPayload) -> Result<(), RemoteError> {
    let location = to.object(MANIFEST_FILE_NAME);
    let read = async { to.store().get(&location).await?.bytes().await };
    let stored = read
        .await
        .map_err(|source| store_error(to, MANIFEST_FILE_NAME, source))?;
    let ours: Vec<u8> = payload.iter().flat_map(|b| b.iter().copied()).collect();
    if stored.as_ref() == ours.as_slice() {
        Ok(())
    } else {
        Err(RemoteError::AlreadyPublished {
            url: to.url().to_owned(),
        })
    }
}

pub(crate) fn store_error(
    to: &RemotePrefix,
    relative: &str,
    source: object_store::Error,
) -> RemoteError {
    RemoteError::Store {
        url: to.object_url(relative),
        source,
    }
}

fn emit(options: &PublishOptions, event: &PublishEvent) {
    if let Some(progress) = &options.progress {
        progress(event);
    }
}
