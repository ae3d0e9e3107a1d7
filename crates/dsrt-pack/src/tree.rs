//! File-tree inputs: one sample per regular file ([`FileTree`]), and the ImageFolder layout
//! ([`ImageFolder`]: `root/<class>/<file>`, torchvision's).

use crate::{Convert, Emit, PackError, PlanAhead, PlannedSampleFn};
use dsrt_schema::{Column, ColumnType, Schema, Value, ValueRef};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Files per unit: enough that handing a unit over costs nothing next to reading it, few
/// enough that the jobs share the tail of a tree evenly.
const FILES_PER_UNIT: usize = 32;

/// Relative paths of the regular files below `root`, sorted component by component (so a
/// directory's files stay together). Symbolic links are not followed, which also keeps a link
/// cycle from looping.
pub fn list_files(root: &Path) -> Result<Vec<PathBuf>, PackError> {
    let mut files = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        // `root.join("")` would add a trailing slash to messages about the root itself.
        let dir = if relative.as_os_str().is_empty() {
            root.to_path_buf()
        } else {
            root.join(&relative)
        };
        for entry in fs::read_dir(&dir).map_err(PackError::io(&dir, "read directory"))? {
            let entry = entry.map_err(PackError::io(&dir, "read directory"))?;
            let file_type = entry
                .file_type()
                .map_err(PackError::io(entry.path(), "stat"))?;
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

/// The relative path of a file as the utf8 value the cache stores.
fn utf8_path(root: &Path, relative: &Path) -> Result<String, PackError> {
    utf8_path_ref(root, relative).map(str::to_owned)
}

fn utf8_path_ref<'p>(root: &Path, relative: &'p Path) -> Result<&'p str, PackError> {
    relative.to_str().ok_or_else(|| PackError::Input {
        input: root.join(relative).display().to_string(),
        reason: "the file name is not valid UTF-8; the path column is utf8".into(),
    })
}

fn read_file(path: &Path) -> Result<Vec<u8>, PackError> {
    let mut payload = Vec::new();
    fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut payload))
        .map_err(PackError::io(path, "read"))?;
    Ok(payload)
}

/// Reads a file whose size the scan recorded into `payload`; a file that changed size since
/// is refused, since the shards were planned on its old size.
fn read_planned(path: &Path, len: u64, payload: &mut Vec<u8>) -> Result<(), PackError> {
    payload.clear();
    let expected = usize::try_from(len).map_err(|_| PackError::Input {
        input: path.display().to_string(),
        reason: "larger than this machine can address".into(),
    })?;
    // One byte more than planned, so growth shows as a longer read.
    payload.reserve(expected + 1);
    fs::File::open(path)
        .and_then(|f| f.take(len + 1).read_to_end(payload))
        .map_err(PackError::io(path, "read"))?;
    if payload.len() != expected {
        return Err(PackError::Input {
            input: path.display().to_string(),
            reason: format!(
                "changed size while being packed (listed at {len} bytes, read {} bytes); the \
                 input must not change during a run",
                payload.len()
            ),
        });
    }
    Ok(())
}

/// The sizes of `files` (relative to `root`), as the scan records them.
fn with_sizes<T>(
    root: &Path,
    files: Vec<T>,
    relative: impl Fn(&T) -> &Path,
) -> Result<Vec<(T, u64)>, PackError> {
    files
        .into_iter()
        .map(|file| {
            let full = root.join(relative(&file));
            let len = fs::symlink_metadata(&full)
                .map_err(PackError::io(&full, "stat"))?
                .len();
            Ok((file, len))
        })
        .collect()
}

fn size_value(path: &Path, len: usize) -> Result<Value, PackError> {
    i64::try_from(len)
        .map(Value::Int64)
        .map_err(|_| PackError::Input {
            input: path.display().to_string(),
            reason: "larger than an int64 can count".into(),
        })
}

/// One sample per regular file below a directory, in sorted relative-path order: payload the
/// file's bytes, metadata `path` (relative, utf8) and `size` (int64).
#[derive(Debug)]
pub struct FileTree {
    root: PathBuf,
    /// (relative path, size at the scan) per file, in cache order, in units.
    units: Vec<Vec<(PathBuf, u64)>>,
    files: usize,
}

impl FileTree {
    /// Lists the files below `root`, with their sizes.
    pub fn scan(root: &Path) -> Result<Self, PackError> {
        let files = with_sizes(root, list_files(root)?, |p| p.as_path())?;
        Ok(Self {
            root: root.to_path_buf(),
            files: files.len(),
            units: files.chunks(FILES_PER_UNIT).map(<[_]>::to_vec).collect(),
        })
    }

    /// The schema of its samples.
    pub fn schema() -> Schema {
        Schema::new(vec![
            Column::new("path", ColumnType::Utf8, false),
            Column::new("size", ColumnType::Int64, false),
        ])
        .unwrap_or_else(|e| unreachable!("two distinct column names: {e}"))
    }

    /// How many samples it makes.
    pub fn len(&self) -> usize {
        self.files
    }

    /// Whether the tree holds no file.
    pub fn is_empty(&self) -> bool {
        self.files == 0
    }
}

impl Convert for FileTree {
    type Unit = Vec<(PathBuf, u64)>;

    fn cache_schema(&self) -> Schema {
        FileTree::schema()
    }

    fn units(&self) -> &[Self::Unit] {
        &self.units
    }

    fn convert(&self, unit: &Self::Unit, emit: &mut Emit<'_>) -> Result<(), PackError> {
        for (relative, _) in unit {
            let full = self.root.join(relative);
            let name = utf8_path(&self.root, relative)?;
            let payload = read_file(&full)?;
            let size = size_value(&full, payload.len())?;
            emit.sample(
                || full.display().to_string(),
                payload,
                vec![Value::Utf8(name), size],
            )?;
        }
        Ok(())
    }

    fn plan_ahead(&self) -> Option<&dyn PlanAhead<Self::Unit>> {
        Some(self)
    }
}

/// The ImageFolder layout: every regular file below `root/<class>/` (recursively) is a
/// sample of that class; classes are the subdirectories of `root` in sorted order, files in
/// sorted relative-path order within a class (torchvision's order). Payload the file's bytes,
/// metadata `label` (int64, the class's position), `class` (utf8) and `path` (utf8, relative
/// to `root`). Files directly in `root` belong to no class and are refused.
#[derive(Debug)]
pub struct ImageFolder {
    root: PathBuf,
    classes: Vec<String>,
    /// ((label, relative path), size at the scan) per file, in cache order, in units.
    units: Vec<Vec<((i64, PathBuf), u64)>>,
    files: usize,
}

impl ImageFolder {
    /// Lists the classes and files below `root`.
    pub fn scan(root: &Path) -> Result<Self, PackError> {
        let mut classes = Vec::new();
        for entry in fs::read_dir(root).map_err(PackError::io(root, "read directory"))? {
            let entry = entry.map_err(PackError::io(root, "read directory"))?;
            let file_type = entry
                .file_type()
                .map_err(PackError::io(entry.path(), "stat"))?;
            let name = entry.file_name();
            if file_type.is_dir() {
                let class = name.to_str().ok_or_else(|| PackError::Input {
                    input: entry.path().display().to_string(),
                    reason: "the class directory's name is not valid UTF-8".into(),
                })?;
                classes.push(class.to_owned());
            } else if file_type.is_file() {
                return Err(PackError::Input {
                    input: entry.path().display().to_string(),
                    reason: "a file directly in an ImageFolder root belongs to no class \
                             (expected root/<class>/<file>)"
                        .into(),
                });
            }
        }
        classes.sort();
        let mut files = Vec::new();
        for (label, class) in classes.iter().enumerate() {
            let label = i64::try_from(label).unwrap_or(i64::MAX);
            let dir = Path::new(class);
            for relative in list_files(&root.join(dir))? {
                files.push((label, dir.join(relative)));
            }
        }
        let files = with_sizes(root, files, |(_, p)| p.as_path())?;
        Ok(Self {
            root: root.to_path_buf(),
            classes,
            files: files.len(),
            units: files.chunks(FILES_PER_UNIT).map(<[_]>::to_vec).collect(),
        })
    }

    /// The schema of its samples.
    pub fn schema() -> Schema {
        Schema::new(vec![
            Column::new("label", ColumnType::Int64, false),
            Column::new("class", ColumnType::Utf8, false),
            Column::new("path", ColumnType::Utf8, false),
        ])
        .unwrap_or_else(|e| unreachable!("three distinct column names: {e}"))
    }

    /// The class names, in label order.
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// How many samples it makes.
    pub fn len(&self) -> usize {
        self.files
    }

    /// Whether the folder holds no file.
    pub fn is_empty(&self) -> bool {
        self.files == 0
    }
}

impl PlanAhead<Vec<(PathBuf, u64)>> for FileTree {
    fn plan_unit(
        &self,
        unit: &Vec<(PathBuf, u64)>,
        sample: &mut PlannedSampleFn<'_>,
    ) -> Result<(), PackError> {
        for (relative, len) in unit {
            let full = || self.root.join(relative);
            let payload_len = usize::try_from(*len).map_err(|_| PackError::Input {
                input: full().display().to_string(),
                reason: "larger than this machine can address".into(),
            })?;
            let size = i64::try_from(*len).map_err(|_| PackError::Input {
                input: full().display().to_string(),
                reason: "larger than an int64 can count".into(),
            })?;
            let path = utf8_path_ref(&self.root, relative)?;
            sample(payload_len, &[ValueRef::Utf8(path), ValueRef::Int64(size)])?;
        }
        Ok(())
    }

    fn read_payload(
        &self,
        unit: &Vec<(PathBuf, u64)>,
        index: usize,
        payload: &mut Vec<u8>,
    ) -> Result<(), PackError> {
        let (relative, len) = &unit[index];
        read_planned(&self.root.join(relative), *len, payload)
    }
}

impl ImageFolder {
    fn class_of(&self, label: i64) -> &str {
        usize::try_from(label)
            .ok()
            .and_then(|l| self.classes.get(l))
            .map_or("", String::as_str)
    }
}

impl Convert for ImageFolder {
    type Unit = Vec<((i64, PathBuf), u64)>;

    fn cache_schema(&self) -> Schema {
        ImageFolder::schema()
    }

    fn units(&self) -> &[Self::Unit] {
        &self.units
    }

    fn convert(&self, unit: &Self::Unit, emit: &mut Emit<'_>) -> Result<(), PackError> {
        for ((label, relative), _) in unit {
            let full = self.root.join(relative);
            let path = utf8_path(&self.root, relative)?;
            let class = self.class_of(*label).to_owned();
            let payload = read_file(&full)?;
            emit.sample(
                || full.display().to_string(),
                payload,
                vec![Value::Int64(*label), Value::Utf8(class), Value::Utf8(path)],
            )?;
        }
        Ok(())
    }

    fn plan_ahead(&self) -> Option<&dyn PlanAhead<Self::Unit>> {
        Some(self)
    }
}

impl PlanAhead<Vec<((i64, PathBuf), u64)>> for ImageFolder {
    fn plan_unit(
        &self,
        unit: &Vec<((i64, PathBuf), u64)>,
        sample: &mut PlannedSampleFn<'_>,
    ) -> Result<(), PackError> {
        for ((label, relative), len) in unit {
            let payload_len = usize::try_from(*len).map_err(|_| PackError::Input {
                input: self.root.join(relative).display().to_string(),
                reason: "larger than this machine can address".into(),
            })?;
            let class = self.class_of(*label);
            let path = utf8_path_ref(&self.root, relative)?;
            sample(
                payload_len,
                &[
                    ValueRef::Int64(*label),
                    ValueRef::Utf8(class),
                    ValueRef::Utf8(path),
                ],
            )?;
        }
        Ok(())
    }

    fn read_payload(
        &self,
        unit: &Vec<((i64, PathBuf), u64)>,
        index: usize,
        payload: &mut Vec<u8>,
    ) -> Result<(), PackError> {
        let ((_, relative), len) = &unit[index];
        read_planned(&self.root.join(relative), *len, payload)
    }
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

    #[test]
    fn image_folder_classes_are_sorted_and_labelled_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for name in ["dog/2.jpg", "dog/1.jpg", "cat/x/9.jpg", "ant/a.jpg"] {
            let path = root.join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, name).unwrap();
        }
        let folder = ImageFolder::scan(root).unwrap();
        assert_eq!(folder.classes(), ["ant", "cat", "dog"]);
        let files: Vec<_> = folder.units.concat();
        let files: Vec<_> = files
            .iter()
            .map(|((l, p), _)| (*l, p.to_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            files,
            [
                (0, "ant/a.jpg".to_owned()),
                (1, "cat/x/9.jpg".to_owned()),
                (2, "dog/1.jpg".to_owned()),
                (2, "dog/2.jpg".to_owned())
            ]
        );
        fs::write(root.join("stray.jpg"), b"").unwrap();
        let error = ImageFolder::scan(root).unwrap_err();
        assert!(error.to_string().contains("stray.jpg"), "{error}");
    }
}
