//! [`TokenCache`]: a token cache opened for reading, every document's length checked.

use crate::{TokenDtype, TokenError, TokenInfo, N_TOKENS_COLUMN};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use dsrt_reader::{Cache, OpenOptions, SampleBuf};
use dsrt_schema::{ColumnType, ValueRef};
use std::path::Path;

/// A token cache: a [`Cache`] checked at open to carry the token layout
/// (`docs/format/datasetrt.md`, "Token caches").
#[derive(Debug)]
pub struct TokenCache {
    cache: Cache,
    info: TokenInfo,
    /// Position of `n_tokens` in the metadata schema.
    n_tokens_column: usize,
}

/// Reusable buffers for [`TokenCache::read`]: reading many documents through one allocates
/// only when a document is longer than any before it.
#[derive(Debug, Default)]
pub struct TokenBuf {
    sample: SampleBuf,
}

impl TokenBuf {
    /// Empty buffers.
    pub fn new() -> Self {
        Self::default()
    }
}

/// One document's ids, borrowed from a [`TokenBuf`]: the payload's little-endian bytes of
/// its cache's width, its length already checked against `n_tokens`.
#[derive(Debug, Clone, Copy)]
pub struct Tokens<'a> {
    bytes: &'a [u8],
    dtype: TokenDtype,
}

impl<'a> Tokens<'a> {
    /// The ids of `bytes` (little-endian ids of width `dtype`; a trailing partial id is not
    /// read).
    pub fn new(bytes: &'a [u8], dtype: TokenDtype) -> Self {
        let whole = bytes.len() - bytes.len() % dtype.width();
        Self {
            bytes: &bytes[..whole],
            dtype,
        }
    }

    /// The id width.
    pub fn dtype(&self) -> TokenDtype {
        self.dtype
    }

    /// Number of ids.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.dtype.width()
    }

    /// Whether the document is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The payload bytes: the ids, little-endian.
    pub fn as_le_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Id `i`, or `None` past the end.
    #[inline]
    pub fn get(&self, i: usize) -> Option<u32> {
        let width = self.dtype.width();
        let at = i.checked_mul(width)?;
        let id = self.bytes.get(at..at + width)?;
        Some(match self.dtype {
            TokenDtype::U16 => u32::from(u16::from_le_bytes([id[0], id[1]])),
            TokenDtype::U32 => u32::from_le_bytes([id[0], id[1], id[2], id[3]]),
        })
    }

    /// Ids `range` of the document (clamped to its end).
    pub fn slice(&self, range: std::ops::Range<usize>) -> Tokens<'a> {
        let width = self.dtype.width();
        let end = range.end.min(self.len());
        let start = range.start.min(end);
        Tokens {
            bytes: &self.bytes[start * width..end * width],
            dtype: self.dtype,
        }
    }

    /// The ids in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u32> + 'a {
        let dtype = self.dtype;
        self.bytes
            .chunks_exact(dtype.width())
            .map(move |id| match dtype {
                TokenDtype::U16 => u32::from(u16::from_le_bytes([id[0], id[1]])),
                TokenDtype::U32 => u32::from_le_bytes([id[0], id[1], id[2], id[3]]),
            })
    }

    /// Writes the ids into `out[..self.len()]`, converted to `T` (`u32`, `i32`, `i64`: what a
    /// batch tensor holds). Panics if `out` is shorter.
    pub fn copy_to<T: From<u16> + TryFrom<u32>>(&self, out: &mut [T]) {
        let out = &mut out[..self.len()];
        match self.dtype {
            TokenDtype::U16 => {
                for (slot, id) in out.iter_mut().zip(self.bytes.chunks_exact(2)) {
                    *slot = T::from(u16::from_le_bytes([id[0], id[1]]));
                }
            }
            TokenDtype::U32 => {
                for (slot, id) in out.iter_mut().zip(self.bytes.chunks_exact(4)) {
                    let id = u32::from_le_bytes([id[0], id[1], id[2], id[3]]);
                    // Saturates only for a T narrower than the ids (i32 with ids above
                    // i32::MAX), which no vocabulary has.
                    *slot = T::try_from(id).unwrap_or_else(|_| T::from(u16::MAX));
                }
            }
        }
    }

    /// Appends the ids to `out` as `u32`.
    pub fn extend_u32(&self, out: &mut Vec<u32>) {
        out.extend(self.iter());
    }
}

impl TokenCache {
    /// Opens the cache at `path` ([`Cache::open`]) and checks it is a token cache.
    pub fn open(path: impl AsRef<Path>, options: OpenOptions) -> Result<Self, TokenError> {
        Self::new(Cache::open(path, options)?)
    }

    /// Takes an open cache (local or remote) and checks it is a token cache: the manifest's
    /// `tokens` key well formed, a metadata column `n_tokens` of type int64, not nullable.
    pub fn new(cache: Cache) -> Result<Self, TokenError> {
        let path = cache.path();
        let info = TokenInfo::of_manifest(cache.manifest(), path)?.ok_or_else(|| {
            TokenError::NotATokenCache {
                path: path.to_path_buf(),
            }
        })?;
        let schema = cache.schema();
        let column_error = |reason: String| TokenError::NTokensColumn {
            path: path.to_path_buf(),
            reason,
        };
        let n_tokens_column = schema
            .position(N_TOKENS_COLUMN)
            .ok_or_else(|| column_error("missing".into()))?;
        let column = &schema.columns()[n_tokens_column];
        if column.ty != ColumnType::Int64 || column.nullable {
            return Err(column_error(format!(
                "{}{}, not int64 and non-nullable",
                column.ty.as_str(),
                if column.nullable { " nullable" } else { "" }
            )));
        }
        Ok(Self {
            cache,
            info,
            n_tokens_column,
        })
    }

    /// The underlying cache.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Gives the underlying cache back.
    pub fn into_cache(self) -> Cache {
        self.cache
    }

    /// The token info of its manifest.
    pub fn info(&self) -> &TokenInfo {
        &self.info
    }

    /// The id width.
    pub fn dtype(&self) -> TokenDtype {
        self.info.dtype
    }

    /// The cache directory.
    pub fn path(&self) -> &Path {
        self.cache.path()
    }

    /// Number of documents.
    pub fn len(&self) -> u64 {
        self.cache.len()
    }

    /// Whether it holds no document.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }

    /// Position of `n_tokens` in the metadata schema.
    pub fn n_tokens_column(&self) -> usize {
        self.n_tokens_column
    }

    /// Document `sample`'s token count, from the mapped metadata.arrow: no payload is read.
    pub fn n_tokens(&self, sample: u64) -> Result<u64, TokenError> {
        let row = self.cache.metadata_row(sample)?;
        let value = row.get(self.n_tokens_column).unwrap_or(ValueRef::Null);
        self.count(sample, value)
    }

    fn count(&self, sample: u64, value: ValueRef<'_>) -> Result<u64, TokenError> {
        match value {
            ValueRef::Int64(n) if n >= 0 => Ok(n.unsigned_abs()),
            other => Err(TokenError::BadNTokens {
                path: self.path().to_path_buf(),
                sample,
                found: format!("{other:?}"),
            }),
        }
    }

    /// Every document's `n_tokens`, as the mapped metadata.arrow holds them: one slice per
    /// record batch, in sample order (no copy). Values are as stored: a reader that sums them
    /// is held to them by [`Self::read`]'s length check.
    pub fn n_tokens_batches(&self) -> impl Iterator<Item = &[i64]> + '_ {
        let column = self.n_tokens_column;
        self.cache
            .metadata()
            .record_batches()
            .iter()
            .map(move |batch| {
                batch
                    .column(column)
                    .as_primitive::<Int64Type>()
                    .values()
                    .as_ref()
            })
    }

    /// Reads document `sample` through `buf`: its record from the shard's memory map (see
    /// [`Cache::read_mapped`]: an uncompressed payload is borrowed from the mapping, with no
    /// system call or copy; a cache read through a shard source falls back to a positional
    /// read), the payload's length checked against its `n_tokens`. No allocation once `buf`
    /// has grown to the longest document.
    pub fn read<'a>(
        &'a self,
        sample: u64,
        buf: &'a mut TokenBuf,
    ) -> Result<Tokens<'a>, TokenError> {
        let read = self.cache.read_mapped(sample, &mut buf.sample)?;
        let value = read
            .metadata
            .get(self.n_tokens_column)
            .unwrap_or(ValueRef::Null);
        let n_tokens = self.count(sample, value)?;
        let width = self.info.dtype.width();
        let expected = usize::try_from(n_tokens)
            .ok()
            .and_then(|n| n.checked_mul(width));
        if expected != Some(read.payload.len()) {
            return Err(TokenError::LengthMismatch {
                path: self.path().to_path_buf(),
                sample,
                payload_len: read.payload.len(),
                n_tokens: i64::try_from(n_tokens).unwrap_or(i64::MAX),
                width,
            });
        }
        Ok(Tokens::new(read.payload, self.info.dtype))
    }
}
