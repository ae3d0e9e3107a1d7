use crate::DatasetError;
use arrow_array::{Array, RecordBatch, UInt64Array};
use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType, Field, Schema};
use durable_fs::{publish, StdFileSystem};
use std::path::Path;
use std::sync::Arc;

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

fn arrow_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("cache_id", DataType::UInt64, false),
        Field::new("sample_id", DataType::UInt64, false),
    ]))
}

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
        let bytes = self.to_ipc_bytes().map_err(|reason| DatasetError::Table {
            path: path.to_path_buf(),
            reason,
        })?;
        publish(&StdFileSystem, path, TABLE_TEMP_PREFIX, &bytes)?;
        Ok(())
    }

    fn to_ipc_bytes(&self) -> Result<Vec<u8>, String> {
        let cache_ids = UInt64Array::from_iter_values(self.keys.iter().map(|k| k.cache_id));
        let sample_ids = UInt64Array::from_iter_values(self.keys.iter().map(|k| k.sample_id));
        let schema = arrow_schema();
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(cache_ids), Arc::new(sample_ids)],
        )
        .map_err(|e| e.to_string())?;
        let mut bytes = Vec::new();
        let mut writer = FileWriter::try_new(&mut bytes, &schema).map_err(|e| e.to_string())?;
        writer.write(&batch).map_err(|e| e.to_string())?;
        writer.finish().map_err(|e| e.to_string())?;
        drop(writer);
        Ok(bytes)
    }

    /// Loads a table saved by [`SampleTable::save`] (or any Arrow IPC file with those two
    /// columns).
    pub fn load(path: &Path) -> Result<Self, DatasetError> {
        let fail = |reason: String| DatasetError::Table {
            path: path.to_path_buf(),
            reason,
        };
        let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
        let reader = FileReader::try_new(std::io::BufReader::new(file), None)
            .map_err(|e| fail(e.to_string()))?;
        let schema = reader.schema();
        let column = |name: &str| {
            schema
                .index_of(name)
                .ok()
                .filter(|&i| schema.field(i).data_type() == &DataType::UInt64)
                .ok_or_else(|| fail(format!("no UInt64 column {name:?}")))
        };
        let (cache_col, sample_col) = (column("cache_id")?, column("sample_id")?);
        let mut keys = Vec::new();
        for batch in reader {
            let batch = batch.map_err(|e| fail(e.to_string()))?;
            let as_u64 = |i: usize| {
                batch
                    .column(i)
                    .as_any()
                    .downcast_ref::<UInt64Array>()
                    .cloned()
            };
            let (caches, samples) = as_u64(cache_col)
                .zip(as_u64(sample_col))
                .ok_or_else(|| fail("columns are not UInt64".into()))?;
            if caches.null_count() > 0 || samples.null_count() > 0 {
                return Err(fail("null keys".into()));
            }
            keys.extend(caches.values().iter().zip(samples.values()).map(
                |(&cache_id, &sample_id)| SampleKey {
                    cache_id,
                    sample_id,
                },
            ));
        }
        Ok(Self { keys })
    }
}
