use crate::{IndexError, IndexRow, MIN_RECORD_LEN, ROW_BYTES};
use memmap2::Mmap;
use std::fs::File;
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
        let file = File::open(path)?;
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
