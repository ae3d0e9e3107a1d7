//! `tag`: names one version of a growing collection (`docs/format/growing.md`, "Tags"), as
//! the object `tags/<name>`, written once through the commit primitives an append uses.

use crate::error::AppendError;
use atlas_reader::tag::{encode_tag, tag_path, TAGS_DIR};
use atlas_reader::{
    read_manifest, retry_pause, AtlasError, CommitOutcome, ConditionalPutCommitter, GrowingProblem,
    LocalFlockCommitter, MaskCommitter,
};
use durable_fs::{FileSystem, StdFileSystem};
use object_access::StoreLocation;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::ObjectStore;
use std::sync::Arc;

/// Attempts before a tag gives up: a conflict means another tagger created the object, which
/// the next attempt then finds.
const MAX_ATTEMPTS: u32 = 10;

/// What [`create_tag`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagReport {
    /// The tag.
    pub name: String,
    /// The version it names.
    pub version: u64,
}

/// Names `version` (`None`: the latest) of the growing collection at `location` `name`.
///
/// Refused, with nothing written: an invalid name (`GrowingProblem::InvalidTagName`), a
/// location with no manifest (`NotAnAtlasCollection` naming it), a version the manifest does
/// not have (`NoSuchVersion`), and a tag that exists already, whatever version it names
/// (`TagExists`: a tag is never moved, so a reader of a tag always reads the same version).
pub async fn create_tag(
    location: &StoreLocation,
    name: &str,
    version: Option<u64>,
) -> Result<TagReport, AppendError> {
    let (store, prefix, local_dir): (Arc<dyn ObjectStore>, Path, _) = match location {
        StoreLocation::Remote(remote) => (remote.store(), remote.prefix().clone(), None),
        StoreLocation::Local(dir) => {
            let canonical = std::fs::canonicalize(dir).map_err(|source| AppendError::Io {
                path: dir.display().to_string(),
                source,
            })?;
            let store = Arc::new(LocalFileSystem::new_with_prefix(&canonical)?);
            (
                store as Arc<dyn ObjectStore>,
                Path::default(),
                Some(canonical),
            )
        }
    };
    let path = tag_path(&prefix, name)?;
    let manifest = read_manifest(store.as_ref(), &prefix)
        .await?
        .ok_or_else(|| AtlasError::NotAnAtlasCollection {
            path: atlas_reader::manifest_path(&prefix).to_string(),
            reason: "no such object: only a growing collection has tags".to_owned(),
        })?;
    let latest = manifest.latest();
    let version = version.unwrap_or(latest);
    if version == 0 || version > latest {
        return Err(AtlasError::Growing {
            path: atlas_reader::manifest_path(&prefix).to_string(),
            problem: GrowingProblem::NoSuchVersion {
                asked: version,
                latest,
            },
        }
        .into());
    }
    if version < manifest.oldest_readable {
        return Err(AtlasError::Growing {
            path: atlas_reader::manifest_path(&prefix).to_string(),
            problem: GrowingProblem::CollectedByGc {
                asked: version,
                oldest_readable: manifest.oldest_readable,
            },
        }
        .into());
    }
    let committer: Box<dyn MaskCommitter> = match &local_dir {
        Some(dir) => {
            let tags = dir.join(TAGS_DIR);
            let io = |source| AppendError::Io {
                path: tags.display().to_string(),
                source,
            };
            std::fs::create_dir_all(&tags).map_err(io)?;
            // The tags directory's entry in the collection directory survives a power loss.
            StdFileSystem
                .sync_dir(dir)
                .map_err(|source| AppendError::Io {
                    path: dir.display().to_string(),
                    source,
                })?;
            Box::new(LocalFlockCommitter::for_object(tags, name))
        }
        None => Box::new(ConditionalPutCommitter::strict(store, path.clone())),
    };
    let merge = |current: Option<&[u8]>| -> Result<Vec<u8>, AtlasError> {
        match current {
            Some(_) => Err(AtlasError::Growing {
                path: path.to_string(),
                problem: GrowingProblem::TagExists(name.to_owned()),
            }),
            None => Ok(encode_tag(version)),
        }
    };
    for attempt in 1..=MAX_ATTEMPTS {
        match committer.attempt(&merge).await? {
            CommitOutcome::Committed => {
                tracing::info!(tag = %path, version, "tagged a version");
                return Ok(TagReport {
                    name: name.to_owned(),
                    version,
                });
            }
            CommitOutcome::Conflict => tokio::time::sleep(retry_pause(attempt)).await,
        }
    }
    Err(AppendError::CommitConflict {
        collection: location.to_string(),
        attempts: MAX_ATTEMPTS,
    })
}
