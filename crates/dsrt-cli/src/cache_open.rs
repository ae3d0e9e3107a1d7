//! Opening a cache named on the command line: a directory, a `file://` URL, or a store URL
//! (`s3://bucket/prefix`, ...) opened through `dsrt-remote` and the local cache directory.

use crate::error::CliError;
use crate::store_args::StoreArgs;
use datasetrt::{Cache, CacheError, OpenOptions};
use dsrt_remote::{open_remote, StoreLocation};
use std::io;
use std::path::{Path, PathBuf};

/// A cache opened from a command-line argument.
#[derive(Debug)]
pub(crate) struct OpenedCache {
    /// The cache.
    pub(crate) cache: Cache,
    /// The store URL it was opened from; `None` for a local directory.
    pub(crate) url: Option<String>,
}

impl OpenedCache {
    /// What messages and reports call the cache: its URL, or its directory.
    pub(crate) fn name(&self) -> &Path {
        self.url.as_deref().map_or(self.cache.path(), Path::new)
    }

    /// `error` (from reading this cache) as the CLI's error, naming the URL of a remote
    /// cache as well as the local copy the reader names.
    pub(crate) fn read_error(&self, error: CacheError) -> CliError {
        match &self.url {
            Some(url) => CliError::RemoteCache {
                url: url.clone(),
                source: Box::new(error),
            },
            None => CliError::Cache(error),
        }
    }
}

/// Whether `arg` looks like a URL (`scheme://...`) rather than a path.
pub(crate) fn is_url(arg: &Path) -> bool {
    arg.to_str().is_some_and(|text| text.contains("://"))
}

/// Opens the cache `arg` names: a store URL through `store`'s local cache directory, anything
/// else as a local directory (a `file://` URL becomes its path).
pub(crate) fn open_location(
    arg: &Path,
    options: OpenOptions,
    store: &StoreArgs,
) -> Result<OpenedCache, CliError> {
    let text = match arg.to_str() {
        Some(text) if is_url(arg) => text,
        _ => return open_local(arg, options),
    };
    match StoreLocation::parse(text)? {
        StoreLocation::Local(dir) => open_local(&dir, options),
        StoreLocation::Remote(remote) => {
            let cache = open_remote(&remote, &store.remote_options(options))?;
            Ok(OpenedCache {
                cache,
                url: Some(remote.url().to_owned()),
            })
        }
    }
}

fn open_local(path: &Path, options: OpenOptions) -> Result<OpenedCache, CliError> {
    Ok(OpenedCache {
        cache: open_cache(path, options)?,
        url: None,
    })
}

/// Opens the local cache at `path`.
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

/// Opens every cache of `args`, in order, each with the argument that names it.
pub(crate) fn open_all(
    args: &[PathBuf],
    options: OpenOptions,
    store: &StoreArgs,
) -> Result<Vec<(PathBuf, Cache)>, CliError> {
    args.iter()
        .map(|arg| Ok((arg.clone(), open_location(arg, options, store)?.cache)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scheme_separators_make_urls() {
        assert!(is_url(Path::new("s3://bucket/cache")));
        assert!(is_url(Path::new("file:///tmp/cache")));
        assert!(!is_url(Path::new("cache/")));
        assert!(!is_url(Path::new("/data/s3:/odd")));
    }

    #[test]
    fn a_bad_url_is_an_error_naming_it() {
        let error = open_location(
            Path::new("nosuch://x/y"),
            OpenOptions::default(),
            &StoreArgs::default(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(error.starts_with("nosuch://x/y:"), "{error}");
    }
}
