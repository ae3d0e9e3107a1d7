//! From a command-line argument to an open collection, by object-access's one reading of paths
//! and URLs and the reader's one open of a location (`Atlas::open_location`), which the Python
//! package uses too.

use atlas::Atlas;
use object_access::{LocationError, StoreLocation};

use crate::error::CliError;

/// Parses `collection`: a malformed URL is a usage error, a store that cannot be set up (an
/// unknown scheme, a bad option in the environment) a store error.
pub(crate) fn place(collection: &str) -> Result<StoreLocation, CliError> {
    StoreLocation::parse(collection).map_err(|error| match error {
        error @ LocationError::Malformed { .. } => CliError::Usage(error.to_string()),
        LocationError::Store { location, source } => CliError::Store {
            collection: location,
            source,
        },
    })
}

/// Opens a collection named by a local directory or an object-store URL (`version`: that
/// version of a growing collection, else the latest); a directory that does not exist is not a
/// collection.
pub(crate) async fn open(collection: &str, version: Option<u64>) -> Result<Atlas, CliError> {
    Ok(Atlas::open_location_version(&place(collection)?, version, |store| store).await?)
}
