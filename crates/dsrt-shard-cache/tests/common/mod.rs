//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use dsrt_shard_cache::{FetchError, FetchSink};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Deterministic content of test file `i`, `len` bytes.
pub fn content(i: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|b| (b.wrapping_mul(31) ^ i.wrapping_mul(7919)) as u8)
        .collect()
}

pub fn sha(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The relative path of test file `i`.
pub fn rel(i: u64) -> PathBuf {
    PathBuf::from(format!("cache-1a2b/shards/{i:06}.bin"))
}

/// Writes `bytes` in `chunks` pieces, in order.
pub fn write_all(sink: &mut dyn FetchSink, bytes: &[u8], chunks: usize) -> Result<(), FetchError> {
    let step = bytes.len().div_ceil(chunks.max(1)).max(1);
    for (n, piece) in bytes.chunks(step).enumerate() {
        sink.write_at((n * step) as u64, piece)?;
    }
    Ok(())
}

/// Every regular file under `dir`, as paths relative to it, sorted, but for the cache's marker
/// and seals (its bookkeeping of what it holds; `all_files_under` lists them too).
pub fn files_under(dir: &Path) -> Vec<String> {
    all_files_under(dir)
        .into_iter()
        .filter(|f| {
            let name = f.rsplit('/').next().unwrap_or(f);
            !dsrt_atlas_test_runner::is_shard_cache_bookkeeping(name.as_ref())
        })
        .collect()
}

/// The apparent sizes of every regular file under `dir`, summed.
pub fn bytes_under(dir: &Path) -> u64 {
    all_files_under(dir)
        .iter()
        .map(|f| std::fs::symlink_metadata(dir.join(f)).unwrap().len())
        .sum()
}

/// Every regular file under `dir`, as paths relative to it, sorted.
pub fn all_files_under(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            if meta.is_dir() {
                walk(&entry.path(), &format!("{name}/"), out);
            } else if meta.is_file() {
                out.push(name);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, "", &mut out);
    out.sort();
    out
}

/// The partial files (downloads in progress, or dead downloads' leftovers) under `dir`.
pub fn partials_under(dir: &Path) -> Vec<String> {
    files_under(dir)
        .into_iter()
        .filter(|f| f.contains(".shard-cache-partial."))
        .collect()
}

/// The SHA-256 of test file `i` of `len` bytes.
pub fn sha_of(i: u64, len: usize) -> [u8; 32] {
    sha(&content(i, len))
}
