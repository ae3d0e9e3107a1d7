use crate::{CacheError, CacheFile};
use dsrt_index::INDEX_FILE_NAME;
use dsrt_manifest::CacheDescription;
use dsrt_metadata::METADATA_FILE_NAME;
use dsrt_shard::SHARDS_DIR_NAME;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Checks that every listed shard exists with its manifest length; returns the lengths.
pub(crate) fn check_shard_files(
    path: &Path,
    description: &CacheDescription,
) -> Result<Vec<u64>, CacheError> {
    let shards_dir = path.join(SHARDS_DIR_NAME);
    description
        .shards
        .iter()
        .enumerate()
        .map(|(id, entry)| {
            let file = CacheFile::Shard(id as u64);
            let found = match std::fs::metadata(shards_dir.join(&entry.name)) {
                Ok(meta) if meta.is_file() => meta.len(),
                Ok(_) => {
                    return Err(CacheError::MissingShard {
                        path: path.to_path_buf(),
                        shard: id as u64,
                        file,
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(CacheError::MissingShard {
                        path: path.to_path_buf(),
                        shard: id as u64,
                        file,
                    })
                }
                Err(source) => return Err(CacheError::io(path, file, source)),
            };
            if found != entry.byte_len {
                return Err(CacheError::ShardLength {
                    path: path.to_path_buf(),
                    file,
                    expected: entry.byte_len,
                    found,
                });
            }
            Ok(found)
        })
        .collect()
}

/// At most this many files are hashed at once; more threads than cores only add seeks.
const MAX_HASH_THREADS: usize = 8;

/// One file to hash: which it is, where it is, and the digest the manifest records.
struct HashJob<'a> {
    file: CacheFile,
    file_path: PathBuf,
    expected: &'a str,
    /// Its size, for scheduling only.
    len: u64,
}

/// Hashes index.bin, metadata.arrow and (with `shards`) every shard and compares with the
/// manifest.
///
/// Files are hashed on a bounded pool of scoped threads (one per core, at most
/// [`MAX_HASH_THREADS`]), largest first so one big shard does not finish last alone. The
/// error is the one a sequential pass would report: of every file that fails, the first in
/// manifest order (index, metadata, then shards by id). Once a file has failed, files after
/// it in that order are not started.
pub(crate) fn verify_checksums(
    path: &Path,
    description: &CacheDescription,
    shards: bool,
) -> Result<(), CacheError> {
    let mut jobs = hash_jobs(path, description);
    if !shards {
        jobs.truncate(2);
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, MAX_HASH_THREADS)
        .min(jobs.len());
    if threads <= 1 {
        return jobs.iter().try_for_each(|job| verify_file(path, job));
    }
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(jobs[i].len));
    let next = AtomicUsize::new(0);
    let first_failure = AtomicUsize::new(usize::MAX);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while let Some(&index) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if index > first_failure.load(Ordering::Relaxed) {
                        continue;
                    }
                    if let Err(e) = verify_file(path, &jobs[index]) {
                        first_failure.fetch_min(index, Ordering::Relaxed);
                        failures
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .push((index, e));
                    }
                }
            });
        }
    });
    let failures = failures
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match failures.into_iter().min_by_key(|(index, _)| *index) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

fn hash_jobs<'a>(path: &Path, description: &'a CacheDescription) -> Vec<HashJob<'a>> {
    let shards_dir = path.join(SHARDS_DIR_NAME);
    let mut jobs = vec![
        HashJob {
            file: CacheFile::Index,
            len: file_len(&path.join(INDEX_FILE_NAME)),
            file_path: path.join(INDEX_FILE_NAME),
            expected: &description.index_sha256,
        },
        HashJob {
            file: CacheFile::Metadata,
            len: file_len(&path.join(METADATA_FILE_NAME)),
            file_path: path.join(METADATA_FILE_NAME),
            expected: &description.metadata_sha256,
        },
    ];
    jobs.extend(
        description
            .shards
            .iter()
            .enumerate()
            .map(|(id, entry)| HashJob {
                file: CacheFile::Shard(id as u64),
                file_path: shards_dir.join(&entry.name),
                expected: &entry.sha256,
                // `check_shard_files` has already found the file at this length.
                len: entry.byte_len,
            }),
    );
    jobs
}

/// The size used to schedule a file; a file that cannot be stat'ed fails when it is hashed.
fn file_len(file_path: &Path) -> u64 {
    std::fs::metadata(file_path).map_or(0, |m| m.len())
}

fn verify_file(path: &Path, job: &HashJob<'_>) -> Result<(), CacheError> {
    let HashJob {
        file,
        file_path,
        expected,
        ..
    } = job;
    let io_error = |source| CacheError::io(path, *file, source);
    let opened = durable_fs::open_regular(file_path).map_err(io_error)?;
    let (digest, _) = dsrt_atlas_codec::sha::sha256_reader(opened).map_err(io_error)?;
    let found = dsrt_atlas_codec::to_hex(&digest);
    if found != *expected {
        return Err(CacheError::Checksum {
            path: path.to_path_buf(),
            file: *file,
            expected: (*expected).to_owned(),
            found,
        });
    }
    Ok(())
}
