//! Writing a cache straight to a prefix: pack into a local staging directory with
//! `dsrt_writer::CacheWriter`, then publish it and remove the staging directory.

use crate::error::RemoteError;
use crate::publish::{check_publish_target, publish_cache, PublishOptions, PublishReport};
use crate::{RemotePrefix, StoreLocation};
use dsrt_schema::{Row, ValueRef};
use dsrt_writer::{CacheSummary, CacheWriter, WriterOptions};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// Where a remote writer stages its cache and how it publishes it.
#[derive(Debug, Clone, Default)]
pub struct RemoteWriterOptions {
    /// The directory the staging directory is made in (default: `std::env::temp_dir()`). It
    /// needs room for the whole cache.
    pub staging_root: Option<PathBuf>,
    /// How the staged cache is published.
    pub publish: PublishOptions,
}

/// Packs samples into a local staging directory and publishes them to a prefix on
/// [`finish`](Self::finish).
///
/// Dropping it without `finish` (or a failed `finish`) publishes nothing and removes the
/// staging directory.
#[derive(Debug)]
pub struct RemoteCacheWriter {
    writer: CacheWriter,
    staging: TempDir,
    to: RemotePrefix,
    publish: PublishOptions,
}

/// A published remote cache.
#[derive(Debug, Clone)]
pub struct RemoteCacheSummary {
    /// What was packed; its `path` is the staging directory, removed by now.
    pub cache: CacheSummary,
    /// What was uploaded.
    pub publish: PublishReport,
}

impl RemoteCacheWriter {
    /// Checks the prefix (no manifest.json; empty unless `overwrite_partial`), so a refusal
    /// comes before any sample is packed, and creates the staging directory and the writer.
    pub fn create(
        to: RemotePrefix,
        options: WriterOptions,
        remote: RemoteWriterOptions,
    ) -> Result<Self, RemoteError> {
        check_publish_target(&to, &remote.publish)?;
        let root = remote.staging_root.unwrap_or_else(std::env::temp_dir);
        let staging = tempfile::Builder::new()
            .prefix(".dsrt-staging-")
            .tempdir_in(&root)
            .map_err(|source| RemoteError::LocalFile {
                path: root.clone(),
                action: "create staging directory",
                source,
            })?;
        let writer = CacheWriter::create(staging.path().join("cache"), options)?;
        Ok(Self {
            writer,
            staging,
            to,
            publish: remote.publish,
        })
    }

    /// Adds a sample whose metadata is a named row; returns its sample id.
    pub fn add(&mut self, payload: &[u8], row: &Row) -> Result<u64, RemoteError> {
        Ok(self.writer.add(payload, row)?)
    }

    /// Adds a sample whose metadata values are given in schema order; returns its sample id.
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

    /// The prefix the cache is published to.
    pub fn url(&self) -> &str {
        self.to.url()
    }

    /// The local cache directory being written (inside the staging directory).
    pub fn staging_path(&self) -> &Path {
        self.writer.path()
    }

    /// The staging writer itself, for code written against `CacheWriter` (it cannot finish
    /// it: `finish` takes the writer by value).
    pub fn staging_writer(&mut self) -> &mut CacheWriter {
        &mut self.writer
    }

    /// Finishes the staged cache, publishes it, and removes the staging directory (also on
    /// failure: nothing is published then, and the uploaded objects stay; see
    /// [`PublishOptions::overwrite_partial`]).
    pub fn finish(self) -> Result<RemoteCacheSummary, RemoteError> {
        let cache = self.writer.finish()?;
        let publish = publish_cache(&cache.path, &self.to, &self.publish)?;
        let staging_path = self.staging.path().to_path_buf();
        self.staging
            .close()
            .map_err(|source| RemoteError::LocalFile {
                path: staging_path,
                action: "remove staging directory",
                source,
            })?;
        Ok(RemoteCacheSummary { cache, publish })
    }
}

/// A local or a remote writer, from one [`StoreLocation`].
#[derive(Debug)]
pub enum AnyCacheWriter {
    /// Writes the cache directory in place.
    Local(CacheWriter),
    /// Stages locally, publishes on `finish`.
    Remote(RemoteCacheWriter),
}

/// A finished cache, local or remote.
#[derive(Debug, Clone)]
pub struct FinishedCache {
    /// What was packed (for a remote cache its `path` is the removed staging directory).
    pub cache: CacheSummary,
    /// The upload, for a remote cache.
    pub publish: Option<PublishReport>,
}

/// Creates a writer for `location`: a `CacheWriter` on a local directory, a
/// [`RemoteCacheWriter`] on a prefix (using `remote`).
pub fn create_writer(
    location: &StoreLocation,
    options: WriterOptions,
    remote: RemoteWriterOptions,
) -> Result<AnyCacheWriter, RemoteError> {
    match location {
        StoreLocation::Local(dir) => Ok(AnyCacheWriter::Local(CacheWriter::create(dir, options)?)),
        StoreLocation::Remote(to) => Ok(AnyCacheWriter::Remote(RemoteCacheWriter::create(
            to.clone(),
            options,
            remote,
        )?)),
    }
}

impl AnyCacheWriter {
    /// The `CacheWriter` samples go into (the staging writer of a remote one).
    pub fn cache_writer(&mut self) -> &mut CacheWriter {
        match self {
            Self::Local(writer) => writer,
            Self::Remote(writer) => writer.staging_writer(),
        }
    }

    /// Adds a sample whose metadata is a named row; returns its sample id.
    pub fn add(&mut self, payload: &[u8], row: &Row) -> Result<u64, RemoteError> {
        Ok(self.cache_writer().add(payload, row)?)
    }

    /// Adds a sample whose metadata values are given in schema order; returns its sample id.
    pub fn add_values(
        &mut self,
        payload: &[u8],
        values: &[ValueRef<'_>],
    ) -> Result<u64, RemoteError> {
        Ok(self.cache_writer().add_values(payload, values)?)
    }

    /// Finishes (and, for a remote cache, publishes) the cache.
    pub fn finish(self) -> Result<FinishedCache, RemoteError> {
        match self {
            Self::Local(writer) => Ok(FinishedCache {
                cache: writer.finish()?,
                publish: None,
            }),
            Self::Remote(writer) => {
                let done = writer.finish()?;
                Ok(FinishedCache {
                    cache: done.cache,
                    publish: Some(done.publish),
                })
            }
        }
    }
}
