use crate::{unique_temp_name, CancelToken, FileSystem};
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A step of the publication sequence, named in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishStep {
    /// Creating the temporary file.
    Create,
    /// Writing the bytes.
    Write,
    /// Flushing and fsyncing the temporary file.
    SyncFile,
    /// Renaming the temporary file over the target.
    Rename,
    /// Fsyncing the directory after the rename.
    SyncDir,
    /// The operation was cancelled before the rename.
    Cancelled,
}

impl fmt::Display for PublishStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Create => "create temporary file",
            Self::Write => "write temporary file",
            Self::SyncFile => "fsync temporary file",
            Self::Rename => "rename over target",
            Self::SyncDir => "fsync directory",
            Self::Cancelled => "cancelled before rename",
        })
    }
}

/// A publication that failed before the rename: the target still holds its old bytes.
#[derive(Debug, Error)]
#[error("publishing {target}: {step} failed: {source}")]
pub struct PublishError {
    /// The file that was to be replaced.
    pub target: PathBuf,
    /// The step that failed.
    pub step: PublishStep,
    /// The cause.
    #[source]
    pub source: io::Error,
}

/// What a publication that reached the rename achieved.
#[derive(Debug)]
pub enum Published {
    /// Renamed and the directory fsynced: the new bytes are durable.
    Durable,
    /// Renamed, but the directory fsync failed: readers see the new bytes, a power loss may
    /// bring back the old ones.
    DurabilityUnknown(io::Error),
}

/// Atomically replaces (or creates) `target` with `bytes`.
///
/// The temporary file is created beside `target`, named with `temp_prefix`, and removed again
/// if any step before the rename fails. `target`'s parent directory must exist.
pub fn publish(
    fs: &dyn FileSystem,
    target: &Path,
    temp_prefix: &str,
    bytes: &[u8],
) -> Result<Published, PublishError> {
    publish_cancellable(fs, target, temp_prefix, bytes, &CancelToken::new())
}

/// [`publish`], checking `cancel` before the rename: a cancelled publication removes its
/// temporary file and fails with [`PublishStep::Cancelled`], leaving the target untouched.
/// Once the rename has happened the publication completes.
pub fn publish_cancellable(
    fs: &dyn FileSystem,
    target: &Path,
    temp_prefix: &str,
    bytes: &[u8],
    cancel: &CancelToken,
) -> Result<Published, PublishError> {
    let dir = parent_dir(target);
    let temp = dir.join(unique_temp_name(temp_prefix));
    let fail = |step, source| PublishError {
        target: target.to_path_buf(),
        step,
        source,
    };
    let mut file = fs
        .create_new(&temp)
        .map_err(|e| fail(PublishStep::Create, e))?;
    let written = file
        .write_all(bytes)
        .map_err(|e| (PublishStep::Write, e))
        .and_then(|()| file.sync_all().map_err(|e| (PublishStep::SyncFile, e)));
    drop(file);
    let renamed = written
        .and_then(|()| match cancel.is_cancelled() {
            true => Err((
                PublishStep::Cancelled,
                io::Error::new(io::ErrorKind::Interrupted, "cancelled"),
            )),
            false => Ok(()),
        })
        .and_then(|()| {
            fs.rename(&temp, target)
                .map_err(|e| (PublishStep::Rename, e))
        });
    if let Err((step, source)) = renamed {
        // The temporary file is ours alone; a failed cleanup leaves a name readers ignore.
        let _ = fs.remove_file(&temp);
        return Err(fail(step, source));
    }
    Ok(match fs.sync_dir(dir) {
        Ok(()) => Published::Durable,
        Err(e) => Published::DurabilityUnknown(e),
    })
}

/// The directory that holds `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}
