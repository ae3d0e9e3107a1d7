//! A store wrapper that counts requests and keeps the most recent ones.

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetRange, GetResult, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};
use std::collections::VecDeque;
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

/// Wraps a store, counts every request that reaches it, and keeps the most recent ones.
///
/// The counts ([`CountingStore::count`], [`CountingStore::reads`]) cover every request since
/// the store was made or reset; the list ([`CountingStore::requests`]) holds at most the
/// capacity it was made with, the oldest dropped first, so a long-lived wrapper (one per open
/// Python collection) stays the same size however many requests pass through it.
#[derive(Clone)]
pub struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    log: Arc<Mutex<Log>>,
}

/// The counts and the recent requests, under one lock.
#[derive(Default)]
struct Log {
    capacity: usize,
    count: usize,
    reads: usize,
    /// The request before, to tell a continuing part of one read from a new read.
    last: Option<Request>,
    recent: VecDeque<Request>,
}

impl CountingStore {
    /// Counts requests to `inner` and keeps the list of all of them (for tests of request
    /// budgets, which need every request since the open).
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self::with_capacity(inner, usize::MAX)
    }

    /// Counts requests to `inner` and keeps the most recent `capacity` of them.
    pub fn with_capacity(inner: Arc<dyn ObjectStore>, capacity: usize) -> Self {
        Self {
            inner,
            log: Arc::new(Mutex::new(Log {
                capacity,
                ..Log::default()
            })),
        }
    }

    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The requests kept (every one, or the most recent up to the capacity), oldest first.
    pub fn requests(&self) -> Vec<Request> {
        self.log().recent.iter().cloned().collect()
    }

    /// Number of requests so far.
    pub fn count(&self) -> usize {
        self.log().count
    }

    /// Number of reads so far: requests, with the parts one read was fetched in
    /// ([`crate::fetch_parts`]: ranges of one object, each starting where the one before it
    /// ended) counted once. The parts are fetched at once, so this counts round trips where
    /// [`CountingStore::count`] counts requests.
    pub fn reads(&self) -> usize {
        self.log().reads
    }

    /// Number of the requests kept to paths ending in `suffix`.
    pub fn count_for(&self, suffix: &str) -> usize {
        self.log()
            .recent
            .iter()
            .filter(|r| r.path.ends_with(suffix))
            .count()
    }

    /// Forgets every request so far.
    pub fn reset(&self) {
        let mut log = self.log();
        log.count = 0;
        log.reads = 0;
        log.last = None;
        log.recent.clear();
    }

    fn record(&self, kind: RequestKind, path: &Path) {
        let request = Request {
            kind,
            path: path.to_string(),
        };
        let mut log = self.log();
        log.count += 1;
        if !log
            .last
            .as_ref()
            .is_some_and(|before| continues(before, &request))
        {
            log.reads += 1;
        }
        if log.capacity > 0 {
            if log.recent.len() == log.capacity {
                log.recent.pop_front();
            }
            log.recent.push_back(request.clone());
        }
        log.last = Some(request);
    }
}

/// Whether `after` is the next part of the read `before` is part of.
fn continues(before: &Request, after: &Request) -> bool {
    match (&before.kind, &after.kind) {
        (
            RequestKind::GetRange(GetRange::Bounded(a)),
            RequestKind::GetRange(GetRange::Bounded(b)),
        ) => before.path == after.path && a.end == b.start,
        _ => false,
    }
}

/// As a request log shows it: `GET`, `GET bytes=0-65535` (a range), `HEAD`, `PUT`, `PUT multipart`,
/// `LIST`, `other`.
impl fmt::Display for RequestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Get => f.write_str("GET"),
            Self::GetRange(range) => write!(f, "GET {range}"),
            Self::Head => f.write_str("HEAD"),
            Self::Put => f.write_str("PUT"),
            Self::PutMultipart => f.write_str("PUT multipart"),
            Self::List => f.write_str("LIST"),
            Self::Other => f.write_str("other"),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    #[test]
    fn a_bounded_store_counts_every_request_and_keeps_the_last_ones() {
        let inner: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let counting = CountingStore::with_capacity(inner, 4);
        runtime().block_on(async {
            counting
                .put(&Path::from("a"), vec![0u8; 64].into())
                .await
                .unwrap();
            for i in 0..1_000u64 {
                let range = i % 32..i % 32 + 1;
                counting.get_range(&Path::from("a"), range).await.unwrap();
            }
        });
        assert_eq!(counting.count(), 1_001);
        assert_eq!(counting.requests().len(), 4);
        assert_eq!(counting.count_for("a"), 4);
        // Each one-byte range starts where the one before ended, except after each wrap.
        assert_eq!(counting.reads(), 1 + 1_000 / 32 + 1);
        counting.reset();
        assert_eq!(
            (
                counting.count(),
                counting.reads(),
                counting.requests().len()
            ),
            (0, 0, 0)
        );
    }

    #[test]
    fn a_request_kind_shows_as_a_log_line_names_it() {
        let shown: Vec<String> = [
            RequestKind::Get,
            RequestKind::GetRange(GetRange::Bounded(0..16)),
            RequestKind::GetRange(GetRange::Suffix(64)),
            RequestKind::Head,
            RequestKind::Put,
            RequestKind::PutMultipart,
            RequestKind::List,
            RequestKind::Other,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            shown,
            [
                "GET",
                "GET bytes=0-15",
                "GET bytes=-64",
                "HEAD",
                "PUT",
                "PUT multipart",
                "LIST",
                "other"
            ]
        );
    }
}
