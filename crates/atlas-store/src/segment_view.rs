//! One byte range of a container, seen as an object.

use crate::refused;
use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, Result,
};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use tokio::sync::Mutex;

const NAME: &str = "SegmentView";

/// The bytes `[offset, offset + len)` of `container` in `inner`, as an object at `location`.
/// Read-only: every write and list call is refused.
///
/// A HEAD answers from `len` without a request. A large read is fetched as concurrent range
/// requests ([`fetch_parts`]). The last `tail_window` bytes are fetched on the
/// first read that falls inside them and then served from memory, so array-format's trailer
/// read and its footer read cost one request together when the window holds the footer. Once
/// the segment is open, [`SegmentView::release_tail`] frees them.
pub struct SegmentView {
    inner: Arc<dyn ObjectStore>,
    container: Path,
    offset: u64,
    len: u64,
    tail_window: u64,
    tail: Mutex<Tail>,
    location: Path,
}

/// The cached end of the segment. The lock is held across the fetch, so concurrent first reads
/// fetch it once.
enum Tail {
    NotFetched,
    Fetched(Bytes),
    /// Freed after the footer was read: later reads go to the store.
    Released,
}

impl SegmentView {
    /// A view of `len` bytes at `offset` of `container`, caching the last `tail_window` bytes.
    ///
    /// `location` is the path the view answers to. array-format keys its block cache by path,
    /// so views sharing one cache need distinct locations.
    pub fn new(
        inner: Arc<dyn ObjectStore>,
        container: Path,
        offset: u64,
        len: u64,
        tail_window: u64,
        location: Path,
    ) -> Self {
        let tail_window = tail_window.min(len);
        Self {
            inner,
            container,
            offset,
            len,
            tail_window,
            tail: Mutex::new(Tail::NotFetched),
            location,
        }
    }

    fn meta(&self) -> ObjectMeta {
        ObjectMeta {
            location: self.location.clone(),
            last_modified: Default::default(),
            size: self.len,
            e_tag: None,
            version: None,
        }
    }

    /// The requested range, relative to the segment, checked against its length.
    fn resolve(&self, range: Option<&GetRange>) -> Result<Range<u64>> {
        let len = self.len;
        let resolved = match range {
            None => 0..len,
            Some(GetRange::Bounded(r)) => r.start..r.end.min(len),
            Some(GetRange::Offset(start)) => *start..len,
            Some(GetRange::Suffix(n)) => len.saturating_sub(*n)..len,
        };
        if resolved.start > resolved.end || (resolved.start >= len && len > 0) {
            return Err(object_store::Error::Generic {
                store: NAME,
                source: format!("range {resolved:?} is outside the segment of {len} bytes").into(),
            });
        }
        Ok(resolved)
    }

    /// Frees the cached tail (the segment's footer, once parsed, is not read again); reads that
    /// fall inside it from now on go to the store.
    pub async fn release_tail(&self) {
        *self.tail.lock().await = Tail::Released;
    }

    async fn read(&self, range: Range<u64>) -> Result<Bytes> {
        let tail_start = self.len - self.tail_window;
        if range.start >= tail_start && self.tail_window > 0 {
            let mut tail = self.tail.lock().await;
            if matches!(*tail, Tail::NotFetched) {
                *tail = Tail::Fetched(self.fetch(tail_start..self.len).await?);
            }
            if let Tail::Fetched(bytes) = &*tail {
                // Both ends lie inside the tail, whose length is `tail_window`.
                let from = usize::try_from(range.start - tail_start).unwrap_or(usize::MAX);
                let to = usize::try_from(range.end - tail_start).unwrap_or(usize::MAX);
                if let Some(slice) = bytes.get(from..to) {
                    return Ok(bytes.slice_ref(slice));
                }
            }
        }
        self.fetch(range).await
    }

    async fn fetch(&self, range: Range<u64>) -> Result<Bytes> {
        let absolute = self.offset + range.start..self.offset + range.end;
        let parts = fetch_parts(absolute.clone());
        if parts.len() == 1 {
            return self.inner.get_range(&self.container, absolute).await;
        }
        let pieces = futures::future::try_join_all(
            parts
                .iter()
                .map(|part| self.inner.get_range(&self.container, part.clone())),
        )
        .await?;
        let len = usize::try_from(absolute.end - absolute.start).unwrap_or(usize::MAX);
        let mut whole = BytesMut::with_capacity(len);
        for (part, piece) in parts.iter().zip(&pieces) {
            if piece.len() as u64 != part.end - part.start {
                return Err(object_store::Error::Generic {
                    store: NAME,
                    source: format!(
                        "{}: asked for bytes {part:?}, got {} bytes",
                        self.container,
                        piece.len()
                    )
                    .into(),
                });
            }
            whole.extend_from_slice(piece);
        }
        Ok(whole.freeze())
    }
}

/// The smallest part a read is split into: a request that carries less spends more of its
/// time waiting for its first byte than receiving.
pub const MIN_FETCH_PART: u64 = 1 << 20;

/// The most parts one read is split into.
pub const MAX_FETCH_PARTS: u64 = 8;

/// The range requests that fetch `range` of a container: one for a read below twice
/// [`MIN_FETCH_PART`], else parts of equal size (the last shorter), at least
/// [`MIN_FETCH_PART`] each and at most [`MAX_FETCH_PARTS`] of them, fetched at once.
///
/// Why: an object store serves one connection at a fraction of what it serves a client
/// (S3: about 80 MB/s per connection from a nearby instance), so an 8 MiB block read by one
/// request takes five times its time to first byte to arrive; in eight parts it takes about
/// one. The parts cost more requests, never more round trips.
pub fn fetch_parts(range: Range<u64>) -> Vec<Range<u64>> {
    let len = range.end.saturating_sub(range.start);
    if len < 2 * MIN_FETCH_PART {
        return vec![range];
    }
    let parts = (len / MIN_FETCH_PART).min(MAX_FETCH_PARTS);
    let part = len.div_ceil(parts);
    (0..parts)
        .map(|i| range.start + i * part..(range.start + (i + 1) * part).min(range.end))
        .filter(|r| !r.is_empty())
        .collect()
}

impl fmt::Debug for SegmentView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(NAME)
            .field("container", &self.container)
            .field("offset", &self.offset)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for SegmentView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{NAME}({}[{}..{}])",
            self.container,
            self.offset,
            self.offset + self.len
        )
    }
}

#[async_trait]
impl ObjectStore for SegmentView {
    async fn put_opts(&self, _: &Path, _: PutPayload, _: PutOptions) -> Result<PutResult> {
        Err(refused("put_opts", NAME))
    }

    async fn put_multipart_opts(
        &self,
        _: &Path,
        _: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        Err(refused("put_multipart_opts", NAME))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if *location != self.location {
            return Err(object_store::Error::NotFound {
                path: location.to_string(),
                source: "not this segment".into(),
            });
        }
        let meta = self.meta();
        if options.head {
            return Ok(GetResult {
                payload: GetResultPayload::Stream(futures::stream::empty().boxed()),
                meta,
                range: 0..0,
                attributes: Default::default(),
            });
        }
        let range = self.resolve(options.range.as_ref())?;
        let bytes = if range.is_empty() {
            Bytes::new()
        } else {
            self.read(range.clone()).await?
        };
        Ok(GetResult {
            payload: GetResultPayload::Stream(
                futures::stream::once(async move { Ok(bytes) }).boxed(),
            ),
            meta,
            range,
            attributes: Default::default(),
        })
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
