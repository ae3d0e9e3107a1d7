//! From a location to a collection being written: where a new plain collection goes (checked
//! for what is already there) and [`CollectionWriter`], one writer for a new collection or a
//! new part of a growing one, as the CLI and the Python package open them.

use crate::{AppendError, AppendReport, Appender};
use atlas_footer::CONTAINER_OBJECT;
use atlas_reader::manifest::MANIFEST_OBJECT;
use atlas_writer::{AtlasWriter, DatasetSpec, WriteSummary, WriterOptions};
use object_access::StoreLocation;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use thiserror::Error;

/// What a location given for a new plain collection may already hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occupancy {
    /// Nothing at all: a `deleted.mask` left beside a new `data.atlas` would hide its
    /// datasets (`atlas demo`).
    Empty,
    /// Anything but a collection: no `data.atlas` (collections are write-once) and no
    /// `collection.manifest` (a root `data.atlas` would hide a growing collection's parts).
    NoCollection,
}

/// Why a location cannot take a new collection.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TargetError {
    /// It holds a collection already.
    #[error("{location}: {reason}")]
    Exists {
        /// The location.
        location: String,
        /// What it holds.
        reason: String,
    },
    /// It holds something, and [`Occupancy::Empty`] was asked for.
    #[error("{location}: not empty (it holds {found})")]
    NotEmpty {
        /// The location.
        location: String,
        /// One object, prefix or directory entry found there.
        found: String,
    },
    /// The local directory could not be listed or created.
    #[error("{location}: {action}: {source}")]
    Io {
        /// The directory.
        location: String,
        /// What was being done: `listing the directory`, `creating the directory`.
        action: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A request to the store (looking for what is there) failed.
    #[error("{location}: {source}")]
    Store {
        /// The location.
        location: String,
        /// What object_store said.
        #[source]
        source: object_store::Error,
    },
    /// The local directory cannot be served as a store.
    #[error("{location}: {source}")]
    LocalStore {
        /// The directory.
        location: String,
        /// What object_store said.
        #[source]
        source: object_store::Error,
    },
}

impl TargetError {
    /// Whether trying again later may succeed: a store failure, by the one rule of
    /// `object_access::is_retryable_store_error`.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Store { source, .. } | Self::LocalStore { source, .. } => {
                object_access::is_retryable_store_error(source)
            }
            Self::Exists { .. } | Self::NotEmpty { .. } | Self::Io { .. } => false,
        }
    }
}

/// Where a new plain collection is written: a store and a prefix, and the local directory
/// [`Target::open`] made for it (an aborted write removes it again while it is empty).
pub struct Target {
    /// The store.
    pub store: Arc<dyn ObjectStore>,
    /// The collection's prefix in it.
    pub prefix: Path,
    /// The local directory made for the collection, if it did not exist.
    pub created_dir: Option<PathBuf>,
}

impl Target {
    /// The place `location` names for a new collection, refused when it holds what
    /// `occupancy` does not allow; a local directory is created if missing.
    pub async fn open(location: &StoreLocation, occupancy: Occupancy) -> Result<Self, TargetError> {
        let name = location.to_string();
        let dir = match location {
            StoreLocation::Local(dir) => dir,
            StoreLocation::Remote(remote) => {
                let (store, prefix) = (remote.store(), remote.prefix().clone());
                let store_error = |source| TargetError::Store {
                    location: name.clone(),
                    source,
                };
                match occupancy {
                    Occupancy::Empty => {
                        let listed = (store.list_with_delimiter(Some(&prefix)).await)
                            .map_err(store_error)?;
                        let first = (listed.objects.first().map(|o| o.location.to_string()))
                            .or_else(|| listed.common_prefixes.first().map(ToString::to_string));
                        if let Some(found) = first {
                            return Err(TargetError::NotEmpty {
                                location: name,
                                found,
                            });
                        }
                    }
                    Occupancy::NoCollection => {
                        for object in [CONTAINER_OBJECT, MANIFEST_OBJECT] {
                            match store.head(&prefix.clone().join(object)).await {
                                Ok(_) => return Err(exists(name, object)),
                                Err(object_store::Error::NotFound { .. }) => {}
                                Err(e) => return Err(store_error(e)),
                            }
                        }
                    }
                }
                return Ok(Self {
                    store,
                    prefix,
                    created_dir: None,
                });
            }
        };
        let io = |action| {
            let location = name.clone();
            move |source| TargetError::Io {
                location,
                action,
                source,
            }
        };
        if occupancy == Occupancy::Empty {
            match std::fs::read_dir(dir) {
                Ok(mut entries) => {
                    if let Some(entry) = entries.next() {
                        let entry = entry.map_err(io("listing the directory"))?;
                        let found = entry.file_name().to_string_lossy().into_owned();
                        return Err(TargetError::NotEmpty {
                            location: name,
                            found,
                        });
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("listing the directory")(e)),
            }
        }
        let created_dir = if dir.exists() {
            None
        } else {
            std::fs::create_dir_all(dir).map_err(io("creating the directory"))?;
            Some(dir.clone())
        };
        for object in [CONTAINER_OBJECT, MANIFEST_OBJECT] {
            if dir.join(object).exists() {
                return Err(exists(name, object));
            }
        }
        let store =
            LocalFileSystem::new_with_prefix(dir).map_err(|source| TargetError::LocalStore {
                location: name.clone(),
                source,
            })?;
        Ok(Self {
            store: Arc::new(store),
            prefix: Path::default(),
            created_dir,
        })
    }

    /// Removes the directory [`Target::open`] created, if it is still empty (best effort: a
    /// write that left files there keeps them).
    pub fn remove_created_dir(&self) {
        remove_created_dir(self.created_dir.as_deref());
    }
}

fn remove_created_dir(dir: Option<&std::path::Path>) {
    if let Some(dir) = dir {
        // Fails, as intended, when anything is in it.
        let _ = std::fs::remove_dir(dir);
    }
}

/// The refusal of a location that holds `object` (a container or a manifest).
fn exists(location: String, object: &str) -> TargetError {
    let reason = if object == CONTAINER_OBJECT {
        format!("already holds {CONTAINER_OBJECT}; a collection is write-once")
    } else {
        format!(
            "already holds a growing collection ({MANIFEST_OBJECT}); add to it with mode=\"append\""
        )
    };
    TargetError::Exists { location, reason }
}

/// What a [`CollectionWriter`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// A new plain collection, where no collection is ([`Occupancy::NoCollection`]).
    Create,
    /// A new part of the growing collection there (made when the location is empty),
    /// replacing the datasets of its names when `replace` ([`Appender::with_replace`]).
    Append {
        /// Whether the part's datasets replace those of their names.
        replace: bool,
    },
}

/// One writer for a new plain collection or a new part of a growing one, opened from a
/// location: datasets in, published (or committed) only by [`CollectionWriter::finish`]. A
/// local directory it created is removed again, while empty, when the write fails or is
/// aborted ([`CollectionWriter::abort`]).
pub struct CollectionWriter {
    inner: Inner,
    created_dir: Option<PathBuf>,
}

/// Each boxed: both are hundreds of bytes and of different sizes, and a writer may be held
/// for long.
enum Inner {
    Create(Box<AtlasWriter>),
    Append(Box<Appender>),
}

/// What [`CollectionWriter::finish`] wrote; its serde form is the summary's or the report's
/// own (the Python package's `Writer.finish()` dict).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Written {
    /// A new plain collection.
    Created(WriteSummary),
    /// A new part, committed as a version.
    Appended(AppendReport),
}

impl CollectionWriter {
    /// A writer at `location` (a directory, created if missing, or a store prefix).
    pub async fn open(
        location: &StoreLocation,
        mode: WriteMode,
        options: WriterOptions,
    ) -> Result<Self, AppendError> {
        match mode {
            WriteMode::Create => {
                let target = Target::open(location, Occupancy::NoCollection).await?;
                let writer = AtlasWriter::new(target.store, &target.prefix, options);
                Ok(Self {
                    inner: Inner::Create(Box::new(writer)),
                    created_dir: target.created_dir,
                })
            }
            WriteMode::Append { replace } => {
                let created_dir = match location {
                    StoreLocation::Local(dir) if !dir.exists() => Some(dir.clone()),
                    _ => None,
                };
                let appender = Appender::open(location, options).await?;
                Ok(Self {
                    inner: Inner::Append(Box::new(appender.with_replace(replace))),
                    created_dir,
                })
            }
        }
    }

    /// Writes one dataset and returns its ordinal (in the new part, for an append). Every
    /// check runs before a byte is written, so a refused dataset leaves the writer as it was.
    pub fn write_dataset(&mut self, dataset: DatasetSpec) -> Result<u32, AppendError> {
        match &mut self.inner {
            Inner::Create(writer) => Ok(writer.write_dataset(dataset)?),
            Inner::Append(appender) => appender.write_dataset(dataset),
        }
    }

    /// Datasets written so far.
    pub fn dataset_count(&self) -> usize {
        match &self.inner {
            Inner::Create(writer) => writer.dataset_count(),
            Inner::Append(appender) => appender.dataset_count(),
        }
    }

    /// Writes the container and publishes it (for an append: commits the new version).
    pub async fn finish(self) -> Result<Written, AppendError> {
        let written = match self.inner {
            Inner::Create(writer) => (writer.finish().await)
                .map(Written::Created)
                .map_err(AppendError::from),
            Inner::Append(appender) => appender.commit().await.map(Written::Appended),
        };
        written.inspect_err(|_| remove_created_dir(self.created_dir.as_deref()))
    }

    /// Drops everything written; nothing is published.
    pub fn abort(self) {
        drop(self.inner);
        remove_created_dir(self.created_dir.as_deref());
    }
}
