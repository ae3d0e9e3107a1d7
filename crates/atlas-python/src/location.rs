//! From a location string to a store: a local directory, a `file://` URL, or an object-store
//! URL (`s3://bucket/prefix`) configured from the environment, parsed by object-access exactly
//! as the `atlas` command and the `datasetrt` package parse theirs.

use crate::errors::Failure;
use atlas::object_store::local::LocalFileSystem;
use atlas::object_store::path::Path;
use atlas::object_store::ObjectStore;
use atlas::store::CountingStore;
use atlas::{Atlas, LocalFlockCommitter};
use object_access::StoreLocation;
use std::path::PathBuf;
use std::sync::Arc;

/// The requests an open collection keeps for `Collection.requests()`: the counts cover every
/// request, the list the most recent this many, so a collection read a million times stays
/// the same size.
pub(crate) const RECENT_REQUESTS: usize = 1024;

/// Where a collection lives.
pub(crate) enum Location {
    /// A local directory.
    Local(PathBuf),
    /// An object-store URL.
    Url(Arc<dyn ObjectStore>, Path),
}

impl Location {
    /// Parses `location` (see [`StoreLocation::parse`]).
    pub(crate) fn parse(location: &str) -> Result<Self, Failure> {
        Self::parse_with_options(location, &[])
    }

    /// Parses `location` with store options given in code (see
    /// [`StoreLocation::parse_with_options`]).
    pub(crate) fn parse_with_options(
        location: &str,
        options: &[(String, String)],
    ) -> Result<Self, Failure> {
        match StoreLocation::parse_with_options(location, options) {
            Ok(StoreLocation::Local(dir)) => Ok(Self::Local(dir)),
            Ok(StoreLocation::Remote(remote)) => {
                Ok(Self::Url(remote.store(), remote.prefix().clone()))
            }
            Err(e) => Err(Failure::Location(e.reason())),
        }
    }

    /// Opens the collection behind a request counter. A local directory deletes through the
    /// directory `flock`, an object store through conditional PUT (as `Atlas::open` picks).
    pub(crate) async fn open(self) -> Result<(Atlas, CountingStore), Failure> {
        match self {
            Self::Local(dir) => {
                let io = |source| AtlasIo(dir.display().to_string(), source);
                let canonical = std::fs::canonicalize(&dir).map_err(|e| Failure::from(io(e)))?;
                atlas::check_local_collection(&canonical)?;
                let local = LocalFileSystem::new_with_prefix(&canonical)
                    .map_err(|e| Failure::Atlas(e.into()))?;
                let counting = CountingStore::with_capacity(Arc::new(local), RECENT_REQUESTS);
                let store: Arc<dyn ObjectStore> = Arc::new(counting.clone());
                let atlas = Atlas::open(store, &Path::default()).await?;
                let committer = Arc::new(LocalFlockCommitter::new(canonical));
                Ok((atlas.with_committer(committer), counting))
            }
            Self::Url(store, prefix) => {
                let counting = CountingStore::with_capacity(store, RECENT_REQUESTS);
                let store: Arc<dyn ObjectStore> = Arc::new(counting.clone());
                Ok((Atlas::open(store, &prefix).await?, counting))
            }
        }
    }
}

/// A local file error on open, as the reader reports it.
struct AtlasIo(String, std::io::Error);

impl From<AtlasIo> for Failure {
    fn from(AtlasIo(path, source): AtlasIo) -> Self {
        if source.kind() == std::io::ErrorKind::NotFound {
            // The container the directory would hold, as every other open that finds no
            // collection names it.
            Failure::Atlas(atlas::AtlasError::NotAnAtlasCollection {
                path: format!("{path}/{}", atlas::format::CONTAINER_OBJECT),
                reason: "no such directory".to_owned(),
            })
        } else {
            Failure::Atlas(atlas::AtlasError::Io { path, source })
        }
    }
}
