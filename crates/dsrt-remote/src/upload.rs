//! Uploading one local file to one object: a single PUT below the multipart threshold, a
//! multipart upload with a bounded number of parts in flight above it, retried with backoff on
//! transient store errors, and checked by a HEAD of the object's size.

use crate::error::RemoteError;
use crate::local_files::LocalFile;
use crate::{PublishOptions, RemotePrefix};
use futures::stream::{FuturesUnordered, StreamExt};
use object_access::is_retryable_store_error;
use object_store::{MultipartUpload, ObjectStoreExt, PutPayload};
use std::fs::File;
use std::io::Read;

/// How one file went.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Uploaded {
    /// Whether it went up as a multipart upload.
    pub(crate) multipart: bool,
    /// Attempts beyond the first.
    pub(crate) retries: u32,
}

/// Why an attempt failed: a local problem ends the publish, a store error may be retried.
enum Failure {
    Local(RemoteError),
    Store(object_store::Error),
}

impl From<RemoteError> for Failure {
    fn from(error: RemoteError) -> Self {
        Self::Local(error)
    }
}

impl From<object_store::Error> for Failure {
    fn from(error: object_store::Error) -> Self {
        Self::Store(error)
    }
}

/// Uploads `file` to its object under `to`, retrying transient store errors with backoff.
pub(crate) async fn upload_file(
    to: &RemotePrefix,
    file: &LocalFile,
    options: &PublishOptions,
) -> Result<Uploaded, RemoteError> {
    let multipart = file.len > options.multipart_threshold;
    let mut attempt = 0;
    loop {
        let result = if multipart {
            upload_multipart(to, file, options).await
        } else {
            upload_single(to, file).await
        };
        match result {
            Ok(()) => break,
            Err(Failure::Local(error)) => return Err(error),
            Err(Failure::Store(source))
                if attempt < options.retries && is_retryable_store_error(&source) =>
            {
                tracing::debug!(url = %to.object_url(&file.relative), error = %source, attempt, "retrying an upload");
                tokio::time::sleep(options.backoff.saturating_mul(1 << attempt.min(16))).await;
                attempt += 1;
            }
            Err(Failure::Store(source)) => {
                return Err(RemoteError::Upload {
                    url: to.object_url(&file.relative),
                    attempts: attempt + 1,
                    source,
                })
            }
        }
    }
    check_size(to, file).await?;
    Ok(Uploaded {
        multipart,
        retries: attempt,
    })
}

async fn upload_single(to: &RemotePrefix, file: &LocalFile) -> Result<(), Failure> {
    let path = file.path.clone();
    let bytes = blocking(move || std::fs::read(&path))
        .await?
        .map_err(|source| local_error(file, "read", source))?;
    check_local_len(file, bytes.len() as u64)?;
    let location = to.object(&file.relative);
    to.store().put(&location, PutPayload::from(bytes)).await?;
    Ok(())
}

async fn upload_multipart(
    to: &RemotePrefix,
    file: &LocalFile,
    options: &PublishOptions,
) -> Result<(), Failure> {
    let location = to.object(&file.relative);
    let mut upload = to.store().put_multipart(&location).await?;
    let sent = send_parts(upload.as_mut(), file, options).await;
    let completed = match sent {
        Ok(()) => upload.complete().await.map(drop).map_err(Failure::from),
        Err(failure) => Err(failure),
    };
    if completed.is_err() {
        // Best effort: parts left behind by a failed abort are the store's to expire.
        let _ = upload.abort().await;
    }
    completed
}

/// Reads `file` in parts of `part_size` bytes and sends them, at most `part_concurrency` at a
/// time.
async fn send_parts(
    upload: &mut dyn MultipartUpload,
    file: &LocalFile,
    options: &PublishOptions,
) -> Result<(), Failure> {
    let path = file.path.clone();
    let mut reader = blocking(move || File::open(&path))
        .await?
        .map_err(|source| local_error(file, "open", source))?;
    let part_size = options.part_size.max(1);
    let mut in_flight = FuturesUnordered::new();
    let mut sent = 0u64;
    loop {
        let (back, chunk) = blocking(move || read_part(reader, part_size)).await?;
        reader = back;
        let chunk = chunk.map_err(|source| local_error(file, "read", source))?;
        if chunk.is_empty() {
            break;
        }
        sent += chunk.len() as u64;
        while in_flight.len() >= options.part_concurrency.max(1) {
            if let Some(done) = in_flight.next().await {
                done?;
            }
        }
        in_flight.push(upload.put_part(PutPayload::from(chunk)));
    }
    while let Some(done) = in_flight.next().await {
        done?;
    }
    check_local_len(file, sent)
}

fn read_part(reader: File, part_size: usize) -> (File, std::io::Result<Vec<u8>>) {
    let mut chunk = Vec::with_capacity(part_size);
    let result = (&reader)
        .take(part_size as u64)
        .read_to_end(&mut chunk)
        .map(|_| chunk);
    (reader, result)
}

async fn check_size(to: &RemotePrefix, file: &LocalFile) -> Result<(), RemoteError> {
    let url = to.object_url(&file.relative);
    let meta = to
        .store()
        .head(&to.object(&file.relative))
        .await
        .map_err(|source| RemoteError::Store {
            url: url.clone(),
            source,
        })?;
    if meta.size != file.len {
        return Err(RemoteError::UploadedSize {
            url,
            expected: file.len,
            actual: meta.size,
        });
    }
    Ok(())
}

fn check_local_len(file: &LocalFile, actual: u64) -> Result<(), Failure> {
    if actual == file.len {
        return Ok(());
    }
    Err(Failure::Local(RemoteError::LocalSize {
        path: file.path.clone(),
        expected: file.len,
        actual,
    }))
}

fn local_error(file: &LocalFile, action: &'static str, source: std::io::Error) -> Failure {
    Failure::Local(RemoteError::LocalFile {
        path: file.path.clone(),
        action,
        source,
    })
}

/// Runs blocking work (local file reads) on the runtime's blocking pool.
async fn blocking<T, F>(work: F) -> Result<T, RemoteError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| RemoteError::Runtime {
            reason: format!("a blocking task failed: {e}"),
        })
}
