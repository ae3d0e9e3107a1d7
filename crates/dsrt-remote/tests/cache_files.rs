//! A prefix's cache files through dsrt-writer's rules (`RemoteCacheFiles`): what removing an
//! unpublished cache deletes and leaves, and what a join's target may not already hold.
#![allow(clippy::unwrap_used)] // Test code.
#![allow(clippy::disallowed_methods)] // a test or tool drives its own runtime

mod write_support;

use dsrt_remote::object_store::memory::InMemory;
use dsrt_remote::object_store::ObjectStore;
use dsrt_remote::{RemoteCacheFiles, RemotePrefix};
use dsrt_writer::{first_cache_file, remove_unpublished};
use std::sync::Arc;
use write_support::{list_objects, prefix};

/// Puts a one-byte object at each of `names` under `to`.
fn put_all(to: &RemotePrefix, names: &[&str]) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for name in names {
        let (store, location) = (to.store().clone(), to.object(name));
        runtime.block_on(async move {
            use object_store::ObjectStoreExt;
            store.put(&location, b"x".to_vec().into()).await.unwrap();
        });
    }
}

#[test]
fn removing_an_unpublished_cache_deletes_its_files_and_nothing_else() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let to = prefix(store, "c");
    put_all(
        &to,
        &[
            "shards/000000.bin",
            "shards/000001.bin",
            "shards/notes.txt",
            "index.bin",
            "metadata.arrow",
            "other.txt",
        ],
    );
    remove_unpublished(&RemoteCacheFiles::new(&to), false).unwrap();
    assert_eq!(list_objects(&to), ["other.txt", "shards/notes.txt"]);

    // A published cache is never touched.
    put_all(&to, &["manifest.json", "index.bin", "shards/000000.bin"]);
    let before = list_objects(&to);
    remove_unpublished(&RemoteCacheFiles::new(&to), false).unwrap();
    assert_eq!(list_objects(&to), before);
}

#[test]
fn the_first_cache_file_under_a_prefix_names_what_a_join_would_mix_with() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let to = prefix(store, "t");
    let first = |to| first_cache_file(&RemoteCacheFiles::new(to)).unwrap();
    put_all(&to, &[".parts/0/manifest.json", "notes.txt"]);
    assert_eq!(first(&to), None, "other objects are no cache file");
    put_all(&to, &["shards/000003.bin"]);
    assert_eq!(first(&to).as_deref(), Some("shards/000003.bin"));
    put_all(&to, &["index.bin"]);
    assert_eq!(first(&to).as_deref(), Some("index.bin"));
    put_all(&to, &["manifest.json"]);
    assert_eq!(first(&to).as_deref(), Some("manifest.json"));
}
