use crate::{IndexError, IndexRow, MIN_RECORD_LEN, ROW_BYTES};
use memmap2::Mmap;
use std::path::Path;

enum Backing {
    /// A zero-length file cannot be mapped; an empty index needs no bytes.
    Empty,
    Mapped(Mmap),
    Owned(Vec<u8>),
}

/// A read-only view of index.bin.
///
/// Opening maps the file; the mapping lives as long as the view, after the file handle is
/// closed, and the OS shares its pages between every process that maps the same file.
pub struct IndexView {
    backing: Backing,
    rows: u64,
}

impl std::fmt::Debug for IndexView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexView")
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl IndexView {
    /// Maps `path` read-only and checks that it holds whole rows.
    pub fn open(path: &Path) -> Result<Self, IndexError> {
        let file = durable_fs::open_regular(path)?;
        let len = file.metadata()?.len();
        if len % ROW_BYTES as u64 != 0 {
            return Err(IndexError::Size { len });
        }
        if len == 0 {
            return Ok(Self {
                backing: Backing::Empty,
                rows: 0,
            });
        }
        // SAFETY: the format makes published cache files immutable while readers are alive
        // (source text, "Index"); the map is read-only, and every access below is bounds-checked
        // against the length taken when mapping. A file truncated by a third party despite that
        // contract would fault on access, which is why the contract is documented for users.
        #[allow(unsafe_code)]
        let map = unsafe { Mmap::map(&file)? };
        Ok(Self {
            backing: Backing::Mapped(map),
            rows: len / ROW_BYTES as u64,
        })
    }

    /// A view over bytes in memory (for tests, fuzzing and tools).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, IndexError> {
        let len = bytes.len() as u64;
        if len % ROW_BYTES as u64 != 0 {
            return Err(IndexError::Size { len });
        }
        Ok(Self {
            rows: len / ROW_BYTES as u64,
            backing: Backing::Owned(bytes),
        })
    }

    /// The raw bytes of the index (for hashing).
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes()
    }

    fn bytes(&self) -> &[u8] {
        match &self.backing {
            Backing::Empty => &[],
            Backing::Mapped(map) => map,
            Backing::Owned(bytes) => bytes,
        }
    }

    /// Number of rows.
    pub fn len(&self) -> u64 {
        self.rows
    }

    /// Whether the index has no row.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Row `sample`, decoded in O(1); an error past the end.
    #[inline]
    pub fn row(&self, sample: u64) -> Result<IndexRow, IndexError> {
        let out_of_range = || IndexError::SampleOutOfRange {
            sample,
            rows: self.rows,
        };
        if sample >= self.rows {
            return Err(out_of_range());
        }
        let start = usize::try_from(sample).map_err(|_| out_of_range())? * ROW_BYTES;
        let bytes = self
            .bytes()
            .get(start..start + ROW_BYTES)
            .ok_or_else(out_of_range)?;
        let bytes: &[u8; ROW_BYTES] = bytes.try_into().map_err(|_| out_of_range())?;
        Ok(IndexRow::decode(bytes))
    }

    /// The runs of consecutive samples whose records lie in one shard, in sample order: what
    /// splits a cache into pieces read shard by shard (a writer's cache has one run per shard).
    /// One pass over the rows, nothing kept but the run being built.
    pub fn shard_runs(&self) -> impl Iterator<Item = ShardRun> + '_ {
        let mut next = 0u64;
        std::iter::from_fn(move || {
            let first = self.row(next).ok()?;
            let start = next;
            next += 1;
            while self
                .row(next)
                .is_ok_and(|row| row.shard_id == first.shard_id)
            {
                next += 1;
            }
            Some(ShardRun {
                shard: first.shard_id,
                samples: start..next,
            })
        })
    }

    /// Checks the row count against the manifest and every row against the shard lengths, in
    /// one pass that keeps nothing.
    pub fn validate(&self, expected_rows: u64, shard_lens: &[u64]) -> Result<(), IndexError> {
        if self.rows != expected_rows {
            return Err(IndexError::RowCount {
                expected: expected_rows,
                found: self.rows,
            });
        }
        for (sample, chunk) in (0u64..).zip(self.bytes().chunks_exact(ROW_BYTES)) {
            let bytes: &[u8; ROW_BYTES] = chunk
                .try_into()
                .map_err(|_| IndexError::Size { len: self.rows })?;
            check_row(sample, &IndexRow::decode(bytes), shard_lens)?;
        }
        Ok(())
    }
}

/// Checks one row: known shard, record at least the header long, inside the shard.
pub(crate) fn check_row(sample: u64, row: &IndexRow, shard_lens: &[u64]) -> Result<(), IndexError> {
    let shard_len = usize::try_from(row.shard_id)
        .ok()
        .and_then(|id| shard_lens.get(id))
        .copied()
        .ok_or(IndexError::UnknownShard {
            sample,
            shard_id: row.shard_id,
            shard_count: shard_lens.len(),
        })?;
    if row.length < MIN_RECORD_LEN {
        return Err(IndexError::RecordTooShort {
            sample,
            length: row.length,
        });
    }
    match row.end() {
        Some(end) if end <= shard_len => Ok(()),
        _ => Err(IndexError::OutOfBounds {
            sample,
            shard_id: row.shard_id,
            offset: row.offset,
            length: row.length,
            shard_len,
        }),
    }
}

/// Consecutive samples whose records lie in one shard ([`IndexView::shard_runs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardRun {
    /// The shard id.
    pub shard: u64,
    /// The samples, in order.
    pub samples: std::ops::Range<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(shards: &[u64]) -> IndexView {
        let mut bytes = Vec::new();
        for (i, &shard_id) in shards.iter().enumerate() {
            let row = IndexRow {
                shard_id,
                offset: i as u64 * 8,
                length: 8,
            };
            bytes.extend_from_slice(&row.encode());
        }
        IndexView::from_bytes(bytes).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn shard_runs_follow_the_rows_in_sample_order() {
        let runs: Vec<_> = index(&[0, 0, 0, 1, 1, 0, 2]).shard_runs().collect();
        let expected = [(0, 0..3), (1, 3..5), (0, 5..6), (2, 6..7)];
        assert_eq!(runs.len(), expected.len());
        for (run, (shard, samples)) in runs.iter().zip(expected) {
            assert_eq!((run.shard, run.samples.clone()), (shard, samples));
        }
        assert_eq!(index(&[]).shard_runs().count(), 0);
        assert_eq!(index(&[4]).shard_runs().count(), 1);
    }
}
