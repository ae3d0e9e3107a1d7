//! The container's one upload, and the adapter array-format finishes segments into.

use crate::refused;
use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, UploadPart,
};
use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::AsyncWriteExt;

const NAME: &str = "AppendSink";

/// Part size of the container's multipart upload. Small containers go up in one PUT.
const UPLOAD_PART_SIZE: usize = 8 * 1024 * 1024;

/// The container object being written: one buffered multipart upload and a byte count.
pub struct ContainerUpload {
    writer: BufWriter,
    written: u64,
}

impl fmt::Debug for ContainerUpload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContainerUpload")
            .field("written", &self.written)
            .finish_non_exhaustive()
    }
}

impl ContainerUpload {
    /// Starts writing `path` in `store`. Nothing is visible there until [`Self::finish`].
    pub fn new(store: Arc<dyn ObjectStore>, path: Path) -> Self {
        Self {
            writer: BufWriter::with_capacity(store, path, UPLOAD_PART_SIZE),
            written: 0,
        }
    }

    /// Appends `bytes`.
    pub async fn append(&mut self, bytes: Bytes) -> Result<()> {
        self.written += bytes.len() as u64;
        self.writer.put(bytes).await
    }

    /// Bytes appended so far: the offset the next append lands at.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Completes the upload; the object appears whole or not at all.
    pub async fn finish(mut self) -> Result<u64> {
        self.writer
            .shutdown()
            .await
            .map_err(|e| object_store::Error::Generic {
                store: NAME,
                source: Box::new(e),
            })?;
        Ok(self.written)
    }

    /// Abandons the upload; nothing appears at the path.
    pub async fn abort(mut self) -> Result<()> {
        self.writer.abort().await
    }
}

/// An object store with one writable object, [`crate::segment_path`], whose bytes are appended to
/// a shared [`ContainerUpload`] as they arrive.
///
/// array-format's finish hands its bytes over either as one `put` or as multipart parts, which
/// it may upload concurrently. `put_part` is synchronous, so each part joins a queue in call
/// order right there, and whichever upload future runs first drains the queue in that order:
/// the parts land in the container in the order array-format wrote them.
#[derive(Clone)]
pub struct AppendSink {
    shared: Arc<Shared>,
}

struct Shared {
    upload: tokio::sync::Mutex<Option<ContainerUpload>>,
    queue: Mutex<VecDeque<PutPayload>>,
}

impl Shared {
    fn enqueue(&self, payload: PutPayload) {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(payload);
    }

    async fn drain(&self) -> Result<()> {
        let mut upload = self.upload.lock().await;
        let upload = upload
            .as_mut()
            .ok_or_else(|| refused("write after the container was finished", NAME))?;
        loop {
            let next = self
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front();
            let Some(payload) = next else { return Ok(()) };
            for bytes in payload {
                upload.append(bytes).await?;
            }
        }
    }
}

impl AppendSink {
    /// A sink appending to `upload`.
    pub fn new(upload: ContainerUpload) -> Self {
        let shared = Shared {
            upload: tokio::sync::Mutex::new(Some(upload)),
            queue: Mutex::default(),
        };
        Self {
            shared: Arc::new(shared),
        }
    }

    /// Appends bytes directly (the header, the footer, the trailer).
    pub async fn append(&self, bytes: Bytes) -> Result<()> {
        self.shared.enqueue(PutPayload::from(bytes));
        self.shared.drain().await
    }

    /// Bytes in the container so far, once every queued part has landed.
    pub async fn written(&self) -> Result<u64> {
        self.shared.drain().await?;
        let upload = self.shared.upload.lock().await;
        upload
            .as_ref()
            .map(ContainerUpload::written)
            .ok_or_else(|| refused("written after finish", NAME))
    }

    /// Takes the upload back out, for [`ContainerUpload::finish`] or [`ContainerUpload::abort`].
    pub async fn into_upload(self) -> Result<ContainerUpload> {
        self.shared.drain().await?;
        self.shared
            .upload
            .lock()
            .await
            .take()
            .ok_or_else(|| refused("finish twice", NAME))
    }
}

impl fmt::Debug for AppendSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(NAME).finish_non_exhaustive()
    }
}

impl fmt::Display for AppendSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(NAME)
    }
}

#[derive(Debug)]
struct SinkPart {
    shared: Arc<Shared>,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Shared")
    }
}

#[async_trait]
impl MultipartUpload for SinkPart {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.shared.enqueue(data);
        let shared = Arc::clone(&self.shared);
        Box::pin(async move { shared.drain().await })
    }

    async fn complete(&mut self) -> Result<PutResult> {
        self.shared.drain().await?;
        Ok(PutResult {
            e_tag: None,
            version: None,
        })
    }

    async fn abort(&mut self) -> Result<()> {
        // The bytes already appended cannot be taken back; the writer aborts the container.
        Ok(())
    }
}

fn check_path(location: &Path) -> Result<()> {
    if *location == crate::segment_path() {
        Ok(())
    } else {
        Err(object_store::Error::NotFound {
            path: location.to_string(),
            source: "not the segment".into(),
        })
    }
}

#[async_trait]
impl ObjectStore for AppendSink {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        _: PutOptions,
    ) -> Result<PutResult> {
        check_path(location)?;
        self.shared.enqueue(payload);
        self.shared.drain().await?;
        Ok(PutResult {
            e_tag: None,
            version: None,
        })
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        _: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        check_path(location)?;
        Ok(Box::new(SinkPart {
            shared: Arc::clone(&self.shared),
        }))
    }

    async fn get_opts(&self, _: &Path, _: GetOptions) -> Result<GetResult> {
        Err(refused("get_opts", NAME))
    }

    fn delete_stream(
        &self,
        _: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        futures::stream::once(async { Err(refused("delete_stream", NAME)) }).boxed()
    }

    fn list(&self, _: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        futures::stream::once(async { Err(refused("list", NAME)) }).boxed()
    }

    async fn list_with_delimiter(&self, _: Option<&Path>) -> Result<ListResult> {
        Err(refused("list_with_delimiter", NAME))
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> Result<()> {
        Err(refused("copy_opts", NAME))
    }
}
