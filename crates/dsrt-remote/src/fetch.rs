//! Requests with retries: whole objects streamed into a sink, byte ranges into a buffer.

use crate::error::block_on;
use crate::error::RemoteError;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore};
use std::time::Duration;

/// The longest pause between two attempts (a longer `first_backoff` is cut to it).
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// The pause after `wait`: doubled, at most [`MAX_BACKOFF`], whatever `wait` is.
fn next_backoff(wait: Duration) -> Duration {
    wait.saturating_mul(2).min(MAX_BACKOFF)
}

/// How often, and with what pauses, a request is tried.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retry {
    pub(crate) attempts: u32,
    pub(crate) first_backoff: Duration,
}

impl Retry {
    /// Runs `attempt` until it succeeds, fails for good, or the attempts are spent; waits
    /// between attempts, doubling from `first_backoff` up to [`MAX_BACKOFF`].
    pub(crate) fn run<T>(
        &self,
        mut attempt: impl FnMut() -> Result<T, RemoteError>,
    ) -> Result<T, RemoteError> {
        let mut wait = self.first_backoff.min(MAX_BACKOFF);
        let mut tried = 1;
        loop {
            match attempt() {
                Err(e) if e.is_retryable() && tried < self.attempts => {
                    tracing::debug!(error = %e, attempt = tried, wait = ?wait, "retrying a store request");
                    std::thread::sleep(wait);
                    wait = next_backoff(wait);
                    tried += 1;
                }
                other => return other,
            }
        }
    }
}

/// An object's GET whose headers have arrived: its size, and its body still to read.
pub(crate) struct ObjectStream {
    pub(crate) size: u64,
    body: futures::stream::BoxStream<'static, object_store::Result<bytes::Bytes>>,
}

/// Sends the GET of the whole object at `path` and waits for its headers.
pub(crate) fn open_stream(
    store: &dyn ObjectStore,
    path: &Path,
    url: &str,
) -> Result<ObjectStream, RemoteError> {
    block_on(async {
        let result = store
            .get_opts(path, GetOptions::default())
            .await
            .map_err(|source| RemoteError::Store {
                url: url.to_owned(),
                source,
            })?;
        Ok(ObjectStream {
            size: result.meta.size,
            body: result.into_stream(),
        })
    })
}

impl ObjectStream {
    /// Hands the body to `write(offset, bytes)`, chunk by chunk, in order (the chunks as the
    /// client received them: no copy). A failure mid-stream is a store
    /// error (retryable): the caller restarts its sink and tries again.
    pub(crate) fn drain(
        mut self,
        url: &str,
        write: &mut dyn FnMut(u64, bytes::Bytes) -> std::io::Result<()>,
    ) -> Result<u64, RemoteError> {
        block_on(async {
            let mut offset = 0u64;
            while let Some(chunk) = self.body.next().await {
                let chunk = chunk.map_err(|source| RemoteError::Store {
                    url: url.to_owned(),
                    source,
                })?;
                let len = chunk.len() as u64;
                write(offset, chunk).map_err(|source| RemoteError::LocalIo {
                    path: url.to_owned(),
                    source,
                })?;
                offset += len;
            }
            Ok(offset)
        })
    }
}

/// Streams the whole object at `path` into `write(offset, bytes)`, in order, once. A failure
/// mid-stream is a store error (retryable): the caller restarts its sink and tries again.
pub(crate) fn stream_object(
    store: &dyn ObjectStore,
    path: &Path,
    url: &str,
    write: &mut dyn FnMut(u64, bytes::Bytes) -> std::io::Result<()>,
) -> Result<u64, RemoteError> {
    open_stream(store, path, url)?.drain(url, write)
}

/// Fetches the whole object at `path` into memory, refusing one larger than `limit` bytes.
pub(crate) fn get_bytes(
    store: &dyn ObjectStore,
    path: &Path,
    url: &str,
    limit: u64,
) -> Result<(Vec<u8>, Option<String>), RemoteError> {
    let store_error = |source| RemoteError::Store {
        url: url.to_owned(),
        source,
    };
    block_on(async {
        let result = store
            .get_opts(path, GetOptions::default())
            .await
            .map_err(store_error)?;
        let e_tag = result.meta.e_tag.clone();
        if result.meta.size > limit {
            return Err(RemoteError::TooLarge {
                url: url.to_owned(),
                size: result.meta.size,
                limit,
            });
        }
        let bytes = result.bytes().await.map_err(store_error)?;
        Ok((bytes.to_vec(), e_tag))
    })
}

/// Fills `buf` with the bytes of the object at `path` from `offset`: one range request.
pub(crate) fn read_range(
    store: &dyn ObjectStore,
    path: &Path,
    url: &str,
    offset: u64,
    buf: &mut [u8],
) -> Result<(), RemoteError> {
    let store_error = |source| RemoteError::Store {
        url: url.to_owned(),
        source,
    };
    let end = offset.saturating_add(buf.len() as u64);
    block_on(async {
        let options = GetOptions {
            range: Some(GetRange::Bounded(offset..end)),
            ..Default::default()
        };
        let bytes = store
            .get_opts(path, options)
            .await
            .map_err(store_error)?
            .bytes()
            .await
            .map_err(store_error)?;
        if bytes.len() != buf.len() {
            return Err(RemoteError::ShortRange {
                url: url.to_owned(),
                offset,
                expected: buf.len() as u64,
                found: bytes.len() as u64,
            });
        }
        buf.copy_from_slice(&bytes);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::{next_backoff, MAX_BACKOFF};
    use std::time::Duration;

    #[test]
    fn the_backoff_doubles_up_to_its_cap_and_never_overflows() {
        assert_eq!(
            next_backoff(Duration::from_millis(100)),
            Duration::from_millis(200)
        );
        assert_eq!(next_backoff(Duration::from_secs(8)), MAX_BACKOFF);
        assert_eq!(next_backoff(Duration::MAX), MAX_BACKOFF);
        assert_eq!(next_backoff(Duration::ZERO), Duration::ZERO);
    }
}
