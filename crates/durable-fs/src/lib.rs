//! Local files that survive crashes and forks: crash-safe publication of small files (a
//! cache's `manifest.json`, a collection's `deleted.mask`) and the `flock` protocol locks that
//! serialize their writers.
//!
//! What it is for: writing a file so that a reader sees either the old bytes or the new ones,
//! never a torn mix, and knowing afterwards whether the new bytes are durable. The sequence is
//! temp file in the target's directory, write, flush, fsync, rename over the target, fsync the
//! directory. Every step goes through the [`FileSystem`] trait so tests can fail each one.
//! And locking files and directories ([`DirLock`], [`lock_file`]) the one way both stacks
//! need: `EINTR` retried, released before close so a forked child cannot hold it on. And the
//! process's one wait-interrupt hook ([`set_wait_interrupt`]) that every long wait asks. And
//! [`Dir`], a directory handled through its descriptor, inside which nothing follows a symbolic
//! link, nothing blocks on a FIFO and everything is created with an exact mode: for
//! directories a user may also write into.
//!
//! What it is not for: streaming large files (writers stream their own and call
//! [`FileSystem::sync_dir`] here), or deciding what a lock protects: that is each protocol's.
//!
//! Layering: a bottom-layer crate beside `codec`; it depends on no crate of this workspace.
#![forbid(unsafe_code)]

mod cancel;
mod dir;
mod interrupt;
mod lock;
mod publish;
mod std_fs;
mod temp_name;

pub use cancel::CancelToken;
pub use dir::{open_regular, Dir, EntryKind, EntryStat, FileAccess};
pub use interrupt::{set_wait_interrupt, wait_interrupted, INTERRUPT_POLL};
pub use lock::{lock_file, try_lock_file, unlock_file, DirLock, LockMode};
pub use publish::{publish, publish_cancellable, PublishError, PublishStep, Published};
pub use std_fs::StdFileSystem;
pub use temp_name::{is_temp_name, unique_temp_name};

use std::io::{self, Write};
use std::path::Path;

/// A file being written that can be made durable.
pub trait DurableFile: Write + Send {
    /// Flushes buffers and fsyncs the file's data and metadata.
    fn sync_all(&mut self) -> io::Result<()>;
}

/// The file operations a crash-safe publication needs.
///
/// [`StdFileSystem`] is the real one; tests wrap it to inject a failure at any step.
pub trait FileSystem: Send + Sync {
    /// Creates a new file; fails if `path` exists.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn DurableFile>>;
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Fsyncs a directory, making renames and creations inside it durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Fsyncs an existing file without changing it.
    fn sync_existing(&self, path: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
}
