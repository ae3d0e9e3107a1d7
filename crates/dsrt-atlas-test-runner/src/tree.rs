//! What a directory holds, byte for byte: how the tests compare two outputs that must be
//! identical (a cache packed by one job and by three, a local cache and what was published).

use std::path::Path;

/// Every regular file below `dir`, as `(relative path with /, bytes)`, sorted by path.
/// Panics (fails the test) on an unreadable entry.
pub fn files_below(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
                .path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap_or(&path);
                let name = relative.to_string_lossy().into_owned();
                let bytes =
                    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                out.push((name, bytes));
            }
        }
    }
    out.sort();
    out
}

/// Whether `name` is a shard cache's bookkeeping (its marker `.shard-cache-root` and its seals
/// `.shard-cache-seal.*`) rather than a cached file: what tests listing a shard cache
/// directory leave out.
pub fn is_shard_cache_bookkeeping(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    name == ".shard-cache-root" || name.starts_with(".shard-cache-seal.")
}
