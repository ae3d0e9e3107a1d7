//! A plan, a loader and a batch that any thread may use through a shared reference: what a
//! binding holds for one rank's epoch ([`SharedPlan`], Python's `_TokenPlan`), for batches
//! read ahead ([`SharedLoader`], `_TokenBatches`) and for one batch ([`SharedTokenBatch`],
//! `TokenBatch`), so that it holds one value of this crate and locks, memoises and counts
//! nothing itself.
//!
//! Each locks only around its own work: a caller may release an interpreter lock before
//! calling, and a lock held by a call that panicked refuses later calls
//! ([`TokenStreamError::Poisoned`]) rather than hand out what that call left half made.

use crate::arrow::{tensor_columns, TensorColumn};
use crate::batch::{BatchPool, TokenBatch};
use crate::loader::{BatchReader, LoaderOptions, TokenLoader};
use crate::report::TokenReport;
use crate::source::DocumentSource;
use crate::{CacheSource, RunConfig, TokenConfig, TokenPlan, TokenStreamError, TokenWeights};
use arrow_array::RecordBatch;
use dsrt_dataset::{Dataset, LoaderStats, StatsSnapshot};
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

fn lock<'a, T>(
    mutex: &'a Mutex<T>,
    what: &'static str,
) -> Result<MutexGuard<'a, T>, TokenStreamError> {
    mutex.lock().map_err(|_| TokenStreamError::Poisoned(what))
}

/// One rank's plan of an epoch with its source, read step range by step range from any
/// thread ([`SharedPlan::read`]: one reader, made on first use and reused, so consecutive
/// reads continue its place in the stream), or in batches read ahead ([`SharedPlan::loader`]).
#[derive(Debug)]
pub struct SharedPlan<S: DocumentSource> {
    plan: Arc<TokenPlan>,
    source: Arc<S>,
    reader: Mutex<Option<BatchReader<S>>>,
    /// What [`SharedPlan::read`] has done (the loaders count their own).
    stats: Arc<LoaderStats>,
}

impl SharedPlan<CacheSource> {
    /// The plan of `config` and `run` over the token caches of `dataset`, with `weights` (if
    /// given) in place of `config.weights`: the caches are checked ([`CacheSource::new`]),
    /// the weights resolved by the caches' source names ([`TokenWeights::per_cache`],
    /// [`TokenStreamError::Weights`]), then the epoch planned ([`TokenPlan::new`]).
    pub fn open(
        dataset: Dataset,
        weights: Option<TokenWeights>,
        mut config: TokenConfig,
        run: &RunConfig,
    ) -> Result<Self, TokenStreamError> {
        let source = CacheSource::new(dataset)?;
        if let Some(weights) = weights {
            let names = source.source_names();
            config.weights = Some(weights.per_cache(&names, |c| source.name(c))?);
        }
        let plan = TokenPlan::new(&source, &config, run)?;
        Ok(Self::new(plan, source))
    }
}

impl<S: DocumentSource + 'static> SharedPlan<S> {
    /// `plan`, read from `source` (the source it was planned over).
    pub fn new(plan: TokenPlan, source: S) -> Self {
        Self {
            stats: Arc::new(LoaderStats::new(source.sources())),
            plan: Arc::new(plan),
            source: Arc::new(source),
            reader: Mutex::new(None),
        }
    }

    /// The plan.
    pub fn plan(&self) -> &TokenPlan {
        &self.plan
    }

    /// The source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// What the epoch does on this topology, its shuffle figures from `quality_blocks` blocks
    /// (see [`TokenReport::compute`]); nothing is read but lengths.
    pub fn report(&self, quality_blocks: u64) -> Result<TokenReport, TokenStreamError> {
        TokenReport::compute(&self.plan, self.source.as_ref(), quality_blocks)
    }

    /// This rank's steps `steps` as one batch, its columns from `pool` (derived now when
    /// `expand`); counted in [`SharedPlan::stats`] as a batch delivered, the wait for the
    /// reader included. Reads from several threads take turns.
    pub fn read(
        &self,
        steps: Range<u64>,
        pool: &Arc<BatchPool>,
        expand: bool,
    ) -> Result<TokenBatch, TokenStreamError> {
        let asked = Instant::now();
        let mut slot = lock(&self.reader, "the plan")?;
        let (plan, source) = (self.plan.as_ref(), self.source.as_ref());
        let reader = slot.get_or_insert_with(|| BatchReader::new(plan, source));
        let batch = reader.read(plan, source, steps, pool, expand, &self.stats)?;
        let rows = batch.rows() as u64;
        self.stats
            .delivered(asked, rows, rows * batch.seq_len() as u64);
        Ok(batch)
    }

    /// Every batch of this rank's steps, read ahead on threads ([`TokenLoader::new`]).
    pub fn loader(&self, options: LoaderOptions) -> TokenLoader<S> {
        TokenLoader::new(Arc::clone(&self.plan), Arc::clone(&self.source), options)
    }

    /// What [`SharedPlan::read`] has done since the plan was made (a `DataLoader` worker's
    /// share of the epoch, when each worker reads its own steps).
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }
}

/// A [`TokenLoader`] that any thread may take the next batch from (one at a time), its
/// counters readable without waiting for a thread that is taking one.
#[derive(Debug)]
pub struct SharedLoader<S: DocumentSource + 'static> {
    loader: Mutex<TokenLoader<S>>,
    stats: Arc<LoaderStats>,
}

impl<S: DocumentSource + 'static> SharedLoader<S> {
    /// Shares `loader`.
    pub fn new(loader: TokenLoader<S>) -> Self {
        Self {
            stats: loader.stats_handle(),
            loader: Mutex::new(loader),
        }
    }

    /// The next batch, `None` after the last (see [`TokenLoader`]'s `Iterator`).
    pub fn next_batch(&self) -> Result<Option<TokenBatch>, TokenStreamError> {
        lock(&self.loader, "the batches")?.next().transpose()
    }

    /// Batches left.
    pub fn remaining(&self) -> Result<usize, TokenStreamError> {
        Ok(lock(&self.loader, "the batches")?.size_hint().0)
    }

    /// What the loader has done so far.
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }
}

/// A batch whose Arrow forms ([`TokenBatch::expanded_record`], [`TokenBatch::compact_record`])
/// any thread may ask for, each made once and then shared (cloning a record batch clones
/// references to its buffers, not the buffers).
#[derive(Debug)]
pub struct SharedTokenBatch {
    rows: usize,
    seq_len: usize,
    pad_id: u32,
    /// Where the expanded columns' buffers come from.
    pool: Arc<BatchPool>,
    forms: Mutex<Forms>,
}

/// A batch before and after its columns become Arrow arrays.
#[derive(Debug)]
struct Forms {
    batch: TokenBatch,
    compact: Option<RecordBatch>,
    expanded: Option<(RecordBatch, u32)>,
    /// Each row's last token, while `batch` holds no tokens (one received in a slot: its
    /// tokens are rebuilt from `expanded` and these when first asked for).
    last_tokens: Option<Vec<u32>>,
}

impl Forms {
    /// The batch, its tokens rebuilt first where it arrived without them.
    fn batch(&mut self, pool: &Arc<BatchPool>) -> Result<&TokenBatch, TokenStreamError> {
        if let (Some(last), Some((record, _))) = (&self.last_tokens, &self.expanded) {
            self.batch.rebuild_tokens(record, last, pool)?;
            self.last_tokens = None;
        }
        Ok(&self.batch)
    }

    fn expanded(&mut self, pool: &Arc<BatchPool>) -> Result<&(RecordBatch, u32), TokenStreamError> {
        let expanded = match self.expanded.take() {
            Some(expanded) => expanded,
            None => self.batch.expanded_record(pool)?,
        };
        Ok(self.expanded.insert(expanded))
    }
}

impl SharedTokenBatch {
    /// `batch`, its columns derived (where not yet) in buffers of `pool`.
    pub fn new(batch: TokenBatch, pool: Arc<BatchPool>) -> Self {
        Self {
            rows: batch.rows(),
            seq_len: batch.seq_len(),
            pad_id: batch.pad_id(),
            pool,
            forms: Mutex::new(Forms {
                batch,
                compact: None,
                expanded: None,
                last_tokens: None,
            }),
        }
    }

    /// A batch received without its tokens, its expanded form made already (over memory that
    /// is not `pool`'s): its tokens are that form's `input_ids`, each row ended by its entry of
    /// `last_tokens`.
    pub(crate) fn received(
        batch: TokenBatch,
        pool: Arc<BatchPool>,
        expanded: (RecordBatch, u32),
        last_tokens: Vec<u32>,
    ) -> Self {
        let mut shared = Self::new(batch, pool);
        if let Ok(forms) = shared.forms.get_mut() {
            forms.expanded = Some(expanded);
            forms.last_tokens = Some(last_tokens);
        }
        shared
    }

    /// `f` of the batch's compact form.
    pub(crate) fn with_batch<T>(
        &self,
        f: impl FnOnce(&TokenBatch) -> Result<T, TokenStreamError>,
    ) -> Result<T, TokenStreamError> {
        let mut forms = lock(&self.forms, "a token batch")?;
        f(forms.batch(&self.pool)?)
    }

    /// Rows in the batch.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Tokens of input per row.
    pub fn seq_len(&self) -> usize {
        self.seq_len
    }

    /// The padding token.
    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }

    /// The expanded form and `max_seqlen` (made on first use: the columns' buffers move into
    /// it).
    pub fn expanded(&self) -> Result<(RecordBatch, u32), TokenStreamError> {
        let mut forms = lock(&self.forms, "a token batch")?;
        forms.expanded(&self.pool).cloned()
    }

    /// The longest sequence of `cu_seqlens` (derives the columns if not yet).
    pub fn max_seqlen(&self) -> Result<u32, TokenStreamError> {
        let mut forms = lock(&self.forms, "a token batch")?;
        Ok(forms.expanded(&self.pool)?.1)
    }

    /// The compact form (made on first use).
    pub fn compact(&self) -> Result<RecordBatch, TokenStreamError> {
        let mut forms = lock(&self.forms, "a token batch")?;
        let compact = match forms.compact.take() {
            Some(compact) => compact,
            None => forms.batch(&self.pool)?.compact_record()?,
        };
        Ok(forms.compact.insert(compact).clone())
    }

    /// The form that crosses a process boundary ([`TokenBatch::transfer_record`]), made anew
    /// on each call: it is asked for once, when the batch is pickled.
    pub fn transfer(&self) -> Result<RecordBatch, TokenStreamError> {
        let mut forms = lock(&self.forms, "a token batch")?;
        forms.batch(&self.pool)?.transfer_record()
    }

    /// The expanded form's tensor columns ([`tensor_columns`]) and `max_seqlen`.
    pub fn tensor_columns(&self) -> Result<(Vec<TensorColumn>, u32), TokenStreamError> {
        let mut forms = lock(&self.forms, "a token batch")?;
        let (record, max_seqlen) = forms.expanded(&self.pool)?;
        Ok((tensor_columns(record, self.seq_len)?, *max_seqlen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SyntheticSource, SyntheticSpec};

    fn shared() -> SharedPlan<SyntheticSource> {
        let source = SyntheticSource::new(vec![
            SyntheticSpec::new(300, 3, 70),
            SyntheticSpec::new(200, 2, 120),
        ]);
        let config = TokenConfig {
            seq_len: 64,
            ..TokenConfig::default()
        };
        let plan = TokenPlan::new(&source, &config, &RunConfig::default()).unwrap();
        SharedPlan::new(plan, source)
    }

    #[test]
    fn reads_continue_the_stream_and_are_counted_as_delivered() {
        let shared = shared();
        let pool = BatchPool::new();
        let first = shared.read(0..8, &pool, true).unwrap();
        let second = shared.read(8..16, &pool, false).unwrap();
        assert_eq!((first.rows(), second.rows()), (8, 8));
        assert!(first.columns().is_some() && second.columns().is_none());
        // The same rows as a loader reads, whatever reads came before.
        let options = LoaderOptions {
            batch_size: 8,
            workers: 0,
            ..LoaderOptions::default()
        };
        let from_loader: Vec<TokenBatch> = shared
            .loader(options)
            .take(2)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(from_loader[0].tokens(), first.tokens());
        assert_eq!(from_loader[1].tokens(), second.tokens());
        let again = shared.read(0..8, &pool, false).unwrap();
        assert_eq!(again.tokens(), first.tokens());
        let stats = shared.stats();
        assert_eq!((stats.batches, stats.samples), (3, 24));
        assert_eq!(stats.tokens, 24 * 64);
    }

    #[test]
    fn a_shared_loader_yields_the_loaders_batches_and_counts_them() {
        let shared = shared();
        let options = LoaderOptions {
            batch_size: 16,
            workers: 2,
            ..LoaderOptions::default()
        };
        let expected: Vec<TokenBatch> = shared.loader(options).collect::<Result<_, _>>().unwrap();
        let loader = SharedLoader::new(shared.loader(options));
        assert_eq!(loader.remaining().unwrap(), expected.len());
        let first = loader.next_batch().unwrap().unwrap();
        assert_eq!(first.tokens(), expected[0].tokens());
        assert_eq!(loader.remaining().unwrap(), expected.len() - 1);
        assert_eq!(loader.stats().batches, 1);
        let rest = std::iter::from_fn(|| loader.next_batch().unwrap()).count();
        assert_eq!(rest, expected.len() - 1);
        assert!(loader.next_batch().unwrap().is_none());
    }

    #[test]
    fn the_padding_fraction_is_the_padded_share_of_the_inputs() {
        let shared = shared();
        let plan = shared.plan();
        let inputs = plan.rows() * plan.config().seq_len;
        #[allow(clippy::cast_precision_loss)]
        let expected = plan.padded_tokens() as f64 / inputs as f64;
        assert!((plan.padding_fraction() - expected).abs() < 1e-12);
        let report = shared.report(16).unwrap();
        assert_eq!(report.rows, plan.rows());
    }

    #[test]
    fn a_batchs_forms_are_made_once_and_agree() {
        let shared = shared();
        let pool = BatchPool::new();
        let batch = SharedTokenBatch::new(shared.read(0..8, &pool, false).unwrap(), pool);
        assert_eq!((batch.rows(), batch.seq_len(), batch.pad_id()), (8, 64, 0));
        let (record, max_seqlen) = batch.expanded().unwrap();
        let (again, _) = batch.expanded().unwrap();
        // The same arrays, not a second expansion.
        assert!(record
            .column(0)
            .to_data()
            .ptr_eq(&again.column(0).to_data()));
        assert_eq!(batch.max_seqlen().unwrap(), max_seqlen);
        let (columns, max) = batch.tensor_columns().unwrap();
        assert_eq!((columns.len(), max), (6, max_seqlen));
        let start = columns[0].buffer.as_ptr() as usize + columns[0].offset;
        let ids = record.column(0).to_data().child_data()[0].clone();
        assert_eq!(start, ids.buffers()[0].as_ptr() as usize + ids.offset() * 8);
        let compact = batch.compact().unwrap();
        assert_eq!(compact.num_rows(), 8);
        assert!(compact
            .column(0)
            .to_data()
            .ptr_eq(&batch.compact().unwrap().column(0).to_data()));
    }

    #[test]
    fn a_lock_left_by_a_panic_refuses_later_calls() {
        let shared = Arc::new(shared());
        let pool = BatchPool::new();
        let poisoner = Arc::clone(&shared);
        let _ = std::thread::spawn(move || {
            let _guard = poisoner.reader.lock();
            panic!("a read that panicked");
        })
        .join();
        let error = shared.read(0..8, &pool, true).unwrap_err();
        assert_eq!(error.to_string(), "the plan failed in another thread");
    }
}
