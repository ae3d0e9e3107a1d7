use crate::{DurableFile, FileSystem};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFileSystem;

struct StdFile(BufWriter<File>);

impl Write for StdFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl DurableFile for StdFile {
    fn sync_all(&mut self) -> io::Result<()> {
        self.0.flush()?;
        self.0.get_ref().sync_all()
    }
}

impl FileSystem for StdFileSystem {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        let file = OpenOptions::new().write(true).create_new(true).open(path)?;
        Ok(Box::new(StdFile(BufWriter::new(file))))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn sync_existing(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
}
