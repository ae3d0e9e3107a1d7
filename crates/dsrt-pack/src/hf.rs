//! Hugging Face `datasets` directories written by `Dataset.save_to_disk`: `state.json` lists
//! the data files (`_data_files`, in row order), each an Arrow IPC stream of the dataset's
//! table; `dataset_info.json` (features, description) is not needed to read the rows.

use crate::table::{ColumnPlan, RowSink};
use crate::PackError;
use arrow_ipc::reader::StreamReader;
use arrow_schema::Schema as ArrowSchema;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The data files of the `save_to_disk` dataset in `dir`, or `None` when `dir` holds no
/// `state.json` (so is not one). A `DatasetDict` (`dataset_dict.json`, one directory per
/// split) is refused naming its splits: each split is packed on its own.
pub(crate) fn data_files(dir: &Path) -> Result<Option<Vec<PathBuf>>, PackError> {
    let state_path = dir.join("state.json");
    let text = match std::fs::read(&state_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dict = dir.join("dataset_dict.json");
            if let Ok(bytes) = std::fs::read(&dict) {
                let splits = serde_json::from_slice::<serde_json::Value>(&bytes)
                    .ok()
                    .and_then(|v| v.get("splits").cloned())
                    .map_or_else(|| "?".to_owned(), |s| s.to_string());
                return Err(PackError::Input {
                    input: dict.display().to_string(),
                    reason: format!(
                        "a Hugging Face DatasetDict (splits {splits}); pack one split's \
                         directory at a time"
                    ),
                });
            }
            return Ok(None);
        }
        Err(e) => return Err(PackError::io(&state_path, "read")(e)),
    };
    let bad = |reason: &str| PackError::Input {
        input: state_path.display().to_string(),
        reason: format!("not a Hugging Face save_to_disk state: {reason}"),
    };
    let state: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| bad(&e.to_string()))?;
    let listed = state
        .get("_data_files")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| bad("no `_data_files` list"))?;
    let mut files = Vec::with_capacity(listed.len());
    for entry in listed {
        let name = entry
            .get("filename")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| bad("a `_data_files` entry without a `filename` string"))?;
        // The names are the dataset's own; one leading out of the directory is refused
        // rather than followed.
        let relative = Path::new(name);
        if relative.is_absolute()
            || relative
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(bad(&format!(
                "data file name {name:?} leaves the directory"
            )));
        }
        files.push(dir.join(relative));
    }
    if files.is_empty() {
        return Err(bad("`_data_files` is empty"));
    }
    Ok(Some(files))
}

fn open_stream(
    path: &Path,
    projection: Option<Vec<usize>>,
) -> Result<StreamReader<std::io::BufReader<File>>, PackError> {
    let file = File::open(path).map_err(PackError::io(path, "open"))?;
    StreamReader::try_new_buffered(file, projection).map_err(PackError::arrow(path))
}

/// The schema of the stream at `path` (its first message only).
pub(crate) fn stream_schema(path: &Path) -> Result<ArrowSchema, PackError> {
    Ok(open_stream(path, None)?.schema().as_ref().clone())
}

/// Reads every record batch of the stream at `path`, only the planned columns, into `sink`.
pub(crate) fn read_stream(
    path: &Path,
    plan: &ColumnPlan,
    sink: &mut RowSink<'_, '_>,
) -> Result<(), PackError> {
    let schema = stream_schema(path)?;
    let reader = open_stream(path, Some(plan.projection(&schema)))?;
    for batch in reader {
        sink.batch(&batch.map_err(PackError::arrow(path))?)?;
    }
    Ok(())
}
