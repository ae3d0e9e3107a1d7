//! The appender: names checked, the part written, the manifest committed (with the datasets
//! it replaces hidden in the same commit).

use crate::error::AppendError;
use atlas_footer::CONTAINER_OBJECT;
use atlas_reader::manifest::{
    Commit, CommitKind, HiddenDataset, Manifest, MANIFEST_OBJECT, PARTS_DIR,
};
use atlas_reader::{
    decode_manifest, manifest_path, part_prefix, Atlas, AtlasError, CommitOutcome,
    ConditionalPutCommitter, GrowingProblem, LocalFlockCommitter, MaskCommitter,
};
use atlas_writer::{AtlasWriter, DatasetSpec, WriterOptions};
use durable_fs::{FileSystem, StdFileSystem};
use futures::StreamExt;
use object_access::StoreLocation;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, WriteMultipart};
use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::hash::BuildHasher;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

/// Commits tried before an append gives up on conflicts (each a lost race with another
/// appender that did commit).
const MAX_ATTEMPTS: u32 = 1_000;

/// Who holds a taken name, for the error that refuses it.
const THIS_APPEND: &str = "this append";

/// A part of the checked manifest, held open so that a name is checked against it by one
/// lookup in its footer's index, not copied out: an append to a collection of 100,000
/// datasets would otherwise copy 100,000 names to check its 1,000.
struct CheckedPart {
    commit: Commit,
    atlas: Atlas,
    /// The part's ordinals the checked manifest's latest version hides (replace lines): not
    /// live, so their names are free.
    hidden: HashSet<u32>,
}

/// What [`Appender::commit`] did. Its serde form (a map of these fields, in this order) is
/// the Python package's `Writer.finish()` dict of an append.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AppendReport {
    /// Datasets the part holds.
    pub datasets: usize,
    /// Size of the part's `data.atlas`.
    pub container_bytes: u64,
    /// The version the commit made.
    pub version: u64,
    /// The new part's id (its prefix is `parts/<id>`).
    pub part: String,
    /// Commit attempts (more than 1: another appender committed in between).
    pub attempts: u32,
    /// Datasets of earlier parts the commit hid because this append holds a dataset of their
    /// name (only with [`Appender::with_replace`]; 0 otherwise).
    pub replaced: usize,
}

/// Appends datasets to a growing collection as one new part; see the [crate docs](crate).
pub struct Appender {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    /// The collection as the caller named it, for errors.
    collection: String,
    /// The collection directory, on local disk: commits take its `flock`, the part is fsynced.
    local_dir: Option<PathBuf>,
    /// The manifest as last checked: its parts are `checked`.
    manifest: Manifest,
    /// The parts of `manifest`, open.
    checked: Vec<CheckedPart>,
    /// The names this append wrote.
    written_names: HashSet<String>,
    part_id: String,
    /// The part's writer, until `commit` (or `adopt`) takes it.
    writer: Option<AtlasWriter>,
    written: usize,
    /// A name a checked part holds live is replaced (hidden in the commit), not refused.
    replace: bool,
    /// A dataset was written while `replace` was on, unchecked against the parts' names.
    wrote_replacing: bool,
}

impl std::fmt::Debug for Appender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appender")
            .field("collection", &self.collection)
            .field("version", &self.manifest.latest())
            .field("part", &self.part_id)
            .field("written", &self.written)
            .field("replace", &self.replace)
            .finish_non_exhaustive()
    }
}

impl Appender {
    /// Starts an append to the collection at `location` (a directory, created if missing, or
    /// a store prefix): reads its manifest and every dataset name of its latest version (the
    /// manifest, then every part's tail at once). An empty location becomes a growing
    /// collection at the first commit; one holding a plain collection (`data.atlas`) is
    /// refused.
    pub async fn open(
        location: &StoreLocation,
        options: WriterOptions,
    ) -> Result<Self, AppendError> {
        match location {
            StoreLocation::Remote(remote) => {
                Self::open_store(
                    remote.store(),
                    remote.prefix().clone(),
                    location.to_string(),
                    None,
                    options,
                )
                .await
            }
            StoreLocation::Local(dir) => {
                let io = |source| AppendError::Io {
                    path: dir.display().to_string(),
                    source,
                };
                std::fs::create_dir_all(dir).map_err(io)?;
                let canonical = std::fs::canonicalize(dir).map_err(io)?;
                atlas_reader::check_local_collection(&canonical)?;
                let store = Arc::new(LocalFileSystem::new_with_prefix(&canonical)?);
                Self::open_store(
                    store,
                    Path::default(),
                    location.to_string(),
                    Some(canonical),
                    options,
                )
                .await
            }
        }
    }

    async fn open_store(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        collection: String,
        local_dir: Option<PathBuf>,
        options: WriterOptions,
    ) -> Result<Self, AppendError> {
        let manifest = match atlas_reader::read_manifest(store.as_ref(), &prefix).await? {
            Some(manifest) => manifest,
            None => {
                let container = prefix.clone().join(CONTAINER_OBJECT);
                match store.head(&container).await {
                    Ok(_) => return Err(AppendError::PlainCollection { collection }),
                    Err(object_store::Error::NotFound { .. }) => Manifest::default(),
                    Err(e) => return Err(e.into()),
                }
            }
        };
        let part_id = new_part_id();
        let part = part_prefix(&prefix, &part_id);
        let writer = AtlasWriter::new(Arc::clone(&store), &part, options);
        let mut appender = Self {
            store,
            prefix,
            collection,
            local_dir,
            manifest: Manifest::default(),
            checked: Vec::new(),
            written_names: HashSet::new(),
            part_id,
            writer: Some(writer),
            written: 0,
            replace: false,
            wrote_replacing: false,
        };
        appender
            .take_names(manifest.parts_of(manifest.latest()), &manifest)
            .await?;
        appender.manifest = manifest;
        Ok(appender)
    }

    /// With `replace`, a dataset whose name the collection holds live is not refused: the
    /// commit that adds this append's part also hides the dataset it replaces (one manifest
    /// write, so a reader sees the old dataset or the new one, never both nor neither;
    /// `docs/format/growing.md`, "Replacing"). Versions before the commit still read the old
    /// one. A name written twice by this append is refused either way. Set it before the first
    /// dataset is written: switched off after some were written while it was on, their names
    /// are refused at the commit (`NameTaken`) if the collection holds them live.
    pub fn with_replace(mut self, replace: bool) -> Self {
        self.replace = replace;
        self
    }

    /// The version this append read (0 for a collection with no commit yet); its commit makes
    /// a later one.
    pub fn base_version(&self) -> u64 {
        self.manifest.latest()
    }

    /// Datasets written so far.
    pub fn dataset_count(&self) -> usize {
        self.written
    }

    /// Writes one dataset into the new part and returns its ordinal there. A name this append
    /// already wrote is refused before anything is written, and so is one the collection holds
    /// live unless the append replaces ([`Appender::with_replace`]).
    pub fn write_dataset(&mut self, dataset: DatasetSpec) -> Result<u32, AppendError> {
        self.refuse_taken(dataset.name())?;
        let name = dataset.name().to_owned();
        let writer = self.writer.as_mut().ok_or_else(|| {
            atlas_writer::WriteError::Poisoned("the append is committed".to_owned())
        })?;
        let ordinal = writer.write_dataset(dataset)?;
        self.wrote_replacing |= self.replace;
        self.written_names.insert(name);
        self.written += 1;
        Ok(ordinal)
    }

    /// Writes the part, then commits the next manifest version naming it. Nothing is visible
    /// before the commit; a failure removes the part again (best effort: a part no manifest
    /// names is never read).
    pub async fn commit(mut self) -> Result<AppendReport, AppendError> {
        let Some(writer) = self.writer.take() else {
            return Err(
                atlas_writer::WriteError::Poisoned("the append is committed".to_owned()).into(),
            );
        };
        match writer.finish().await {
            Ok(summary) => self.publish(summary.container_bytes).await,
            Err(e) => {
                self.discard_part().await;
                Err(e.into())
            }
        }
    }

    /// Takes the plain collection at `source`, as it is, as the new part: every dataset's name
    /// is checked first (nothing is written for a clash), then its `data.atlas` is copied, byte
    /// for byte and streamed, into the part, and the version committed. Only for an appender
    /// that has written no dataset; a source with deleted datasets, or a growing one, is
    /// refused (`AppendError::Source`).
    pub async fn adopt(mut self, source: &StoreLocation) -> Result<AppendReport, AppendError> {
        let refuse = |reason: &str| AppendError::Source {
            collection: source.to_string(),
            reason: reason.to_owned(),
        };
        if self.written > 0 {
            return Err(refuse(
                "an appender that wrote datasets cannot also adopt a collection",
            ));
        }
        let collection = Atlas::open_location(source, |store| store).await?;
        if collection.version().is_some() {
            return Err(refuse("a growing collection cannot be adopted as a part"));
        }
        if !collection.deleted().is_empty() {
            return Err(refuse(
                "it has deleted datasets; rewrite it without them first",
            ));
        }
        for dataset in collection.datasets() {
            self.refuse_taken(dataset.name())?;
        }
        for dataset in collection.datasets() {
            self.written_names.insert(dataset.name().to_owned());
        }
        self.wrote_replacing |= self.replace;
        self.written = collection.dataset_count();
        let (from, path) = match source {
            StoreLocation::Remote(remote) => (
                remote.store(),
                remote.prefix().clone().join(CONTAINER_OBJECT),
            ),
            StoreLocation::Local(dir) => (
                Arc::new(LocalFileSystem::new_with_prefix(dir)?) as Arc<dyn ObjectStore>,
                Path::from(CONTAINER_OBJECT),
            ),
        };
        match self.copy_container(from.as_ref(), &path).await {
            Ok(bytes) => self.publish(bytes).await,
            Err(e) => {
                self.discard_part().await;
                Err(e)
            }
        }
    }

    /// Removes this append's uncommitted part (see [`remove_part`]).
    async fn discard_part(&self) {
        remove_part(
            self.store.as_ref(),
            &self.prefix,
            self.local_dir.as_deref(),
            &self.part_id,
        )
        .await;
    }

    /// Streams the object at `path` of `from` into the part's `data.atlas`; returns its size.
    async fn copy_container(
        &self,
        from: &dyn ObjectStore,
        path: &Path,
    ) -> Result<u64, AppendError> {
        let got = from.get(path).await?;
        let size = got.meta.size;
        let mut chunks = got.into_stream();
        let target = part_prefix(&self.prefix, &self.part_id).join(CONTAINER_OBJECT);
        let mut upload = WriteMultipart::new(self.store.put_multipart(&target).await?);
        while let Some(chunk) = chunks.next().await {
            match chunk {
                Ok(bytes) => upload.write(&bytes),
                Err(e) => {
                    if let Err(abort) = upload.abort().await {
                        tracing::warn!(%abort, "could not abort the part upload");
                    }
                    return Err(e.into());
                }
            }
        }
        upload.finish().await?;
        Ok(size)
    }

    /// Commits the written part (`container_bytes` long): fsynced first on local disk, then
    /// the manifest; a failure removes the part.
    async fn publish(mut self, container_bytes: u64) -> Result<AppendReport, AppendError> {
        let committed = async {
            sync_local_part(self.local_dir.as_deref(), &self.part_id)?;
            self.commit_manifest().await
        }
        .await;
        match committed {
            Ok((version, attempts, replaced)) => {
                tracing::info!(
                    collection = %self.collection,
                    version,
                    part = %self.part_id,
                    datasets = self.written,
                    replaced,
                    attempts,
                    "appended a part"
                );
                Ok(AppendReport {
                    version,
                    part: self.part_id.clone(),
                    datasets: self.written,
                    container_bytes,
                    attempts,
                    replaced,
                })
            }
            Err(e) => {
                self.discard_part().await;
                Err(e)
            }
        }
    }

    /// Commits the manifest with one more commit naming the part: read, check, conditional
    /// write, again after a conflict. A manifest that moved since it was checked has its new
    /// parts' names checked first, and a replacing append's hides are recomputed against it
    /// (the live holder of a name may have changed). Returns the version made, the attempts
    /// taken and the datasets hidden.
    async fn commit_manifest(&mut self) -> Result<(u64, u32, usize), AppendError> {
        let committer = manifest_committer(&self.store, &self.prefix, self.local_dir.as_deref());
        let path = manifest_path(&self.prefix);
        let datasets = self.written as u64;
        for attempt in 1..=MAX_ATTEMPTS {
            let hides = self.hides()?;
            let replaced = hides.len();
            let moved: Mutex<Option<Manifest>> = Mutex::new(None);
            let made: Mutex<u64> = Mutex::new(0);
            let merge = |current: Option<&[u8]>| -> Result<Vec<u8>, AtlasError> {
                let current = match current {
                    Some(bytes) => decode_manifest(&path, bytes)?,
                    None => Manifest::default(),
                };
                if current != self.manifest {
                    *moved.lock().unwrap_or_else(PoisonError::into_inner) = Some(current);
                    return Err(AtlasError::Growing {
                        path: path.to_string(),
                        problem: GrowingProblem::ManifestMoved,
                    });
                }
                let next =
                    current.with_replace(unix_ms_now(), datasets, &self.part_id, hides.clone());
                *made.lock().unwrap_or_else(PoisonError::into_inner) = next.latest();
                Ok(next.encode())
            };
            let outcome = committer.attempt(&merge).await;
            let moved = moved.into_inner().unwrap_or_else(PoisonError::into_inner);
            match (outcome, moved) {
                (Ok(CommitOutcome::Committed), _) => {
                    return Ok((
                        made.into_inner().unwrap_or_else(PoisonError::into_inner),
                        attempt,
                        replaced,
                    ))
                }
                (Ok(CommitOutcome::Conflict), _) => {
                    tokio::time::sleep(atlas_reader::retry_pause(attempt)).await;
                }
                (Err(_), Some(current)) => self.catch_up(current).await?,
                (Err(e), None) => return Err(e.into()),
            }
        }
        Err(AppendError::CommitConflict {
            collection: self.collection.clone(),
            attempts: MAX_ATTEMPTS,
        })
    }

    /// Takes in the manifest as another appender left it: every part committed since the ones
    /// checked (every part, if its history differs) is opened, checked against this append's
    /// names and kept for the names still to come.
    async fn catch_up(&mut self, current: Manifest) -> Result<(), AppendError> {
        let checked = self.manifest.commits.len();
        let same_history = current.commits.get(..checked) == Some(&self.manifest.commits[..]);
        // A compaction since replaces the part list: check its parts, not the ones it replaced.
        let compacted = current.commits[checked.min(current.commits.len())..]
            .iter()
            .any(|c| c.kind == CommitKind::Compact);
        let new = if same_history && !compacted {
            &current.commits[checked..]
        } else {
            self.checked.clear();
            current.parts_of(current.latest())
        };
        self.take_names(new, &current).await?;
        self.manifest = current;
        Ok(())
    }

    /// Opens the parts of `commits` (parts of `manifest`'s latest version) at once and takes
    /// their dataset names; a name this append wrote that one of them holds live is
    /// `NameTaken`, unless the append replaces. Every checked part's hidden datasets are then
    /// `manifest`'s.
    async fn take_names(
        &mut self,
        commits: &[Commit],
        manifest: &Manifest,
    ) -> Result<(), AppendError> {
        let opens = commits
            .iter()
            .map(|commit| Atlas::open_part(Arc::clone(&self.store), &self.prefix, commit));
        let parts = futures::future::try_join_all(opens).await?;
        let first_new = self.checked.len();
        for (commit, atlas) in commits.iter().zip(parts) {
            self.checked.push(CheckedPart {
                commit: commit.clone(),
                atlas,
                hidden: HashSet::new(),
            });
        }
        let mut hidden: std::collections::HashMap<&str, HashSet<u32>> =
            std::collections::HashMap::new();
        for (_, hide) in manifest.hidden_of(manifest.latest()) {
            hidden
                .entry(hide.part.as_str())
                .or_default()
                .insert(hide.ordinal);
        }
        for part in &mut self.checked {
            part.hidden = hidden.remove(part.commit.part.as_str()).unwrap_or_default();
        }
        if self.replace {
            return Ok(());
        }
        for part in &self.checked[first_new..] {
            // The smaller side is walked: this append's names looked up in the part.
            if let Some(name) = self
                .written_names
                .iter()
                .find(|name| part.live_ordinal(name).is_some())
            {
                return Err(AppendError::NameTaken {
                    collection: self.collection.clone(),
                    name: name.clone(),
                    held_by: part.holder(),
                });
            }
        }
        Ok(())
    }

    /// The datasets this append replaces in the checked manifest's latest version: the live
    /// holder of each name it wrote. Without replace there is none: the names were checked as
    /// they were written and as parts came in; names written while replace was on and then
    /// switched off are checked here (`NameTaken`).
    fn hides(&self) -> Result<Vec<HiddenDataset>, AppendError> {
        if !self.replace && !self.wrote_replacing {
            return Ok(Vec::new());
        }
        let mut hides = Vec::new();
        for part in &self.checked {
            for name in &self.written_names {
                if let Some(ordinal) = part.live_ordinal(name) {
                    if !self.replace {
                        return Err(AppendError::NameTaken {
                            collection: self.collection.clone(),
                            name: name.clone(),
                            held_by: part.holder(),
                        });
                    }
                    hides.push(HiddenDataset {
                        part: part.commit.part.clone(),
                        ordinal,
                    });
                }
            }
        }
        Ok(hides)
    }

    /// `NameTaken` if this append holds a dataset called `name`, or, unless it replaces, a
    /// checked part holds a live one.
    fn refuse_taken(&self, name: &str) -> Result<(), AppendError> {
        let held_by = if self.written_names.contains(name) {
            Some(THIS_APPEND.to_owned())
        } else if self.replace {
            None
        } else {
            self.checked
                .iter()
                .find(|part| part.live_ordinal(name).is_some())
                .map(CheckedPart::holder)
        };
        match held_by {
            Some(held_by) => Err(AppendError::NameTaken {
                collection: self.collection.clone(),
                name: name.to_owned(),
                held_by,
            }),
            None => Ok(()),
        }
    }
}

/// On local disk (`local_dir`: the collection directory), makes part `part_id` durable before
/// a manifest names it: its container, its directory and the directories above it, fsynced.
pub(crate) fn sync_local_part(
    local_dir: Option<&std::path::Path>,
    part_id: &str,
) -> Result<(), AppendError> {
    let Some(dir) = local_dir else {
        return Ok(());
    };
    let parts = dir.join(PARTS_DIR);
    let part = parts.join(part_id);
    let container = part.join(CONTAINER_OBJECT);
    let fs = StdFileSystem;
    let io = |path: &std::path::Path| {
        let path = path.display().to_string();
        move |source| AppendError::Io { path, source }
    };
    fs.sync_existing(&container).map_err(io(&container))?;
    fs.sync_dir(&part).map_err(io(&part))?;
    fs.sync_dir(&parts).map_err(io(&parts))?;
    fs.sync_dir(dir).map_err(io(dir))
}

/// Removes uncommitted part `part_id`, best effort: no manifest names it, so no reader opens it.
pub(crate) async fn remove_part(
    store: &dyn ObjectStore,
    prefix: &Path,
    local_dir: Option<&std::path::Path>,
    part_id: &str,
) {
    let container = part_prefix(prefix, part_id).join(CONTAINER_OBJECT);
    match store.delete(&container).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
        Err(e) => {
            tracing::warn!(part = %container, %e, "could not remove an uncommitted part");
        }
    }
    if let Some(dir) = local_dir {
        let _ = std::fs::remove_dir(dir.join(PARTS_DIR).join(part_id));
    }
}

/// The committer of the manifest at `prefix`: the collection directory's `flock` on local
/// disk, a strict conditional PUT on a store (never last-writer-wins: a commit overwritten by
/// a racing one would lose what it reported as committed).
pub(crate) fn manifest_committer(
    store: &Arc<dyn ObjectStore>,
    prefix: &Path,
    local_dir: Option<&std::path::Path>,
) -> Arc<dyn MaskCommitter> {
    match local_dir {
        Some(dir) => Arc::new(LocalFlockCommitter::for_object(dir, MANIFEST_OBJECT)),
        None => Arc::new(ConditionalPutCommitter::strict(
            Arc::clone(store),
            manifest_path(prefix),
        )),
    }
}

/// A part id no other appender picks: 128 bits from two of std's randomly keyed hashers
/// (seeded from the OS), with the process id and the time folded in, as 32 hex digits.
pub(crate) fn new_part_id() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let a = RandomState::new().hash_one((now, std::process::id(), 1u8));
    let b = RandomState::new().hash_one((now, std::process::id(), 2u8));
    format!("{a:016x}{b:016x}")
}

/// Milliseconds since the Unix epoch on this host's clock (0 before it).
pub(crate) fn unix_ms_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl CheckedPart {
    /// The part's ordinal of the live dataset called `name`: not deleted by the part's mask as
    /// read, nor hidden by the checked version.
    fn live_ordinal(&self, name: &str) -> Option<u32> {
        let ordinal = self.atlas.dataset(name)?.ordinal();
        (!self.hidden.contains(&ordinal)).then_some(ordinal)
    }

    /// The part as a `NameTaken` error names it.
    fn holder(&self) -> String {
        format!(
            "part {} (version {})",
            self.commit.part, self.commit.version
        )
    }
}
