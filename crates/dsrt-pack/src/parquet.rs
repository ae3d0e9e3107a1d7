//! Parquet files of a table input, read one row group at a time: the footer once at scan,
//! then each row group (only the columns the cache takes) on the worker that converts it.

use crate::table::{ColumnPlan, RowSink};
use crate::PackError;
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// Rows per record batch: small, so a row group of large payloads is held a slice at a time
/// once decoded.
const BATCH_ROWS: usize = 128;

/// The `*.parquet` files directly in `dir`, sorted by name.
pub(crate) fn files_in(dir: &Path) -> Result<Vec<PathBuf>, PackError> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).map_err(PackError::io(dir, "read directory"))? {
        let entry = entry.map_err(PackError::io(dir, "read directory"))?;
        let path = entry.path();
        let is_file = entry
            .file_type()
            .map_err(PackError::io(&path, "stat"))?
            .is_file();
        if is_file && path.extension().is_some_and(|e| e == "parquet") {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(PackError::Input {
            input: dir.display().to_string(),
            reason: "holds no *.parquet file and no state.json (a Hugging Face save_to_disk \
                     dataset)"
                .into(),
        });
    }
    files.sort();
    Ok(files)
}

/// One Parquet file and its footer.
#[derive(Debug)]
pub(crate) struct ParquetFile {
    path: PathBuf,
    metadata: ArrowReaderMetadata,
}

impl ParquetFile {
    /// Reads the footer of `path`.
    pub(crate) fn open(path: &Path) -> Result<Self, PackError> {
        let file = File::open(path).map_err(PackError::io(path, "open"))?;
        let metadata = ArrowReaderMetadata::load(&file, Default::default())
            .map_err(PackError::parquet(path))?;
        Ok(Self {
            path: path.to_path_buf(),
            metadata,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Its columns as Arrow types.
    pub(crate) fn schema(&self) -> &SchemaRef {
        self.metadata.schema()
    }

    /// The rows of each row group, in order.
    pub(crate) fn row_group_rows(&self) -> impl Iterator<Item = u64> + '_ {
        self.metadata
            .metadata()
            .row_groups()
            .iter()
            .map(|g| u64::try_from(g.num_rows()).unwrap_or(0))
    }

    /// Reads row group `index`, only the planned columns, into `sink`.
    pub(crate) fn read_row_group(
        &self,
        index: usize,
        plan: &ColumnPlan,
        sink: &mut RowSink<'_, '_>,
    ) -> Result<(), PackError> {
        let file = File::open(&self.path).map_err(PackError::io(&self.path, "open"))?;
        let builder =
            ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.metadata.clone());
        let mask = ProjectionMask::roots(builder.parquet_schema(), plan.projection(self.schema()));
        let reader = builder
            .with_row_groups(vec![index])
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(PackError::parquet(&self.path))?;
        for batch in reader {
            let batch = batch.map_err(|source| PackError::Parquet {
                path: self.path.clone(),
                source: source.into(),
            })?;
            sink.batch(&batch)?;
        }
        Ok(())
    }
}
