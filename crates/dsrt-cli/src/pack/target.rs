//! The `--out` directory: refused early when it holds anything, and cleaned up when packing
//! fails, so a failed `dsrt pack` can simply be run again. An `--out` URL is a prefix: checked
//! early too, packed into a staging directory and published (`remote_out`).

use super::remote_out::RemoteOut;
use super::PackTarget;
use crate::error::CliError;
use datasetrt::{CacheSummary, CacheWriter, WriterOptions};
use dsrt_remote::{RemoteWriterOptions, StoreLocation};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The output directory, checked to be empty or absent before any input is read.
#[derive(Debug)]
pub(crate) struct OutputDir {
    path: PathBuf,
    /// Set when `--out` is a store URL; `path` is then unused.
    remote: Option<RemoteOut>,
}

/// Checks `out` before any input is read: the writer refuses a non-empty directory too, but
/// only after schema inference has read the whole input once.
pub(crate) fn prepare(out: &Path, target: &PackTarget) -> Result<OutputDir, CliError> {
    if let Some(remote) = RemoteOut::prepare(out, target)? {
        return Ok(OutputDir {
            path: out.to_path_buf(),
            remote: Some(remote),
        });
    }
    match fs::read_dir(out).map(|mut entries| entries.next().is_none()) {
        Ok(false) => Err(CliError::OutputNotEmpty {
            path: out.to_path_buf(),
        }),
        Ok(true) => Ok(OutputDir {
            path: out.to_path_buf(),
            remote: None,
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(OutputDir {
            path: out.to_path_buf(),
            remote: None,
        }),
        Err(source) => Err(CliError::Io {
            path: out.to_path_buf(),
            action: "read output directory",
            source,
        }),
    }
}

impl OutputDir {
    /// Creates a writer with `options`, runs `fill` on it and publishes the cache.
    ///
    /// If anything fails before manifest.json is in place, the files the writer made are
    /// removed (and the directory, if this run created it). Only the cache's own file names
    /// are removed, never anything else that may have appeared in the directory.
    pub(crate) fn write(
        self,
        options: WriterOptions,
        fill: impl FnOnce(&mut CacheWriter) -> Result<(), CliError>,
    ) -> Result<CacheSummary, CliError> {
        let (location, remote) = match self.remote {
            Some(remote) => {
                let (to, remote) = remote.into_parts();
                (StoreLocation::Remote(to), remote)
            }
            None => (
                StoreLocation::Local(self.path),
                RemoteWriterOptions::default(),
            ),
        };
        let finished = dsrt_remote::write_cache_at(&location, options, remote, fill)?;
        // A prefix's summary names the prefix, not the staging directory it was written in.
        let path = PathBuf::from(finished.location());
        Ok(CacheSummary {
            path,
            ..finished.cache
        })
    }
}
