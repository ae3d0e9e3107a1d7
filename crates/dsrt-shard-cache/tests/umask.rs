//! Under `umask 000` a private cache is still private: every directory `0700`, every file
//! `0600`, so no other user of the node can rewrite a shard someone's training reads. Its own
//! test binary: the umask is the whole process's.
#![allow(clippy::unwrap_used, clippy::cast_possible_truncation)] // test code: known small values

mod common;

use common::{all_files_under, content, rel, sha, write_all};
use dsrt_shard_cache::{CacheLimits, ShardCache};
use std::os::unix::fs::PermissionsExt;

#[test]
fn a_private_cache_stays_private_under_umask_000() {
    rustix::process::umask(rustix::fs::Mode::empty());
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    let cache = ShardCache::open(&root, CacheLimits::new(1 << 20)).unwrap();
    for i in 0..3 {
        let bytes = content(i, 1000);
        drop(
            cache
                .get_or_fetch(&rel(i), 1000, &sha(&bytes), &mut |sink| {
                    write_all(sink, &bytes, 1)
                })
                .unwrap(),
        );
    }
    let mode = |path: &std::path::Path| {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    for d in [
        root.clone(),
        root.join("cache-1a2b"),
        root.join("cache-1a2b/shards"),
    ] {
        assert_eq!(mode(&d), 0o700, "{}", d.display());
    }
    let files = all_files_under(&root);
    assert!(files.len() >= 7, "{files:?}"); // marker, three files, three seals
    for f in files {
        assert_eq!(mode(&root.join(&f)), 0o600, "{f}");
    }
}
