use crate::weights::SourceWeightsError;
use dsrt_plan::{IterState, PlanError, RemainderPolicy, Sampling, Shuffle, UnknownName};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// How documents become rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PackMode {
    /// Documents joined in the plan's order and cut into windows of `seq_len + 1` tokens, each
    /// window starting at the last token of the one before (the label shift): every token is an
    /// input of exactly one window.
    #[default]
    Concat,
    /// Documents never split (see [`LongDocs`]), packed into bins of `seq_len` tokens, each
    /// into the first open bin it fits.
    FirstFit,
    /// As `FirstFit`, each document into the open bin it leaves the least room in.
    BestFit,
}

impl PackMode {
    /// The name the APIs take (`"concat"`, `"first_fit"`, `"best_fit"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Concat => "concat",
            Self::FirstFit => "first_fit",
            Self::BestFit => "best_fit",
        }
    }

    /// The mode named `name`.
    pub fn from_name(name: &str) -> Result<Self, TokenStreamError> {
        match name {
            "concat" => Ok(Self::Concat),
            "first_fit" => Ok(Self::FirstFit),
            "best_fit" => Ok(Self::BestFit),
            other => Err(TokenStreamError::Config(format!(
                "mode must be \"concat\", \"first_fit\" or \"best_fit\", not {other:?}"
            ))),
        }
    }

    /// Whether documents are packed whole into bins.
    pub fn packs(self) -> bool {
        !matches!(self, Self::Concat)
    }
}

/// What packing does with a document longer than `seq_len` (with its boundary tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LongDocs {
    /// Cut into pieces of `seq_len` tokens (the last shorter), each packed as a document.
    #[default]
    Split,
    /// Keep its first `seq_len` tokens.
    Truncate,
    /// Refuse the epoch, naming the document ([`TokenStreamError::LongDocument`]).
    Refuse,
}

impl LongDocs {
    /// The name the APIs take (`"split"`, `"truncate"`, `"refuse"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Split => "split",
            Self::Truncate => "truncate",
            Self::Refuse => "refuse",
        }
    }

    /// The policy named `name`.
    pub fn from_name(name: &str) -> Result<Self, TokenStreamError> {
        match name {
            "split" => Ok(Self::Split),
            "truncate" => Ok(Self::Truncate),
            "refuse" => Ok(Self::Refuse),
            other => Err(TokenStreamError::Config(format!(
                "long_docs must be \"split\", \"truncate\" or \"refuse\", not {other:?}"
            ))),
        }
    }
}

/// The integer type of a batch's id columns (`input_ids`, `labels`, `position_ids`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdsDtype {
    /// 64-bit: what PyTorch's `cross_entropy` and Hugging Face's models take as they are.
    #[default]
    Int64,
    /// 32-bit: half the bytes to derive, hand over and copy to a device, for a trainer that
    /// widens the ids where it uses them (`labels.long()` on the device). Every id must be at
    /// most `i32::MAX`; a batch holding a larger one is refused.
    Int32,
}

impl IdsDtype {
    /// The name the APIs take (`"int64"`, `"int32"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Int64 => "int64",
            Self::Int32 => "int32",
        }
    }

    /// The type named `name`.
    pub fn from_name(name: &str) -> Result<Self, TokenStreamError> {
        match name {
            "int64" => Ok(Self::Int64),
            "int32" => Ok(Self::Int32),
            other => Err(TokenStreamError::Config(format!(
                "ids_dtype must be \"int64\" or \"int32\", not {other:?}"
            ))),
        }
    }

    /// Bytes per id.
    pub fn width(self) -> usize {
        match self {
            Self::Int64 => 8,
            Self::Int32 => 4,
        }
    }

    /// Whether `id` is one this type holds.
    pub fn holds(self, id: u32) -> bool {
        match self {
            Self::Int64 => true,
            Self::Int32 => i32::try_from(id).is_ok(),
        }
    }
}

/// The longest `seq_len` accepted: rows are indexed by `u32` and a window of 16 Mi tokens is
/// far past any model's context.
pub const MAX_SEQ_LEN: u64 = 1 << 24;

/// Windows permuted together on top of the document order, by default (see
/// [`TokenConfig::window_block`]).
pub const DEFAULT_WINDOW_BLOCK: u64 = 256;

/// Bins packing keeps open at once, by default (see [`TokenConfig::packing_bins`]).
pub const DEFAULT_PACKING_BINS: usize = 256;

/// What decides an epoch's rows: the same config, epoch and caches give the same rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenConfig {
    /// Tokens of input per row (a window holds `seq_len + 1`: inputs and the label shift).
    pub seq_len: u64,
    /// Concatenated windows or packed bins.
    pub mode: PackMode,
    /// Begin each document with this token, unless its documents already do.
    pub bos_id: Option<u32>,
    /// End each document with this token, unless its documents already do.
    pub eos_id: Option<u32>,
    /// The token of padding (inputs of padding are this id; their loss is masked).
    pub pad_id: u32,
    /// Documents longer than `seq_len` when packing.
    pub long_docs: LongDocs,
    /// Each source's share of the epoch's tokens, in dataset order; `None`: every document
    /// once.
    pub weights: Option<Vec<f64>>,
    /// The epoch's token budget when weights are given; `None`: all the sources' tokens.
    pub tokens_per_epoch: Option<u64>,
    /// Weights that change by phase, each phase a number of the epoch's tokens: the epoch is
    /// the phases one after another (see [`TokenSchedule`]). Replaces `tokens_per_epoch`, which
    /// must then be `None`, and `weights`, which must be `None` too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<TokenSchedule>,
    /// A source's documents drawn in passes without replacement, or by whole shard runs with
    /// replacement (`Sampling::RunsWithReplacement`; per-document draws are refused).
    pub sampling: Sampling,
    /// The seed.
    pub seed: u64,
    /// The document order within each source (`dsrt-plan`'s shuffles).
    pub shuffle: Shuffle,
    /// Rows (windows or bins) permuted together in blocks of this many consecutive ones, on
    /// top of the document order, so the pieces of one long document land in different steps
    /// (1: no permutation). A block never spans a node boundary.
    pub window_block: u64,
    /// Bins packing keeps open (at least 1); more bins pad less and hold more documents back.
    pub packing_bins: usize,
    /// The integer type of the batches' id columns (it changes no row).
    #[serde(default)]
    pub ids_dtype: IdsDtype,
}

impl Default for TokenConfig {
    fn default() -> Self {
        Self {
            seq_len: 2048,
            mode: PackMode::Concat,
            bos_id: None,
            eos_id: None,
            pad_id: 0,
            long_docs: LongDocs::Split,
            weights: None,
            tokens_per_epoch: None,
            schedule: None,
            sampling: Sampling::WithoutReplacement,
            seed: 0,
            shuffle: Shuffle::default(),
            window_block: DEFAULT_WINDOW_BLOCK,
            packing_bins: DEFAULT_PACKING_BINS,
            ids_dtype: IdsDtype::Int64,
        }
    }
}

/// A mixture that changes along the epoch, counted in tokens: "30B tokens half and half, then
/// 10B with 80% code". The epoch is the phases in order, its budget the sum of theirs.
///
/// Within a phase the sources are mixed by token time as a whole epoch with those weights
/// would be, so every prefix of the phase holds each source's share to within one document. A
/// document counts wholly in the phase in which it begins; each source's stream (its passes,
/// its shuffle windows) runs on across phases, so a phase change never restarts a source's
/// order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenSchedule {
    /// The phases, in the order the epoch reads them.
    pub phases: Vec<TokenPhase>,
}

/// One phase of a [`TokenSchedule`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenPhase {
    /// Tokens of the epoch the phase holds (at least 1), boundary tokens included.
    pub tokens: u64,
    /// Each source's share of the phase's tokens, in dataset order: finite, non-negative, not
    /// all zero (as `dsrt_plan::Phase::weights` are for samples).
    pub weights: Vec<f64>,
}

/// Phases given as `(tokens, weights)` pairs, in order (the Python package's `Phase` tuples).
impl FromIterator<(u64, Vec<f64>)> for TokenSchedule {
    fn from_iter<I: IntoIterator<Item = (u64, Vec<f64>)>>(phases: I) -> Self {
        Self {
            phases: phases
                .into_iter()
                .map(|(tokens, weights)| TokenPhase { tokens, weights })
                .collect(),
        }
    }
}

impl TokenSchedule {
    /// The epoch's budget: the phases' tokens summed (`None` past 2^64).
    pub fn tokens(&self) -> Option<u64> {
        self.phases
            .iter()
            .try_fold(0u64, |sum, phase| sum.checked_add(phase.tokens))
    }
}

impl TokenConfig {
    /// Checks the settings that do not depend on the sources.
    pub fn check(&self) -> Result<(), TokenStreamError> {
        if self.seq_len == 0 || self.seq_len > MAX_SEQ_LEN {
            return Err(TokenStreamError::Config(format!(
                "seq_len must be between 1 and {MAX_SEQ_LEN}, not {}",
                self.seq_len
            )));
        }
        if self.packing_bins == 0 {
            return Err(TokenStreamError::Config(
                "packing_bins must be at least 1".into(),
            ));
        }
        let ids = [
            ("bos_id", self.bos_id),
            ("eos_id", self.eos_id),
            ("pad_id", Some(self.pad_id)),
        ];
        if let Some((name, Some(id))) = ids
            .into_iter()
            .find(|(_, id)| id.is_some_and(|id| !self.ids_dtype.holds(id)))
        {
            return Err(TokenStreamError::Config(format!(
                "{name} {id} does not fit ids_dtype {:?}",
                self.ids_dtype.name()
            )));
        }
        if self.window_block == 0 {
            return Err(TokenStreamError::Config(
                "window_block must be at least 1".into(),
            ));
        }
        if matches!(self.sampling, Sampling::WithReplacement) {
            return Err(TokenStreamError::Config(
                "token streams draw with replacement by shard runs (Sampling::RunsWithReplacement): \
                 with documents drawn one by one, where a window starts would be unknown until \
                 every draw before it is made"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// Where an epoch of rows stands: the positions (rows, before the block permutation) not
/// consumed, as [`IterState`] records them for samples, plus the settings that give positions
/// their meaning: `seq_len`, `mode`, and the sources' mixture in `rows.mixture` (its shares in
/// tokens: each source's budget). Resumable on any topology; its size is in nodes and
/// sources, never in rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenState {
    /// `seq_len` of the run that saved it.
    pub seq_len: u64,
    /// The mode of the run that saved it.
    pub mode: PackMode,
    /// The rows of the epoch consumed and not.
    #[serde(flatten)]
    pub rows: IterState,
}

impl TokenState {
    /// The same state with its remaining rows listed as ranges, the form a saved state is
    /// shown in (see `IterState::listed`).
    pub fn listed(&self) -> Self {
        Self {
            rows: self.rows.listed(),
            ..self.clone()
        }
    }

    /// Checks that this state belongs to a stream of `seq_len` and `mode`.
    pub fn check_settings(&self, seq_len: u64, mode: PackMode) -> Result<(), TokenStreamError> {
        let mut differences = Vec::new();
        if self.seq_len != seq_len {
            differences.push(format!(
                "seq_len {} (this stream's is {seq_len})",
                self.seq_len
            ));
        }
        if self.mode != mode {
            differences.push(format!(
                "mode {:?} (this stream's is {:?})",
                self.mode.name(),
                mode.name()
            ));
        }
        if differences.is_empty() {
            Ok(())
        } else {
            Err(TokenStreamError::Plan(PlanError::State(format!(
                "the state is for {}",
                differences.join(", ")
            ))))
        }
    }
}

/// The run of one rank: which epoch, where it stands among the job's ranks, from where.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunConfig {
    /// The epoch.
    pub epoch: u64,
    /// This rank.
    pub rank: u64,
    /// Number of ranks (0 is taken as 1).
    pub world_size: u64,
    /// Ranks per node (0 is taken as 1); divides `world_size`.
    pub ranks_per_node: u64,
    /// The last partial window and the last round of rows: padded or dropped.
    pub policy: RemainderPolicy,
    /// Resume from a saved state instead of the epoch's start.
    pub resume: Option<TokenState>,
}

/// The settings of a stream that the APIs take by name, as the Python package spells them
/// (`mode="best_fit"`, `long_docs="split"`, `shuffle="local"` with `window_shards`,
/// `replacement=True`, `policy="pad"`), put into a [`TokenConfig`] and a [`RunConfig`] by
/// [`SettingNames::apply`]. The default is every setting's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingNames<'a> {
    /// [`PackMode::name`].
    pub mode: &'a str,
    /// [`LongDocs::name`].
    pub long_docs: &'a str,
    /// `dsrt_plan::Shuffle::from_name`'s names.
    pub shuffle: &'a str,
    /// Shards per shuffle window with `shuffle = "local"`.
    pub window_shards: usize,
    /// Whole shard runs drawn with replacement (`Sampling::RunsWithReplacement`) instead of
    /// passes without.
    pub replacement: bool,
    /// `"pad"` or `"drop"` ([`RemainderPolicy`]).
    pub policy: &'a str,
    /// [`IdsDtype::name`].
    pub ids_dtype: &'a str,
}

impl Default for SettingNames<'_> {
    fn default() -> Self {
        Self {
            mode: PackMode::default().name(),
            long_docs: LongDocs::default().name(),
            shuffle: "local",
            window_shards: 4,
            replacement: false,
            policy: "pad",
            ids_dtype: IdsDtype::default().name(),
        }
    }
}

impl SettingNames<'_> {
    /// `config` and `run` with these settings in place of theirs. A name that is not one of
    /// its setting's is refused naming the setting and its names: [`TokenStreamError::Config`]
    /// for `mode`, `long_docs` and `ids_dtype`, [`TokenStreamError::Name`] for `shuffle` and
    /// `policy`; settings are read in that order.
    pub fn apply(
        &self,
        config: TokenConfig,
        run: RunConfig,
    ) -> Result<(TokenConfig, RunConfig), TokenStreamError> {
        let config = TokenConfig {
            mode: PackMode::from_name(self.mode)?,
            long_docs: LongDocs::from_name(self.long_docs)?,
            ids_dtype: IdsDtype::from_name(self.ids_dtype)?,
            shuffle: Shuffle::from_name(self.shuffle, self.window_shards)?,
            sampling: if self.replacement {
                Sampling::RunsWithReplacement
            } else {
                Sampling::WithoutReplacement
            },
            ..config
        };
        let run = RunConfig {
            policy: self.policy.parse()?,
            ..run
        };
        Ok((config, run))
    }
}

/// Why a token stream cannot be planned or read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TokenStreamError {
    /// A setting is out of range.
    #[error("invalid token stream settings: {0}")]
    Config(String),
    /// The plan refused (weights, topology, a state of another epoch).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A setting given by a name that is not one of its names ([`SettingNames`]).
    #[error(transparent)]
    Name(#[from] UnknownName),
    /// Shares per source name that do not give one weight per cache
    /// ([`crate::TokenWeights::per_cache`]).
    #[error(transparent)]
    Weights(#[from] SourceWeightsError),
    /// A call that waited for a lock held by one that panicked: what the lock guarded (a
    /// plan's reader, a batch's forms) may be half made.
    #[error("{0} failed in another thread")]
    Poisoned(&'static str),
    /// A boundary token was asked for where it cannot be placed without reading every
    /// document: some documents of the source carry it and some do not, or it is unknown.
    #[error("{source_name}: {detail}")]
    Boundary {
        /// The source (cache path).
        source_name: String,
        /// What is known of its documents.
        detail: String,
    },
    /// A document longer than `seq_len` with `long_docs = "refuse"`.
    #[error(
        "{source_name}: document {sample_id} has {tokens} tokens (with its boundary tokens), more \
         than seq_len {seq_len}, and long_docs is \"refuse\""
    )]
    LongDocument {
        /// The source (cache path).
        source_name: String,
        /// The document's sample id.
        sample_id: u64,
        /// Its tokens, boundary tokens included.
        tokens: u64,
        /// The bin size.
        seq_len: u64,
    },
    /// A source with a share of the epoch has no tokens to give.
    #[error("{source_name}: a share of the epoch's tokens but no tokens")]
    EmptySource {
        /// The source (cache path).
        source_name: String,
    },
    /// Reading a document failed (the source's error, which names the cache and sample).
    #[error(transparent)]
    Read(Box<dyn std::error::Error + Send + Sync>),
    /// The process's interrupt hook asked a wait to stop.
    #[error("interrupted while waiting for rows (step {step})")]
    Interrupted {
        /// The step that was being waited for.
        step: u64,
    },
    /// A loading thread stopped (it panicked).
    #[error("a token loading thread stopped")]
    WorkerStopped,
    /// A batch's slot of shared memory could not be received (`crate::transfer`).
    #[error(transparent)]
    Slot(#[from] shared_slots::SlotError),
}

impl TokenStreamError {
    /// A read failure of the source (its error names the cache and the sample).
    pub fn read(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Read(Box::new(error))
    }

    /// A stable name of the variant, as the bindings report it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Config(_) => "config",
            Self::Plan(_) => "plan",
            Self::Name(_) => "name",
            Self::Weights(_) => "weights",
            Self::Poisoned(_) => "poisoned",
            Self::Boundary { .. } => "boundary",
            Self::LongDocument { .. } => "long_document",
            Self::EmptySource { .. } => "empty_source",
            Self::Read(_) => "read",
            Self::Interrupted { .. } => "interrupted",
            Self::WorkerStopped => "worker_stopped",
            Self::Slot(_) => "slot",
        }
    }

    /// The source (cache path) a refusal of the data names.
    pub fn source_name(&self) -> Option<&str> {
        match self {
            Self::Boundary { source_name, .. }
            | Self::LongDocument { source_name, .. }
            | Self::EmptySource { source_name } => Some(source_name),
            _ => None,
        }
    }

    /// The document a refusal names.
    pub fn sample_id(&self) -> Option<u64> {
        match self {
            Self::LongDocument { sample_id, .. } => Some(*sample_id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_of_the_data_names_its_source_and_document() {
        let long = TokenStreamError::LongDocument {
            source_name: "/caches/web".into(),
            sample_id: 7,
            tokens: 90,
            seq_len: 64,
        };
        assert_eq!(
            (long.kind(), long.source_name(), long.sample_id()),
            ("long_document", Some("/caches/web"), Some(7))
        );
        let empty = TokenStreamError::EmptySource {
            source_name: "/caches/code".into(),
        };
        assert_eq!(
            (empty.kind(), empty.source_name(), empty.sample_id()),
            ("empty_source", Some("/caches/code"), None)
        );
        let stopped = TokenStreamError::WorkerStopped;
        assert_eq!(
            (stopped.kind(), stopped.source_name()),
            ("worker_stopped", None)
        );
        assert_eq!(TokenStreamError::Config("x".into()).kind(), "config");
    }

    #[test]
    fn settings_by_name_replace_only_theirs_and_unknown_names_are_refused_in_order() {
        let names = SettingNames {
            mode: "best_fit",
            long_docs: "truncate",
            shuffle: "local",
            window_shards: 7,
            replacement: true,
            policy: "drop",
            ids_dtype: "int32",
        };
        let base = TokenConfig {
            seq_len: 64,
            seed: 9,
            ..TokenConfig::default()
        };
        let (config, run) = names
            .apply(
                base.clone(),
                RunConfig {
                    epoch: 3,
                    ..RunConfig::default()
                },
            )
            .unwrap();
        assert_eq!(
            config,
            TokenConfig {
                mode: PackMode::BestFit,
                long_docs: LongDocs::Truncate,
                shuffle: Shuffle::Local { window_shards: 7 },
                sampling: Sampling::RunsWithReplacement,
                ids_dtype: IdsDtype::Int32,
                ..base
            }
        );
        assert_eq!((run.epoch, run.policy), (3, RemainderPolicy::Drop));
        let (config, run) = SettingNames::default()
            .apply(TokenConfig::default(), RunConfig::default())
            .unwrap();
        assert_eq!(config, TokenConfig::default());
        assert_eq!(run, RunConfig::default());

        let refused = |names: SettingNames<'_>| {
            let error = names
                .apply(TokenConfig::default(), RunConfig::default())
                .unwrap_err();
            (error.kind(), error.to_string())
        };
        let (kind, text) = refused(SettingNames {
            mode: "zigzag",
            policy: "keep",
            ..SettingNames::default()
        });
        assert_eq!(kind, "config");
        assert!(
            text.starts_with("invalid token stream settings: mode must be"),
            "{text}"
        );
        let (kind, text) = refused(SettingNames {
            long_docs: "fold",
            ..SettingNames::default()
        });
        assert_eq!(kind, "config");
        assert!(text.contains("long_docs must be"), "{text}");
        let (kind, text) = refused(SettingNames {
            ids_dtype: "int16",
            ..SettingNames::default()
        });
        assert_eq!(kind, "config");
        assert!(
            text.contains("ids_dtype must be \"int64\" or \"int32\", not \"int16\""),
            "{text}"
        );
        let (kind, text) = refused(SettingNames {
            shuffle: "random",
            policy: "keep",
            ..SettingNames::default()
        });
        assert_eq!(
            (kind, text.as_str()),
            (
                "name",
                "shuffle must be \"local\", \"full\" or \"sequential\", not \"random\""
            )
        );
        let (kind, text) = refused(SettingNames {
            policy: "keep",
            ..SettingNames::default()
        });
        assert_eq!(
            (kind, text.as_str()),
            ("name", "policy must be \"pad\" or \"drop\", not \"keep\"")
        );
    }

    #[test]
    fn a_schedule_from_pairs_keeps_their_order() {
        let schedule: TokenSchedule = vec![(30, vec![0.5, 0.5]), (10, vec![0.2, 0.8])]
            .into_iter()
            .collect();
        assert_eq!(schedule.phases.len(), 2);
        assert_eq!(
            schedule.phases[1],
            TokenPhase {
                tokens: 10,
                weights: vec![0.2, 0.8]
            }
        );
        assert_eq!(schedule.tokens(), Some(40));
    }

    #[test]
    fn a_poisoned_lock_names_what_it_guarded() {
        let error = TokenStreamError::Poisoned("the plan");
        assert_eq!(
            (error.kind(), error.to_string().as_str()),
            ("poisoned", "the plan failed in another thread")
        );
    }
}
