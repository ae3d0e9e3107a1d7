use crate::IndexRow;
use dsrt_atlas_codec::{HashingWriter, Sha256Digest};
use std::io::{self, Write};

/// Appends rows to index.bin while hashing them.
#[derive(Debug)]
pub struct IndexWriter<W: Write> {
    out: HashingWriter<W>,
    rows: u64,
}

impl<W: Write> IndexWriter<W> {
    /// Starts an index on `out`.
    pub fn new(out: W) -> Self {
        Self {
            out: HashingWriter::new(out),
            rows: 0,
        }
    }

    /// Appends one row.
    pub fn push(&mut self, row: IndexRow) -> io::Result<()> {
        self.out.write_all(&row.encode())?;
        self.rows += 1;
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Flushes and returns the inner writer, the SHA-256 of the bytes and the row count.
    pub fn finish(mut self) -> io::Result<(W, Sha256Digest, u64)> {
        self.out.flush()?;
        let (inner, digest, _) = self.out.finish();
        Ok((inner, digest, self.rows))
    }
}
