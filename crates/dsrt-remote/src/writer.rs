//! Writing a new cache at a location: a local directory is written in place; a store prefix
//! is written into a local staging directory with `dsrt_writer::CacheWriter`, published on
//! `finish` and the staging directory removed. One writer, one summary, one error for both.

use crate::error::RemoteError;
use crate::publish::{check_publish_target, publish_cache, PublishOptions, PublishReport};
use crate::{RemotePrefix, StoreLocation};
use dsrt_schema::{Row, ValueRef};
use dsrt_writer::{write_new_cache, CacheSummary, CacheWriter, WriteError, WriterOptions};
use std::path::PathBuf;
use tempfile::TempDir;

/// Where a writer for a store prefix stages its cache and how it publishes it (unused for a
/// local directory).
#[derive(Debug, Clone, Default)]
pub struct RemoteWriterOptions {
    /// The directory the staging directory is made in (default: `std::env::temp_dir()`). It
    /// needs room for the whole cache.
    pub staging_root: Option<PathBuf>,
    /// How the staged cache is published.
    pub publish: PublishOptions,
}

/// Writes a new cache at a [`StoreLocation`]: in place for a local directory; for a store
/// prefix, into a local staging directory that [`finish`](Self::finish) publishes (every data
/// file first, `manifest.json` last, create-if-absent), so no reader sees a partial cache at
/// either.
///
/// Dropping it without `finish` (or a failed `finish`) publishes nothing; a staging directory
/// is removed with it. What a dropped local writer wrote stays (no manifest.json: no reader
/// opens it) until [`dsrt_writer::remove_unpublished`] or [`write_cache_at`], which removes it.
#[derive(Debug)]
pub struct LocationWriter {
    writer: CacheWriter,
    /// `None` for a local directory, written in place.
    staged: Option<Staged>,
}

/// A store prefix's cache, written locally until it is published.
#[derive(Debug)]
struct Staged {
    staging: TempDir,
    to: RemotePrefix,
    publish: PublishOptions,
}

/// What a finished [`LocationWriter`] wrote.
#[derive(Debug, Clone)]
pub struct FinishedCache {
    /// The cache as the writer finished it (for a store prefix, its `path` is the staging
    /// directory, removed since).
    pub cache: CacheSummary,
    /// The upload, for a store prefix.
    pub publish: Option<PublishReport>,
}

impl FinishedCache {
    /// Where the cache is: the local directory, or the prefix's URL.
    pub fn location(&self) -> String {
        match &self.publish {
            Some(report) => report.url.clone(),
            None => self.cache.path.to_string_lossy().into_owned(),
        }
    }
}

/// A store prefix's staging directory, made under `root` (the system's temporary directory
/// when `None`).
fn staging_dir(root: Option<PathBuf>) -> Result<TempDir, RemoteError> {
    let root = root.unwrap_or_else(std::env::temp_dir);
    (tempfile::Builder::new().prefix(".dsrt-staging-"))
        .tempdir_in(&root)
        .map_err(|source| RemoteError::LocalFile {
            path: root.clone(),
            action: "create staging directory",
            source,
        })
}

impl LocationWriter {
    /// A writer of a new cache at `location`. A store prefix is checked first (no
    /// manifest.json; empty unless `remote.publish.overwrite_partial`), so a prefix that
    /// cannot receive the cache fails before anything is packed.
    pub fn create(
        location: &StoreLocation,
        options: WriterOptions,
        remote: RemoteWriterOptions,
    ) -> Result<Self, RemoteError> {
        match location {
            StoreLocation::Local(dir) => Ok(Self {
                writer: CacheWriter::create(dir, options)?,
                staged: None,
            }),
            StoreLocation::Remote(to) => {
                check_publish_target(to, &remote.publish)?;
                let staging = staging_dir(remote.staging_root)?;
                let writer = CacheWriter::create(staging.path().join("cache"), options)?;
                Ok(Self {
                    writer,
                    staged: Some(Staged {
                        staging,
                        to: to.clone(),
                        publish: remote.publish,
                    }),
                })
            }
        }
    }

    /// The underlying writer, for what takes a `CacheWriter` (the parallel packers).
    pub fn cache_writer(&mut self) -> &mut CacheWriter {
        &mut self.writer
    }

    /// Adds one sample; see [`CacheWriter::add`].
    pub fn add(&mut self, payload: &[u8], row: &Row) -> Result<u64, RemoteError> {
        Ok(self.writer.add(payload, row)?)
    }

    /// Adds one sample by positional values; see [`CacheWriter::add_values`].
    pub fn add_values(
        &mut self,
        payload: &[u8],
        values: &[ValueRef<'_>],
    ) -> Result<u64, RemoteError> {
        Ok(self.writer.add_values(payload, values)?)
    }

    /// Samples added so far.
    pub fn samples(&self) -> u64 {
        self.writer.samples()
    }

    /// Publishes the cache: finishes it, and for a store prefix uploads it and removes the
    /// staging directory.
    pub fn finish(self) -> Result<FinishedCache, RemoteError> {
        let cache = self.writer.finish()?;
        let Some(Staged {
            staging,
            to,
            publish,
        }) = self.staged
        else {
            return Ok(FinishedCache {
                cache,
                publish: None,
            });
        };
        let report = publish_cache(&cache.path, &to, &publish)?;
        let staging_path = staging.path().to_path_buf();
        staging.close().map_err(|source| RemoteError::LocalFile {
            path: staging_path,
            action: "remove staging directory",
            source,
        })?;
        Ok(FinishedCache {
            cache,
            publish: Some(report),
        })
    }
}

/// Writes a new cache at `location` in one run: creates the writer, lets `fill` add the
/// samples, and publishes the cache. If anything fails, nothing is left: a local directory
/// loses what this run wrote (`dsrt_writer::write_new_cache`), a staging directory is removed,
/// and a prefix receives no manifest.json.
pub fn write_cache_at<E: From<RemoteError> + From<WriteError>>(
    location: &StoreLocation,
    options: WriterOptions,
    remote: RemoteWriterOptions,
    fill: impl FnOnce(&mut CacheWriter) -> Result<(), E>,
) -> Result<FinishedCache, E> {
    match location {
        StoreLocation::Local(dir) => Ok(FinishedCache {
            cache: write_new_cache(dir, options, fill)?,
            publish: None,
        }),
        StoreLocation::Remote(_) => {
            let mut writer = LocationWriter::create(location, options, remote)?;
            fill(writer.cache_writer())?;
            Ok(writer.finish()?)
        }
    }
}
