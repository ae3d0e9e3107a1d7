//! From a command-line argument to an open collection.

use atlas::object_store::path::Path;
use atlas::object_store::ObjectStore;
use atlas::Atlas;
use std::sync::Arc;

use crate::error::CliError;

/// Opens a collection named by a local directory or an object-store URL.
pub(crate) async fn open(collection: &str) -> Result<Atlas, CliError> {
    if let Some(dir) = file_url_path(collection)? {
        // A `file://` URL is local disk: the flock delete path, not last-writer-wins.
        Ok(Atlas::open_local(dir).await?)
    } else if collection.contains("://") {
        let (store, prefix) = parse_url(collection)?;
        Ok(Atlas::open(store, &prefix).await?)
    } else {
        Ok(Atlas::open_local(collection).await?)
    }
}

/// The local directory a `file://` URL names, if `collection` is one.
pub(crate) fn file_url_path(collection: &str) -> Result<Option<std::path::PathBuf>, CliError> {
    if !collection.starts_with("file://") {
        return Ok(None);
    }
    let url =
        url::Url::parse(collection).map_err(|e| CliError::Usage(format!("{collection}: {e}")))?;
    let path = url
        .to_file_path()
        .map_err(|()| CliError::Usage(format!("{collection}: not a local file path")))?;
    Ok(Some(path))
}

/// A store and prefix for a URL, configured from `AWS_*` environment variables.
pub(crate) fn parse_url(collection: &str) -> Result<(Arc<dyn ObjectStore>, Path), CliError> {
    let url =
        url::Url::parse(collection).map_err(|e| CliError::Usage(format!("{collection}: {e}")))?;
    let options = std::env::vars()
        .filter(|(k, _)| k.starts_with("AWS_"))
        .map(|(k, v)| (k.to_ascii_lowercase(), v));
    let (store, prefix) =
        object_store::parse_url_opts(&url, options).map_err(|source| CliError::Store {
            collection: collection.to_owned(),
            source,
        })?;
    Ok((Arc::from(store), prefix))
}
