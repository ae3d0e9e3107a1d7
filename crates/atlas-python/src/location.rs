//! From a location string to a store: a local directory, a `file://` URL, or an object-store
//! URL (`s3://bucket/prefix`) configured from the `AWS_*` environment variables, exactly as the
//! `atlas` command does.

use crate::errors::Failure;
use atlas::object_store::local::LocalFileSystem;
use atlas::object_store::path::Path;
use atlas::object_store::ObjectStore;
use atlas::store::CountingStore;
use atlas::{Atlas, LocalFlockCommitter};
use std::path::PathBuf;
use std::sync::Arc;

/// Where a collection lives.
pub(crate) enum Location {
    /// A local directory.
    Local(PathBuf),
    /// An object-store URL.
    Url(Arc<dyn ObjectStore>, Path),
}

impl Location {
    /// Parses `location`; a URL's store is configured from the `AWS_*` variables.
    pub(crate) fn parse(location: &str) -> Result<Self, Failure> {
        if location.starts_with("file://") {
            let url = url::Url::parse(location).map_err(|e| Failure::Location(e.to_string()))?;
            let dir = url
                .to_file_path()
                .map_err(|()| Failure::Location("not a local file path".to_owned()))?;
            Ok(Self::Local(dir))
        } else if location.contains("://") {
            let url = url::Url::parse(location).map_err(|e| Failure::Location(e.to_string()))?;
            let options = std::env::vars()
                .filter(|(k, _)| k.starts_with("AWS_"))
                .map(|(k, v)| (k.to_ascii_lowercase(), v));
            let (store, prefix) = atlas::object_store::parse_url_opts(&url, options)
                .map_err(|e| Failure::Location(e.to_string()))?;
            Ok(Self::Url(Arc::from(store), prefix))
        } else {
            Ok(Self::Local(PathBuf::from(location)))
        }
    }

    /// Opens the collection behind a request counter. A local directory deletes through the
    /// directory `flock`, an object store through conditional PUT (as `Atlas::open` picks).
    pub(crate) async fn open(self) -> Result<(Atlas, CountingStore), Failure> {
        match self {
            Self::Local(dir) => {
                let io = |source| AtlasIo(dir.display().to_string(), source);
                let canonical = std::fs::canonicalize(&dir).map_err(|e| Failure::from(io(e)))?;
                let local = LocalFileSystem::new_with_prefix(&canonical)
                    .map_err(|e| Failure::Atlas(e.into()))?;
                let counting = CountingStore::new(Arc::new(local));
                let store: Arc<dyn ObjectStore> = Arc::new(counting.clone());
                let atlas = Atlas::open(store, &Path::default()).await?;
                let committer = Arc::new(LocalFlockCommitter::new(canonical));
                Ok((atlas.with_committer(committer), counting))
            }
            Self::Url(store, prefix) => {
                let counting = CountingStore::new(store);
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
            Failure::Atlas(atlas::AtlasError::NotAnAtlasCollection {
                path,
                reason: "no such directory".to_owned(),
            })
        } else {
            Failure::Atlas(atlas::AtlasError::Io { path, source })
        }
    }
}
