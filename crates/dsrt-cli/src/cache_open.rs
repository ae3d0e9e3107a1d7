//! Opening a cache named on the command line.

use crate::error::CliError;
use datasetrt::{Cache, OpenOptions};
use std::io;
use std::path::Path;

/// Opens the cache at `path`.
///
/// A path that does not exist, or is not a directory, is reported as such: the reader alone
/// would call it an incomplete cache (no manifest.json), which sends a user who mistyped the
/// path looking for a broken writer.
pub(crate) fn open_cache(path: &Path, options: OpenOptions) -> Result<Cache, CliError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(Cache::open(path, options)?),
        Ok(_) => Err(CliError::Io {
            path: path.to_path_buf(),
            action: "open cache",
            source: io::Error::new(io::ErrorKind::InvalidInput, "not a directory"),
        }),
        Err(source) => Err(CliError::Io {
            path: path.to_path_buf(),
            action: "open cache",
            source,
        }),
    }
}
