//! Growing collections (`docs/format/growing.md`): a manifest naming immutable parts, each a
//! plain collection under `parts/<id>/`, opened as one collection.
//!
//! The open reads `collection.manifest` (one request: it names every version), then every part
//! of the version asked for at once (each part's tail and mask, as a plain open): two round
//! trips whatever the number of parts. The parts' datasets are numbered one after the other,
//! oldest part first; a live name is unique across parts because an append refuses a name a
//! part holds live, unless it replaces it: then its commit hides the old dataset (the replace
//! line's hides), which this open folds into the part's deleted set.

use crate::atlas::Atlas;
use crate::error::{AtlasError, GrowingProblem};
use crate::manifest::{Commit, Manifest, MANIFEST_OBJECT};
use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use std::sync::Arc;

/// What an open growing collection knows beyond its parts.
#[derive(Debug)]
pub(crate) struct Growing {
    /// The manifest object.
    pub(crate) manifest_path: Path,
    /// The version open.
    pub(crate) version: u64,
    /// The latest version when the manifest was read.
    pub(crate) latest: u64,
    /// The commits up to the version open, oldest first (its history, for `atlas log`).
    pub(crate) commits: Vec<Commit>,
    /// The commits whose parts the version open reads, oldest first: part `i` is
    /// `part_commits[i]`'s ([`Manifest::parts_of`]).
    pub(crate) part_commits: Vec<Commit>,
    /// Where the collection lives in its store (the manifest's prefix).
    pub(crate) prefix: Path,
    /// The collection directory, when opened from local disk: a delete redone in a later
    /// version commits its masks under the parts' directory locks too.
    pub(crate) local_dir: Option<std::path::PathBuf>,
    /// Each part's first collection-wide ordinal, ascending.
    bases: Vec<u32>,
    /// Datasets (live or deleted) over every part.
    total: u64,
}

impl Growing {
    /// Datasets (live or deleted) over every part.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// The part holding collection-wide `ordinal`, and the ordinal within it.
    pub(crate) fn locate(&self, ordinal: u32) -> Option<(usize, u32)> {
        if u64::from(ordinal) >= self.total {
            return None;
        }
        let part = self
            .bases
            .partition_point(|&base| base <= ordinal)
            .checked_sub(1)?;
        Some((part, ordinal - self.bases[part]))
    }
}

/// The manifest object of the collection at `prefix`.
pub fn manifest_path(prefix: &Path) -> Path {
    prefix.clone().join(MANIFEST_OBJECT)
}

/// The prefix of part `id` (`parts/<id>`) under the collection at `prefix`.
pub fn part_prefix(prefix: &Path, id: &str) -> Path {
    prefix.clone().join(crate::manifest::PARTS_DIR).join(id)
}

/// Reads and decodes the manifest of the collection at `prefix` (one GET): `None` where there
/// is none.
pub async fn read_manifest(
    store: &dyn ObjectStore,
    prefix: &Path,
) -> Result<Option<Manifest>, AtlasError> {
    let path = manifest_path(prefix);
    let bytes: Bytes = match store.get(&path).await {
        Ok(result) => result.bytes().await?,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    decode_manifest(&path, &bytes).map(Some)
}

/// Decodes manifest bytes, naming the manifest (`path`) and the line of a refusal.
pub fn decode_manifest(path: &Path, bytes: &[u8]) -> Result<Manifest, AtlasError> {
    Manifest::decode(bytes)
        .map_err(|e| AtlasError::corrupt(path.as_ref(), format!("line {}", e.line), e.reason))
}

/// Opens version `version` (`None`: the latest) of the growing collection at `prefix`;
/// `Ok(None)` where there is no manifest.
pub(crate) async fn open_growing(
    store: Arc<dyn ObjectStore>,
    prefix: &Path,
    version: Option<u64>,
) -> Result<Option<Atlas>, AtlasError> {
    let Some(manifest) = read_manifest(store.as_ref(), prefix).await? else {
        return Ok(None);
    };
    open_manifest_version(store, prefix, &manifest, version)
        .await
        .map(Some)
}

/// Opens `version` (`None`: the latest) of the collection at `prefix` that `manifest`
/// describes: every part at once.
pub(crate) async fn open_manifest_version(
    store: Arc<dyn ObjectStore>,
    prefix: &Path,
    manifest: &Manifest,
    version: Option<u64>,
) -> Result<Atlas, AtlasError> {
    let path = manifest_path(prefix);
    let latest = manifest.latest();
    let version = version.unwrap_or(latest);
    if version == 0 || version > latest {
        return Err(AtlasError::Growing {
            path: path.to_string(),
            problem: GrowingProblem::NoSuchVersion {
                asked: version,
                latest,
            },
        });
    }
    if version < manifest.oldest_readable {
        return Err(AtlasError::Growing {
            path: path.to_string(),
            problem: GrowingProblem::CollectedByGc {
                asked: version,
                oldest_readable: manifest.oldest_readable,
            },
        });
    }
    let commits = manifest.history(version).to_vec();
    let part_commits = manifest.parts_of(version).to_vec();
    let opens = part_commits.iter().map(|commit| {
        let store = Arc::clone(&store);
        let part = part_prefix(prefix, &commit.part);
        let path = &path;
        async move {
            Atlas::open_plain(store, &part).await.map_err(|e| match e {
                // A manifest that names a part with no container is damaged: the append
                // that committed it wrote the part first.
                AtlasError::NotAnAtlasCollection { path: at, reason } => AtlasError::corrupt(
                    path.as_ref(),
                    format!("line {}", commit.version + 1),
                    format!("part {}: {at}: {reason}", commit.part),
                ),
                other => other,
            })
        }
    });
    let mut parts = futures::future::try_join_all(opens).await?;
    apply_hides(&path, manifest, version, &part_commits, &mut parts)?;
    let mut bases = Vec::with_capacity(parts.len());
    let mut total: u64 = 0;
    for part in &mut parts {
        let base = u32::try_from(total).map_err(|_| {
            AtlasError::corrupt(
                path.as_ref(),
                "parts",
                "more than 2^32 datasets over the parts".to_owned(),
            )
        })?;
        part.ordinal_base = base;
        bases.push(base);
        total += part.footer.datasets.len() as u64;
    }
    if total > u64::from(u32::MAX) {
        return Err(AtlasError::corrupt(
            path.as_ref(),
            "parts",
            "more than 2^32 datasets over the parts".to_owned(),
        ));
    }
    let created = commits.last().map_or(0, |c| c.created_unix_ms);
    let growing = Growing {
        manifest_path: path.clone(),
        version,
        latest,
        commits,
        part_commits,
        prefix: prefix.clone(),
        local_dir: None,
        bases,
        total,
    };
    Ok(Atlas::growing_shell(store, prefix, growing, parts, created))
}

/// Hides in `parts` (the parts of `version`, in `part_commits` order) the datasets the
/// version's replace lines hide; a hide past its part's datasets is a damaged manifest,
/// refused naming the replace line.
fn apply_hides(
    path: &Path,
    manifest: &Manifest,
    version: u64,
    part_commits: &[Commit],
    parts: &mut [Atlas],
) -> Result<(), AtlasError> {
    let mut hidden: Vec<Vec<u32>> = vec![Vec::new(); parts.len()];
    let index_of: std::collections::HashMap<&str, usize> = part_commits
        .iter()
        .enumerate()
        .map(|(i, c)| (c.part.as_str(), i))
        .collect();
    for (commit, hide) in manifest.hidden_of(version) {
        // The manifest's decode checked that the hide names a part of this version.
        let Some(&index) = index_of.get(hide.part.as_str()) else {
            continue;
        };
        if hide.ordinal as usize >= parts[index].footer.datasets.len() {
            return Err(AtlasError::corrupt(
                path.as_ref(),
                format!("line {}", commit.version + 1),
                format!(
                    "hides dataset {} of part {}, which holds {}",
                    hide.ordinal,
                    hide.part,
                    parts[index].footer.datasets.len()
                ),
            ));
        }
        hidden[index].push(hide.ordinal);
    }
    for (part, mut ordinals) in parts.iter_mut().zip(hidden) {
        if !ordinals.is_empty() {
            ordinals.sort_unstable();
            part.hide(ordinals);
        }
    }
    Ok(())
}

impl Atlas {
    /// Opens `version` (`None`: the latest) of the growing collection at `prefix` in `store`
    /// as `manifest` (already read, as an appender reads it) describes it: every part at once.
    pub async fn open_manifest(
        store: Arc<dyn ObjectStore>,
        prefix: &Path,
        manifest: &Manifest,
        version: Option<u64>,
    ) -> Result<Self, AtlasError> {
        open_manifest_version(store, prefix, manifest, version).await
    }

    /// Opens the part `commit` added to the growing collection at `prefix`, alone.
    pub async fn open_part(
        store: Arc<dyn ObjectStore>,
        prefix: &Path,
        commit: &Commit,
    ) -> Result<Self, AtlasError> {
        Atlas::open_plain(store, &part_prefix(prefix, &commit.part)).await
    }

    /// For a growing collection: the version open (`None` for a plain collection).
    pub fn version(&self) -> Option<u64> {
        self.growing.as_ref().map(|g| g.version)
    }

    /// For a growing collection: the latest version when it was opened.
    pub fn latest_version(&self) -> Option<u64> {
        self.growing.as_ref().map(|g| g.latest)
    }

    /// For a growing collection: the commits that made the version open, oldest first (what
    /// `atlas log` lists). Empty for a plain collection.
    pub fn commits(&self) -> &[Commit] {
        self.growing.as_ref().map_or(&[], |g| g.commits.as_slice())
    }

    /// For a growing collection: the commits whose parts the version open reads, oldest first
    /// (after a compaction, the compact commit and the appends since). Empty for a plain
    /// collection.
    pub fn part_commits(&self) -> &[Commit] {
        self.growing
            .as_ref()
            .map_or(&[], |g| g.part_commits.as_slice())
    }

    /// For a growing collection: each part of the version open, alone, with the commit that
    /// added it, oldest first. Empty for a plain collection.
    pub fn parts(&self) -> impl Iterator<Item = (&Commit, &Atlas)> + '_ {
        self.part_commits().iter().zip(&self.parts)
    }
}
