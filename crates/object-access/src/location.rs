//! From a command-line or API argument to a local directory or an object-store prefix.

use object_store::path::Path;
use object_store::ObjectStore;
use std::fmt;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

/// Why a location names no directory or store.
#[derive(Debug, thiserror::Error)]
pub enum LocationError {
    /// The text is not a URL, or not one of a local file.
    #[error("{location}: {reason}")]
    Malformed {
        /// The location as given.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// object_store cannot build a client for the URL (an unknown scheme, a scheme this build
    /// lacks, a bad option in the environment).
    #[error("{location}: {source}")]
    Store {
        /// The location as given.
        location: String,
        /// What object_store said.
        #[source]
        source: object_store::Error,
    },
}

impl LocationError {
    /// The location as given.
    pub fn location(&self) -> &str {
        match self {
            Self::Malformed { location, .. } | Self::Store { location, .. } => location,
        }
    }

    /// What is wrong, without the location.
    pub fn reason(&self) -> String {
        match self {
            Self::Malformed { reason, .. } => reason.clone(),
            Self::Store { source, .. } => source.to_string(),
        }
    }
}

/// Where a cache, a dataset's sample table or a collection lives.
#[derive(Debug, Clone)]
pub enum StoreLocation {
    /// A local directory: a plain path, or a `file://` URL.
    Local(PathBuf),
    /// A prefix of an object store.
    Remote(RemotePrefix),
}

/// The store options set in the environment: every variable named with a prefix of
/// [`crate::CONFIG_ENV_PREFIXES`], as object_store's lower-case option keys.
fn options_from_env() -> Vec<(String, String)> {
    std::env::vars()
        .filter(|(key, _)| {
            crate::CONFIG_ENV_PREFIXES
                .iter()
                .any(|prefix| key.starts_with(prefix))
        })
        .map(|(key, value)| (key.to_ascii_lowercase(), value))
        .collect()
}

/// A prefix of an object store, with the URL it came from (for messages).
#[derive(Clone)]
pub struct RemotePrefix {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    url: String,
    /// For a prefix parsed from a URL: how to build its client again, and the client of the
    /// process using it. A forked child (a `DataLoader` worker given a parent's cache) must
    /// not use the parent's client: its pooled keep-alive connections are registered with a
    /// runtime whose threads the child does not have, and a request on one waits forever.
    rebuild: Option<Arc<Rebuild>>,
}

struct Rebuild {
    url: url::Url,
    options: Vec<(String, String)>,
    /// The process the client in `store` (or in `child`) belongs to.
    owner: u32,
    child: std::sync::Mutex<Option<(u32, Arc<dyn ObjectStore>)>>,
}

impl fmt::Debug for RemotePrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemotePrefix")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// How a location is named in messages: a directory's path, a prefix's URL.
impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local(dir) => write!(f, "{}", dir.display()),
            Self::Remote(remote) => f.write_str(remote.url()),
        }
    }
}

impl StoreLocation {
    /// Parses `location`: a `file://` URL or a string without `://` is a local directory; any
    /// other URL names a store prefix, configured from the environment as object_store reads
    /// it (`AWS_*` for `s3://`, `GOOGLE_*` for `gs://`, `AZURE_*` for `az://`). URLs of one
    /// store share its client (and its pooled connections) while that configuration holds.
    pub fn parse(location: &str) -> Result<Self, LocationError> {
        Self::parse_with_options(location, &[])
    }

    /// Parses a location given as a path, as [`parse`](Self::parse) does; a path that is not
    /// UTF-8 can be no URL, and is a local directory as it is.
    pub fn from_path(location: &FsPath) -> Result<Self, LocationError> {
        match location.to_str() {
            Some(text) => Self::parse(text),
            None => Ok(Self::Local(location.to_path_buf())),
        }
    }

    /// Parses `location` as [`parse`](Self::parse) does, with store `options` (object_store's
    /// option names, such as `aws_endpoint` or `aws_region`, in any case) given in code: they
    /// take precedence over the environment's. Options for a local directory are refused, as
    /// nothing would read them.
    pub fn parse_with_options(
        location: &str,
        options: &[(String, String)],
    ) -> Result<Self, LocationError> {
        let refuse = |reason: String| LocationError::Malformed {
            location: location.to_owned(),
            reason,
        };
        let is_local = !location.contains("://") || location.starts_with("file://");
        if is_local && !options.is_empty() {
            let keys: Vec<&str> = options.iter().map(|(k, _)| k.as_str()).collect();
            return Err(refuse(format!(
                "store options ({}) apply to object-store URLs, not to a local directory",
                keys.join(", ")
            )));
        }
        if !location.contains("://") {
            return Ok(Self::Local(PathBuf::from(location)));
        }
        let url = url::Url::parse(location).map_err(|e| refuse(e.to_string()))?;
        if url.scheme() == "file" {
            let dir = url
                .to_file_path()
                .map_err(|()| refuse("not a local file path".to_owned()))?;
            return Ok(Self::Local(dir));
        }
        let mut merged = options_from_env();
        for (key, value) in options {
            let key = key.to_ascii_lowercase();
            merged.retain(|(k, _)| *k != key);
            merged.push((key, value.clone()));
        }
        let options = merged;
        let (store, prefix) =
            crate::stores::store_for(&url, options.clone()).map_err(|source| {
                LocationError::Store {
                    location: location.to_owned(),
                    source,
                }
            })?;
        Ok(Self::Remote(RemotePrefix {
            store,
            prefix,
            url: location.trim_end_matches('/').to_owned(),
            rebuild: Some(Arc::new(Rebuild {
                url,
                options,
                owner: std::process::id(),
                child: std::sync::Mutex::new(None),
            })),
        }))
    }

    /// The remote prefix, or `None` for a local directory.
    pub fn as_remote(&self) -> Option<&RemotePrefix> {
        match self {
            Self::Remote(remote) => Some(remote),
            Self::Local(_) => None,
        }
    }
}

impl RemotePrefix {
    /// A prefix of `store` (for stores built in code, such as `InMemory` in tests); `url` is
    /// what messages call it.
    pub fn new(store: Arc<dyn ObjectStore>, prefix: Path, url: impl Into<String>) -> Self {
        Self {
            store,
            prefix,
            url: url.into(),
            rebuild: None,
        }
    }

    /// The store's client for this process: the one the prefix was made with, or, in a forked
    /// child of that process, one of the child's own (for a prefix parsed from a URL; a store
    /// built in code is used as given).
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        let Some(rebuild) = &self.rebuild else {
            return Arc::clone(&self.store);
        };
        let pid = std::process::id();
        if pid == rebuild.owner {
            return Arc::clone(&self.store);
        }
        let mut child = rebuild
            .child
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((owner, store)) = &*child {
            if *owner == pid {
                return Arc::clone(store);
            }
        }
        // The URL built a client once, so building it again fails only if the configuration
        // changed since; the parent's client is then all there is.
        let store = crate::stores::store_for(&rebuild.url, rebuild.options.clone())
            .map_or_else(|_| Arc::clone(&self.store), |(store, _)| store);
        *child = Some((pid, Arc::clone(&store)));
        store
    }

    /// The prefix inside the store.
    pub fn prefix(&self) -> &Path {
        &self.prefix
    }

    /// The URL of the prefix, without a trailing `/`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The object at `relative` (such as `shards/000000.bin`) under the prefix.
    pub fn object(&self, relative: &str) -> Path {
        relative
            .split('/')
            .fold(self.prefix.clone(), |path, part| path.join(part))
    }

    /// The URL of the object at `relative`, for messages.
    pub fn object_url(&self, relative: &str) -> String {
        format!("{}/{relative}", self.url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_and_file_urls_are_local() {
        assert!(matches!(
            StoreLocation::parse("some/dir").unwrap(),
            StoreLocation::Local(p) if p == std::path::Path::new("some/dir")
        ));
        assert!(matches!(
            StoreLocation::parse("file:///tmp/cache").unwrap(),
            StoreLocation::Local(p) if p == std::path::Path::new("/tmp/cache")
        ));
    }

    #[test]
    fn a_path_is_parsed_as_its_text_and_one_that_is_not_utf8_is_local() {
        let url = StoreLocation::from_path(FsPath::new("s3://bucket/caches/one")).unwrap();
        assert_eq!(url.as_remote().unwrap().url(), "s3://bucket/caches/one");
        assert_eq!(url.to_string(), "s3://bucket/caches/one");
        let dir = StoreLocation::parse("file:///tmp/cache").unwrap();
        assert_eq!(dir.to_string(), "/tmp/cache");
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let odd = FsPath::new(std::ffi::OsStr::from_bytes(b"caches/\xff"));
            assert!(matches!(
                StoreLocation::from_path(odd).unwrap(),
                StoreLocation::Local(p) if p == odd
            ));
        }
    }

    #[test]
    fn an_s3_url_names_bucket_prefix_and_objects() {
        let location = StoreLocation::parse("s3://bucket/caches/one/").unwrap();
        let remote = location.as_remote().unwrap();
        assert_eq!(remote.prefix().as_ref(), "caches/one");
        assert_eq!(remote.url(), "s3://bucket/caches/one");
        assert_eq!(
            remote.object("shards/000001.bin").as_ref(),
            "caches/one/shards/000001.bin"
        );
        assert_eq!(
            remote.object_url("manifest.json"),
            "s3://bucket/caches/one/manifest.json"
        );
    }

    #[test]
    fn an_unknown_scheme_is_a_store_error_naming_it() {
        let error = StoreLocation::parse("nosuch://x/y").unwrap_err();
        assert!(matches!(error, LocationError::Store { .. }), "{error:?}");
        assert!(error.to_string().starts_with("nosuch://x/y:"), "{error}");
        assert_eq!(error.location(), "nosuch://x/y");
    }

    #[test]
    fn store_options_in_code_configure_a_url_and_a_local_path_takes_none() {
        let options = [("AWS_REGION".to_owned(), "eu-west-3".to_owned())];
        let location = StoreLocation::parse_with_options("s3://bucket/x", &options).unwrap();
        assert_eq!(location.as_remote().unwrap().prefix().as_ref(), "x");
        for local in ["some/dir", "file:///tmp/x"] {
            let error = StoreLocation::parse_with_options(local, &options).unwrap_err();
            assert!(
                error.reason().contains("store options (AWS_REGION)"),
                "{error}"
            );
        }
        assert!(StoreLocation::parse_with_options("some/dir", &[]).is_ok());
    }

    #[test]
    fn a_file_url_of_another_host_is_malformed() {
        let error = StoreLocation::parse("file://elsewhere/x").unwrap_err();
        assert!(
            matches!(error, LocationError::Malformed { .. }),
            "{error:?}"
        );
    }
}
