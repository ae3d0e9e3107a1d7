//! `gc`: removes the parts no kept version of a growing collection names
//! (`docs/format/growing.md`, "Garbage collection").
//!
//! A part no manifest names is what an append that failed or was killed before its commit left.
//! An append in progress is such a part too until it commits, so a part is only removed once
//! its newest object is older than a grace period: the longest an append may take from writing
//! its part to committing it.

use atlas_reader::manifest::{is_valid_part_id, Manifest, PARTS_DIR};
use atlas_reader::{AtlasError, CommitOutcome};
use futures::TryStreamExt;
use object_access::StoreLocation;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use std::collections::{BTreeMap, HashSet};
use std::num::NonZeroU64;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use thiserror::Error;

/// The grace period [`GcOptions::default`] gives an append: longer than any append should take
/// from writing its part to committing it.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(60 * 60);

/// What [`collect_garbage`] keeps and removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcOptions {
    /// Keep the parts of the latest this many versions (`None`: of every version).
    pub keep_versions: Option<NonZeroU64>,
    /// A part no kept version names is removed only once its newest object is older than this.
    pub grace: Duration,
    /// Report what would be removed, remove nothing.
    pub dry_run: bool,
}

impl Default for GcOptions {
    fn default() -> Self {
        Self {
            keep_versions: None,
            grace: DEFAULT_GRACE,
            dry_run: false,
        }
    }
}

/// What [`collect_garbage`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// The latest version when the manifest was read.
    pub latest: u64,
    /// The oldest version whose parts were kept.
    pub oldest_kept: u64,
    /// The oldest version readable after this gc: above 1 only once a gc removed parts that
    /// older versions name (which only a compaction leaves), committed before any was removed.
    pub oldest_readable_version: u64,
    /// The parts removed (or, on a dry run, that would be), by id.
    pub removed_parts: Vec<String>,
    /// Objects removed (or that would be).
    pub removed_objects: usize,
    /// Bytes removed (or that would be).
    pub removed_bytes: u64,
    /// Parts no kept version names that were left because they are younger than the grace
    /// period (an append may still commit them).
    pub young_parts: Vec<String>,
}

/// Why [`collect_garbage`] failed. What it removed before failing stays removed (each was
/// unreferenced); running it again finishes the job.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum GcError {
    /// The location holds no `collection.manifest`: it is not a growing collection.
    #[error("{collection}: not a growing collection (no collection.manifest); gc only collects growing collections")]
    NotGrowing {
        /// The collection.
        collection: String,
    },
    /// Reading the manifest failed, or it is damaged.
    #[error("{0}")]
    Read(#[from] AtlasError),
    /// Listing or removing objects failed.
    #[error("{collection}: {source}")]
    Store {
        /// The collection.
        collection: String,
        /// What the store said.
        #[source]
        source: object_store::Error,
    },
    /// The local directory could not be opened.
    #[error("{path}: {source}")]
    Io {
        /// The directory.
        path: String,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
}

impl GcError {
    /// Whether the same gc may succeed if run again: a store or transport failure.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Read(e) => e.is_retryable(),
            Self::Store { source, .. } => object_access::is_retryable_store_error(source),
            Self::Io { source, .. } => object_access::is_retryable_io_error(source),
            Self::NotGrowing { .. } => false,
        }
    }
}

/// Removes from the growing collection at `location` every part that no kept version names
/// and whose objects are all older than `options.grace`.
///
/// Lists `parts/` first and reads the manifest after, so a part an append committed while the
/// listing ran is seen as named. Objects under `parts/` that are not `parts/<valid id>/...` are
/// not gc's and are left alone.
pub async fn collect_garbage(
    location: &StoreLocation,
    options: &GcOptions,
) -> Result<GcReport, GcError> {
    let collection = location.to_string();
    let (store, prefix, local_dir): (Arc<dyn ObjectStore>, Path, Option<PathBuf>) = match location {
        StoreLocation::Remote(remote) => (remote.store(), remote.prefix().clone(), None),
        StoreLocation::Local(dir) => {
            let canonical = std::fs::canonicalize(dir).map_err(|source| GcError::Io {
                path: dir.display().to_string(),
                source,
            })?;
            let store =
                LocalFileSystem::new_with_prefix(&canonical).map_err(|source| GcError::Store {
                    collection: collection.clone(),
                    source,
                })?;
            (Arc::new(store), Path::default(), Some(canonical))
        }
    };
    let store_error = |source| GcError::Store {
        collection: collection.clone(),
        source,
    };
    let parts_prefix = prefix.clone().join(PARTS_DIR);
    let found = match &local_dir {
        Some(dir) => local_parts(&dir.join(PARTS_DIR))?,
        None => {
            let listed: Vec<ObjectMeta> = store
                .list(Some(&parts_prefix))
                .try_collect()
                .await
                .map_err(store_error)?;
            store_parts(&parts_prefix, listed)
        }
    };
    let Some(manifest) = atlas_reader::read_manifest(store.as_ref(), &prefix).await? else {
        return Err(GcError::NotGrowing { collection });
    };
    let tagged = tagged_versions(store.as_ref(), &prefix, &collection).await?;
    let (oldest_kept, kept) = kept_parts(&manifest, options.keep_versions, &tagged);
    let now = SystemTime::now();
    let mut report = GcReport {
        latest: manifest.latest(),
        oldest_kept,
        oldest_readable_version: manifest.oldest_readable,
        ..GcReport::default()
    };
    let mut removable = Vec::new();
    for (id, part) in found {
        if kept.contains(id.as_str()) {
            continue;
        }
        let young = now
            .duration_since(part.newest)
            .map_or(true, |age| age < options.grace);
        if young {
            report.young_parts.push(id);
        } else {
            removable.push((id, part));
        }
    }
    // A version that names a part about to go is made unreadable first, in the manifest, so
    // that no reader ever follows a readable version to a missing part.
    let named_below = (manifest.oldest_readable..oldest_kept)
        .flat_map(|version| manifest.parts_of(version))
        .any(|commit| removable.iter().any(|(id, _)| *id == commit.part));
    if named_below {
        report.oldest_readable_version = oldest_kept;
        if !options.dry_run {
            raise_oldest_readable(&store, &prefix, local_dir.as_deref(), oldest_kept).await?;
        }
    }
    for (id, part) in removable {
        report.removed_objects += part.files;
        report.removed_bytes += part.bytes;
        if !options.dry_run {
            match &local_dir {
                Some(dir) => {
                    let part_dir = dir.join(PARTS_DIR).join(&id);
                    match std::fs::remove_dir_all(&part_dir) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                            return Err(GcError::Io {
                                path: part_dir.display().to_string(),
                                source: e,
                            })
                        }
                        _ => {}
                    }
                }
                None => {
                    for object in &part.objects {
                        match store.delete(object).await {
                            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                            Err(e) => return Err(store_error(e)),
                        }
                    }
                }
            }
            tracing::info!(collection = %collection, part = %id, files = part.files, "removed an unreferenced part");
        }
        report.removed_parts.push(id);
    }
    Ok(report)
}

/// What is stored under one part's prefix.
#[derive(Debug)]
struct FoundPart {
    /// The newest object's modification time.
    newest: SystemTime,
    /// Objects (files) under it.
    files: usize,
    bytes: u64,
    /// On a store: the objects, to delete one by one (a local part goes as one directory).
    objects: Vec<Path>,
}

impl FoundPart {
    fn new() -> Self {
        Self {
            newest: SystemTime::UNIX_EPOCH,
            files: 0,
            bytes: 0,
            objects: Vec::new(),
        }
    }

    fn add(&mut self, modified: SystemTime, bytes: u64) {
        self.newest = self.newest.max(modified);
        self.files += 1;
        self.bytes += bytes;
    }
}

/// The oldest version kept, and the ids of every part a kept version names.
fn kept_parts<'m>(
    manifest: &'m Manifest,
    keep: Option<NonZeroU64>,
    tagged: &[u64],
) -> (u64, HashSet<&'m str>) {
    let latest = manifest.latest();
    let oldest = match keep {
        Some(keep) => latest.saturating_sub(keep.get() - 1).max(1),
        None => 1,
    };
    // A tagged version is kept as a kept version is; so are the versions after it, which keeps
    // "the versions from the oldest readable one on" one range.
    let oldest = tagged
        .iter()
        .copied()
        .filter(|&v| v <= latest)
        .fold(oldest, u64::min)
        .max(manifest.oldest_readable);
    let kept = (oldest..=latest)
        .flat_map(|version| manifest.parts_of(version))
        .map(|commit| commit.part.as_str())
        .collect();
    (oldest.min(latest), kept)
}

/// The listed objects grouped by part id (`parts/<id>/...`), skipping what is not a part's.
/// The versions the collection's tags name (`tags/<name>`); an object there that is not a
/// valid tag is refused, as an open of it would be.
async fn tagged_versions(
    store: &dyn ObjectStore,
    prefix: &Path,
    collection: &str,
) -> Result<Vec<u64>, GcError> {
    let tags_prefix = prefix.clone().join(atlas_reader::tag::TAGS_DIR);
    let store_error = |source| GcError::Store {
        collection: collection.to_owned(),
        source,
    };
    let listed: Vec<ObjectMeta> = store
        .list(Some(&tags_prefix))
        .try_collect()
        .await
        .map_err(store_error)?;
    let mut versions = Vec::with_capacity(listed.len());
    for object in listed {
        let bytes = store
            .get(&object.location)
            .await
            .map_err(store_error)?
            .bytes()
            .await
            .map_err(store_error)?;
        versions.push(atlas_reader::tag::decode_tag(&object.location, &bytes)?);
    }
    Ok(versions)
}

/// Commits `oldest` as the manifest's oldest readable version (never lowering it), through the
/// appender's commit primitive.
async fn raise_oldest_readable(
    store: &Arc<dyn ObjectStore>,
    prefix: &Path,
    local_dir: Option<&std::path::Path>,
    oldest: u64,
) -> Result<(), GcError> {
    let committer = crate::appender::manifest_committer(store, prefix, local_dir);
    let path = atlas_reader::manifest_path(prefix);
    let merge = |current: Option<&[u8]>| -> Result<Vec<u8>, AtlasError> {
        let mut next = match current {
            Some(bytes) => atlas_reader::decode_manifest(&path, bytes)?,
            None => Manifest::default(),
        };
        next.oldest_readable = next.oldest_readable.max(oldest);
        Ok(next.encode())
    };
    for attempt in 1..=RAISE_ATTEMPTS {
        match committer.attempt(&merge).await? {
            CommitOutcome::Committed => return Ok(()),
            CommitOutcome::Conflict => {
                tokio::time::sleep(atlas_reader::retry_pause(attempt)).await;
            }
        }
    }
    Err(GcError::Read(AtlasError::Growing {
        path: path.to_string(),
        problem: atlas_reader::GrowingProblem::ManifestMoved,
    }))
}

/// Commits of the oldest readable version tried before gc gives up on conflicts.
const RAISE_ATTEMPTS: u32 = 100;

fn store_parts(parts_prefix: &Path, listed: Vec<ObjectMeta>) -> BTreeMap<String, FoundPart> {
    let mut parts: BTreeMap<String, FoundPart> = BTreeMap::new();
    for object in listed {
        let id = {
            let Some(mut below) = object.location.prefix_match(parts_prefix) else {
                continue;
            };
            let (Some(id), Some(_)) = (below.next(), below.next()) else {
                continue;
            };
            id.as_ref().to_owned()
        };
        if is_valid_part_id(&id) {
            let part = parts.entry(id).or_insert_with(FoundPart::new);
            part.add(object.last_modified.into(), object.size);
            part.objects.push(object.location);
        }
    }
    parts
}

/// The part directories under a local `parts/` (each a valid id), with every file below
/// each, read from the file system rather than the store's listing: that listing hides the
/// staging files (`name#<digits>`) an append killed mid-write leaves, and they are the part's
/// too.
fn local_parts(parts_dir: &std::path::Path) -> Result<BTreeMap<String, FoundPart>, GcError> {
    let io = |path: &std::path::Path| {
        let path = path.display().to_string();
        move |source| GcError::Io { path, source }
    };
    let mut parts = BTreeMap::new();
    let entries = match std::fs::read_dir(parts_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(parts),
        Err(e) => return Err(io(parts_dir)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(io(parts_dir))?;
        let id = entry.file_name().to_string_lossy().into_owned();
        if !is_valid_part_id(&id) || !entry.file_type().map_err(io(parts_dir))?.is_dir() {
            continue;
        }
        let mut part = FoundPart::new();
        // The directory's own time too: an append's part directory exists before its files.
        part.newest = entry
            .metadata()
            .map_err(io(parts_dir))?
            .modified()
            .map_err(io(parts_dir))?;
        add_files(&entry.path(), &mut part)?;
        parts.insert(id, part);
    }
    Ok(parts)
}

/// Adds every file below `dir` (recursively) to `part`.
fn add_files(dir: &std::path::Path, part: &mut FoundPart) -> Result<(), GcError> {
    let io = |source| GcError::Io {
        path: dir.display().to_string(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let meta = entry.metadata().map_err(io)?;
        if meta.is_dir() {
            add_files(&entry.path(), part)?;
        } else {
            part.add(meta.modified().map_err(io)?, meta.len());
        }
    }
    Ok(())
}
