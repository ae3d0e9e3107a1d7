//! Where a fetch writes: the partial file, with its length and SHA-256 checked afterwards.

use crate::lock::DirLock;
use crate::ShardCacheError;
use bytes::Bytes;
use dsrt_atlas_codec::to_hex as hex;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

/// Where the caller's fetch writes the file's bytes.
///
/// Writes may come in any order (ranged requests in parallel, retries of one range); the cache
/// checks afterwards that bytes `0..len` were all written, and their SHA-256. Bytes written
/// in order from offset 0 are hashed as they pass; otherwise the file is read back once.
pub trait FetchSink {
    /// Writes `bytes` at `offset`. A write reaching past the declared length fails (and the
    /// claim then fails with [`ShardCacheError::Length`]).
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()>;
    /// [`FetchSink::write_at`] with bytes the sink may keep: written in order, they are hashed
    /// on a thread of their own while the caller receives the next ones, without a copy.
    fn write_owned(&mut self, offset: u64, bytes: Bytes) -> io::Result<()> {
        self.write_at(offset, &bytes)
    }
    /// Forgets everything written so far, for a retry from scratch.
    fn restart(&mut self) -> io::Result<()>;
}

/// Chunks queued for the writing thread at most: it lags the caller by a few chunks (tens of
/// KiB each from an HTTP body), and a slower thread holds the caller back.
const QUEUE_CHUNKS: usize = 16;

/// Writes and hashes on a thread of its own the chunks handed over in order, so the caller
/// (receiving them from the network) neither copies them into the file nor hashes them.
struct WriteThread {
    chunks: SyncSender<(u64, Bytes)>,
    done: JoinHandle<io::Result<[u8; 32]>>,
}

impl WriteThread {
    /// `None` when the file cannot be shared or the OS refuses a thread (the caller then
    /// writes and hashes itself).
    fn start(file: &File) -> Option<Self> {
        let file = file.try_clone().ok()?;
        let (chunks, receive) = sync_channel::<(u64, Bytes)>(QUEUE_CHUNKS);
        let done = std::thread::Builder::new()
            .name("shard-cache-write".into())
            .spawn(move || {
                let mut hasher = Sha256::new();
                for (offset, chunk) in receive {
                    file.write_all_at(&chunk, offset)?;
                    hasher.update(&chunk);
                }
                Ok(hasher.finalize().into())
            })
            .ok()?;
        Some(Self { chunks, done })
    }

    /// Hands the chunk at `offset` over; if the thread has stopped, its error.
    fn send(self, offset: u64, chunk: Bytes) -> Result<Self, io::Error> {
        match self.chunks.send((offset, chunk)) {
            Ok(()) => Ok(self),
            Err(_) => Err(self
                .finish()
                .err()
                .unwrap_or_else(|| io::Error::other("the writing thread stopped"))),
        }
    }

    /// Waits for every chunk handed over to be written: their digest, or the first error.
    fn finish(self) -> io::Result<[u8; 32]> {
        drop(self.chunks);
        self.done
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the writing thread panicked")))
    }
}

/// The sink over a claimed partial file.
pub(crate) struct PartialSink<'a> {
    root: &'a Path,
    file: &'a File,
    len: u64,
    hasher: Sha256,
    /// Writes and hashes, instead of the caller and `hasher`, the chunks given with
    /// `write_owned` in order; started by the first of them at offset 0.
    thread: Option<WriteThread>,
    /// End of the bytes hashed in order (or handed to `thread`); meaningful while `in_order`.
    hashed_to: u64,
    in_order: bool,
    /// Sorted, disjoint, non-adjacent ranges written.
    covered: Vec<(u64, u64)>,
    /// The furthest end of a refused write past `len`.
    pub(crate) overflow: Option<u64>,
}

impl<'a> PartialSink<'a> {
    pub(crate) fn new(root: &'a Path, file: &'a File, len: u64) -> Self {
        Self {
            root,
            file,
            len,
            hasher: Sha256::new(),
            thread: None,
            hashed_to: 0,
            in_order: true,
            covered: Vec::new(),
            overflow: None,
        }
    }

    /// Checks what was written: exactly `0..len`, hashing to `sha256`.
    pub(crate) fn verify(self, path: &Path, sha256: &[u8; 32]) -> Result<(), ShardCacheError> {
        let length_error = |found| ShardCacheError::Length {
            path: path.to_path_buf(),
            expected: self.len,
            found,
        };
        let threaded = match self.thread {
            Some(thread) => Some(thread.finish().map_err(|e| ShardCacheError::io(path, e))?),
            None => None,
        };
        if let Some(end) = self.overflow {
            return Err(length_error(end));
        }
        let complete = match self.covered.as_slice() {
            [] => self.len == 0,
            [(0, end)] => *end == self.len,
            _ => false,
        };
        if !complete {
            let found = match self.covered.as_slice() {
                [(0, end)] => *end,
                ranges => ranges.iter().map(|(a, b)| b - a).sum(),
            };
            return Err(length_error(found));
        }
        let digest: [u8; 32] = match (self.in_order && self.hashed_to == self.len, threaded) {
            (true, Some(digest)) => digest,
            (true, None) => self.hasher.finalize().into(),
            (false, _) => {
                hash_file(self.file, self.len).map_err(|e| ShardCacheError::io(path, e))?
            }
        };
        if &digest != sha256 {
            return Err(ShardCacheError::Integrity {
                path: path.to_path_buf(),
                expected: hex(sha256),
                found: hex(&digest),
            });
        }
        Ok(())
    }

    /// Refuses a write past the declared length; `offset..end` otherwise.
    fn check_bounds(&mut self, offset: u64, len: usize) -> io::Result<u64> {
        let end = offset.saturating_add(len as u64);
        if end > self.len {
            self.overflow = Some(self.overflow.unwrap_or(0).max(end));
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a write of bytes {offset}..{end} reaches past the declared length {}",
                    self.len
                ),
            ));
        }
        Ok(end)
    }

    /// Records `offset..end` as written; whether it continued the bytes written in order from
    /// offset 0.
    fn record(&mut self, offset: u64, end: u64) -> bool {
        insert(&mut self.covered, offset, end);
        let next = self.in_order && offset == self.hashed_to;
        if next {
            self.hashed_to = end;
        } else {
            self.in_order = false;
        }
        next
    }

    /// Waits for the writing thread, if any, to have written everything handed over (what
    /// follows is written here, and must not race with it); its digest is then lost, and
    /// `verify` reads the file back.
    fn stop_thread(&mut self) -> io::Result<()> {
        match self.thread.take() {
            Some(thread) => {
                thread.finish()?;
                self.in_order = false;
                Ok(())
            }
            None => Ok(()),
        }
    }
}

impl FetchSink for PartialSink<'_> {
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let end = self.check_bounds(offset, bytes.len())?;
        if bytes.is_empty() {
            return Ok(());
        }
        if self.thread.is_some() {
            return self.write_owned(offset, Bytes::copy_from_slice(bytes));
        }
        self.file.write_all_at(bytes, offset)?;
        if self.record(offset, end) {
            self.hasher.update(bytes);
        }
        Ok(())
    }

    fn write_owned(&mut self, offset: u64, bytes: Bytes) -> io::Result<()> {
        let end = self.check_bounds(offset, bytes.len())?;
        if bytes.is_empty() {
            return Ok(());
        }
        let next = self.in_order && offset == self.hashed_to;
        if next && self.thread.is_none() && offset == 0 {
            self.thread = WriteThread::start(self.file);
        }
        match self.thread.take() {
            Some(thread) if next => {
                self.thread = Some(thread.send(offset, bytes)?);
                self.record(offset, end);
                Ok(())
            }
            thread => {
                self.thread = thread;
                self.stop_thread()?;
                self.file.write_all_at(&bytes, offset)?;
                if self.record(offset, end) {
                    self.hasher.update(&bytes);
                }
                Ok(())
            }
        }
    }

    fn restart(&mut self) -> io::Result<()> {
        // Whatever the thread still writes must land before the truncation, not after it.
        let _ = self.thread.take().map(WriteThread::finish);
        // Shrinking and growing back happen under the directory lock, so no other process can
        // count the bytes as free in between: the reservation stays ours.
        let _dir = DirLock::acquire(self.root, true).map_err(io::Error::other)?;
        self.file.set_len(0)?;
        self.file.set_len(self.len)?;
        self.hasher = Sha256::new();
        self.hashed_to = 0;
        self.in_order = true;
        self.covered.clear();
        self.overflow = None;
        Ok(())
    }
}

/// Adds `start..end` to sorted, disjoint ranges, merging what it touches.
fn insert(ranges: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    let (mut lo, mut hi) = (start, end);
    ranges.retain(|&(a, b)| {
        if b < lo || a > hi {
            true
        } else {
            lo = lo.min(a);
            hi = hi.max(b);
            false
        }
    });
    let at = ranges.partition_point(|&(a, _)| a < lo);
    ranges.insert(at, (lo, hi));
}

/// SHA-256 of the first `len` bytes of `file`.
pub(crate) fn hash_file(file: &File, len: u64) -> io::Result<[u8; 32]> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut offset = 0u64;
    while offset < len {
        let want = usize::try_from((len - offset).min(buf.len() as u64)).unwrap_or(buf.len());
        file.read_exact_at(&mut buf[..want], offset)?;
        hasher.update(&buf[..want]);
        offset += want as u64;
    }
    Ok(hasher.finalize().into())
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test values below 80
mod tests {
    use super::insert;
    use proptest::prelude::*;

    #[test]
    fn ranges_merge() {
        let mut r = Vec::new();
        insert(&mut r, 10, 20);
        insert(&mut r, 0, 5);
        assert_eq!(r, [(0, 5), (10, 20)]);
        insert(&mut r, 5, 10);
        assert_eq!(r, [(0, 20)]);
        insert(&mut r, 30, 40);
        insert(&mut r, 15, 35);
        assert_eq!(r, [(0, 40)]);
    }

    proptest! {
        #[test]
        fn ranges_cover_exactly_the_written_bytes(writes in proptest::collection::vec((0u64..64, 1u64..16), 0..20)) {
            let mut r = Vec::new();
            let mut bytes = [false; 80];
            for (start, n) in writes {
                insert(&mut r, start, start + n);
                for b in &mut bytes[start as usize..(start + n) as usize] {
                    *b = true;
                }
            }
            let mut from_ranges = [false; 80];
            for w in r.windows(2) {
                prop_assert!(w[0].1 < w[1].0, "not disjoint and sorted: {:?}", r);
            }
            for &(a, b) in &r {
                for x in &mut from_ranges[a as usize..b as usize] {
                    *x = true;
                }
            }
            prop_assert_eq!(bytes, from_ranges);
        }
    }
}
