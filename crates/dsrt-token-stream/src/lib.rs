//! Token streams for language-model training: the documents of token caches, in an epoch's
//! order, become rows of `seq_len` input tokens with their document boundaries.
//!
//! What it is for: [`TokenPlan`] plans one rank's rows of an epoch from the documents'
//! lengths alone. Sources (caches) are mixed by shares of the epoch's tokens ([`TokenConfig`]
//! `weights`, `tokens_per_epoch`), each source's documents in the order `dsrt-plan` gives its
//! samples, merged by token time so that every prefix of the epoch holds each source's share
//! to within one document. A [`TokenSchedule`] makes the weights change by phase, each phase a
//! number of the epoch's tokens: each source's stream is cut where it reaches its budgets of
//! the phases before, and the merge by token time runs phase by phase, so the weights change
//! at the same global token on every rank. `PackMode::Concat` joins them (with the BOS/EOS a source lacks) and
//! cuts windows of `seq_len + 1` tokens, each starting at the last token of the one before;
//! `FirstFit` and `BestFit` pack whole documents into bins over a bounded number of open
//! bins. Rows are permuted within blocks, dealt to nodes and ranks as `dsrt-plan`'s
//! `Partition` deals positions (every rank the same count, each shard read by one node but where
//! two nodes' shares meet), and a [`TokenState`] of a few integers per node resumes the epoch on
//! any topology; it records the sources' mixture (each source's documents, shard runs and
//! cache id, its token budget, the sampling and shuffle), and a plan of another mixture refuses
//! it rather than read other documents at the rows it marks consumed. A [`RowCursor`] finds the pieces of documents each row holds by walking the
//! lengths; where a window starts is computed, never stored, so memory grows with shards and
//! caches, not with documents or windows.
//!
//! [`CacheSource`] is the [`DocumentSource`] of token caches (`dsrt-tokens`): lengths from the
//! mapped `n_tokens` column, tokens from the shards; [`SyntheticSource`] computes both, for
//! plans and tests at the scale of real corpora.
//!
//! For callers that name their settings and share one plan between threads (the Python
//! binding): [`SettingNames`] reads the settings given by name, [`TokenWeights`] takes weights
//! per cache or per source name, [`SharedPlan`] holds a plan, its source and a reader of its
//! steps, [`SharedLoader`] a loader any thread may pull from, and [`SharedTokenBatch`] a batch whose Arrow forms (and [`tensor_columns`]) are made
//! once.
//!
//! What it is not for: the token cache layout (`dsrt-tokens`) or the order of samples
//! (`dsrt-plan`).
//!
//! Layering: above `dsrt-plan`, `dsrt-dataset` and `dsrt-tokens`; re-exported by the
//! `datasetrt` facade as `datasetrt::token_stream`.
#![forbid(unsafe_code)]

mod arrow;
mod batch;
mod cache_source;
mod config;
mod loader;
mod merge;
mod pack;
mod plan;
mod report;
mod rows;
mod shared;
mod source;
mod stream;
mod synthetic;
mod transfer;
mod weights;

pub use arrow::{tensor_columns, TensorColumn, IDS_DTYPE_KEY, TENSOR_COLUMNS};
pub use batch::{
    BatchPiece, BatchPool, Column, Expanded, IdColumn, SharedColumn, TokenBatch, IGNORE_INDEX,
};
pub use cache_source::CacheSource;
pub use config::{
    IdsDtype, LongDocs, PackMode, RunConfig, SettingNames, TokenConfig, TokenPhase, TokenSchedule,
    TokenState, TokenStreamError, DEFAULT_PACKING_BINS, DEFAULT_WINDOW_BLOCK, MAX_SEQ_LEN,
};
pub use dsrt_dataset::{LoaderStats, Stage, StatsSnapshot};
pub use loader::{BatchReader, LoaderOptions, TokenLoader};
pub use plan::TokenPlan;
pub use report::{
    PhaseSourceReport, RowShuffle, SourceReport, TokenNodeReport, TokenPhaseReport, TokenReport,
};
pub use rows::{Piece, RowBlock, RowCursor, RowSpec};
pub use shared::{SharedLoader, SharedPlan, SharedTokenBatch};
pub use shared_slots::{SlotError, Ticket as SlotTicket};
pub use source::{Coverage, DocumentSource, End, StoredTokens};
pub use synthetic::{SyntheticSource, SyntheticSpec};
pub use transfer::{enable_sending, sending_enabled};
pub use weights::{weights_by_source, SourceWeightsError, TokenWeights};
