//! Compaction (`docs/format/growing.md`, "Compaction"): the live datasets of every part of the
//! latest version, in ordinal order, rewritten as one part and committed as a compact line.
//!
//! The part is written by one [`AtlasWriter`] with the default options from a lossless copy of
//! each dataset ([`copy_dataset`]), the path a fresh write of those datasets takes, so its
//! `data.atlas` is byte-identical to that write but for the footer's creation time.

use crate::appender::{manifest_committer, new_part_id, remove_part, sync_local_part, unix_ms_now};
use crate::error::AppendError;
use array_format::TimestampNs;
use atlas_footer::{DType, CONTAINER_OBJECT};
use atlas_reader::manifest::Manifest;
use atlas_reader::{
    decode_manifest, manifest_path, part_prefix, ArrayData, Atlas, AtlasError, CommitOutcome,
    DatasetView, GrowingProblem,
};
use atlas_writer::{ArraySpec, AtlasWriter, Attr, DatasetSpec, WriterOptions};
use object_access::StoreLocation;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// Whole compactions tried before giving up on appends that keep committing meanwhile: each
/// lost race rewrites every dataset again, so the bound is small.
const MAX_COMPACTIONS: u32 = 3;
/// Manifest commits tried per compaction on conflicts that leave its commits as read (another
/// writer's commit of the same bytes, a gc raising the oldest readable version).
const MAX_COMMIT_ATTEMPTS: u32 = 100;

/// What [`compact`] did (its serde form: the Python package's `compact()` report).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CompactReport {
    /// The version the compact commit made.
    pub version: u64,
    /// The compacted part's id (its prefix is `parts/<id>`).
    pub part: String,
    /// Live datasets copied into it.
    pub datasets: usize,
    /// Parts of the version compacted, which the new version no longer reads.
    pub replaced_parts: usize,
    /// Size of the compacted part's `data.atlas`.
    pub container_bytes: u64,
    /// Datasets deleted in the replaced parts while the compaction ran, hidden again in the
    /// compacted part after its commit.
    pub carried_deletes: usize,
    /// Compactions made (more than 1: an append committed during an earlier one).
    pub attempts: u32,
}

/// A copy of `view` that [`AtlasWriter::write_dataset`] writes into the bytes a fresh write of
/// the same dataset made: every array in schema order with its dtype, shape, chunk shape,
/// dimension names, fill value, data (whole, or none for an array declared and never written)
/// and attributes in order, then the dataset's attributes in order.
///
/// Refused with [`AppendError::Uncopyable`] naming the dataset: an array written in part (the
/// writer writes arrays whole or not at all, so its bytes cannot be made again), and an element
/// type the writer does not take (booleans, lists).
pub async fn copy_dataset(view: &DatasetView<'_>) -> Result<DatasetSpec, AppendError> {
    let uncopyable = |reason: String| AppendError::Uncopyable {
        dataset: view.name().to_owned(),
        reason,
    };
    let mut spec = DatasetSpec::new(view.name());
    for meta in view.schema().arrays() {
        let name = meta.name();
        let layout = view.array_layout(name).await?;
        let (written, grid) = view.written_chunks(name).await?;
        let shape: Vec<usize> = layout.shape.iter().map(|&n| n as usize).collect();
        let mut array = if written == 0 {
            declared(name, &layout.dtype, shape).ok_or_else(|| {
                uncopyable(format!(
                    "array '{name}' is {}, which the writer does not take",
                    layout.dtype
                ))
            })?
        } else if written == grid {
            match view.read_data(name, Vec::new(), Vec::new()).await {
                Ok(data) => written_array(name, data),
                Err(AtlasError::UnsupportedDType { dtype, .. }) => {
                    return Err(uncopyable(format!(
                        "array '{name}' is {dtype}, which the writer does not take"
                    )))
                }
                Err(e) => return Err(e.into()),
            }
        } else {
            return Err(uncopyable(format!(
                "array '{name}' has {written} of its {grid} chunks written; a copy writes an \
                 array whole or not at all"
            )));
        };
        array = array
            .dims(layout.dimension_names)
            .chunks(layout.chunk_shape.iter().map(|&n| n as usize).collect());
        if let Some(fill) = layout.fill_value {
            array = array.fill(fill);
        }
        let attrs = view.array_attributes(name).await?;
        for (key, value) in in_declared_order(meta.attrs().map(|(key, _)| key), attrs) {
            array = array.attr(key, value);
        }
        spec = spec.array(array);
    }
    let attrs = view.attributes().await?;
    for (key, value) in in_declared_order(view.schema().attrs().map(|(key, _)| key), attrs) {
        spec = spec.attr(key, value);
    }
    Ok(spec)
}

/// `stored` (a segment's attributes, in its table's order) in the order the footer declares
/// the keys, which is the order the writer was given them: the writer interns keys in that
/// order, so another order writes other footer bytes.
fn in_declared_order<'k>(
    declared: impl Iterator<Item = &'k str>,
    mut stored: Vec<(String, Attr)>,
) -> Vec<(String, Attr)> {
    let mut ordered = Vec::with_capacity(stored.len());
    for key in declared {
        if let Some(at) = stored.iter().position(|(k, _)| k == key) {
            ordered.push(stored.swap_remove(at));
        }
    }
    ordered.extend(stored);
    ordered
}

fn written_array(name: &str, data: ArrayData) -> ArraySpec {
    match data {
        ArrayData::Int8(a) => ArraySpec::new(name, a),
        ArrayData::Int16(a) => ArraySpec::new(name, a),
        ArrayData::Int32(a) => ArraySpec::new(name, a),
        ArrayData::Int64(a) => ArraySpec::new(name, a),
        ArrayData::UInt8(a) => ArraySpec::new(name, a),
        ArrayData::UInt16(a) => ArraySpec::new(name, a),
        ArrayData::UInt32(a) => ArraySpec::new(name, a),
        ArrayData::UInt64(a) => ArraySpec::new(name, a),
        ArrayData::Float32(a) => ArraySpec::new(name, a),
        ArrayData::Float64(a) => ArraySpec::new(name, a),
        ArrayData::TimestampNs(a) => ArraySpec::new(name, a),
        ArrayData::String(a) => ArraySpec::new(name, a),
        ArrayData::Binary(a) => ArraySpec::new(name, a),
    }
}

/// An array of `dtype` declared and never written; `None` for a type the writer does not take.
fn declared(name: &str, dtype: &DType, shape: Vec<usize>) -> Option<ArraySpec> {
    Some(match dtype {
        DType::Int8 => ArraySpec::declared::<i8>(name, shape),
        DType::Int16 => ArraySpec::declared::<i16>(name, shape),
        DType::Int32 => ArraySpec::declared::<i32>(name, shape),
        DType::Int64 => ArraySpec::declared::<i64>(name, shape),
        DType::UInt8 => ArraySpec::declared::<u8>(name, shape),
        DType::UInt16 => ArraySpec::declared::<u16>(name, shape),
        DType::UInt32 => ArraySpec::declared::<u32>(name, shape),
        DType::UInt64 => ArraySpec::declared::<u64>(name, shape),
        DType::Float32 => ArraySpec::declared::<f32>(name, shape),
        DType::Float64 => ArraySpec::declared::<f64>(name, shape),
        DType::TimestampNs => ArraySpec::declared::<TimestampNs>(name, shape),
        DType::String => ArraySpec::declared::<String>(name, shape),
        DType::Binary => ArraySpec::declared::<Vec<u8>>(name, shape),
        _ => return None,
    })
}

/// Where a compaction reads and writes.
struct Target {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    local_dir: Option<PathBuf>,
    collection: String,
}

/// Compacts the growing collection at `location`: the live datasets of every part of its
/// latest version, in ordinal order, copied ([`copy_dataset`]) into one new part written with
/// the default [`WriterOptions`] (its creation time now), which a compact commit makes the
/// next version's only part. `progress(done, total)` is called after each dataset copied.
///
/// Versions before it read their parts as before until `gc` removes them. The commit is the
/// appender's conditional write; an append committed meanwhile makes the part miss its
/// datasets, so the part is removed and the compaction made again, up to 3 times, then
/// [`AppendError::CompactConflict`] (nothing committed, no part left). A delete committed in a
/// replaced part while the compaction ran is hidden again in the compacted part after the
/// commit (a delete committed after that follows the compaction itself: `Atlas::delete`).
pub async fn compact(
    location: &StoreLocation,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<CompactReport, AppendError> {
    let target = Target::resolve(location)?;
    for attempt in 1..=MAX_COMPACTIONS {
        if let Some(mut report) = compact_once(&target, location, progress).await? {
            report.attempts = attempt;
            return Ok(report);
        }
    }
    Err(AppendError::CompactConflict {
        collection: target.collection,
        attempts: MAX_COMPACTIONS,
    })
}

impl Target {
    fn resolve(location: &StoreLocation) -> Result<Self, AppendError> {
        let collection = location.to_string();
        Ok(match location {
            StoreLocation::Remote(remote) => Self {
                store: remote.store(),
                prefix: remote.prefix().clone(),
                local_dir: None,
                collection,
            },
            StoreLocation::Local(dir) => {
                let canonical = std::fs::canonicalize(dir).map_err(|source| AppendError::Io {
                    path: dir.display().to_string(),
                    source,
                })?;
                Self {
                    store: Arc::new(LocalFileSystem::new_with_prefix(&canonical)?),
                    prefix: Path::default(),
                    local_dir: Some(canonical),
                    collection,
                }
            }
        })
    }

    /// The manifest; a location without one (or with none committed) is refused.
    async fn manifest(&self) -> Result<Manifest, AppendError> {
        match atlas_reader::read_manifest(self.store.as_ref(), &self.prefix).await? {
            Some(manifest) if manifest.latest() > 0 => Ok(manifest),
            Some(_) => Err(AppendError::NotGrowing {
                collection: self.collection.clone(),
                reason: "it has no committed version".to_owned(),
            }),
            None => {
                let container = self.prefix.clone().join(CONTAINER_OBJECT);
                match self.store.head(&container).await {
                    Ok(_) => Err(AppendError::PlainCollection {
                        collection: self.collection.clone(),
                    }),
                    Err(object_store::Error::NotFound { .. }) => Err(AppendError::NotGrowing {
                        collection: self.collection.clone(),
                        reason: "no collection.manifest".to_owned(),
                    }),
                    Err(e) => Err(e.into()),
                }
            }
        }
    }

    async fn remove(&self, part_id: &str) {
        remove_part(
            self.store.as_ref(),
            &self.prefix,
            self.local_dir.as_deref(),
            part_id,
        )
        .await;
    }
}

/// One compaction: `None` where the manifest gained commits before the commit (the part is
/// removed again).
async fn compact_once(
    target: &Target,
    location: &StoreLocation,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<Option<CompactReport>, AppendError> {
    let manifest = target.manifest().await?;
    let read =
        Atlas::open_manifest(Arc::clone(&target.store), &target.prefix, &manifest, None).await?;
    let part_id = new_part_id();
    let options = WriterOptions {
        created_unix_ms: unix_ms_now(),
        ..WriterOptions::default()
    };
    let mut writer = AtlasWriter::new(
        Arc::clone(&target.store),
        &part_prefix(&target.prefix, &part_id),
        options,
    );
    let total = read.dataset_count();
    // Nothing is uploaded before `finish`: a failure until then leaves no part to remove.
    for (done, view) in read.datasets().enumerate() {
        writer.write_dataset(copy_dataset(&view).await?)?;
        progress(done + 1, total);
    }
    let summary = match writer.finish().await {
        Ok(summary) => summary,
        Err(e) => {
            target.remove(&part_id).await;
            return Err(e.into());
        }
    };
    let committed = async {
        sync_local_part(target.local_dir.as_deref(), &part_id)?;
        commit_compaction(target, &manifest, &part_id, total as u64).await
    }
    .await;
    let version = match committed {
        Ok(Some(version)) => version,
        Ok(None) => {
            target.remove(&part_id).await;
            return Ok(None);
        }
        Err(e) => {
            target.remove(&part_id).await;
            return Err(e);
        }
    };
    let carried_deletes = carry_deletes(target, location, &read, version).await?;
    tracing::info!(
        collection = %target.collection,
        version,
        part = %part_id,
        datasets = total,
        carried_deletes,
        "compacted"
    );
    Ok(Some(CompactReport {
        version,
        part: part_id,
        datasets: total,
        replaced_parts: read.part_commits().len(),
        container_bytes: summary.container_bytes,
        carried_deletes,
        attempts: 1,
    }))
}

/// Commits `part_id` as a compaction of `read` (the manifest the part was made from): only if
/// the manifest still has exactly its commits. `None` where another commit came first.
async fn commit_compaction(
    target: &Target,
    read: &Manifest,
    part_id: &str,
    datasets: u64,
) -> Result<Option<u64>, AppendError> {
    let committer = manifest_committer(&target.store, &target.prefix, target.local_dir.as_deref());
    let path = manifest_path(&target.prefix);
    for attempt in 1..=MAX_COMMIT_ATTEMPTS {
        let made: Mutex<Option<u64>> = Mutex::new(None);
        let merge = |current: Option<&[u8]>| -> Result<Vec<u8>, AtlasError> {
            let current = match current {
                Some(bytes) => decode_manifest(&path, bytes)?,
                None => Manifest::default(),
            };
            // Only the commits matter: a gc raising the oldest readable version changes
            // nothing the compaction read.
            if current.commits != read.commits {
                return Err(AtlasError::Growing {
                    path: path.to_string(),
                    problem: GrowingProblem::ManifestMoved,
                });
            }
            let next = current.with_compaction(unix_ms_now(), datasets, part_id);
            *made.lock().unwrap_or_else(PoisonError::into_inner) = Some(next.latest());
            Ok(next.encode())
        };
        match committer.attempt(&merge).await {
            Ok(CommitOutcome::Committed) => {
                return Ok(made.into_inner().unwrap_or_else(PoisonError::into_inner));
            }
            Ok(CommitOutcome::Conflict) => {
                tokio::time::sleep(atlas_reader::retry_pause(attempt)).await;
            }
            Err(AtlasError::Growing {
                problem: GrowingProblem::ManifestMoved,
                ..
            }) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    }
    Err(AppendError::CommitConflict {
        collection: target.collection.clone(),
        attempts: MAX_COMMIT_ATTEMPTS,
    })
}

/// Reads the replaced parts' masks again, after the commit, and hides in `version` every dataset
/// the compaction copied that a delete hid meanwhile. Returns how many.
async fn carry_deletes(
    target: &Target,
    location: &StoreLocation,
    read: &Atlas,
    version: u64,
) -> Result<usize, AppendError> {
    let reopens = read
        .part_commits()
        .iter()
        .map(|commit| Atlas::open_part(Arc::clone(&target.store), &target.prefix, commit));
    let now = futures::future::try_join_all(reopens).await?;
    let mut hidden = Vec::new();
    for ((_, before), now) in read.parts().zip(&now) {
        hidden.extend(
            before
                .datasets()
                .filter(|view| now.dataset(view.name()).is_none())
                .map(|view| view.name().to_owned()),
        );
    }
    if hidden.is_empty() {
        return Ok(0);
    }
    let compacted = Atlas::open_location_version(location, Some(version), |store| store).await?;
    compacted.delete(&hidden).await?;
    Ok(hidden.len())
}
