//! Token caches as a [`DocumentSource`]: lengths from the mapped `n_tokens` column, tokens from
//! the shards (`dsrt-tokens` checks each payload's length against its `n_tokens`).

// Document ids index mapped columns held in memory: they fit usize on the 64-bit targets
// dsrt-plan builds for.
#![allow(clippy::cast_possible_truncation)]

use crate::source::{Coverage, DocumentSource, End, StoredTokens};
use crate::TokenStreamError;
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_buffer::ScalarBuffer;
use dsrt_dataset::Dataset;
use dsrt_plan::CacheShape;
use dsrt_tokens::{TokenBuf, TokenCache, TokenDtype};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Mutex;

/// One token cache of a [`CacheSource`].
#[derive(Debug)]
struct Source {
    /// Its path or URL.
    name: String,
    cache_id: u64,
    tokens: TokenCache,
    /// Its `n_tokens` column, one buffer per record batch of metadata.arrow (shared with the
    /// mapping, not copied), and the first document of each.
    n_tokens: Vec<ScalarBuffer<i64>>,
    batch_starts: Vec<u64>,
    /// Documents per record batch when every batch but the last holds as many (the common
    /// case: a lookup is a division), else 0 (a binary search over `batch_starts`).
    batch_rows: u64,
    /// Coverage of boundary tokens counted so far, by `(end, token)`.
    coverage: Mutex<HashMap<(bool, u32), Coverage>>,
}

/// The documents of token caches, in dataset order.
#[derive(Debug)]
pub struct CacheSource {
    sources: Vec<Source>,
}

impl CacheSource {
    /// The token caches of `dataset` (opened by `Dataset::open`, or `dsrt-remote` for URLs),
    /// each checked to be a token cache whose every `n_tokens` is a count (one pass over the
    /// mapped column).
    pub fn new(dataset: Dataset) -> Result<Self, TokenStreamError> {
        let sources = dataset
            .into_caches()
            .into_iter()
            .map(|entry| {
                let name = entry.path.display().to_string();
                let tokens = TokenCache::new(entry.cache).map_err(TokenStreamError::read)?;
                Source::new(name, entry.cache_id, tokens)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { sources })
    }

    /// The widest token width of the caches.
    pub fn dtype(&self) -> TokenDtype {
        if self
            .sources
            .iter()
            .any(|s| s.tokens.dtype() == TokenDtype::U32)
        {
            TokenDtype::U32
        } else {
            TokenDtype::U16
        }
    }

    /// The token caches.
    pub fn caches(&self) -> impl Iterator<Item = &TokenCache> {
        self.sources.iter().map(|s| &s.tokens)
    }

    /// Each cache's source name (its manifest's `source`), in dataset order: what weights
    /// given per source name ([`crate::TokenWeights::PerSource`]) name.
    pub fn source_names(&self) -> Vec<String> {
        let manifests = self.caches().map(|c| c.cache().manifest());
        manifests.map(|m| m.description().source.clone()).collect()
    }
}

impl Source {
    fn new(name: String, cache_id: u64, tokens: TokenCache) -> Result<Self, TokenStreamError> {
        let column = tokens.n_tokens_column();
        let mut n_tokens = Vec::new();
        let mut batch_starts = Vec::new();
        let mut at = 0u64;
        for batch in tokens.cache().metadata().record_batches() {
            let values = batch
                .column(column)
                .as_primitive::<Int64Type>()
                .values()
                .clone();
            if let Some(bad) = values.iter().position(|&n| n < 0) {
                // The reader's own error names the cache, the sample and the value.
                return Err(TokenStreamError::read(
                    tokens.n_tokens(at + bad as u64).err().unwrap_or_else(|| {
                        dsrt_tokens::TokenError::NotATokenCache {
                            path: tokens.path().to_path_buf(),
                        }
                    }),
                ));
            }
            batch_starts.push(at);
            at += values.len() as u64;
            n_tokens.push(values);
        }
        let first = n_tokens.first().map_or(0, |b| b.len() as u64);
        let uniform = n_tokens
            .iter()
            .rev()
            .skip(1)
            .all(|b| b.len() as u64 == first);
        Ok(Self {
            name,
            cache_id,
            tokens,
            n_tokens,
            batch_starts,
            batch_rows: if uniform { first } else { 0 },
            coverage: Mutex::default(),
        })
    }

    #[inline]
    fn n_tokens(&self, doc: u64) -> u64 {
        let batch = match doc.checked_div(self.batch_rows) {
            Some(batch) => batch as usize,
            None => self.batch_starts.partition_point(|&s| s <= doc) - 1,
        };
        let values = &self.n_tokens[batch];
        values[(doc - self.batch_starts[batch]) as usize].unsigned_abs()
    }

    /// How many documents have `token` at `end`, read from each document's ends once (one
    /// pass over the cache's payloads) and remembered. A cache on object storage is not read
    /// whole for this: its coverage is unknown.
    fn coverage(&self, end: End, token: u32) -> Result<Coverage, TokenStreamError> {
        let key = (end == End::Start, token);
        if let Some(known) = self.coverage.lock().ok().and_then(|c| c.get(&key).copied()) {
            return Ok(known);
        }
        let counted = if self.tokens.cache().has_shard_source() {
            Coverage::Unknown
        } else {
            self.count_ends(end, token)?
        };
        if let Ok(mut known) = self.coverage.lock() {
            known.insert(key, counted);
        }
        Ok(counted)
    }

    fn count_ends(&self, end: End, token: u32) -> Result<Coverage, TokenStreamError> {
        let mut buf = TokenBuf::new();
        let of = self.tokens.len();
        let mut count = 0;
        for doc in 0..of {
            let tokens = self
                .tokens
                .read(doc, &mut buf)
                .map_err(TokenStreamError::read)?;
            let at = match end {
                End::Start => 0,
                End::End => tokens.len().wrapping_sub(1),
            };
            count += u64::from(tokens.get(at) == Some(token));
        }
        Ok(match count {
            0 => Coverage::None,
            _ if count == of => Coverage::All,
            _ => Coverage::Some { count, of },
        })
    }
}

impl DocumentSource for CacheSource {
    type Buf = TokenBuf;

    fn sources(&self) -> usize {
        self.sources.len()
    }

    fn name(&self, source: usize) -> String {
        self.sources[source].name.clone()
    }

    fn shape(&self, source: usize) -> CacheShape {
        let index = self.sources[source].tokens.cache().index();
        CacheShape::from_shard_ids(
            (0..index.len()).map(|i| index.row(i).map_or(u64::MAX, |r| r.shard_id)),
        )
        .with_cache_id(self.sources[source].cache_id)
    }

    #[inline]
    fn n_tokens(&self, source: usize, doc: u64) -> u64 {
        self.sources[source].n_tokens(doc)
    }

    fn tokens_in(&self, source: usize, docs: Range<u64>) -> u64 {
        let source = &self.sources[source];
        docs.map(|doc| source.n_tokens(doc)).sum()
    }

    fn coverage(&self, source: usize, end: End, token: u32) -> Result<Coverage, TokenStreamError> {
        self.sources[source].coverage(end, token)
    }

    fn key(&self, source: usize, doc: u64) -> (u64, u64) {
        (self.sources[source].cache_id, doc)
    }

    fn ids_in_16_bits(&self) -> bool {
        self.dtype() == TokenDtype::U16
    }

    fn shard_bytes(&self, source: usize, shard: u64) -> u64 {
        let manifest = self.sources[source].tokens.cache().manifest();
        usize::try_from(shard)
            .ok()
            .and_then(|s| manifest.description().shards.get(s))
            .map_or(0, |s| s.byte_len)
    }

    fn read<'a>(
        &'a self,
        source: usize,
        doc: u64,
        buf: &'a mut TokenBuf,
    ) -> Result<StoredTokens<'a>, TokenStreamError> {
        let tokens = self.sources[source]
            .tokens
            .read(doc, buf)
            .map_err(TokenStreamError::read)?;
        Ok(match tokens.dtype() {
            TokenDtype::U16 => StoredTokens::U16(tokens.as_le_bytes()),
            TokenDtype::U32 => StoredTokens::U32(tokens.as_le_bytes()),
        })
    }

    fn will_need(&self, docs: &mut dyn Iterator<Item = (usize, u64)>) {
        let mut wanted: Vec<Vec<u64>> = vec![Vec::new(); self.sources.len()];
        for (source, doc) in docs {
            let cache = self.sources[source].tokens.cache();
            if !cache.has_shard_source() {
                continue;
            }
            if let Ok(row) = cache.index().row(doc) {
                let shards = &mut wanted[source];
                if !shards.contains(&row.shard_id) && shards.len() < dsrt_dataset::HINT_SHARDS {
                    shards.push(row.shard_id);
                }
            }
        }
        for (source, shards) in wanted.iter().enumerate() {
            if !shards.is_empty() {
                self.sources[source].tokens.cache().will_need(shards);
            }
        }
    }
}
