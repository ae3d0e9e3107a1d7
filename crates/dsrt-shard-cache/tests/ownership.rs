//! The shard cache touches only what it wrote (issue: a mistaken `--cache-dir` must never
//! destroy a user's files, and a file placed in the cache must never be served): it takes only
//! a new or empty directory, serves, counts and evicts only files it sealed, follows no
//! symbolic link, does not block on a FIFO, refuses roots others can write into, and finds a
//! damaged copy when asked to verify it. Each test lists the directory before and after.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

mod common;

use common::{all_files_under, bytes_under, content, files_under, rel, sha, sha_of, write_all};
use dsrt_shard_cache::{Access, CacheLimits, ShardCache, ShardCacheError, SEAL_ALLOWANCE};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

const LEN: usize = 4096;

fn limits_for(files: u64) -> CacheLimits {
    CacheLimits::new(files * (LEN as u64 + SEAL_ALLOWANCE))
        .with_wait_for_room(Duration::from_millis(300))
}

fn fetch(cache: &ShardCache, i: u64) -> Result<dsrt_shard_cache::CachedFile, ShardCacheError> {
    let bytes = content(i, LEN);
    cache.get_or_fetch(&rel(i), LEN as u64, &sha(&bytes), &mut |sink| {
        write_all(sink, &bytes, 2)
    })
}

/// Every file under `dir` with its bytes and modification time: what "nothing was touched"
/// compares.
fn snapshot(dir: &Path) -> BTreeMap<String, (Vec<u8>, SystemTime)> {
    all_files_under(dir)
        .into_iter()
        .map(|f| {
            let path = dir.join(&f);
            let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
            (f, (std::fs::read(&path).unwrap(), modified))
        })
        .collect()
}

fn mode_of(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

#[test]
fn a_directory_of_documents_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("thesis.tex"), vec![b'x'; 3 * LEN]).unwrap();
    std::fs::write(dir.path().join("draft.partial"), b"half").unwrap();
    std::fs::write(dir.path().join(".shard-cache-tmp.notes"), b"mine").unwrap();
    std::fs::create_dir(dir.path().join("figures")).unwrap();
    std::fs::write(dir.path().join("figures/plot.png"), vec![7; 2 * LEN]).unwrap();
    let before = snapshot(dir.path());
    for access in [Access::Private, Access::Group] {
        // A limit far below what the directory holds: eviction would start at once.
        let err = ShardCache::open_with_access(dir.path(), CacheLimits::new(LEN as u64), access)
            .unwrap_err();
        assert!(
            matches!(&err, ShardCacheError::NotOwned { path, reason }
                if path == dir.path() && reason.contains("not empty") && reason.contains(".shard-cache-root")),
            "{err}"
        );
        assert!(!err.is_retryable());
    }
    assert_eq!(snapshot(dir.path()), before, "nothing was changed");
}

#[test]
fn a_new_or_empty_directory_becomes_a_private_cache() {
    let parent = tempfile::tempdir().unwrap();
    let new = parent.path().join("a/b/cache");
    drop(ShardCache::open(&new, limits_for(2)).unwrap());
    assert_eq!(mode_of(&new), 0o700);
    assert_eq!(
        std::fs::read_to_string(new.join(".shard-cache-root")).unwrap(),
        "dsrt-shard-cache\nprotocol 2\naccess private\n"
    );
    assert_eq!(mode_of(&new.join(".shard-cache-root")), 0o600);
    // An existing empty directory (made by the user, 0755) becomes one too, made private.
    let empty = parent.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cache = ShardCache::open(&empty, limits_for(2)).unwrap();
    assert_eq!(mode_of(&empty), 0o700);
    drop(fetch(&cache, 1).unwrap());
    assert_eq!(mode_of(&empty.join("cache-1a2b")), 0o700);
    assert_eq!(mode_of(&empty.join("cache-1a2b/shards")), 0o700);
    assert_eq!(mode_of(&empty.join(rel(1))), 0o600);
    assert_eq!(
        mode_of(&empty.join("cache-1a2b/shards/.shard-cache-seal.000001.bin")),
        0o600
    );
    // A marker of another protocol (or not a marker) is not this cache's.
    let other = parent.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(
        other.join(".shard-cache-root"),
        b"dsrt-shard-cache\nprotocol 9\n",
    )
    .unwrap();
    let err = ShardCache::open(&other, limits_for(2)).unwrap_err();
    assert!(
        matches!(&err, ShardCacheError::NotOwned { reason, .. } if reason.contains("protocol 2")),
        "{err}"
    );
    // A file is not a directory to cache in.
    let file = parent.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let err = ShardCache::open(&file, limits_for(2)).unwrap_err();
    assert!(matches!(err, ShardCacheError::NotOwned { .. }), "{err}");
}

#[test]
fn files_the_cache_did_not_write_are_never_counted_evicted_or_swept() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(2)).unwrap();
    drop(fetch(&cache, 0).unwrap());
    // A user (or another program) puts files into the cache directory.
    let shards = dir.path().join("cache-1a2b/shards");
    std::fs::write(dir.path().join("notes.txt"), vec![1; 5 * LEN]).unwrap();
    std::fs::write(shards.join("000099.bin"), vec![2; LEN]).unwrap();
    std::fs::write(shards.join("000098.bin.partial"), vec![3; LEN]).unwrap();
    std::fs::create_dir(dir.path().join("mine")).unwrap();
    std::fs::write(dir.path().join("mine/data.csv"), vec![4; LEN]).unwrap();
    let foreign: Vec<String> = ["notes.txt", "cache-1a2b/shards/000099.bin"]
        .into_iter()
        .chain(["cache-1a2b/shards/000098.bin.partial", "mine/data.csv"])
        .map(str::to_owned)
        .collect();
    let foreign_before: BTreeMap<_, _> = snapshot(dir.path())
        .into_iter()
        .filter(|(f, _)| foreign.contains(f))
        .collect();
    // They do not count: the cache holds its own bytes only.
    assert_eq!(
        cache.usage().unwrap(),
        bytes_under(dir.path()) - (5 * LEN + 3 * LEN) as u64
    );
    // Churn ten files through room for two, reopening (which sweeps and evicts) in between.
    for i in 1..10 {
        drop(fetch(&cache, i).unwrap());
        drop(ShardCache::open(dir.path(), limits_for(2)).unwrap());
    }
    let foreign_after: BTreeMap<_, _> = snapshot(dir.path())
        .into_iter()
        .filter(|(f, _)| foreign.contains(f))
        .collect();
    assert_eq!(
        foreign_after, foreign_before,
        "every foreign file is intact"
    );
    // A lowered limit evicts the cache's files down to nothing, and still nothing else.
    drop(ShardCache::open(dir.path(), CacheLimits::new(1)).unwrap());
    let mut left = files_under(dir.path());
    left.sort();
    let mut expected = foreign.clone();
    expected.sort();
    assert_eq!(left, expected);
}

#[test]
fn a_file_of_the_right_length_placed_in_the_cache_is_never_served() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(4)).unwrap();
    drop(fetch(&cache, 0).unwrap());
    let planted = dir.path().join(rel(1));
    std::fs::write(&planted, vec![0xEE; LEN]).unwrap();
    let before = snapshot(dir.path());
    assert!(cache.get(&rel(1), &sha_of(1, LEN)).unwrap().is_none());
    let err = fetch(&cache, 1).unwrap_err();
    assert!(
        matches!(&err, ShardCacheError::Foreign { path, found } if path == &planted && found.contains("did not write")),
        "{err}"
    );
    assert!(err.to_string().contains("left alone"), "{err}");
    assert_eq!(snapshot(dir.path()), before, "nothing was changed");

    // A sealed file replaced behind the cache's back (a copy over it: a new inode) is not
    // the cache's either.
    let sealed = dir.path().join(rel(0));
    let copy = dir.path().join("copy");
    std::fs::write(&copy, content(0, LEN)).unwrap();
    std::fs::rename(&copy, &sealed).unwrap();
    assert!(cache.get(&rel(0), &sha_of(0, LEN)).unwrap().is_none());
    assert!(matches!(
        fetch(&cache, 0).unwrap_err(),
        ShardCacheError::Foreign { .. }
    ));
    // Removing the foreign file lets the cache download into the name again.
    std::fs::remove_file(&planted).unwrap();
    assert_eq!(
        fetch(&cache, 1).unwrap().read_all().unwrap(),
        content(1, LEN)
    );
}

#[test]
fn symbolic_links_below_the_root_are_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(4)).unwrap();
    // A symlinked key directory, a symlinked shards directory, a symlinked final file.
    std::os::unix::fs::symlink(outside.path(), dir.path().join("cache-1a2b")).unwrap();
    let err = fetch(&cache, 1).unwrap_err();
    assert!(
        matches!(&err, ShardCacheError::Foreign { found, .. } if found.contains("symbolic link")),
        "{err}"
    );
    assert!(cache.get(&rel(1), &sha_of(1, LEN)).unwrap().is_none());
    std::fs::remove_file(dir.path().join("cache-1a2b")).unwrap();
    std::fs::create_dir(dir.path().join("cache-1a2b")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("cache-1a2b/shards")).unwrap();
    assert!(matches!(
        fetch(&cache, 1).unwrap_err(),
        ShardCacheError::Foreign { .. }
    ));
    std::fs::remove_file(dir.path().join("cache-1a2b/shards")).unwrap();
    std::fs::create_dir(dir.path().join("cache-1a2b/shards")).unwrap();
    let target = outside.path().join("target.bin");
    std::fs::write(&target, content(1, LEN)).unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join(rel(1))).unwrap();
    assert!(cache.get(&rel(1), &sha_of(1, LEN)).unwrap().is_none());
    assert!(matches!(
        fetch(&cache, 1).unwrap_err(),
        ShardCacheError::Foreign { .. }
    ));
    // Nothing was written outside, and the link target is as it was; eviction and `open`
    // walk past the links.
    assert_eq!(all_files_under(outside.path()), ["target.bin"]);
    drop(ShardCache::open(dir.path(), CacheLimits::new(1)).unwrap());
    assert_eq!(std::fs::read(&target).unwrap(), content(1, LEN));
}

#[test]
fn a_fifo_in_the_cache_never_blocks_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(4)).unwrap();
    drop(fetch(&cache, 0).unwrap());
    let fifo = dir.path().join(rel(1));
    let partial_fifo = dir
        .path()
        .join("cache-1a2b/shards/.shard-cache-partial.000002.bin");
    for path in [&fifo, &partial_fifo] {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    }
    let started = std::time::Instant::now();
    assert!(cache.get(&rel(1), &sha_of(1, LEN)).unwrap().is_none());
    assert!(matches!(
        fetch(&cache, 1).unwrap_err(),
        ShardCacheError::Foreign { .. }
    ));
    assert!(matches!(
        fetch(&cache, 2).unwrap_err(),
        ShardCacheError::Foreign { .. }
    ));
    drop(ShardCache::open(dir.path(), CacheLimits::new(1)).unwrap());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(fifo.exists() && partial_fifo.exists());
}

#[test]
fn roots_others_can_write_into_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    drop(ShardCache::open(&root, limits_for(2)).unwrap());
    for mode in [0o777, 0o720, 0o702] {
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(mode)).unwrap();
        let err = ShardCache::open(&root, limits_for(2)).unwrap_err();
        assert!(
            matches!(&err, ShardCacheError::Insecure { path, reason } if path == &root && reason.contains("chmod")),
            "{mode:o}: {err}"
        );
    }
    // Readable by others is not a risk to what the cache serves.
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    drop(ShardCache::open(&root, limits_for(2)).unwrap());
}

#[test]
fn a_group_cache_is_shared_by_its_group_and_only_opened_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    let cache = ShardCache::open_with_access(&root, limits_for(2), Access::Group).unwrap();
    drop(fetch(&cache, 1).unwrap());
    assert_eq!(mode_of(&root), 0o2770);
    assert_eq!(mode_of(&root.join("cache-1a2b/shards")), 0o2770);
    assert_eq!(mode_of(&root.join(rel(1))), 0o640);
    let err = ShardCache::open(&root, limits_for(2)).unwrap_err();
    assert!(
        matches!(&err, ShardCacheError::NotOwned { reason, .. } if reason.contains("group")),
        "{err}"
    );
    let private = dir.path().join("private");
    drop(ShardCache::open(&private, limits_for(2)).unwrap());
    assert!(matches!(
        ShardCache::open_with_access(&private, limits_for(2), Access::Group).unwrap_err(),
        ShardCacheError::NotOwned { .. }
    ));
    // Others must not write into a group cache.
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o2777)).unwrap();
    assert!(matches!(
        ShardCache::open_with_access(&root, limits_for(2), Access::Group).unwrap_err(),
        ShardCacheError::Insecure { .. }
    ));
}

#[test]
fn verify_finds_a_damaged_copy_and_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(4)).unwrap();
    drop(fetch(&cache, 1).unwrap());
    assert!(cache.verify(&rel(1), &sha_of(1, LEN)).unwrap());
    assert!(
        !cache.verify(&rel(2), &sha_of(2, LEN)).unwrap(),
        "not cached"
    );
    // A bad disk (or a write behind the cache's back) flips a byte in place.
    let path = dir.path().join(rel(1));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[100] ^= 0xFF;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|f| std::os::unix::fs::FileExt::write_all_at(&f, &bytes, 0))
        .unwrap();
    let err = cache.verify(&rel(1), &sha_of(1, LEN)).unwrap_err();
    assert!(
        matches!(&err, ShardCacheError::Corrupt { path: p, expected, found } if p == &path && expected != found),
        "{err}"
    );
    assert!(!path.exists());
    assert!(!dir
        .path()
        .join("cache-1a2b/shards/.shard-cache-seal.000001.bin")
        .exists());
    // The next read downloads it again.
    assert_eq!(
        fetch(&cache, 1).unwrap().read_all().unwrap(),
        content(1, LEN)
    );
    assert!(cache.verify(&rel(1), &sha_of(1, LEN)).unwrap());
}
