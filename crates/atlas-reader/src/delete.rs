//! Deletes: read the mask, merge ordinals in, commit only if the mask is still the one read.
//!
//! The loop is generic; how a commit is made conditional is the [`MaskCommitter`]'s business:
//! - [`ConditionalPutCommitter`]: `PutMode::Create` when the mask is absent, `PutMode::Update`
//!   with the e-tag read otherwise, for backends that offer it (S3, GCS, Azure, `InMemory`).
//!   Where the backend refuses conditional PUT it falls back to an unconditional PUT:
//!   last-writer-wins, with a `tracing` warning, so a racing delete can be lost there.
//! - [`crate::LocalFlockCommitter`]: local disk, an advisory `flock` on the collection directory.
//!
//! The mask's bytes stay version 1 either way.

use crate::atlas::Atlas;
use crate::error::AtlasError;
use crate::open::{decode_mask, read_mask};
use atlas_mask::DeletedSet;
use bytes::Bytes;
use futures::future::BoxFuture;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Attempts before a delete gives up on conflicts.
const MAX_ATTEMPTS: u32 = 200;

/// Turns the mask as read (`None`: absent) into the mask to commit.
pub type MergeFn<'m> = dyn Fn(Option<&[u8]>) -> Result<Vec<u8>, AtlasError> + Send + Sync + 'm;

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOutcome {
    /// The merged mask is committed.
    Committed,
    /// The mask changed after it was read; nothing was written. Try again.
    Conflict,
}

/// One read-merge-commit attempt against wherever the mask lives.
pub trait MaskCommitter: Send + Sync + std::fmt::Debug {
    /// Reads the mask, calls `merge` on it, and writes the result only if the mask is still the
    /// one read.
    fn attempt<'a>(
        &'a self,
        merge: &'a MergeFn<'a>,
    ) -> BoxFuture<'a, Result<CommitOutcome, AtlasError>>;
}

/// What [`Atlas::delete`] did (its serde form: the Python package's `delete()` report).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeleteReport {
    /// Ordinals this call hid that were live before.
    pub newly_deleted: usize,
    /// Ordinals hidden in total now.
    pub total_deleted: usize,
    /// Attempts the commit took (more than 1 means another deleter raced this one).
    pub attempts: u32,
}

/// Commits with conditional PUT: the mask is written only if it is still the one read.
#[derive(Debug)]
pub struct ConditionalPutCommitter {
    store: Arc<dyn ObjectStore>,
    path: Path,
    warned: AtomicBool,
    /// Refuse, rather than fall back to last-writer-wins, where the backend cannot commit
    /// conditionally.
    strict: bool,
}

impl ConditionalPutCommitter {
    /// Commits the mask at `path` in `store`.
    pub fn new(store: Arc<dyn ObjectStore>, path: Path) -> Self {
        Self {
            store,
            path,
            warned: AtomicBool::new(false),
            strict: false,
        }
    }

    /// Commits the object at `path` in `store` only conditionally: where the backend has no
    /// conditional PUT (or returns no e-tag) an attempt fails with a `NotSupported` store
    /// error instead of writing last-writer-wins. For commits a lost race must never drop
    /// silently (a growing collection's manifest: the appender would report a commit that a
    /// racing one overwrote).
    pub fn strict(store: Arc<dyn ObjectStore>, path: Path) -> Self {
        Self {
            strict: true,
            ..Self::new(store, path)
        }
    }

    async fn try_once(&self, merge: &MergeFn<'_>) -> Result<CommitOutcome, AtlasError> {
        let (current, version) = match self.store.get(&self.path).await {
            Ok(result) => {
                let version = UpdateVersion {
                    e_tag: result.meta.e_tag.clone(),
                    version: result.meta.version.clone(),
                };
                (Some(result.bytes().await?), Some(version))
            }
            Err(object_store::Error::NotFound { .. }) => (None, None),
            Err(e) => return Err(e.into()),
        };
        let merged = PutPayload::from(Bytes::from(merge(current.as_deref())?));
        let mode = match version {
            None => PutMode::Create,
            Some(v) if v.e_tag.is_some() || v.version.is_some() => PutMode::Update(v),
            Some(_) => {
                return self
                    .last_writer_wins(merged, "the backend returned no e-tag")
                    .await
            }
        };
        let options = PutOptions {
            mode,
            ..Default::default()
        };
        match self
            .store
            .put_opts(&self.path, merged.clone(), options)
            .await
        {
            Ok(_) => Ok(CommitOutcome::Committed),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(CommitOutcome::Conflict),
            Err(
                object_store::Error::NotImplemented { .. }
                | object_store::Error::NotSupported { .. },
            ) => {
                self.last_writer_wins(merged, "the backend has no conditional PUT")
                    .await
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn last_writer_wins(
        &self,
        merged: PutPayload,
        why: &str,
    ) -> Result<CommitOutcome, AtlasError> {
        if self.strict {
            return Err(AtlasError::Store(object_store::Error::NotSupported {
                source: format!(
                    "{why}, and {} is committed only conditionally (a racing commit would be lost)",
                    self.path
                )
                .into(),
            }));
        }
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                mask = %self.path,
                "{why}: deletes are last-writer-wins here, and a racing delete can be lost; serialize deletes"
            );
        }
        self.store.put(&self.path, merged).await?;
        Ok(CommitOutcome::Committed)
    }
}

impl MaskCommitter for ConditionalPutCommitter {
    fn attempt<'a>(
        &'a self,
        merge: &'a MergeFn<'a>,
    ) -> BoxFuture<'a, Result<CommitOutcome, AtlasError>> {
        Box::pin(self.try_once(merge))
    }
}

impl Atlas {
    /// Hides the datasets called `names`. Unknown names are refused before anything is written.
    ///
    /// Reads the mask, adds the ordinals, and writes the whole mask back in one PUT, retrying on
    /// conflict; see the [`MaskCommitter`] in use for what a race costs.
    ///
    /// On a growing collection (`docs/format/growing.md`, "Deleting") each name is found in
    /// the newest part that holds it (a dataset a replace hid is never the one deleted: its
    /// replacement is newer) and hidden in that part's own `deleted.mask`, through the same
    /// commit as a plain collection's: every name is resolved before any mask is written, and
    /// the parts' masks are committed one after the other, oldest part first.
    pub async fn delete<S: AsRef<str>>(&self, names: &[S]) -> Result<DeleteReport, AtlasError> {
        if self.growing.is_some() {
            return self.delete_across_parts(names).await;
        }
        self.delete_own(names).await
    }

    /// [`Atlas::delete`] on a growing collection: the names grouped by the part that holds
    /// them, then one mask commit per part touched. A failure after some parts committed
    /// leaves those parts' deletes in place (each commit is whole); the same delete run again
    /// hides the rest and counts only what it newly hid.
    ///
    /// `total_deleted` counts the touched parts' masks as committed and the other parts' as
    /// this open read them (reading those again would cost a request per part).
    async fn delete_across_parts<S: AsRef<str>>(
        &self,
        names: &[S],
    ) -> Result<DeleteReport, AtlasError> {
        let mut by_part: Vec<Vec<&str>> = vec![Vec::new(); self.parts.len()];
        for name in names {
            let name = name.as_ref();
            let part = newest_holder(&self.parts, name)
                .ok_or_else(|| AtlasError::DatasetNotFound(name.to_owned()))?;
            by_part[part].push(name);
        }
        let mut newly_deleted = 0;
        let mut attempts = 0;
        let mut touched = Vec::new();
        for ((part, names), commit) in self.parts.iter().zip(&by_part).zip(self.part_commits()) {
            if names.is_empty() {
                continue;
            }
            let report = part.delete_own(names).await?;
            newly_deleted += report.newly_deleted;
            attempts = attempts.max(report.attempts);
            touched.push(commit.part.clone());
        }
        let total_deleted = self.parts.iter().map(|part| part.deleted().len()).sum();
        let names: Vec<&str> = by_part.into_iter().flatten().collect();
        self.redo_where_compacted(&names, touched).await?;
        Ok(DeleteReport {
            newly_deleted,
            total_deleted,
            attempts,
        })
    }

    /// A delete must outlive a compaction that raced it (`docs/format/growing.md`,
    /// "Compaction"): the compactor takes in the deletes committed before it read the replaced
    /// parts' masks a second time, after its own commit; a delete committed later is seen
    /// here, because the manifest read after it shows the compaction. Then the names are hidden
    /// again in the latest version, wherever they now live, until it still names every part
    /// written to. A name the latest version does not hold was left out of it, hidden already.
    async fn redo_where_compacted(
        &self,
        names: &[&str],
        mut touched: Vec<String>,
    ) -> Result<(), AtlasError> {
        let Some(growing) = &self.growing else {
            return Ok(());
        };
        // Each round is lost to one more compaction committed meanwhile; the bound only stops
        // a collection compacted without pause from holding a delete forever.
        for _ in 0..REDO_ROUNDS {
            let Some(manifest) =
                crate::growing::read_manifest(self.store.as_ref(), &growing.prefix).await?
            else {
                return Ok(());
            };
            let live = manifest.parts_of(manifest.latest());
            if touched
                .iter()
                .all(|part| live.iter().any(|commit| &commit.part == part))
            {
                return Ok(());
            }
            let mut latest = crate::growing::open_manifest_version(
                Arc::clone(&self.store),
                &growing.prefix,
                &manifest,
                None,
            )
            .await?;
            if let Some(dir) = &growing.local_dir {
                latest = latest.with_local_locks(dir.clone());
            }
            touched.clear();
            let holders: Vec<Option<usize>> = names
                .iter()
                .map(|name| newest_holder(&latest.parts, name))
                .collect();
            for (index, (commit, part)) in latest.parts().enumerate() {
                let here: Vec<&str> = names
                    .iter()
                    .zip(&holders)
                    .filter(|(_, holder)| **holder == Some(index))
                    .map(|(name, _)| *name)
                    .collect();
                if !here.is_empty() {
                    part.delete_own(&here).await?;
                    touched.push(commit.part.clone());
                }
            }
        }
        Err(AtlasError::DeleteConflict {
            attempts: REDO_ROUNDS,
        })
    }

    /// The delete of one container's datasets (a plain collection, or one part).
    async fn delete_own<S: AsRef<str>>(&self, names: &[S]) -> Result<DeleteReport, AtlasError> {
        let mut ordinals = Vec::with_capacity(names.len());
        for name in names {
            let name = name.as_ref();
            ordinals.push(
                self.ordinal_of(name)
                    .ok_or_else(|| AtlasError::DatasetNotFound(name.to_owned()))?,
            );
        }
        let dataset_count = self.footer.datasets.len();
        let before = self.deleted();
        // The mask as committed, and how many of `ordinals` it hid that the mask merged into
        // did not: another deleter's commit in between is not this call's.
        let committed: Mutex<Option<(DeletedSet, usize)>> = Mutex::new(None);
        let mask_path = self.mask_path.clone();
        let merge = |current: Option<&[u8]>| -> Result<Vec<u8>, AtlasError> {
            let mut set = match current {
                Some(bytes) => decode_mask(&mask_path, bytes, dataset_count)?,
                None => DeletedSet::new(dataset_count),
            };
            let newly = set.merge(ordinals.iter().copied());
            let bytes = atlas_mask::encode(&set);
            *committed.lock().unwrap_or_else(PoisonError::into_inner) = Some((set, newly));
            Ok(bytes)
        };
        for attempt in 1..=MAX_ATTEMPTS {
            match self.committer.attempt(&merge).await? {
                CommitOutcome::Committed => {
                    let merged = committed
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take();
                    // A committer that reports a commit without merging leaves the truth in the
                    // store: read it back rather than assume an empty mask.
                    let (set, newly_deleted) = match merged {
                        Some(merged) => merged,
                        None => {
                            let set =
                                read_mask(self.store.as_ref(), &self.mask_path, dataset_count)
                                    .await?;
                            // What this call asked for that the view before it did not hide.
                            let mut asked = DeletedSet::new(dataset_count);
                            asked.merge(ordinals.iter().copied());
                            let newly = asked.iter().filter(|&o| !before.contains(o)).count();
                            (set, newly)
                        }
                    };
                    let total_deleted = set.len();
                    self.replace_deleted(set);
                    tracing::info!(
                        mask = %self.mask_path,
                        newly_deleted,
                        total_deleted,
                        attempts = attempt,
                        "deleted datasets"
                    );
                    return Ok(DeleteReport {
                        newly_deleted,
                        total_deleted,
                        attempts: attempt,
                    });
                }
                CommitOutcome::Conflict => tokio::time::sleep(backoff(attempt)).await,
            }
        }
        Err(AtlasError::DeleteConflict {
            attempts: MAX_ATTEMPTS,
        })
    }
}

/// The index of the newest of `parts` that holds a dataset called `name`, live or deleted. A
/// name is held by more than one part only where a replace hid the older holders, and the
/// newest is then the one the version serves (or the one a delete already hid): a delete
/// never reaches through a replace to the dataset an older version still reads.
fn newest_holder(parts: &[Atlas], name: &str) -> Option<usize> {
    parts
        .iter()
        .rposition(|part| part.ordinal_of(name).is_some())
}

/// Versions a delete follows into compactions committed while it runs before it gives up.
const REDO_ROUNDS: u32 = 16;

/// The pause before commit attempt `attempt + 1` after a conflict: short, growing, spread by a
/// per-process offset so racing committers (deleters, appenders) drift apart.
pub fn retry_pause(attempt: u32) -> Duration {
    backoff(attempt)
}

fn backoff(attempt: u32) -> Duration {
    let jitter = u64::from(std::process::id() ^ attempt.wrapping_mul(2_654_435_761)) % 5;
    Duration::from_millis(u64::from(attempt.min(20)) + jitter)
}
