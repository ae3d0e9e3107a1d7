//! A store wrapper that counts and records requests.

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetRange, GetResult, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// What a recorded request did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestKind {
    /// A GET of the whole object.
    Get,
    /// A ranged GET.
    GetRange(GetRange),
    /// A HEAD.
    Head,
    /// A PUT.
    Put,
    /// A multipart upload start.
    PutMultipart,
    /// A list call.
    List,
    /// A delete or copy.
    Other,
}

/// One recorded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// What it did.
    pub kind: RequestKind,
    /// The object it addressed.
    pub path: String,
}

/// Wraps a store and records every request that reaches it.
#[derive(Clone)]
pub struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    log: Arc<Mutex<Vec<Request>>>,
}

impl CountingStore {
    /// Counts requests to `inner`.
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self {
            inner,
            log: Arc::default(),
        }
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Number of requests so far.
    pub fn count(&self) -> usize {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Number of reads so far: requests, with the parts one read was fetched in
    /// ([`crate::fetch_parts`]: ranges of one object, each starting where the one before it
    /// ended) counted once. The parts are fetched at once, so this counts round trips where
    /// [`CountingStore::count`] counts requests.
    pub fn reads(&self) -> usize {
        let requests = self.requests();
        let continues = |before: &Request, after: &Request| match (&before.kind, &after.kind) {
            (
                RequestKind::GetRange(GetRange::Bounded(a)),
                RequestKind::GetRange(GetRange::Bounded(b)),
            ) => before.path == after.path && a.end == b.start,
            _ => false,
        };
        requests.len()
            - requests
                .windows(2)
                .filter(|pair| continues(&pair[0], &pair[1]))
                .count()
    }

    /// Number of requests so far to paths ending in `suffix`.
    pub fn count_for(&self, suffix: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.path.ends_with(suffix))
            .count()
    }

    /// Forgets every request so far.
    pub fn reset(&self) {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    fn record(&self, kind: RequestKind, path: &Path) {
        let request = Request {
            kind,
            path: path.to_string(),
        };
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
    }
}

impl fmt::Debug for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingStore")
            .field("inner", &self.inner)
            .field("count", &self.count())
            .finish()
    }
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CountingStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.record(RequestKind::Put, location);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.record(RequestKind::PutMultipart, location);
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let kind = match (&options.range, options.head) {
            (_, true) => RequestKind::Head,
            (Some(range), false) => RequestKind::GetRange(range.clone()),
            (None, false) => RequestKind::Get,
        };
        self.record(kind, location);
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.record(RequestKind::Other, &Path::from("delete_stream"));
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.record(RequestKind::List, prefix.unwrap_or(&Path::default()));
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.record(RequestKind::List, prefix.unwrap_or(&Path::default()));
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.record(RequestKind::Other, from);
        self.inner.copy_opts(from, to, options).await
    }
}
