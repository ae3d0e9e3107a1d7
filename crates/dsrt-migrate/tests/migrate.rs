//! update_manifests on real manifests: checks before replacement, byte-preserving rewrites,
//! symlinks, reports, faults at every step, retries and cancellation.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

use dsrt_manifest::Manifest;
use dsrt_migrate::{update_local_manifests, UpdateCause, UpdateOutcome};
use durable_fs::{CancelToken, DurableFile, FileSystem, StdFileSystem};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const HEX: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// A v2 manifest as another implementation might have written it: odd spacing, unknown keys.
fn v2_text(source: &str) -> String {
    format!(
        "{{\n    \"format_version\" : 2,\n    \"producer\": {{\"name\": \"py-datasetrt\", \"version\": [0, 9, 1]}},\n    \"source\": \"{source}\",\n    \"sample_count\": 0,\n    \"metadata_schema\": [],\n    \"index_sha256\": \"{HEX}\",\n    \"metadata_sha256\": \"{HEX}\",\n    \"shards\": [],\n    \"note\": 1.50e0\n}}\n"
    )
}

fn v3_text(source: &str, id: u64) -> String {
    v2_text(source).replace(
        "\"format_version\" : 2,",
        &format!("\"format_version\" : 3, \"cache_id\": {id},"),
    )
}

fn make_caches(root: &Path, texts: &[String]) -> Vec<PathBuf> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let dir = root.join(format!("cache{i}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("manifest.json"), text).unwrap();
            dir
        })
        .collect()
}

fn read(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("manifest.json")).unwrap()
}

fn parsed(dir: &Path) -> Manifest {
    Manifest::parse(read(dir).as_bytes()).unwrap()
}

#[test]
fn v2_becomes_v3_with_its_position_and_nothing_else_changes() {
    let root = tempfile::tempdir().unwrap();
    let caches = make_caches(root.path(), &[v2_text("a"), v3_text("b", 99), v2_text("c")]);
    let before: Vec<serde_json::Value> = caches
        .iter()
        .map(|c| serde_json::from_str(&read(c)).unwrap())
        .collect();
    let report = update_local_manifests(&caches, 3, &StdFileSystem, &CancelToken::new()).unwrap();
    let outcomes: Vec<_> = report
        .entries
        .iter()
        .map(|e| (e.cache_id, e.outcome.clone()))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (0, UpdateOutcome::Updated),
            (99, UpdateOutcome::Unchanged),
            (2, UpdateOutcome::Updated)
        ]
    );
    assert_eq!(parsed(&caches[0]).stored_cache_id(), Some(0));
    assert_eq!(parsed(&caches[2]).stored_cache_id(), Some(2));
    assert_eq!(
        read(&caches[1]),
        v3_text("b", 99),
        "v3 manifests are left byte for byte"
    );
    // Every other key, value and the key order survive; the text differs only where it must.
    for (cache, mut old) in caches.iter().zip(before) {
        let new: serde_json::Value = serde_json::from_str(&read(cache)).unwrap();
        old["format_version"] = serde_json::json!(3);
        let mut new_without_id = new.clone();
        if old.get("cache_id").is_none() {
            new_without_id.as_object_mut().unwrap().remove("cache_id");
        }
        assert_eq!(new_without_id, old);
    }
    let text = read(&caches[0]);
    assert!(
        text.contains("\"note\": 1.50e0"),
        "number spellings kept: {text}"
    );
    assert!(
        text.contains("\"format_version\" : 3,\n    \"cache_id\": 0,\n    \"producer\""),
        "{text}"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&caches[0])
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");
}

#[test]
fn symlinked_manifests_are_written_beside_their_target_and_stay_links() {
    let root = tempfile::tempdir().unwrap();
    let real = root.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("m.json"), v2_text("a")).unwrap();
    let cache = root.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    std::os::unix::fs::symlink(real.join("m.json"), cache.join("manifest.json")).unwrap();
    let linked_dir = root.path().join("linked-cache");
    std::os::unix::fs::symlink(&cache, &linked_dir).unwrap();
    let report = update_local_manifests(
        std::slice::from_ref(&linked_dir),
        3,
        &StdFileSystem,
        &CancelToken::new(),
    )
    .unwrap();
    assert_eq!(
        report.entries[0].manifest,
        std::fs::canonicalize(real.join("m.json"))
            .unwrap()
            .display()
            .to_string()
    );
    assert!(std::fs::symlink_metadata(cache.join("manifest.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::symlink_metadata(&linked_dir)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(parsed(&cache).stored_cache_id(), Some(0));
}

#[test]
fn every_target_is_checked_before_any_is_replaced() {
    let root = tempfile::tempdir().unwrap();
    // Position 1 migrates to id 1, which the v3 cache at position 2 already holds.
    let caches = make_caches(root.path(), &[v2_text("a"), v2_text("b"), v3_text("c", 1)]);
    let err = update_local_manifests(&caches, 3, &StdFileSystem, &CancelToken::new()).unwrap_err();
    assert!(
        matches!(*err.cause, UpdateCause::DuplicateId { id: 1, .. }),
        "{err}"
    );
    assert!(err.done.is_empty());
    assert_eq!(read(&caches[0]), v2_text("a"), "nothing replaced");

    let caches = make_caches(root.path(), &[v2_text("a"), "{ not json".into()]);
    let err = update_local_manifests(&caches, 3, &StdFileSystem, &CancelToken::new()).unwrap_err();
    assert!(matches!(*err.cause, UpdateCause::Manifest { .. }), "{err}");
    assert_eq!(err.failed, Some(caches[1].display().to_string()));
    assert_eq!(read(&caches[0]), v2_text("a"));

    let caches = make_caches(root.path(), &[v2_text("a"), v2_text("b")]);
    let twice = vec![caches[0].clone(), caches[1].clone(), caches[0].clone()];
    let err = update_local_manifests(&twice, 3, &StdFileSystem, &CancelToken::new()).unwrap_err();
    assert!(
        matches!(*err.cause, UpdateCause::DuplicateCache { .. }),
        "{err}"
    );

    let err = update_local_manifests(&caches, 4, &StdFileSystem, &CancelToken::new()).unwrap_err();
    assert!(matches!(*err.cause, UpdateCause::UnsupportedTarget(4)));
    let unsupported = make_caches(
        &root.path().join("u"),
        &[v2_text("a").replace(": 2,", ": 7,")],
    );
    let err =
        update_local_manifests(&unsupported, 3, &StdFileSystem, &CancelToken::new()).unwrap_err();
    assert!(matches!(*err.cause, UpdateCause::Manifest { .. }), "{err}");
}

/// Which file-system call to fail, counted across the whole run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Create,
    Write,
    Sync,
    Rename,
    SyncDir,
    SyncExisting,
}

struct Faulty {
    fail: Option<(Op, usize)>,
    seen: Mutex<Vec<Op>>,
}

impl Faulty {
    fn new(fail: Option<(Op, usize)>) -> Self {
        Self {
            fail,
            seen: Mutex::new(Vec::new()),
        }
    }

    fn hit(&self, op: Op) -> io::Result<()> {
        let mut seen = self.seen.lock().unwrap();
        seen.push(op);
        let nth = seen.iter().filter(|o| **o == op).count() - 1;
        match self.fail {
            Some((fail_op, fail_nth)) if fail_op == op && fail_nth == nth => {
                Err(io::Error::other(format!("injected {op:?} #{nth}")))
            }
            _ => Ok(()),
        }
    }
}

struct FaultyFile {
    inner: Box<dyn DurableFile>,
    fs: Arc<Faulty>,
}

impl Write for FaultyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.fs.hit(Op::Write)?;
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl DurableFile for FaultyFile {
    fn sync_all(&mut self) -> io::Result<()> {
        self.fs.hit(Op::Sync)?;
        self.inner.sync_all()
    }
}

struct Shared(Arc<Faulty>);

impl FileSystem for Shared {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DurableFile>> {
        self.0.hit(Op::Create)?;
        Ok(Box::new(FaultyFile {
            inner: StdFileSystem.create_new(path)?,
            fs: Arc::clone(&self.0),
        }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.hit(Op::Rename)?;
        StdFileSystem.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.0.hit(Op::SyncDir)?;
        StdFileSystem.sync_dir(dir)
    }
    fn sync_existing(&self, path: &Path) -> io::Result<()> {
        self.0.hit(Op::SyncExisting)?;
        StdFileSystem.sync_existing(path)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        StdFileSystem.remove_file(path)
    }
}

fn temp_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".manifest.json.tmp-")
        })
        .count()
}

#[test]
fn a_fault_at_every_step_leaves_old_or_new_manifests_and_a_retry_completes() {
    let texts = [v2_text("a"), v3_text("b", 77), v2_text("c")];
    // Count each operation of a clean run, then fail each occurrence in turn.
    let clean = Arc::new(Faulty::new(None));
    let root = tempfile::tempdir().unwrap();
    update_local_manifests(
        &make_caches(root.path(), &texts),
        3,
        &Shared(Arc::clone(&clean)),
        &CancelToken::new(),
    )
    .unwrap();
    let ops = clean.seen.lock().unwrap().clone();
    let mut cases = 0;
    for op in [
        Op::Create,
        Op::Write,
        Op::Sync,
        Op::Rename,
        Op::SyncDir,
        Op::SyncExisting,
    ] {
        for nth in 0..ops.iter().filter(|o| **o == op).count() {
            cases += 1;
            let root = tempfile::tempdir().unwrap();
            let caches = make_caches(root.path(), &texts);
            let faulty = Shared(Arc::new(Faulty::new(Some((op, nth)))));
            let result = update_local_manifests(&caches, 3, &faulty, &CancelToken::new());
            for (cache, text) in caches.iter().zip(&texts) {
                let now = read(cache);
                let migrated = Manifest::parse(now.as_bytes()).unwrap();
                assert!(
                    now == *text || migrated.format_version() == 3,
                    "{op:?}#{nth}: torn manifest {now}"
                );
                assert_eq!(temp_files(cache), 0, "{op:?}#{nth}: temporary file left");
            }
            match &result {
                Ok(report) => {
                    // Only a directory fsync failure lets the run finish; it is reported.
                    assert_eq!(op, Op::SyncDir, "{op:?}#{nth} did not fail the run");
                    assert_eq!(report.durability_unknown().count(), 1);
                }
                Err(err) => assert!(err.failed.is_some() && !err.to_string().is_empty()),
            }
            // A retry in the original order completes and gives the positional ids.
            let report =
                update_local_manifests(&caches, 3, &StdFileSystem, &CancelToken::new()).unwrap();
            let ids: Vec<u64> = report.entries.iter().map(|e| e.cache_id).collect();
            assert_eq!(ids, vec![0, 77, 2], "{op:?}#{nth}");
            assert!(report
                .entries
                .iter()
                .all(|e| e.outcome != UpdateOutcome::Updated || e.cache_id != 77));
        }
    }
    assert!(cases >= 10, "only {cases} fault cases");
}

#[test]
fn cancellation_before_a_rename_removes_the_temporary_file() {
    let root = tempfile::tempdir().unwrap();
    let caches = make_caches(root.path(), &[v2_text("a"), v2_text("b")]);
    let cancel = CancelToken::new();
    cancel.cancel();
    let err = update_local_manifests(&caches, 3, &StdFileSystem, &cancel).unwrap_err();
    assert!(matches!(*err.cause, UpdateCause::Interrupted));
    assert!(err.done.is_empty());
    for cache in &caches {
        assert_eq!(temp_files(cache), 0);
        assert_eq!(parsed(cache).format_version(), 2);
    }
}

#[test]
fn stale_temporary_files_from_a_hard_kill_are_left_alone() {
    let root = tempfile::tempdir().unwrap();
    let caches = make_caches(root.path(), &[v2_text("a")]);
    let stale = caches[0].join(".manifest.json.tmp-4242-1-0");
    std::fs::write(&stale, b"{\"format_version\": 3, torn").unwrap();
    update_local_manifests(&caches, 3, &StdFileSystem, &CancelToken::new()).unwrap();
    assert_eq!(
        std::fs::read(&stale).unwrap(),
        b"{\"format_version\": 3, torn"
    );
    assert_eq!(parsed(&caches[0]).stored_cache_id(), Some(0));
}

#[test]
fn a_token_cache_keeps_its_tokens_key_through_migration() {
    let root = tempfile::tempdir().unwrap();
    let tokens = r#""tokens": {"dtype": "uint32", "vocab_size": 128256, "bos_id": 128000, "eos_id": 128001, "pad_id": null, "tokenizer": "llama-3"},"#;
    let text = v2_text("t").replacen("\"source\"", &format!("{tokens}\n    \"source\""), 1);
    let caches = make_caches(root.path(), &[text]);
    let before: serde_json::Value = serde_json::from_str(&read(&caches[0])).unwrap();
    update_local_manifests(&caches, 3, &StdFileSystem, &CancelToken::new()).unwrap();
    let manifest = parsed(&caches[0]);
    assert_eq!(manifest.format_version(), 3);
    assert_eq!(manifest.extra_key("tokens"), Some(&before["tokens"]));
    assert!(
        read(&caches[0]).contains(tokens),
        "the key's text is kept as written"
    );
}
