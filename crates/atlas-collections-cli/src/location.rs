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

/// Which version of a growing collection the read commands open (`--at-version`, `--at-tag`).
#[derive(Debug, Clone, Default)]
pub(crate) struct At {
    /// That version.
    pub(crate) version: Option<u64>,
    /// The version this tag names.
    pub(crate) tag: Option<String>,
}

/// Opens a collection named by a local directory or an object-store URL (`at`: a version or a
/// tag of a growing collection, else the latest); a directory that does not exist is not a
/// collection.
pub(crate) async fn open(collection: &str, at: &At) -> Result<Atlas, CliError> {
    let at = atlas::At::of(at.version, at.tag.as_deref());
    Ok(Atlas::open_location_at(&place(collection)?, at, |store| store).await?)
}
