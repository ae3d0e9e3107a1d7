//! From a command-line argument to an open collection, by object-access's one reading of paths
//! and URLs (the `dsrt` command and both Python packages read theirs the same way).

use atlas::object_store::path::Path;
use atlas::object_store::ObjectStore;
use atlas::Atlas;
use object_access::{LocationError, StoreLocation};
use std::sync::Arc;

use crate::error::CliError;

/// Where a collection argument points.
pub(crate) enum Place {
    /// A local directory (a plain path or a `file://` URL).
    Local(std::path::PathBuf),
    /// A prefix of an object store.
    Remote(Arc<dyn ObjectStore>, Path),
}

/// Parses `collection`: a malformed URL is a usage error, a store that cannot be set up (an
/// unknown scheme, a bad option in the environment) a store error.
pub(crate) fn place(collection: &str) -> Result<Place, CliError> {
    match StoreLocation::parse(collection) {
        Ok(StoreLocation::Local(dir)) => Ok(Place::Local(dir)),
        Ok(StoreLocation::Remote(remote)) => {
            Ok(Place::Remote(remote.store(), remote.prefix().clone()))
        }
        Err(error @ LocationError::Malformed { .. }) => Err(CliError::Usage(error.to_string())),
        Err(LocationError::Store { location, source }) => Err(CliError::Store {
            collection: location,
            source,
        }),
    }
}

/// Opens a collection named by a local directory or an object-store URL; local disk deletes
/// through the directory flock, a store through conditional PUT.
pub(crate) async fn open(collection: &str) -> Result<Atlas, CliError> {
    match place(collection)? {
        Place::Local(dir) => Ok(Atlas::open_local(dir).await?),
        Place::Remote(store, prefix) => Ok(Atlas::open(store, &prefix).await?),
    }
}
