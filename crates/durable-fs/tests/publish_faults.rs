//! Every step of a publication fails once, through a fault-injecting file system.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use durable_fs::{publish, DurableFile, FileSystem, PublishStep, Published, StdFileSystem};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;

#[derive(Default)]
struct FailAt {
    step: Option<PublishStep>,
    log: Mutex<Vec<String>>,
}

fn injected() -> io::Error {
    io::Error::other("injected fault")
}

struct FaultyFile {
    inner: Box<dyn DurableFile>,
    fail_write: bool,
    fail_sync: bool,
}

impl Write for FaultyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.fail_write {
            return Err(injected());
        }
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl DurableFile for FaultyFile {
    fn sync_all(&mut self) -> io::Result<()> {
        if self.fail_sync {
            return Err(injected());
        }
        self.inner.sync_all()
    }
}

impl FileSystem for FailAt {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        self.log.lock().unwrap().push("create".into());
        if self.step == Some(PublishStep::Create) {
            return Err(injected());
        }
        Ok(Box::new(FaultyFile {
            inner: StdFileSystem.create_new(path)?,
            fail_write: self.step == Some(PublishStep::Write),
            fail_sync: self.step == Some(PublishStep::SyncFile),
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if self.step == Some(PublishStep::Rename) {
            return Err(injected());
        }
        StdFileSystem.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.step == Some(PublishStep::SyncDir) {
            return Err(injected());
        }
        StdFileSystem.sync_dir(dir)
    }
    fn sync_existing(&self, path: &Path) -> io::Result<()> {
        StdFileSystem.sync_existing(path)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        StdFileSystem.remove_file(path)
    }
}

fn dir_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn success_replaces_the_target_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("manifest.json");
    std::fs::write(&target, b"old").unwrap();
    let outcome = publish(&StdFileSystem, &target, ".manifest.json.tmp-", b"new").unwrap();
    assert!(matches!(outcome, Published::Durable));
    assert_eq!(std::fs::read(&target).unwrap(), b"new");
    assert_eq!(dir_entries(dir.path()), vec!["manifest.json"]);
}

#[test]
fn a_failure_before_the_rename_keeps_the_old_bytes_and_removes_the_temp_file() {
    for step in [
        PublishStep::Create,
        PublishStep::Write,
        PublishStep::SyncFile,
        PublishStep::Rename,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("manifest.json");
        std::fs::write(&target, b"old").unwrap();
        let fs = FailAt {
            step: Some(step),
            ..FailAt::default()
        };
        let err = publish(&fs, &target, ".manifest.json.tmp-", b"new").unwrap_err();
        assert_eq!(err.step, step);
        assert!(err.to_string().contains("manifest.json"), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"old", "{step}");
        assert_eq!(dir_entries(dir.path()), vec!["manifest.json"], "{step}");
    }
}

#[test]
fn a_directory_fsync_failure_reports_unknown_durability_after_the_rename() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("manifest.json");
    let fs = FailAt {
        step: Some(PublishStep::SyncDir),
        ..FailAt::default()
    };
    let outcome = publish(&fs, &target, ".manifest.json.tmp-", b"new").unwrap();
    assert!(matches!(outcome, Published::DurabilityUnknown(_)));
    assert_eq!(std::fs::read(&target).unwrap(), b"new");
}

#[test]
fn a_cancelled_publication_keeps_the_target_and_removes_its_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("manifest.json");
    std::fs::write(&target, b"old").unwrap();
    let cancel = durable_fs::CancelToken::new();
    cancel.clone().cancel();
    let err = durable_fs::publish_cancellable(
        &StdFileSystem,
        &target,
        ".manifest.json.tmp-",
        b"new",
        &cancel,
    )
    .unwrap_err();
    assert_eq!(err.step, PublishStep::Cancelled);
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    assert_eq!(dir_entries(dir.path()), vec!["manifest.json"]);
}
