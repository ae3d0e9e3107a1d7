use crate::{CacheError, CacheFile};
use dsrt_index::INDEX_FILE_NAME;
use dsrt_manifest::CacheDescription;
use dsrt_metadata::METADATA_FILE_NAME;
use dsrt_shard::SHARDS_DIR_NAME;
use std::fs::File;
use std::io;
use std::path::Path;

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
                Err(source) => {
                    return Err(CacheError::Io {
                        path: path.to_path_buf(),
                        file,
                        source,
                    })
                }
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

/// Hashes index.bin, metadata.arrow and every shard and compares with the manifest.
pub(crate) fn verify_checksums(
    path: &Path,
    description: &CacheDescription,
) -> Result<(), CacheError> {
    verify_file(
        path,
        CacheFile::Index,
        &path.join(INDEX_FILE_NAME),
        &description.index_sha256,
    )?;
    verify_file(
        path,
        CacheFile::Metadata,
        &path.join(METADATA_FILE_NAME),
        &description.metadata_sha256,
    )?;
    let shards_dir = path.join(SHARDS_DIR_NAME);
    for (id, entry) in description.shards.iter().enumerate() {
        verify_file(
            path,
            CacheFile::Shard(id as u64),
            &shards_dir.join(&entry.name),
            &entry.sha256,
        )?;
    }
    Ok(())
}

fn verify_file(
    path: &Path,
    file: CacheFile,
    file_path: &Path,
    expected: &str,
) -> Result<(), CacheError> {
    let io_error = |source| CacheError::Io {
        path: path.to_path_buf(),
        file: file.clone(),
        source,
    };
    let opened = File::open(file_path).map_err(io_error)?;
    let (digest, _) = dsrt_atlas_codec::sha::sha256_reader(opened).map_err(io_error)?;
    let found = dsrt_atlas_codec::to_hex(&digest);
    if found != expected {
        return Err(CacheError::Checksum {
            path: path.to_path_buf(),
            file,
            expected: expected.to_owned(),
            found,
        });
    }
    Ok(())
}
