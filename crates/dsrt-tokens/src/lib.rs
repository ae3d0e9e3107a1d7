//! Token caches: the token layout over DatasetRT caches.
//!
//! What it is for: a *token cache* is an ordinary cache whose samples are documents of token
//! ids. A document's payload is its ids as little-endian unsigned integers of one width
//! ([`TokenDtype`]: `u16` when the vocabulary fits, else `u32`), its metadata row starts with
//! the `int64` column [`N_TOKENS_COLUMN`], and the manifest's top-level key [`TOKENS_KEY`]
//! records the width and what is known of the tokenizer ([`TokenInfo`]), so a reader learns
//! both without opening a payload. [`TokenWriter`] writes one over `CacheWriter`, checking
//! every id against the width and the vocabulary; [`TokenCache`] opens one over
//! `dsrt_reader::Cache`, answers [`TokenCache::n_tokens`] from the mapped metadata alone and
//! reads a document's ids into a reusable [`TokenBuf`], refusing a payload whose length
//! disagrees with `n_tokens`. [`TokenEncoder`] is the one place ids of any integer type are
//! checked and laid out, which the converters of `dsrt-pack` use too; [`TokenIds`] holds ids
//! whose integer type is known only at run time (a binding's NumPy arrays and lists).
//!
//! What it is not for: the cache format itself (`dsrt-writer`, `dsrt-reader`: a token cache
//! needs no change to it), converting inputs into token caches (`dsrt-pack`), or cutting
//! documents into training windows (the token loader above `dsrt-dataset`).
//!
//! Layering: above `dsrt-writer`, `dsrt-reader`, `dsrt-manifest` and `dsrt-schema`; used by
//! `dsrt-pack`, the token loader, the `datasetrt` facade and the CLI. The layout is specified
//! in `docs/format/datasetrt.md`, "Token caches".
#![forbid(unsafe_code)]

mod cache;
mod encode;
mod error;
mod info;
mod writer;

pub use cache::{TokenBuf, TokenCache, Tokens};
pub use encode::{BadTokenId, TokenEncoder, TokenId, TokenIds};
pub use error::TokenError;
pub use info::{DtypeChoiceError, TokenDtype, TokenInfo, N_TOKENS_COLUMN, TOKENS_KEY};
pub use writer::{TokenSummary, TokenWriter};
