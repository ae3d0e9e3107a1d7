//! One-process behaviour of the shard cache on real files: fetch once, integrity and length
//! failures, fetch errors, the limit and LRU eviction, stale partial files, and
//! threads of one process racing for the same file.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

mod common;

use common::{bytes_under, content, files_under, partials_under, rel, sha, sha_of, write_all};
use dsrt_shard_cache::{
    CacheLimits, FetchError, FetchSink, ShardCache, ShardCacheError, SEAL_ALLOWANCE,
};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const LEN: usize = 4096;

/// Room for `files` test files, seals included.
fn limits_for(files: u64) -> CacheLimits {
    CacheLimits::new(files * (LEN as u64 + SEAL_ALLOWANCE))
        .with_wait_for_room(Duration::from_secs(60))
}

/// Fetches test file `i` through `cache`, counting fetch calls in `calls`.
fn fetch(cache: &ShardCache, i: u64, calls: &AtomicU64) -> dsrt_shard_cache::CachedFile {
    let bytes = content(i, LEN);
    cache
        .get_or_fetch(&rel(i), LEN as u64, &sha(&bytes), &mut |sink| {
            calls.fetch_add(1, Ordering::SeqCst);
            write_all(sink, &bytes, 3)
        })
        .unwrap()
}

fn set_mtime(path: &Path, secs_ago: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

#[test]
fn fetches_once_then_serves_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(10)).unwrap();
    let calls = AtomicU64::new(0);
    assert!(cache.get(&rel(1), &sha_of(1, LEN)).unwrap().is_none());

    let file = fetch(&cache, 1, &calls);
    assert_eq!(file.len(), LEN as u64);
    assert_eq!(file.path(), dir.path().join(rel(1)));
    assert_eq!(file.read_all().unwrap(), content(1, LEN));
    let mut middle = [0u8; 100];
    file.read_exact_at(&mut middle, 1000).unwrap();
    assert_eq!(middle[..], content(1, LEN)[1000..1100]);
    drop(file);

    // Again, through this instance and through a new one (another process would be the
    // same): served from disk.
    assert_eq!(
        fetch(&cache, 1, &calls).read_all().unwrap(),
        content(1, LEN)
    );
    let again = ShardCache::open(dir.path(), limits_for(10)).unwrap();
    assert_eq!(
        fetch(&again, 1, &calls).read_all().unwrap(),
        content(1, LEN)
    );
    let got = again.get(&rel(1), &sha_of(1, LEN)).unwrap().unwrap();
    assert_eq!(got.read_all().unwrap(), content(1, LEN));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Another version (another SHA-256) counts as absent for `get`.
    assert!(again.get(&rel(1), &[0; 32]).unwrap().is_none());
    assert_eq!(files_under(dir.path()), ["cache-1a2b/shards/000001.bin"]);
    // The usage is every byte the cache wrote: the file, its seal and the marker.
    assert_eq!(cache.usage().unwrap(), bytes_under(dir.path()));
    assert!(cache.usage().unwrap() > LEN as u64);
}

#[test]
fn out_of_order_writes_and_restarts_are_verified() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(10)).unwrap();
    let bytes = content(7, LEN);
    let file = cache
        .get_or_fetch(&rel(7), LEN as u64, &sha(&bytes), &mut |sink| {
            // A first attempt writes garbage, then restarts.
            sink.write_at(0, &[0xff; 100])?;
            sink.restart()?;
            // Second half first, then the first half in two overlapping pieces.
            sink.write_at(2048, &bytes[2048..])?;
            sink.write_at(0, &bytes[..1500])?;
            sink.write_at(1000, &bytes[1000..2048])?;
            Ok(())
        })
        .unwrap();
    assert_eq!(file.read_all().unwrap(), bytes);

    // Out-of-order bytes that are wrong are caught by the re-read.
    let err = cache
        .get_or_fetch(&rel(8), LEN as u64, &sha(&content(8, LEN)), &mut |sink| {
            let bytes = content(8, LEN);
            sink.write_at(2048, &bytes[2048..])?;
            sink.write_at(0, &bytes[..2047])?;
            sink.write_at(2047, &[!bytes[2047]])?;
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(err, ShardCacheError::Integrity { .. }), "{err}");
    // A hole is a length error.
    let err = cache
        .get_or_fetch(&rel(8), LEN as u64, &sha(&content(8, LEN)), &mut |sink| {
            let bytes = content(8, LEN);
            sink.write_at(0, &bytes[..100])?;
            sink.write_at(200, &bytes[200..])?;
            Ok(())
        })
        .unwrap_err();
    assert!(
        matches!(err, ShardCacheError::Length { expected, found, .. } if expected == LEN as u64 && found == LEN as u64 - 100),
        "{err}"
    );
    assert_eq!(files_under(dir.path()), ["cache-1a2b/shards/000007.bin"]);
}

#[test]
fn a_wrong_checksum_keeps_nothing_and_the_next_call_fetches_again() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(10)).unwrap();
    let bytes = content(3, LEN);
    let mut corrupt = bytes.clone();
    corrupt[LEN / 2] ^= 1;
    let calls = AtomicU64::new(0);
    let err = cache
        .get_or_fetch(&rel(3), LEN as u64, &sha(&bytes), &mut |sink| {
            calls.fetch_add(1, Ordering::SeqCst);
            write_all(sink, &corrupt, 4)
        })
        .unwrap_err();
    match &err {
        ShardCacheError::Integrity {
            path,
            expected,
            found,
        } => {
            assert_eq!(path, &dir.path().join(rel(3)));
            assert_eq!(expected.len(), 64);
            assert_ne!(expected, found);
        }
        other => panic!("not an integrity error: {other}"),
    }
    assert!(err.to_string().contains("000003.bin"), "{err}");
    assert!(
        files_under(dir.path()).is_empty(),
        "{:?}",
        files_under(dir.path())
    );
    assert!(cache.get(&rel(3), &sha_of(3, LEN)).unwrap().is_none());

    let file = fetch(&cache, 3, &calls);
    assert_eq!(file.read_all().unwrap(), bytes);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn a_wrong_length_keeps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(10)).unwrap();
    let bytes = content(4, LEN);
    // Too short.
    let err = cache
        .get_or_fetch(&rel(4), LEN as u64, &sha(&bytes), &mut |sink| {
            write_all(sink, &bytes[..LEN - 1], 2)
        })
        .unwrap_err();
    assert!(
        matches!(&err, ShardCacheError::Length { path, expected, found }
            if path == &dir.path().join(rel(4)) && *expected == LEN as u64 && *found == LEN as u64 - 1),
        "{err}"
    );
    assert!(err.to_string().contains("000004.bin"), "{err}");
    assert!(files_under(dir.path()).is_empty());
    // Too long: the write past the end is refused, whatever the fetch then returns.
    let mut longer = bytes.clone();
    longer.push(0);
    let err = cache
        .get_or_fetch(&rel(4), LEN as u64, &sha(&bytes), &mut |sink| {
            let _ = sink.write_at(0, &longer);
            Ok(())
        })
        .unwrap_err();
    assert!(
        matches!(err, ShardCacheError::Length { found, .. } if found == LEN as u64 + 1),
        "{err}"
    );
    assert!(files_under(dir.path()).is_empty());
    let calls = AtomicU64::new(0);
    assert_eq!(fetch(&cache, 4, &calls).read_all().unwrap(), bytes);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[derive(Debug)]
struct ConnectionReset;
impl std::fmt::Display for ConnectionReset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection reset by the test")
    }
}
impl std::error::Error for ConnectionReset {}

#[test]
fn a_fetch_error_keeps_nothing_and_carries_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(10)).unwrap();
    let bytes = content(5, LEN);
    let err = cache
        .get_or_fetch(&rel(5), LEN as u64, &sha(&bytes), &mut |sink| {
            sink.write_at(0, &bytes[..100])?;
            Err(FetchError::retryable(ConnectionReset))
        })
        .unwrap_err();
    assert!(err.is_retryable());
    let text = err.to_string();
    assert!(
        text.contains("000005.bin") && text.contains("connection reset"),
        "{text}"
    );
    match err {
        ShardCacheError::Fetch {
            path,
            retryable,
            source,
        } => {
            assert_eq!(path, dir.path().join(rel(5)));
            assert!(retryable);
            assert!(source.downcast_ref::<ConnectionReset>().is_some());
        }
        other => panic!("not a fetch error: {other}"),
    }
    assert!(files_under(dir.path()).is_empty());
    // `?` on any error: not retryable.
    let err = cache
        .get_or_fetch(&rel(5), LEN as u64, &sha(&bytes), &mut |_| {
            Err(std::io::Error::other("gone"))?
        })
        .unwrap_err();
    assert!(!err.is_retryable(), "{err}");
    assert!(files_under(dir.path()).is_empty());
}

#[test]
fn usage_never_exceeds_the_limit_while_threads_churn() {
    let dir = tempfile::tempdir().unwrap();
    let limits = limits_for(3);
    let cache = Arc::new(ShardCache::open(dir.path(), limits).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (cache, stop) = (cache.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut samples, mut max) = (0u64, 0u64);
            while !stop.load(Ordering::SeqCst) || samples < 10 {
                max = max.max(cache.usage().unwrap());
                samples += 1;
            }
            (samples, max)
        })
    };
    let calls = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..2u64)
        .map(|w| {
            let (cache, calls) = (cache.clone(), calls.clone());
            std::thread::spawn(move || {
                for round in 0..40u64 {
                    let i = (round * 7 + w * 3) % 10;
                    let file = fetch(&cache, i, &calls);
                    assert_eq!(file.read_all().unwrap(), content(i, LEN));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    let (samples, max) = sampler.join().unwrap();
    assert!(samples >= 10);
    assert!(
        max <= limits.max_bytes,
        "usage {max} > {}",
        limits.max_bytes
    );
    assert!(cache.usage().unwrap() <= limits.max_bytes);
    // Ten files through room for three: eviction really happened.
    assert!(calls.load(Ordering::SeqCst) > 10);
    assert!(partials_under(dir.path()).is_empty());
}

#[test]
fn the_least_recently_used_file_is_evicted_first() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(3)).unwrap();
    let calls = AtomicU64::new(0);
    for i in 0..3 {
        drop(fetch(&cache, i, &calls));
    }
    // Use order (by mtime, the protocol's LRU clock): 1 oldest, then 0, then 2.
    set_mtime(&dir.path().join(rel(1)), 300);
    set_mtime(&dir.path().join(rel(0)), 200);
    set_mtime(&dir.path().join(rel(2)), 100);
    drop(fetch(&cache, 3, &calls));
    assert!(cache.get(&rel(1), &sha_of(1, LEN)).unwrap().is_none());
    for i in [0, 2, 3] {
        assert!(
            cache.get(&rel(i), &sha_of(i, LEN)).unwrap().is_some(),
            "{i}"
        );
    }
}

#[test]
fn a_first_open_by_a_process_refreshes_the_lru_position() {
    let dir = tempfile::tempdir().unwrap();
    let calls = AtomicU64::new(0);
    {
        let cache = ShardCache::open(dir.path(), limits_for(3)).unwrap();
        for i in 0..3 {
            drop(fetch(&cache, i, &calls));
        }
    }
    set_mtime(&dir.path().join(rel(0)), 300);
    set_mtime(&dir.path().join(rel(1)), 200);
    set_mtime(&dir.path().join(rel(2)), 100);
    // A new process reads file 0: it becomes the most recently used, so 1 goes next.
    let cache = ShardCache::open(dir.path(), limits_for(3)).unwrap();
    drop(cache.get(&rel(0), &sha_of(0, LEN)).unwrap().unwrap());
    drop(fetch(&cache, 3, &calls));
    assert!(cache.get(&rel(1), &sha_of(1, LEN)).unwrap().is_none());
    assert!(cache.get(&rel(0), &sha_of(0, LEN)).unwrap().is_some());
}

#[test]
fn a_held_file_is_never_evicted() {
    let dir = tempfile::tempdir().unwrap();
    let limits = limits_for(3);
    let cache = ShardCache::open(dir.path(), limits).unwrap();
    let calls = AtomicU64::new(0);
    let held = fetch(&cache, 100, &calls);
    // Make it the oldest, the first the LRU would pick.
    set_mtime(held.path(), 10_000);
    for round in 0..30 {
        drop(fetch(&cache, round % 6, &calls));
        assert!(cache.usage().unwrap() <= limits.max_bytes);
    }
    assert!(calls.load(Ordering::SeqCst) > 7, "no churn");
    assert!(dir.path().join(rel(100)).exists());
    assert_eq!(held.read_all().unwrap(), content(100, LEN));
    drop(held);
    let again = cache.get(&rel(100), &sha_of(100, LEN)).unwrap().unwrap();
    assert_eq!(again.read_all().unwrap(), content(100, LEN));
}

#[test]
fn a_file_larger_than_the_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(3)).unwrap();
    let limit = limits_for(3).max_bytes;
    let too_big = limit - SEAL_ALLOWANCE + 1;
    let err = cache
        .get_or_fetch(&rel(9), too_big, &[0; 32], &mut |_| {
            panic!("no fetch for a file that cannot fit")
        })
        .unwrap_err();
    assert!(
        matches!(&err, ShardCacheError::TooLarge { path, len, limit: l }
            if path == &dir.path().join(rel(9)) && *len == too_big + SEAL_ALLOWANCE && *l == limit),
        "{err}"
    );
    assert!(files_under(dir.path()).is_empty());
}

#[test]
fn no_room_when_every_file_is_held() {
    let dir = tempfile::tempdir().unwrap();
    let limits = limits_for(2).with_wait_for_room(Duration::from_millis(200));
    let cache = ShardCache::open(dir.path(), limits).unwrap();
    let calls = AtomicU64::new(0);
    let held = [fetch(&cache, 0, &calls), fetch(&cache, 1, &calls)];
    let err = cache
        .get_or_fetch(&rel(2), LEN as u64, &sha(&content(2, LEN)), &mut |_| {
            panic!("no fetch without room")
        })
        .unwrap_err();
    match &err {
        ShardCacheError::NoRoom {
            path,
            needed,
            limit,
            waited,
        } => {
            assert_eq!(path, &dir.path().join(rel(2)));
            assert_eq!(
                (*needed, *limit),
                (LEN as u64 + SEAL_ALLOWANCE, limits.max_bytes)
            );
            assert!(*waited >= Duration::from_millis(200));
        }
        other => panic!("not NoRoom: {other}"),
    }
    assert!(err.is_retryable());
    // Once a reader lets go, there is room.
    drop(held);
    assert_eq!(
        fetch(&cache, 2, &calls).read_all().unwrap(),
        content(2, LEN)
    );
    assert!(cache.usage().unwrap() <= limits.max_bytes);
    assert_eq!(cache.usage().unwrap(), bytes_under(dir.path()));
}

#[test]
fn a_stale_partial_file_is_swept_by_open_and_never_served() {
    let dir = tempfile::tempdir().unwrap();
    drop(ShardCache::open(dir.path(), limits_for(3)).unwrap());
    // What a killed downloader and a killed seal writer leave behind.
    let shards = dir.path().join("cache-1a2b/shards");
    std::fs::create_dir_all(&shards).unwrap();
    let partial = shards.join(".shard-cache-partial.000001.bin");
    std::fs::write(&partial, vec![0xAB; LEN]).unwrap();
    let temp = shards.join(".shard-cache-tmp.123-456-7");
    std::fs::write(&temp, b"sha256 ab").unwrap();
    // A user's own file with a download-like name is none of the cache's business.
    let users = shards.join("000001.bin.partial");
    std::fs::write(&users, b"mine").unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(3)).unwrap();
    assert!(!partial.exists());
    assert!(!temp.exists());
    assert_eq!(std::fs::read(&users).unwrap(), b"mine");
    assert!(cache.get(&rel(1), &sha_of(1, LEN)).unwrap().is_none());
    let calls = AtomicU64::new(0);
    assert_eq!(
        fetch(&cache, 1, &calls).read_all().unwrap(),
        content(1, LEN)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // One that appears after `open` is removed by the next claim of its file.
    let partial2 = shards.join(".shard-cache-partial.000002.bin");
    std::fs::write(&partial2, vec![0xCD; LEN]).unwrap();
    assert!(cache.get(&rel(2), &sha_of(2, LEN)).unwrap().is_none());
    assert_eq!(
        fetch(&cache, 2, &calls).read_all().unwrap(),
        content(2, LEN)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(partials_under(dir.path()).is_empty());
    assert_eq!(std::fs::read(&users).unwrap(), b"mine");
}

#[test]
fn threads_racing_for_one_file_fetch_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(ShardCache::open(dir.path(), limits_for(10)).unwrap());
    let calls = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (cache, calls) = (cache.clone(), calls.clone());
            std::thread::spawn(move || {
                let bytes = content(42, LEN);
                let file = cache
                    .get_or_fetch(&rel(42), LEN as u64, &sha(&bytes), &mut |sink| {
                        calls.fetch_add(1, Ordering::SeqCst);
                        for (n, piece) in bytes.chunks(512).enumerate() {
                            sink.write_at(n as u64 * 512, piece)?;
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        Ok(())
                    })
                    .unwrap();
                assert_eq!(file.read_all().unwrap(), bytes);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(files_under(dir.path()), ["cache-1a2b/shards/000042.bin"]);
}

#[test]
fn invalid_relative_paths_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(3)).unwrap();
    for bad in [
        "/etc/passwd",
        "../x.bin",
        "a/../../x.bin",
        "",
        "a/.shard-cache-seal.x",
    ] {
        let err = cache.get(Path::new(bad), &[0; 32]).unwrap_err();
        assert!(
            matches!(err, ShardCacheError::InvalidPath { .. }),
            "{bad}: {err}"
        );
        let err = cache
            .get_or_fetch(Path::new(bad), 1, &[0; 32], &mut |_| panic!("no fetch"))
            .unwrap_err();
        assert!(
            matches!(err, ShardCacheError::InvalidPath { .. }),
            "{bad}: {err}"
        );
    }
    assert!(files_under(dir.path()).is_empty());
}

// Keeps the trait object-safe use visible: a sink can be passed on as `&mut dyn FetchSink`.
#[allow(dead_code)]
fn takes_sink(sink: &mut dyn FetchSink) -> std::io::Result<()> {
    sink.restart()
}

/// A download published in the background is readable at once through the returned file, is
/// visible to another instance (another process) only once published, and is then the same
/// file, read-locked by the downloader (so not evictable) the whole time.
#[test]
fn a_download_published_in_the_background_is_read_at_once_and_seen_by_others_when_durable() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(2)).unwrap();
    let other = ShardCache::open(dir.path(), limits_for(2)).unwrap();
    let bytes = content(5, LEN);
    let file = cache
        .get_or_fetch_with(
            &rel(5),
            LEN as u64,
            &sha(&bytes),
            dsrt_shard_cache::Publication::InBackground,
            &mut |sink| write_all(sink, &bytes, 2),
        )
        .unwrap();
    assert_eq!(file.read_all().unwrap(), bytes);
    cache.wait_published();
    assert!(partials_under(dir.path()).is_empty());
    let seen = other
        .get(&rel(5), &sha_of(5, LEN))
        .unwrap()
        .expect("published");
    assert_eq!(seen.read_all().unwrap(), bytes);
    // The downloader still holds its read lock: with room for two files, fetching two more
    // evicts the other one, never file 5.
    drop(seen);
    let calls = AtomicU64::new(0);
    drop(fetch(&other, 6, &calls));
    drop(fetch(&other, 7, &calls));
    assert!(!dir.path().join(rel(6)).exists());
    assert_eq!(file.read_all().unwrap(), bytes);
    assert!(dir.path().join(rel(5)).is_file());
}

/// While a background publication is held up (here by a directory lock another holder keeps,
/// as a long fsync would), the downloading instance's other lookups get the checked file at
/// once; another instance (another process) does not see it until it is published.
#[test]
fn a_download_being_published_is_served_to_its_own_instance_before_it_is_visible() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(2)).unwrap();
    let other = ShardCache::open(dir.path(), limits_for(2)).unwrap();
    let bytes = content(8, LEN);
    let root = std::fs::File::open(dir.path()).unwrap();
    let file = cache
        .get_or_fetch_with(
            &rel(8),
            LEN as u64,
            &sha(&bytes),
            dsrt_shard_cache::Publication::InBackground,
            &mut |sink| {
                write_all(sink, &bytes, 2)?;
                // The claim is made (it needed the lock); the publication will need it too.
                rustix::fs::flock(&root, rustix::fs::FlockOperation::LockShared)
                    .map_err(|e| FetchError::permanent(std::io::Error::from(e)))
            },
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(50)); // the publisher now waits for the lock
    assert!(!dir.path().join(rel(8)).exists(), "published too early");
    let again = cache
        .get(&rel(8), &sha_of(8, LEN))
        .unwrap()
        .expect("served before publication");
    assert_eq!(again.read_all().unwrap(), bytes);
    assert!(cache.get(&rel(8), &[0; 32]).unwrap().is_none());
    assert!(other.get(&rel(8), &sha_of(8, LEN)).unwrap().is_none());
    assert_eq!(
        &again.map().unwrap()[..],
        &bytes[..],
        "mapped before publication"
    );
    drop(root);
    cache.wait_published();
    assert!(dir.path().join(rel(8)).is_file());
    drop((file, again));
    let seen = other
        .get(&rel(8), &sha_of(8, LEN))
        .unwrap()
        .expect("published");
    assert_eq!(seen.read_all().unwrap(), bytes);
}

/// Owned chunks written in order are hashed on a thread of their own; whatever order the
/// owned and borrowed writes come in, and across a restart, the check is the same: the right
/// bytes are kept, wrong ones refused.
#[test]
fn owned_chunks_are_checked_like_borrowed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(8)).unwrap();
    let bytes = content(9, LEN);
    let piece = LEN / 4;
    let owned = |i: usize| bytes::Bytes::copy_from_slice(&bytes[i * piece..(i + 1) * piece]);
    let at = |i: usize| (i * piece) as u64;
    type Writes<'a> = Box<dyn Fn(&mut dyn FetchSink) -> std::io::Result<()> + 'a>;
    let patterns: Vec<(&str, Writes<'_>)> = vec![
        (
            "all owned, in order",
            Box::new(|sink: &mut dyn FetchSink| {
                (0..4).try_for_each(|i| sink.write_owned(at(i), owned(i)))
            }),
        ),
        (
            "owned then borrowed",
            Box::new(|sink: &mut dyn FetchSink| {
                sink.write_owned(at(0), owned(0))?;
                sink.write_owned(at(1), owned(1))?;
                sink.write_at(at(2), &bytes[2 * piece..])
            }),
        ),
        (
            "borrowed then owned",
            Box::new(|sink: &mut dyn FetchSink| {
                sink.write_at(at(0), &bytes[..piece])?;
                (1..4).try_for_each(|i| sink.write_owned(at(i), owned(i)))
            }),
        ),
        (
            "owned out of order",
            Box::new(|sink: &mut dyn FetchSink| {
                [3, 0, 2, 1]
                    .into_iter()
                    .try_for_each(|i| sink.write_owned(at(i), owned(i)))
            }),
        ),
        (
            "half, restart, all",
            Box::new(|sink: &mut dyn FetchSink| {
                sink.write_owned(at(0), owned(0))?;
                sink.write_owned(at(1), bytes::Bytes::from(vec![0u8; piece]))?;
                sink.restart()?;
                (0..4).try_for_each(|i| sink.write_owned(at(i), owned(i)))
            }),
        ),
    ];
    for (n, (what, writes)) in patterns.iter().enumerate() {
        let good = rel(100 + n as u64);
        let file = cache
            .get_or_fetch(&good, LEN as u64, &sha(&bytes), &mut |sink| {
                writes(sink).map_err(FetchError::permanent)
            })
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(file.read_all().unwrap(), bytes, "{what}");
        // The same writes against a wrong checksum keep nothing.
        let wrong = cache.get_or_fetch(&rel(200 + n as u64), LEN as u64, &[0u8; 32], &mut |sink| {
            writes(sink).map_err(FetchError::permanent)
        });
        assert!(
            matches!(wrong, Err(ShardCacheError::Integrity { .. })),
            "{what}: {wrong:?}"
        );
    }
    assert!(partials_under(dir.path()).is_empty());
}

/// A mapping outlives its `CachedFile` without keeping the file locked: with room for two
/// files, fetching two more evicts the mapped one, and the mapping still reads its bytes.
#[test]
fn a_mapping_does_not_keep_its_file_from_being_evicted_and_stays_readable() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ShardCache::open(dir.path(), limits_for(2)).unwrap();
    let calls = AtomicU64::new(0);
    let file = fetch(&cache, 1, &calls);
    let map = file.map().unwrap();
    drop(file);
    drop(fetch(&cache, 2, &calls));
    drop(fetch(&cache, 3, &calls));
    assert!(
        !dir.path().join(rel(1)).exists(),
        "the mapped file was not evicted"
    );
    assert_eq!(&map[..], &content(1, LEN)[..]);
}
