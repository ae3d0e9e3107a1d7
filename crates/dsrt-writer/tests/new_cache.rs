//! `write_new_cache`: a failed run leaves nothing of its own behind and never touches what
//! was there before it.
#![allow(clippy::unwrap_used)] // test code

use dsrt_schema::{Column, ColumnType, Row, Schema};
use dsrt_writer::{write_new_cache, CacheWriter, WriteError, WriterOptions};
use std::path::Path;

fn options() -> WriterOptions {
    let schema = Schema::new(vec![Column::new("label", ColumnType::Int64, false)]).unwrap();
    // Small shards, so a failed run has written several shard files before it fails.
    WriterOptions::new("s", schema).max_shard_bytes(256)
}

fn fill(writer: &mut CacheWriter, samples: i64) -> Result<(), WriteError> {
    for i in 0..samples {
        writer.add(&[7u8; 100], &Row::new().with("label", i))?;
    }
    Ok(())
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = walkdir(dir);
    names.sort();
    names
}

fn walkdir(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().unwrap().is_dir() {
            out.extend(
                walkdir(&entry.path())
                    .into_iter()
                    .map(|n| format!("{name}/{n}")),
            );
        }
        out.push(name);
    }
    out
}

/// A caller's own error: the input's, or the writer's converted by `From`.
#[derive(Debug)]
enum Failure {
    Write,
    Input,
}

impl From<WriteError> for Failure {
    fn from(_: WriteError) -> Self {
        Self::Write
    }
}

#[test]
fn a_finished_run_publishes_the_cache() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("c");
    let summary = write_new_cache(&dir, options(), |w| fill(w, 40)).unwrap();
    assert_eq!(summary.samples, 40);
    assert!(dir.join("manifest.json").exists());
    assert!(
        names(&dir)
            .iter()
            .filter(|n| n.starts_with("shards/"))
            .count()
            > 3
    );
}

#[test]
fn a_run_failing_in_its_input_removes_the_directory_it_made() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("c");
    let error = write_new_cache(&dir, options(), |w| {
        fill(w, 40)?;
        Err(Failure::Input)
    })
    .unwrap_err();
    assert!(matches!(error, Failure::Input), "{error:?}");
    assert!(!dir.exists(), "left {:?}", names(root.path()));
}

#[test]
fn a_run_into_an_empty_existing_directory_leaves_it_empty() {
    let root = tempfile::tempdir().unwrap();
    let error = write_new_cache(root.path(), options(), |w| {
        fill(w, 40)?;
        Err(Failure::Input)
    })
    .unwrap_err();
    assert!(matches!(error, Failure::Input));
    assert!(root.path().exists());
    assert_eq!(names(root.path()), Vec::<String>::new());
}

#[test]
fn a_panic_while_filling_removes_what_the_run_wrote() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("c");
    let panicked = std::panic::catch_unwind(|| {
        write_new_cache(&dir, options(), |w| -> Result<(), WriteError> {
            fill(w, 40)?;
            panic!("a converter bug");
        })
    });
    assert!(panicked.is_err());
    assert!(!dir.exists(), "left {:?}", names(root.path()));
}

#[test]
fn a_directory_the_writer_refuses_is_left_as_it_was() {
    // Another run's unpublished cache: its files are not this run's to remove.
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("shards")).unwrap();
    for name in ["index.bin", "metadata.arrow", "shards/000000.bin"] {
        std::fs::write(root.path().join(name), b"someone else's").unwrap();
    }
    let before = names(root.path());
    let error = write_new_cache(root.path(), options(), |w| fill(w, 3)).unwrap_err();
    assert!(
        matches!(error, WriteError::TargetNotEmpty { .. }),
        "{error}"
    );
    assert_eq!(names(root.path()), before);
    assert_eq!(
        std::fs::read(root.path().join("index.bin")).unwrap(),
        b"someone else's"
    );
}
