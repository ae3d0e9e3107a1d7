use crate::DatasetError;
use dsrt_metadata::{decode_u64_columns, encode_u64_columns, U64ColumnsError};
use durable_fs::{publish, StdFileSystem};
use std::path::Path;

/// Temporary-file prefix for sample tables being saved.
const TABLE_TEMP_PREFIX: &str = ".sample-table.tmp-";

/// A sample's address in a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SampleKey {
    /// The cache's id (v2: list position; v3: stored id).
    pub cache_id: u64,
    /// The sample's physical row in that cache.
    pub sample_id: u64,
}

/// An ordered list of sample keys, saved as an Arrow IPC file with two non-null `UInt64`
/// columns, `cache_id` and `sample_id`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleTable {
    keys: Vec<SampleKey>,
}

/// The table's two columns, in file order.
const COLUMNS: [&str; 2] = ["cache_id", "sample_id"];

impl SampleTable {
    /// A table of `keys`.
    pub fn new(keys: Vec<SampleKey>) -> Self {
        Self { keys }
    }

    /// The keys in order.
    pub fn keys(&self) -> &[SampleKey] {
        &self.keys
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Saves the table crash-safely (temporary file, fsync, rename, directory fsync).
    pub fn save(&self, path: &Path) -> Result<(), DatasetError> {
        let bytes = self.to_ipc_bytes().map_err(|e| DatasetError::Table {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        publish(&StdFileSystem, path, TABLE_TEMP_PREFIX, &bytes)?;
        Ok(())
    }

    /// The table as the bytes of an Arrow IPC file with two non-null `UInt64` columns,
    /// `cache_id` and `sample_id`.
    pub fn to_ipc_bytes(&self) -> Result<Vec<u8>, U64ColumnsError> {
        let cache_ids: Vec<u64> = self.keys.iter().map(|k| k.cache_id).collect();
        let sample_ids: Vec<u64> = self.keys.iter().map(|k| k.sample_id).collect();
        encode_u64_columns(COLUMNS, [&cache_ids, &sample_ids])
    }

    /// Decodes the bytes of an Arrow IPC file with those two columns (others are ignored).
    /// The bytes are untrusted: anything malformed is an error, never a panic.
    pub fn from_ipc_bytes(bytes: &[u8]) -> Result<Self, U64ColumnsError> {
        let [caches, samples] = decode_u64_columns(bytes, COLUMNS)?;
        let keys = caches
            .into_iter()
            .zip(samples)
            .map(|(cache_id, sample_id)| SampleKey {
                cache_id,
                sample_id,
            })
            .collect();
        Ok(Self { keys })
    }

    /// Loads a table saved by [`SampleTable::save`] (or any Arrow IPC file with those two
    /// columns).
    pub fn load(path: &Path) -> Result<Self, DatasetError> {
        let fail = |reason: String| DatasetError::Table {
            path: path.to_path_buf(),
            reason,
        };
        let bytes = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
        Self::from_ipc_bytes(&bytes).map_err(|e| fail(e.to_string()))
    }
}
