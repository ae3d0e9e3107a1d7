//! Joining caches published side by side under an object-store prefix (the parts of a
//! distributed job, each uploaded by its task) into one cache under a target prefix.
//!
//! The same join as `dsrt_writer::merge_parts`, with the same pieces (each part checked by
//! `CheckedPart`, shards numbered by `joined_shards`, index and metadata rebuilt by
//! `write_joined_tables`, the manifest made by `manifest_bytes`), so a cache joined on a store
//! has the bytes a local join of the same parts has. Where the local join renames a shard, the
//! store copies it (a server-side copy: no payload byte passes through the joining process).
//! index.bin and metadata.arrow go up as `publish_cache` uploads files; manifest.json last,
//! create-if-absent, as `publish_cache` writes it.

use crate::cache_files::RemoteCacheFiles;
use crate::error::{block_on, RemoteError};
use crate::fetch::{get_bytes, Retry};
use crate::local_files::sized;
use crate::open::MAX_MANIFEST_BYTES;
use crate::publish::{put_manifest, store_error, upload_data, PublishOptions};
use crate::{RemotePrefix, StoreLocation};
use dsrt_index::{IndexView, INDEX_FILE_NAME};
use dsrt_manifest::{ShardEntry, MANIFEST_FILE_NAME};
use dsrt_metadata::{MetadataTable, METADATA_FILE_NAME};
use dsrt_shard::SHARDS_DIR_NAME;
use dsrt_writer::{
    first_cache_file, joined_shards, manifest_bytes, merge_parts, remove_unpublished,
    write_joined_tables, CacheSummary, CheckedPart, JoinedShard, LocalCacheFiles, PartCache,
    WriterOptions,
};
use futures::stream::{self, StreamExt, TryStreamExt};
use object_store::ObjectStoreExt;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// One part to join: a finished cache published under `prefix`, with the payload bytes its
/// writer was given (what `CacheSummary::payload_bytes` reported; the files do not record it).
#[derive(Debug, Clone)]
pub struct RemotePart {
    /// Where the part is published.
    pub prefix: RemotePrefix,
    /// Payload bytes its writer was given.
    pub payload_bytes: u64,
}

/// A cache joined on a store.
#[derive(Debug, Clone)]
pub struct RemoteJoinSummary {
    /// What the joined cache holds; its `path` is the target prefix's URL.
    pub cache: CacheSummary,
    /// Whether manifest.json was written with create-if-absent (`false`: the store has no
    /// conditional PUT, see [`crate::PublishReport::manifest_atomic`]).
    pub manifest_atomic: bool,
}

/// One finished cache to join, at a directory or under a prefix, with the payload bytes its
/// writer was given.
#[derive(Debug, Clone)]
pub struct JoinPart {
    /// Where the part is.
    pub location: StoreLocation,
    /// Payload bytes its writer was given.
    pub payload_bytes: u64,
}

/// Joins `parts` (in the order their samples go into the new cache) into a new cache at `to`,
/// a directory or a prefix: the one join for both. Into a directory, every part must be a
/// directory on its file system, and `dsrt_writer::merge_parts` renames their shards (the
/// manifest is published by a rename: `manifest_atomic` is `true`); under a prefix, every part
/// must be published under a prefix of the same store, and [`merge_remote_parts`] copies them
/// there. A part of the other kind is refused as [`RemoteError::Location`] before anything is
/// read.
pub fn join_parts(
    to: &StoreLocation,
    parts: &[JoinPart],
    options: &WriterOptions,
    publish: &PublishOptions,
) -> Result<RemoteJoinSummary, RemoteError> {
    let misplaced = |part: &JoinPart, target: &str| RemoteError::Location {
        location: part.location.to_string(),
        reason: format!("a part of a join into {target} must be one too"),
    };
    match to {
        StoreLocation::Local(dir) => {
            let parts = (parts.iter())
                .map(|part| match &part.location {
                    StoreLocation::Local(path) => Ok(PartCache {
                        path: path.clone(),
                        payload_bytes: part.payload_bytes,
                    }),
                    StoreLocation::Remote(_) => Err(misplaced(part, "a local directory")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let cache = merge_parts(dir, &parts, options)?;
            Ok(RemoteJoinSummary {
                cache,
                manifest_atomic: true,
            })
        }
        StoreLocation::Remote(prefix) => {
            let parts = (parts.iter())
                .map(|part| match &part.location {
                    StoreLocation::Remote(from) => Ok(RemotePart {
                        prefix: from.clone(),
                        payload_bytes: part.payload_bytes,
                    }),
                    StoreLocation::Local(_) => Err(misplaced(part, "an object-store prefix")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            merge_remote_parts(prefix, &parts, options, publish)
        }
    }
}

/// Removes what an unfinished writer or join left at `at` (`dsrt_writer::remove_unpublished`
/// over the directory's or the prefix's cache files; `created`: the directory too, which the
/// writer made). A published cache is never touched.
pub fn remove_unpublished_at(at: &StoreLocation, created: bool) -> Result<(), RemoteError> {
    match at {
        StoreLocation::Local(dir) => remove_unpublished(&LocalCacheFiles::new(dir), created)
            .map_err(|source| RemoteError::LocalFile {
                path: dir.clone(),
                action: "remove what an unfinished writer left",
                source,
            }),
        StoreLocation::Remote(prefix) => remove_unpublished(&RemoteCacheFiles::new(prefix), false),
    }
}

/// Joins the published caches `parts` (in the order their samples go into the new cache) into
/// a new cache under `to` and publishes it.
///
/// `to` may hold other objects (the parts' staging prefix, say) but no cache file: a
/// manifest.json there is refused as [`RemoteError::AlreadyPublished`], an index.bin,
/// metadata.arrow or object under `shards/` as [`RemoteError::PrefixNotEmpty`]. Every part is
/// read (manifest.json, index.bin and metadata.arrow: the small files) and checked as
/// `merge_parts` checks a local part (a misfit is a `WriteError::Part` naming the part's URL),
/// and each of its shards is sized by a HEAD, all before anything is written. Then each part
/// shard is copied on the store to `to/shards/<its joined name>` (up to `file_concurrency` at
/// once, transient errors retried as uploads are) and its copy's size checked; index.bin and
/// metadata.arrow are built locally (in a temporary directory, removed after) and uploaded;
/// manifest.json goes last, create-if-absent (on a store without conditional PUT: checked
/// absent by a HEAD, then written, as `publish_cache` does). Once it is published, every
/// object under each part's prefix is deleted.
///
/// On a failure before publication no manifest is written and what the join wrote under `to`
/// is deleted (`dsrt_writer::remove_unpublished` over [`RemoteCacheFiles`]); the parts stay
/// whole (a copy leaves its source), so the join may be tried again. If the manifest is refused because another writer
/// published one meanwhile, nothing under `to` is deleted: the objects are that cache's now.
pub fn merge_remote_parts(
    to: &RemotePrefix,
    parts: &[RemotePart],
    options: &WriterOptions,
    publish: &PublishOptions,
) -> Result<RemoteJoinSummary, RemoteError> {
    check_join_target(to)?;
    let retry = Retry {
        attempts: publish.retries.saturating_add(1),
        first_backoff: publish.backoff,
    };
    let checked = parts
        .iter()
        .map(|part| read_part(&part.prefix, options, retry))
        .collect::<Result<Vec<_>, _>>()?;
    block_on(check_part_shards(parts, &checked, publish))?;
    let joined = joined_shards(&checked);
    let tables_dir = tempfile::Builder::new()
        .prefix(".dsrt-join-")
        .tempdir()
        .map_err(|source| RemoteError::LocalFile {
            path: std::env::temp_dir(),
            action: "create a directory for the joined index and metadata",
            source,
        })?;
    let out = PathBuf::from(to.url());
    let index_path = tables_dir.path().join(INDEX_FILE_NAME);
    let metadata_path = tables_dir.path().join(METADATA_FILE_NAME);
    let tables = write_joined_tables(
        &checked,
        create_local(&index_path)?,
        create_local(&metadata_path)?,
        &out,
        &options.schema,
    )?;
    flush_local(tables.index, &index_path)?;
    flush_local(tables.metadata, &metadata_path)?;
    drop(checked);
    let shards: Vec<ShardEntry> = joined.iter().map(|s| s.entry.clone()).collect();
    let (cache_id, manifest) = manifest_bytes(
        options,
        tables.samples,
        &tables.index_digest,
        &tables.metadata_digest,
        &shards,
    );
    let files = vec![
        sized(tables_dir.path(), INDEX_FILE_NAME.to_owned(), None)?,
        sized(tables_dir.path(), METADATA_FILE_NAME.to_owned(), None)?,
    ];
    let published = block_on(async {
        copy_shards(to, parts, &joined, publish).await?;
        upload_data(to, &files, publish).await?;
        put_manifest(to, manifest, publish).await
    });
    let manifest_atomic = match published {
        Ok(atomic) => atomic,
        Err(error) => {
            if !matches!(error, RemoteError::AlreadyPublished { .. }) {
                if let Err(cleanup) = remove_unpublished(&RemoteCacheFiles::new(to), false) {
                    tracing::warn!(url = to.url(), error = %cleanup, "could not remove what a failed join wrote");
                }
            }
            return Err(error);
        }
    };
    for part in parts {
        if let Err(error) = remove_prefix(&part.prefix) {
            tracing::warn!(url = part.prefix.url(), %error, "could not remove a joined part");
        }
    }
    tracing::debug!(
        url = to.url(),
        parts = parts.len(),
        samples = tables.samples,
        shards = shards.len(),
        "parts joined on the store"
    );
    Ok(RemoteJoinSummary {
        cache: CacheSummary {
            path: out,
            cache_id,
            samples: tables.samples,
            payload_bytes: parts.iter().map(|p| p.payload_bytes).sum(),
            shards,
        },
        manifest_atomic,
    })
}

/// Deletes every object under `prefix` (a staging prefix: the parts of a job).
pub fn remove_prefix(prefix: &RemotePrefix) -> Result<(), RemoteError> {
    block_on(async {
        let objects: Vec<object_store::path::Path> = prefix
            .store()
            .list(Some(prefix.prefix()))
            .map_ok(|meta| meta.location)
            .try_collect()
            .await
            .map_err(|source| RemoteError::Store {
                url: prefix.url().to_owned(),
                source,
            })?;
        for location in &objects {
            delete(prefix, location).await?;
        }
        Ok(())
    })
}

/// `to` must hold no cache file ([`first_cache_file`]): a manifest is a published cache, any
/// other a half-finished one; neither is ever mixed into the join.
fn check_join_target(to: &RemotePrefix) -> Result<(), RemoteError> {
    match first_cache_file(&RemoteCacheFiles::new(to))? {
        None => Ok(()),
        Some(name) if name == MANIFEST_FILE_NAME => Err(RemoteError::AlreadyPublished {
            url: to.url().to_owned(),
        }),
        Some(object) => Err(RemoteError::PrefixNotEmpty {
            url: to.url().to_owned(),
            object,
        }),
    }
}

/// Reads a part's manifest, index and metadata and checks them as a local part is checked.
fn read_part(
    part: &RemotePrefix,
    options: &WriterOptions,
    retry: Retry,
) -> Result<CheckedPart, RemoteError> {
    let store = part.store();
    let fetch = |name: &str, limit: u64| {
        let url = part.object_url(name);
        let location = part.object(name);
        retry
            .run(|| get_bytes(store.as_ref(), &location, &url, limit))
            .map(|(bytes, _)| bytes)
    };
    let manifest = fetch(MANIFEST_FILE_NAME, MAX_MANIFEST_BYTES)?;
    let index = fetch(INDEX_FILE_NAME, u64::MAX)?;
    let metadata = fetch(METADATA_FILE_NAME, u64::MAX)?;
    Ok(CheckedPart::check(
        part.url(),
        &manifest,
        || IndexView::from_bytes(index),
        || MetadataTable::from_bytes(metadata),
        options,
    )?)
}

/// Sizes every part shard by a HEAD and refuses a part whose shard is not its manifest's size.
async fn check_part_shards(
    parts: &[RemotePart],
    checked: &[CheckedPart],
    publish: &PublishOptions,
) -> Result<(), RemoteError> {
    let shards = parts.iter().zip(checked).flat_map(|(part, checked)| {
        checked
            .shards()
            .iter()
            .map(move |entry| (&part.prefix, checked, entry))
    });
    stream::iter(shards)
        .map(|(prefix, checked, entry)| async move {
            let relative = format!("{SHARDS_DIR_NAME}/{}", entry.name);
            let meta = prefix
                .store()
                .head(&prefix.object(&relative))
                .await
                .map_err(|source| store_error(prefix, &relative, source))?;
            checked.check_shard_len(entry, meta.size)?;
            Ok::<_, RemoteError>(())
        })
        .buffered(publish.file_concurrency.max(1))
        .try_collect::<Vec<()>>()
        .await
        .map(drop)
}

/// Copies every part shard to its joined name under `to` and checks each copy's size; after
/// the first failure no further copy starts.
async fn copy_shards(
    to: &RemotePrefix,
    parts: &[RemotePart],
    joined: &[JoinedShard],
    publish: &PublishOptions,
) -> Result<(), RemoteError> {
    let failed = AtomicBool::new(false);
    let results: Vec<Result<(), RemoteError>> = stream::iter(joined)
        .map(|shard| {
            let failed = &failed;
            async move {
                if failed.load(Ordering::Relaxed) {
                    return Ok(());
                }
                let from = &parts[shard.part].prefix;
                let result = copy_shard(from, to, shard, publish).await;
                if result.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                result
            }
        })
        .buffered(publish.file_concurrency.max(1))
        .collect()
        .await;
    results.into_iter().collect()
}

async fn copy_shard(
    from: &RemotePrefix,
    to: &RemotePrefix,
    shard: &JoinedShard,
    publish: &PublishOptions,
) -> Result<(), RemoteError> {
    let source = from.object(&format!("{SHARDS_DIR_NAME}/{}", shard.from));
    let relative = format!("{SHARDS_DIR_NAME}/{}", shard.entry.name);
    let target = to.object(&relative);
    let mut attempt = 0;
    loop {
        match to.store().copy(&source, &target).await {
            Ok(()) => break,
            Err(error)
                if attempt < publish.retries && object_access::is_retryable_store_error(&error) =>
            {
                tracing::debug!(url = %to.object_url(&relative), %error, attempt, "retrying a copy");
                tokio::time::sleep(publish.backoff.saturating_mul(1 << attempt.min(16))).await;
                attempt += 1;
            }
            Err(source) => {
                return Err(RemoteError::Upload {
                    url: to.object_url(&relative),
                    attempts: attempt + 1,
                    source,
                })
            }
        }
    }
    let meta = to
        .store()
        .head(&target)
        .await
        .map_err(|source| store_error(to, &relative, source))?;
    if meta.size != shard.entry.byte_len {
        return Err(RemoteError::UploadedSize {
            url: to.object_url(&relative),
            expected: shard.entry.byte_len,
            actual: meta.size,
        });
    }
    Ok(())
}

/// Deletes one object; one already gone is no error.
async fn delete(
    prefix: &RemotePrefix,
    location: &object_store::path::Path,
) -> Result<(), RemoteError> {
    match prefix.store().delete(location).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(source) => Err(RemoteError::Store {
            url: format!("{}/{}", prefix.url(), relative_to(prefix, location)),
            source,
        }),
    }
}

fn relative_to<'a>(prefix: &RemotePrefix, location: &'a object_store::path::Path) -> &'a str {
    let full = location.as_ref();
    full.strip_prefix(prefix.prefix().as_ref())
        .map_or(full, |rest| rest.trim_start_matches('/'))
}

fn create_local(path: &Path) -> Result<BufWriter<std::fs::File>, RemoteError> {
    std::fs::File::create(path)
        .map(|file| BufWriter::with_capacity(1 << 16, file))
        .map_err(|source| RemoteError::LocalFile {
            path: path.to_path_buf(),
            action: "create",
            source,
        })
}

fn flush_local(mut file: BufWriter<std::fs::File>, path: &Path) -> Result<(), RemoteError> {
    file.flush().map_err(|source| RemoteError::LocalFile {
        path: path.to_path_buf(),
        action: "write",
        source,
    })
}
