use dsrt_reader::CacheError;
use dsrt_writer::WriteError;
use std::path::PathBuf;
use thiserror::Error;

/// Why a token cache cannot be written or read. Every variant names the cache; those about
/// one document name its sample id.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The cache's manifest has no `tokens` key: it is not a token cache.
    #[error("{}: not a token cache (its manifest.json has no \"tokens\" key)", path.display())]
    NotATokenCache {
        /// The cache.
        path: PathBuf,
    },
    /// The `tokens` key (or the token info given to a writer) is malformed or contradicts
    /// itself.
    #[error("{}: token info: {reason}", path.display())]
    BadTokenInfo {
        /// The cache.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The metadata schema lacks a usable `n_tokens` column (or a writer was given one).
    #[error("{}: metadata column \"n_tokens\": {reason}", path.display())]
    NTokensColumn {
        /// The cache.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A document holds an id that is negative or beyond the width or the vocabulary; nothing
    /// of it was written.
    #[error(
        "{}: document {sample}: token {position} is {id}, outside 0..={max_id} ({limit})",
        path.display()
    )]
    TokenOutOfRange {
        /// The cache.
        path: PathBuf,
        /// The document's sample id (the one it would have had).
        sample: u64,
        /// The id's position in the document.
        position: usize,
        /// The id.
        id: i128,
        /// The largest id allowed.
        max_id: u32,
        /// What sets that bound ("dtype uint16", "vocab_size 50257").
        limit: String,
    },
    /// As [`TokenError::TokenOutOfRange`], for an id beyond every integer type ids are read
    /// as (a Python int past 64 bits), its value kept as the text it was given in.
    #[error(
        "{}: document {sample}: token {position} is {id}, outside 0..={max_id} ({limit})",
        path.display()
    )]
    TokenBeyondIntegers {
        /// The cache.
        path: PathBuf,
        /// The document's sample id (the one it would have had).
        sample: u64,
        /// The id's position in the document.
        position: usize,
        /// The id, in decimal.
        id: String,
        /// The largest id allowed.
        max_id: u32,
        /// What sets that bound.
        limit: String,
    },
    /// A document's payload length is not its `n_tokens` times the width (or `n_tokens` is
    /// negative).
    #[error(
        "{}: document {sample}: payload of {payload_len} bytes, but n_tokens {n_tokens} x {width} bytes",
        path.display()
    )]
    LengthMismatch {
        /// The cache.
        path: PathBuf,
        /// The document's sample id.
        sample: u64,
        /// Bytes of its payload.
        payload_len: usize,
        /// Its `n_tokens` value.
        n_tokens: i64,
        /// Bytes per id.
        width: usize,
    },
    /// A document's `n_tokens` is negative or null (a metadata.arrow that no writer of this
    /// crate wrote).
    #[error("{}: document {sample}: n_tokens is {found}, not a count", path.display())]
    BadNTokens {
        /// The cache.
        path: PathBuf,
        /// The document's sample id.
        sample: u64,
        /// The value found.
        found: String,
    },
    /// Writing the cache failed.
    #[error(transparent)]
    Write(Box<WriteError>),
    /// Reading the cache failed.
    #[error(transparent)]
    Read(Box<CacheError>),
}

impl From<WriteError> for TokenError {
    fn from(error: WriteError) -> Self {
        Self::Write(Box::new(error))
    }
}

impl From<CacheError> for TokenError {
    fn from(error: CacheError) -> Self {
        Self::Read(Box::new(error))
    }
}

impl TokenError {
    /// A stable name of the variant (`"not_a_token_cache"`, `"token_out_of_range"`, ...), as
    /// the bindings and the CLI report it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotATokenCache { .. } => "not_a_token_cache",
            Self::BadTokenInfo { .. } => "bad_token_info",
            Self::NTokensColumn { .. } => "n_tokens_column",
            Self::TokenOutOfRange { .. } | Self::TokenBeyondIntegers { .. } => "token_out_of_range",
            Self::LengthMismatch { .. } => "length_mismatch",
            Self::BadNTokens { .. } => "bad_n_tokens",
            Self::Write(e) => e.kind(),
            Self::Read(e) => e.kind(),
        }
    }

    /// The token cache the error is about, where it names one (a writer's or reader's own
    /// error has its own path).
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Self::NotATokenCache { path }
            | Self::BadTokenInfo { path, .. }
            | Self::NTokensColumn { path, .. }
            | Self::TokenOutOfRange { path, .. }
            | Self::TokenBeyondIntegers { path, .. }
            | Self::LengthMismatch { path, .. }
            | Self::BadNTokens { path, .. } => Some(path),
            Self::Write(_) | Self::Read(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_error_names_its_cache_and_a_writer_or_reader_error_does_not() {
        let error = TokenError::NotATokenCache {
            path: "/caches/web".into(),
        };
        assert_eq!(error.path(), Some(std::path::Path::new("/caches/web")));
        assert_eq!(error.kind(), "not_a_token_cache");
        let read = TokenError::from(CacheError::Incomplete {
            path: "/caches/web".into(),
        });
        assert_eq!((read.path(), read.kind()), (None, "incomplete"));
    }
}
