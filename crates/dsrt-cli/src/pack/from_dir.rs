//! `dsrt pack --from-dir`: one sample per regular file below a directory.

use super::target::OutputDir;
use super::PackTarget;
use crate::error::CliError;
use crate::progress::Progress;
use datasetrt::{CacheSummary, Column, ColumnType, Schema, ValueRef};
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The metadata of a file sample: its relative path and its size.
fn schema() -> Result<Schema, CliError> {
    Schema::new(vec![
        Column::new("path", ColumnType::Utf8, false),
        Column::new("size", ColumnType::Int64, false),
    ])
    .map_err(|e| CliError::Invalid(e.to_string()))
}

/// Packs every regular file below `root`, in sorted relative-path order.
pub(crate) fn pack(
    root: &Path,
    target: &PackTarget,
    out: OutputDir,
) -> Result<CacheSummary, CliError> {
    let files = list_files(root)?;
    let mut payload = Vec::new();
    out.write(target, schema()?, |writer| {
        let progress = Progress::samples("packing", Some(files.len() as u64));
        for relative in &files {
            let full = root.join(relative);
            let name = relative.to_str().ok_or_else(|| {
                CliError::Invalid(format!(
                    "{}: file name is not valid UTF-8; the path column is utf8",
                    full.display()
                ))
            })?;
            payload.clear();
            File::open(&full)
                .and_then(|mut f| f.read_to_end(&mut payload))
                .map_err(CliError::io(&full, "read"))?;
            let size = i64::try_from(payload.len()).map_err(|_| {
                CliError::Invalid(format!(
                    "{}: larger than an int64 can count",
                    full.display()
                ))
            })?;
            writer.add_values(&payload, &[ValueRef::Utf8(name), ValueRef::Int64(size)])?;
            progress.inc();
        }
        progress.finish();
        Ok(())
    })
}

/// Relative paths of the regular files below `root`, sorted component by component (so a
/// directory's files stay together). Symbolic links are not followed, which also keeps a
/// link cycle from looping.
fn list_files(root: &Path) -> Result<Vec<PathBuf>, CliError> {
    let mut files = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        // `root.join("")` would add a trailing slash to messages about the root itself.
        let dir = if relative.as_os_str().is_empty() {
            root.to_path_buf()
        } else {
            root.join(&relative)
        };
        for entry in fs::read_dir(&dir).map_err(CliError::io(&dir, "read directory"))? {
            let entry = entry.map_err(CliError::io(&dir, "read directory"))?;
            let file_type = entry
                .file_type()
                .map_err(CliError::io(entry.path(), "stat"))?;
            let child = relative.join(entry.file_name());
            if file_type.is_dir() {
                pending.push(child);
            } else if file_type.is_file() {
                files.push(child);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_regular_files_recursively_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("a/b")).unwrap();
        for name in ["z.txt", "a.txt", "a/b/c.bin", "a/x"] {
            fs::write(root.join(name), name).unwrap();
        }
        std::os::unix::fs::symlink(root.join("z.txt"), root.join("link")).unwrap();
        let files = list_files(root).unwrap();
        let names: Vec<_> = files.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(names, ["a/b/c.bin", "a/x", "a.txt", "z.txt"]);
    }
}
