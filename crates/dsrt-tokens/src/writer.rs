//! [`TokenWriter`]: documents of token ids into a new token cache.

use crate::encode::BadTokenId;
use crate::{TokenEncoder, TokenError, TokenId, TokenIds, TokenInfo, N_TOKENS_COLUMN, TOKENS_KEY};
use dsrt_schema::{Column, ColumnType, Row, Schema, ValueRef};
use dsrt_writer::{CacheSummary, CacheWriter, WriterOptions};
use smallvec::SmallVec;
use std::path::Path;

/// What a finished token cache holds.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenSummary {
    /// The cache as its writer reports it (documents are its samples).
    pub cache: CacheSummary,
    /// Tokens in all documents.
    pub tokens: u64,
    /// The token info in its manifest.
    pub info: TokenInfo,
}

/// Writes a token cache: each document's ids checked and stored as its payload, its length
/// as the first metadata column `n_tokens`, the token info as the manifest's `tokens` key.
///
/// Like [`CacheWriter`], the cache is published only by [`TokenWriter::finish`]; a writer
/// dropped before leaves a directory no reader opens.
#[derive(Debug)]
pub struct TokenWriter {
    writer: CacheWriter,
    info: TokenInfo,
    encoder: TokenEncoder,
    /// The caller's columns (the cache's schema without `n_tokens`).
    user_schema: Schema,
    payload: Vec<u8>,
    tokens: u64,
}

impl TokenWriter {
    /// Creates the cache at `path`. `options.schema` holds the caller's metadata columns
    /// (possibly none), which follow `n_tokens`; a column of that name is refused, as is token
    /// info that contradicts itself ([`TokenInfo::check`]).
    pub fn create(
        path: impl AsRef<Path>,
        options: WriterOptions,
        info: TokenInfo,
    ) -> Result<Self, TokenError> {
        let path = path.as_ref();
        info.check(path)?;
        let user_schema = options.schema.clone();
        if user_schema.position(N_TOKENS_COLUMN).is_some() {
            return Err(TokenError::NTokensColumn {
                path: path.to_path_buf(),
                reason: "the writer adds it; the given schema must not have it".into(),
            });
        }
        let mut columns = vec![Column::new(N_TOKENS_COLUMN, ColumnType::Int64, false)];
        columns.extend(user_schema.columns().iter().cloned());
        let schema = Schema::new(columns).map_err(|e| TokenError::NTokensColumn {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let options = WriterOptions { schema, ..options }.manifest_key(TOKENS_KEY, info.to_json());
        let writer = CacheWriter::create(path, options)?;
        Ok(Self {
            writer,
            encoder: TokenEncoder::new(&info),
            info,
            user_schema,
            payload: Vec::new(),
            tokens: 0,
        })
    }

    /// The token info the cache records.
    pub fn info(&self) -> &TokenInfo {
        &self.info
    }

    /// The cache directory.
    pub fn path(&self) -> &Path {
        self.writer.path()
    }

    /// Documents added so far.
    pub fn documents(&self) -> u64 {
        self.writer.samples()
    }

    /// Tokens added so far.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Adds a document: its ids (of any integer type, each checked against the width and the
    /// vocabulary) and the caller's metadata as a named row. Returns its sample id. A refused
    /// document writes nothing and the writer stays usable.
    pub fn add<T: TokenId>(&mut self, ids: &[T], row: &Row) -> Result<u64, TokenError> {
        let mut values: SmallVec<[ValueRef<'_>; 16]> = SmallVec::new();
        values.push(n_tokens_value(ids.len()));
        if let Err(source) = row.check_into(&self.user_schema, &mut values) {
            return Err(TokenError::from(dsrt_writer::WriteError::Row {
                path: self.path().to_path_buf(),
                sample: self.documents(),
                source,
            }));
        }
        self.append(ids, &values)
    }

    /// Adds a document whose ids' integer type is known only at run time, as [`Self::add`];
    /// [`TokenIds::Beyond`] is refused as [`TokenError::TokenBeyondIntegers`].
    pub fn add_ids(&mut self, ids: &TokenIds, row: &Row) -> Result<u64, TokenError> {
        match ids {
            TokenIds::Beyond { position, id } => Err(TokenError::TokenBeyondIntegers {
                path: self.path().to_path_buf(),
                sample: self.documents(),
                position: *position,
                id: id.clone(),
                max_id: self.info.max_id(),
                limit: self.info.limit(),
            }),
            TokenIds::I8(v) => self.add(v, row),
            TokenIds::I16(v) => self.add(v, row),
            TokenIds::I32(v) => self.add(v, row),
            TokenIds::I64(v) => self.add(v, row),
            TokenIds::U8(v) => self.add(v, row),
            TokenIds::U16(v) => self.add(v, row),
            TokenIds::U32(v) => self.add(v, row),
            TokenIds::U64(v) => self.add(v, row),
        }
    }

    /// Adds a document whose metadata values are given in the caller's schema order.
    pub fn add_values<T: TokenId>(
        &mut self,
        ids: &[T],
        values: &[ValueRef<'_>],
    ) -> Result<u64, TokenError> {
        let mut all: SmallVec<[ValueRef<'_>; 16]> = SmallVec::new();
        all.push(n_tokens_value(ids.len()));
        all.extend_from_slice(values);
        self.append(ids, &all)
    }

    fn append<T: TokenId>(
        &mut self,
        ids: &[T],
        values: &[ValueRef<'_>],
    ) -> Result<u64, TokenError> {
        let mut payload = std::mem::take(&mut self.payload);
        let encoded = self.encoder.encode(ids, &mut payload);
        let added = match encoded {
            Ok(()) => self
                .writer
                .add_values(&payload, values)
                .map_err(TokenError::from),
            Err(bad) => Err(self.out_of_range(bad)),
        };
        self.payload = payload;
        let sample = added?;
        self.tokens += ids.len() as u64;
        Ok(sample)
    }

    fn out_of_range(&self, bad: BadTokenId) -> TokenError {
        TokenError::TokenOutOfRange {
            path: self.path().to_path_buf(),
            sample: self.documents(),
            position: bad.position,
            id: bad.id,
            max_id: bad.max_id,
            limit: self.info.limit(),
        }
    }

    /// Publishes the cache (see [`CacheWriter::finish`]).
    pub fn finish(self) -> Result<TokenSummary, TokenError> {
        let cache = self.writer.finish()?;
        Ok(TokenSummary {
            cache,
            tokens: self.tokens,
            info: self.info,
        })
    }
}

/// A document's `n_tokens` value; a slice never holds more than `i64::MAX` ids.
fn n_tokens_value(len: usize) -> ValueRef<'static> {
    ValueRef::Int64(i64::try_from(len).unwrap_or(i64::MAX))
}
