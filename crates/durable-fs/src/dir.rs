//! [`Dir`]: a directory opened once, inside which every operation names an entry of that
//! directory and never follows a symbolic link.
//!
//! A directory that several processes share and that a user may also write into (a node's
//! shard cache) cannot be handled by paths: `root/a/b` follows a symbolic link planted at `a`
//! out of the directory, and `open` of a FIFO planted at `b` blocks for ever. Every call here
//! is relative to an open directory descriptor (`openat`, `mkdirat`, `renameat`, `unlinkat`,
//! `fstatat`) with `O_NOFOLLOW`, and files are opened `O_NONBLOCK` and refused unless they
//! are regular files. Files and directories are created with exact modes (the umask cannot
//! widen or narrow them), so a private directory stays private under `umask 000`.

use crate::{DurableFile, FileSystem};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What an entry of a [`Dir`] is, without following a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

impl EntryKind {
    fn of(file_type: FileType) -> Self {
        match file_type {
            FileType::RegularFile => Self::File,
            FileType::Directory => Self::Dir,
            FileType::Symlink => Self::Symlink,
            _ => Self::Other,
        }
    }
}

/// An entry's status, as `fstatat(AT_SYMLINK_NOFOLLOW)` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryStat {
    /// What it is.
    pub kind: EntryKind,
    /// Its apparent size in bytes.
    pub len: u64,
    /// Its inode number.
    pub ino: u64,
    /// Its owner.
    pub uid: u32,
    /// Its permission bits (with set-id and sticky bits).
    pub mode: u32,
    /// Its modification time.
    pub modified: SystemTime,
}

impl EntryStat {
    fn of(stat: &rustix::fs::Stat) -> Self {
        let modified = u64::try_from(stat.st_mtime).map_or(UNIX_EPOCH, |secs| {
            UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_nanos(stat.st_mtime_nsec)
        });
        Self {
            kind: EntryKind::of(FileType::from_raw_mode(stat.st_mode)),
            len: u64::try_from(stat.st_size).unwrap_or(0),
            ino: stat.st_ino,
            uid: stat.st_uid,
            mode: stat.st_mode & 0o7777,
            modified,
        }
    }
}

/// How [`Dir::open_file`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileAccess {
    /// Read-only.
    Read,
    /// Read and write.
    ReadWrite,
}

/// A directory opened once; every entry is named relative to it and symbolic links are never
/// followed (see the module documentation).
///
/// Files and directories it creates get exactly its modes ([`Dir::with_modes`]; by default
/// `0o600` and `0o700`), whatever the process's umask.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
    file_mode: u32,
    dir_mode: u32,
}

/// `ELOOP`/`ENOTDIR` from an `O_NOFOLLOW | O_DIRECTORY` open: the entry is not a directory
/// (a symbolic link to one included).
fn not_a_directory(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotADirectory,
        format!(
            "{} is not a directory (symbolic links are not followed)",
            path.display()
        ),
    )
}

fn not_a_regular_file(path: &Path, kind: EntryKind) -> io::Error {
    let what = match kind {
        EntryKind::Dir => "a directory",
        EntryKind::Symlink => "a symbolic link (not followed)",
        EntryKind::Other => "a FIFO, socket or device",
        EntryKind::File => "a regular file",
    };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{} is {what}, not a regular file", path.display()),
    )
}

impl Dir {
    /// Opens the directory at `path` (symbolic links in `path` itself are followed: it is the
    /// caller's choice; nothing below it is).
    pub fn open(path: &Path) -> io::Result<Self> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self {
            fd,
            path: path.to_path_buf(),
            file_mode: 0o600,
            dir_mode: 0o700,
        })
    }

    /// The same directory, creating files with `file_mode` and directories with `dir_mode`
    /// (both exact: set after creation, so the umask does not apply; `dir_mode` may carry the
    /// set-group-id bit).
    #[must_use]
    pub fn with_modes(mut self, file_mode: u32, dir_mode: u32) -> Self {
        self.file_mode = file_mode;
        self.dir_mode = dir_mode;
        self
    }

    /// The path it was opened at (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Another handle on the same directory, with the same modes.
    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(Self {
            fd: self.fd.try_clone()?,
            path: self.path.clone(),
            file_mode: self.file_mode,
            dir_mode: self.dir_mode,
        })
    }

    /// The status of `name`, or `None` when there is no such entry.
    pub fn stat(&self, name: &str) -> io::Result<Option<EntryStat>> {
        check_name(name)?;
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(EntryStat::of(&stat))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The directory's own status.
    pub fn stat_self(&self) -> io::Result<EntryStat> {
        Ok(EntryStat::of(&rustix::fs::fstat(&self.fd)?))
    }

    /// The subdirectory `name`; an error of kind `NotADirectory` when it is anything else
    /// (a symbolic link to a directory included), `NotFound` when absent.
    pub fn subdir(&self, name: &str) -> io::Result<Self> {
        check_name(name)?;
        let path = self.path.join(name);
        match rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => Ok(Self {
                fd,
                path,
                file_mode: self.file_mode,
                dir_mode: self.dir_mode,
            }),
            Err(Errno::LOOP | Errno::NOTDIR) => Err(not_a_directory(&path)),
            Err(e) => Err(e.into()),
        }
    }

    /// The subdirectory `name`, created with this directory's `dir_mode` when absent.
    pub fn create_subdir(&self, name: &str) -> io::Result<Self> {
        check_name(name)?;
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o700)) {
            Ok(()) => {
                let dir = self.subdir(name)?;
                rustix::fs::fchmod(&dir.fd, Mode::from_raw_mode(self.dir_mode))?;
                Ok(dir)
            }
            Err(Errno::EXIST) => self.subdir(name),
            Err(e) => Err(e.into()),
        }
    }

    /// Sets this directory's own permission bits.
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        Ok(rustix::fs::fchmod(&self.fd, Mode::from_raw_mode(mode))?)
    }

    /// Opens the regular file `name` without following a symbolic link and without blocking
    /// on a FIFO; anything but a regular file is an error of kind `InvalidInput`.
    pub fn open_file(&self, name: &str, access: FileAccess) -> io::Result<File> {
        check_name(name)?;
        let mode = match access {
            FileAccess::Read => OFlags::RDONLY,
            FileAccess::ReadWrite => OFlags::RDWR,
        };
        let fd = match rustix::fs::openat(
            &self.fd,
            name,
            mode | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::LOOP) => {
                return Err(not_a_regular_file(
                    &self.path.join(name),
                    EntryKind::Symlink,
                ))
            }
            Err(e) => return Err(e.into()),
        };
        regular(fd, &self.path.join(name))
    }

    /// Creates the file `name`, which must not exist, read-write with this directory's
    /// `file_mode`.
    pub fn create_new_file(&self, name: &str) -> io::Result<File> {
        check_name(name)?;
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(self.file_mode))?;
        Ok(File::from(fd))
    }

    /// Removes the file (or symbolic link) `name`; `Ok(false)` when it was already gone.
    pub fn remove_file(&self, name: &str) -> io::Result<bool> {
        check_name(name)?;
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Renames `from` to `to` inside this directory, replacing `to`.
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        check_name(from)?;
        check_name(to)?;
        Ok(rustix::fs::renameat(&self.fd, from, &self.fd, to)?)
    }

    /// Renames `from` to `to` inside this directory, failing with `AlreadyExists` when `to`
    /// exists (never replacing it). Where the file system has no `RENAME_NOREPLACE`, a hard
    /// link and an unlink do the same.
    pub fn rename_no_replace(&self, from: &str, to: &str) -> io::Result<()> {
        check_name(from)?;
        check_name(to)?;
        match rustix::fs::renameat_with(&self.fd, from, &self.fd, to, RenameFlags::NOREPLACE) {
            Ok(()) => Ok(()),
            Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {
                rustix::fs::linkat(&self.fd, from, &self.fd, to, AtFlags::empty())?;
                rustix::fs::unlinkat(&self.fd, from, AtFlags::empty())?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The names and kinds of the entries (not `.` and `..`).
    pub fn entries(&self) -> io::Result<Vec<(OsString, EntryKind)>> {
        let mut entries = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name = OsString::from_vec(name.to_vec());
            let kind = match entry.file_type() {
                FileType::Unknown => match name.to_str().map(|n| self.stat(n)) {
                    Some(Ok(Some(stat))) => stat.kind,
                    Some(Ok(None)) => continue,
                    Some(Err(e)) => return Err(e),
                    None => EntryKind::Other,
                },
                file_type => EntryKind::of(file_type),
            };
            entries.push((name, kind));
        }
        Ok(entries)
    }

    /// Fsyncs the directory, making creations, renames and removals inside it durable.
    pub fn sync(&self) -> io::Result<()> {
        Ok(rustix::fs::fsync(&self.fd)?)
    }

    /// The entry name a [`FileSystem`] path stands for: a bare name, or `.` for the directory.
    fn entry<'a>(&self, path: &'a Path) -> io::Result<Option<&'a str>> {
        // `publish` names a temporary file `./<name>` when its target is a bare name.
        let mut components = path.components().skip_while(|c| *c == Component::CurDir);
        match (components.next(), components.next()) {
            (None, None) => Ok(None),
            (Some(Component::Normal(name)), None) => name.to_str().map(Some).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "a name that is not UTF-8")
            }),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: a Dir publishes only names of its own entries",
                    path.display()
                ),
            )),
        }
    }
}

/// Opens `path` read-only (following symbolic links, as any path a user gives), without
/// blocking on a FIFO, and refuses anything that is not a regular file with an error of kind
/// `InvalidInput` naming it: for the files a reader maps or hashes, where a FIFO would hang
/// the open and a device (`/dev/zero`) would never end.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    regular(fd, path)
}

/// `fd` as a `File` if it is a regular file.
fn regular(fd: OwnedFd, path: &Path) -> io::Result<File> {
    let stat = EntryStat::of(&rustix::fs::fstat(&fd)?);
    if stat.kind != EntryKind::File {
        return Err(not_a_regular_file(path, stat.kind));
    }
    Ok(File::from(fd))
}

/// A name of one entry: no separator, not empty, not `.` or `..`.
fn check_name(name: &str) -> io::Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not the name of one directory entry"),
        ));
    }
    Ok(())
}

struct DirFile(File);

impl Write for DirFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl DurableFile for DirFile {
    fn sync_all(&mut self) -> io::Result<()> {
        self.0.sync_all()
    }
}

/// Publication inside one directory: [`crate::publish`] over a `Dir` takes a bare entry name
/// as its target, writes the temporary file with the directory's `file_mode` and follows no
/// symbolic link.
impl FileSystem for Dir {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        let name = self.entry(path)?.ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "cannot create the directory")
        })?;
        Ok(Box::new(DirFile(self.create_new_file(name)?)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        match (self.entry(from)?, self.entry(to)?) {
            (Some(from), Some(to)) => Dir::rename(self, from, to),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot rename the directory",
            )),
        }
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        match self.entry(dir)? {
            None => self.sync(),
            Some(name) => self.subdir(name)?.sync(),
        }
    }

    fn sync_existing(&self, path: &Path) -> io::Result<()> {
        match self.entry(path)? {
            None => self.sync(),
            Some(name) => self.open_file(name, FileAccess::Read)?.sync_all(),
        }
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        match self.entry(path)? {
            Some(name) => Dir::remove_file(self, name).map(|_| ()),
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot remove the directory",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn symbolic_links_are_never_followed() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("sub")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.path().join("file"))
            .unwrap();
        let dir = Dir::open(root.path()).unwrap();
        assert_eq!(
            dir.subdir("sub").unwrap_err().kind(),
            io::ErrorKind::NotADirectory
        );
        assert_eq!(
            dir.create_subdir("sub").unwrap_err().kind(),
            io::ErrorKind::NotADirectory
        );
        assert_eq!(
            dir.open_file("file", FileAccess::Read).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(dir.stat("file").unwrap().unwrap().kind, EntryKind::Symlink);
        assert!(dir.create_new_file("file").is_err());
        assert_eq!(
            std::fs::read(outside.path().join("secret")).unwrap(),
            b"x",
            "nothing outside was touched"
        );
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let root = tempfile::tempdir().unwrap();
        let fifo = root.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let dir = Dir::open(root.path()).unwrap();
        let error = dir.open_file("fifo", FileAccess::Read).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        assert!(error.to_string().contains("FIFO"), "{error}");
    }

    #[test]
    fn open_regular_refuses_devices_fifos_and_directories_at_once() {
        let root = tempfile::tempdir().unwrap();
        let fifo = root.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        for path in [fifo.as_path(), Path::new("/dev/zero"), root.path()] {
            let error = open_regular(path).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{error}");
            assert!(error.to_string().contains(&path.display().to_string()));
        }
        std::fs::write(root.path().join("f"), b"x").unwrap();
        std::os::unix::fs::symlink(root.path().join("f"), root.path().join("link")).unwrap();
        assert!(open_regular(&root.path().join("link")).is_ok());
    }

    #[test]
    fn modes_are_exact_whatever_the_umask() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::open(root.path()).unwrap().with_modes(0o640, 0o2750);
        let sub = dir.create_subdir("d").unwrap();
        let mode = std::fs::metadata(root.path().join("d"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o2750);
        drop(sub.create_new_file("f").unwrap());
        let mode = std::fs::metadata(root.path().join("d/f"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o640);
    }

    #[test]
    fn publish_writes_inside_the_directory_only() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::open(root.path()).unwrap();
        let published = crate::publish(&dir, Path::new("a.txt"), ".tmp.", b"hello").unwrap();
        assert!(matches!(published, crate::Published::Durable));
        assert_eq!(std::fs::read(root.path().join("a.txt")).unwrap(), b"hello");
        assert!(crate::publish(&dir, Path::new("x/a.txt"), ".tmp.", b"no").is_err());
        let names: Vec<_> = dir.entries().unwrap().into_iter().map(|e| e.0).collect();
        assert_eq!(names, vec![OsString::from("a.txt")]);
    }

    #[test]
    fn rename_no_replace_keeps_an_existing_target() {
        let root = tempfile::tempdir().unwrap();
        let dir = Dir::open(root.path()).unwrap();
        std::fs::write(root.path().join("a"), b"a").unwrap();
        std::fs::write(root.path().join("b"), b"b").unwrap();
        let error = dir.rename_no_replace("a", "b").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(root.path().join("b")).unwrap(), b"b");
        dir.rename_no_replace("a", "c").unwrap();
        assert_eq!(std::fs::read(root.path().join("c")).unwrap(), b"a");
    }
}
