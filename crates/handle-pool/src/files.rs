//! Immutable files by path, opened and mapped when first needed, their handles counted by a
//! [`HandlePool`].

use crate::{HandlePool, Holder};
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

/// A read-only mapping of a whole immutable file, shared: every clone keeps it mapped, and it
/// stays valid after the pool released it or its file was closed, unlinked or evicted.
#[derive(Clone)]
pub struct FileMap(Arc<memmap2::Mmap>);

impl FileMap {
    /// Maps `file` read-only.
    fn of(file: &File) -> io::Result<Self> {
        // SAFETY: the files handed to this crate are immutable while readers are alive (the
        // DatasetRT format makes published cache files so, docs/format/datasetrt.md; the
        // local shard cache replaces a file by rename and evicts by unlink, never truncating
        // or rewriting one); the mapping is read-only and nothing in this process writes the
        // file. A file truncated by another process despite that would make a later access
        // fault (SIGBUS); callers who cannot rule that out read through `LazyFiles::file`.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(file)? };
        Ok(Self(Arc::new(map)))
    }
}

impl std::ops::Deref for FileMap {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for FileMap {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for FileMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileMap")
            .field("len", &self.0.len())
            .finish()
    }
}

/// What identifies a file's contents well enough to notice it was replaced: device, inode,
/// size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileIdentity {
    /// Device id.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub len: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i128,
}

impl FileIdentity {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }
}

/// Maps the file at `path` and closes it: the mapping holds no descriptor. Returns the file's
/// identity as it was mapped. Not counted by any pool: the caller bounds what it keeps.
pub fn map_file(path: &Path) -> io::Result<(FileIdentity, FileMap)> {
    let file = File::open(path)?;
    let identity = FileIdentity::of(&file.metadata()?);
    Ok((identity, FileMap::of(&file)?))
}

/// One file's handles.
#[derive(Default)]
struct Open {
    file: Option<Arc<File>>,
    map: Option<FileMap>,
    /// The last mapping, while something still references it: mapped again, the file reuses
    /// it instead of making a second.
    last_map: Weak<memmap2::Mmap>,
}

impl Open {
    /// Whether a descriptor or a mapping is held: exactly when the pool counts the file.
    fn is_held(&self) -> bool {
        self.file.is_some() || self.map.is_some()
    }
}

struct Slot {
    used: AtomicBool,
    open: Mutex<Open>,
}

/// Immutable files by path, each opened ([`LazyFiles::file`]) or mapped ([`LazyFiles::map`])
/// when first needed and kept, one place in the process's [`HandlePool`] per file, until the
/// pool releases it. A file is reopened on demand after that.
pub struct LazyFiles {
    paths: Vec<PathBuf>,
    slots: Vec<Slot>,
    this: Weak<LazyFiles>,
}

impl std::fmt::Debug for LazyFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyFiles")
            .field("files", &self.paths.len())
            .finish_non_exhaustive()
    }
}

impl LazyFiles {
    /// The files at `paths`, counted by the process's pool ([`HandlePool::global`]). Nothing
    /// is opened yet.
    pub fn new(paths: Vec<PathBuf>) -> Arc<Self> {
        Arc::new_cyclic(|this| Self {
            slots: paths
                .iter()
                .map(|_| Slot {
                    used: AtomicBool::new(false),
                    open: Mutex::default(),
                })
                .collect(),
            paths,
            this: this.clone(),
        })
    }

    /// The path of file `index`.
    pub fn path(&self, index: usize) -> Option<&Path> {
        self.paths.get(index).map(PathBuf::as_path)
    }

    /// File `index`, open; opened now if it is not.
    pub fn file(&self, index: usize) -> io::Result<Arc<File>> {
        let slot = self.slot(index)?;
        let mut open = slot.open.lock().unwrap_or_else(PoisonError::into_inner);
        let was_held = open.is_held();
        let file = match &open.file {
            Some(file) => Arc::clone(file),
            None => {
                let file = Arc::new(File::open(&self.paths[index])?);
                open.file = Some(Arc::clone(&file));
                file
            }
        };
        self.used(slot, index, was_held, open);
        Ok(file)
    }

    /// Reads exactly `buf.len()` bytes of file `index` at `offset`.
    pub fn read_exact_at(&self, index: usize, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file(index)?.read_exact_at(buf, offset)
    }

    /// File `index`, mapped; mapped now if it is not (a file mapped only holds no descriptor).
    pub fn map(&self, index: usize) -> io::Result<FileMap> {
        let slot = self.slot(index)?;
        let mut open = slot.open.lock().unwrap_or_else(PoisonError::into_inner);
        let was_held = open.is_held();
        let map = match &open.map {
            Some(map) => map.clone(),
            None => {
                let map = match open.last_map.upgrade() {
                    Some(alive) => FileMap(alive),
                    None => match &open.file {
                        Some(file) => FileMap::of(file)?,
                        None => FileMap::of(&File::open(&self.paths[index])?)?,
                    },
                };
                open.last_map = Arc::downgrade(&map.0);
                open.map = Some(map.clone());
                map
            }
        };
        self.used(slot, index, was_held, open);
        Ok(map)
    }

    /// How many files have a descriptor or a mapping held for them now.
    pub fn open_count(&self) -> usize {
        self.slots
            .iter()
            .filter(|slot| {
                slot.open
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .is_held()
            })
            .count()
    }

    fn slot(&self, index: usize) -> io::Result<&Slot> {
        self.slots.get(index).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("no file {index} of {}", self.slots.len()),
            )
        })
    }

    /// Marks `slot` used and, if it held nothing before (`was_held` false), admits it to the
    /// pool after its lock is dropped (the pool may release other files of this set).
    fn used(&self, slot: &Slot, index: usize, was_held: bool, open: MutexGuard<'_, Open>) {
        if !slot.used.load(Ordering::Relaxed) {
            slot.used.store(true, Ordering::Relaxed);
        }
        drop(open);
        if !was_held {
            let this: Weak<dyn Holder> = self.this.clone();
            HandlePool::global().admit(this, index as u64);
        }
    }
}

impl Holder for LazyFiles {
    fn take_used(&self, key: u64) -> bool {
        usize::try_from(key)
            .ok()
            .and_then(|i| self.slots.get(i))
            .is_some_and(|slot| slot.used.swap(false, Ordering::Relaxed))
    }

    fn release(&self, key: u64) -> bool {
        let Some(slot) = usize::try_from(key).ok().and_then(|i| self.slots.get(i)) else {
            return true;
        };
        let mut open = slot.open.lock().unwrap_or_else(PoisonError::into_inner);
        let (file, map) = (open.file.take(), open.map.take());
        drop(open);
        // Closed and unmapped outside the lock; a reader holding a clone keeps its own.
        drop(file);
        drop(map);
        true
    }
}
