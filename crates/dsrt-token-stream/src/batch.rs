//! Batches of rows: the tokens of each row read from the documents, then the columns a
//! training step takes (`input_ids`, `labels`, `position_ids`, `segment_ids`, `loss_mask`,
//! `cu_seqlens`), with the documents each row holds.
//!
//! A row is `seq_len + 1` tokens (the last only ever a label); its pieces of documents lie one
//! after another from its start, the rest is padding. Reading fills the *compact* form (the
//! tokens as `u32` and the pieces' lengths), which is what crosses a process boundary;
//! [`TokenBatch::expand`] derives the columns from it, anywhere. Columns live in buffers
//! recycled through a [`BatchPool`] when the last view of them is dropped, so a steady stream
//! of batches allocates no column memory.

// Rows, tokens and offsets of one batch are far below 2^31 (checked when the batch is sized).
#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]

use crate::rows::RowBlock;
use crate::source::DocumentSource;
use crate::{TokenPlan, TokenStreamError};
use arrow_buffer::{ArrowNativeType, MutableBuffer};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Rows [`TokenBatch::read_expanded`] reads before deriving them: their tokens (32 KiB at
/// `seq_len` 1024, 256 KiB at 8192) stay in the core's cache until derived, and the time
/// spent deriving is taken once per chunk, not per row.
const SCRATCH_ROWS: usize = 8;

/// The label of a position whose loss is masked: the `ignore_index` of PyTorch's
/// `cross_entropy` (and Hugging Face's models).
pub const IGNORE_INDEX: i64 = -100;

/// Column buffers kept for reuse: at most 64 of them (the columns of a few batches in flight).
#[derive(Debug, Default)]
pub struct BatchPool(Mutex<Vec<MutableBuffer>>);

/// Buffers the pool keeps: the columns of a few batches in flight.
const POOL_BUFFERS: usize = 64;

impl BatchPool {
    /// An empty pool, shared by the batches of one loader.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// A buffer of `len` elements of `T`, from the pool when one is large enough. Its values
    /// are unspecified (a recycled buffer keeps what it held): every caller writes all of them.
    fn take<T: ArrowNativeType>(self: &Arc<Self>, len: usize) -> Column<T> {
        let bytes = len * std::mem::size_of::<T>();
        // The smallest buffer that fits, so a small column does not take a large one that a
        // later large column of the same batch then has to allocate again.
        let reused = self.0.lock().ok().and_then(|mut free| {
            let at = free
                .iter()
                .enumerate()
                .filter(|(_, b)| b.capacity() >= bytes)
                .min_by_key(|(_, b)| b.capacity())
                .map(|(at, _)| at)?;
            Some(free.swap_remove(at))
        });
        let mut buffer = reused.unwrap_or_else(|| MutableBuffer::with_capacity(bytes));
        // Only memory past what the buffer held before is zeroed (initialised memory only):
        // zeroing every column of every batch costs as much as deriving it.
        if buffer.len() >= bytes {
            buffer.truncate(bytes);
        } else {
            buffer.resize(bytes, 0);
        }
        Column {
            buffer: Some(buffer),
            pool: Arc::downgrade(self),
            _type: std::marker::PhantomData,
        }
    }

    fn give_back(&self, buffer: MutableBuffer) {
        if let Ok(mut free) = self.0.lock() {
            if free.len() < POOL_BUFFERS {
                free.push(buffer);
            }
        }
    }
}

/// One column of a batch: `T` values in an aligned buffer that goes back to its pool when
/// dropped. [`Column::into_shared`] makes it the owner of a `bytes::Bytes`-like view
/// (`AsRef<[u8]>`), for handing it to Arrow without a copy.
#[derive(Debug)]
pub struct Column<T> {
    buffer: Option<MutableBuffer>,
    pool: Weak<BatchPool>,
    _type: std::marker::PhantomData<T>,
}

impl<T: ArrowNativeType> Column<T> {
    /// A column of no values that holds no buffer (a placeholder until one is filled).
    fn empty(pool: Weak<BatchPool>) -> Self {
        Self {
            buffer: None,
            pool,
            _type: std::marker::PhantomData,
        }
    }

    /// The values.
    pub fn values(&self) -> &[T] {
        self.buffer.as_ref().map_or(&[], |b| b.typed_data::<T>())
    }

    fn values_mut(&mut self) -> &mut [T] {
        self.buffer
            .as_mut()
            .map_or(&mut [], |b| b.typed_data_mut::<T>())
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.values().len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The column as bytes owned by a value that returns them to the pool when dropped.
    pub fn into_shared(self) -> SharedColumn {
        SharedColumn(self.erase())
    }

    fn erase(mut self) -> Column<u8> {
        Column {
            buffer: self.buffer.take(),
            pool: std::mem::take(&mut self.pool),
            _type: std::marker::PhantomData,
        }
    }
}

impl<T> Drop for Column<T> {
    fn drop(&mut self) {
        if let (Some(buffer), Some(pool)) = (self.buffer.take(), self.pool.upgrade()) {
            pool.give_back(buffer);
        }
    }
}

/// A column's bytes (aligned for its type), returned to its pool when dropped: the owner of
/// the memory of an Arrow buffer.
#[derive(Debug)]
pub struct SharedColumn(Column<u8>);

impl AsRef<[u8]> for SharedColumn {
    fn as_ref(&self) -> &[u8] {
        self.0.buffer.as_ref().map_or(&[], |b| b.as_slice())
    }
}

/// One document piece of a batch's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchPiece {
    /// The document's `(cache_id, sample_id)`.
    pub key: (u64, u64),
    /// Its first token's offset in the document (boundary tokens counted).
    pub start: u64,
    /// Its tokens in the row.
    pub len: u32,
}

/// Consecutive steps of one rank as tensors' worth of columns (see the module).
#[derive(Debug)]
pub struct TokenBatch {
    seq_len: usize,
    pad_id: u32,
    /// Per row: the rank's step, whether it is padding, its real tokens (of `seq_len + 1`).
    steps: Vec<u64>,
    padding: Vec<bool>,
    real: Vec<u32>,
    /// Per row, where its pieces begin in `pieces` (one entry more than rows).
    row_pieces: Vec<u32>,
    pieces: Vec<BatchPiece>,
    /// `rows * (seq_len + 1)` token ids; empty for a batch read expanded
    /// ([`TokenBatch::read_expanded`]), whose tokens are rebuilt on demand (`rebuilt`).
    tokens: Column<u32>,
    columns: Option<Expanded>,
    /// Read expanded: each row's last token (the label of its last input), and the input ids
    /// once the columns were handed on as Arrow buffers.
    fused: Option<Fused>,
    /// A batch read expanded: its tokens, rebuilt from the input ids and `fused.last` the
    /// first time they are asked for (to cross a process boundary, which is rare).
    rebuilt: std::sync::OnceLock<Vec<u32>>,
}

/// What a batch read expanded keeps to give its tokens back: the compact form is never
/// written, since a row's tokens are its inputs and one more.
#[derive(Debug)]
struct Fused {
    last: Vec<u32>,
    /// The input ids' buffer once the columns moved into Arrow arrays (`i64`, row-major).
    handed_on: Option<arrow_buffer::Buffer>,
}

/// The columns [`TokenBatch::expand`] derives.
#[derive(Debug)]
pub struct Expanded {
    /// `[rows, seq_len]`: the row's first `seq_len` tokens (`pad_id` on padding).
    pub input_ids: Column<i64>,
    /// `[rows, seq_len]`: the next token where it belongs to the same document, else
    /// [`IGNORE_INDEX`].
    pub labels: Column<i64>,
    /// `[rows, seq_len]`: the position within its piece of document (0 at every document
    /// start and at the row's start; 0 on padding).
    pub position_ids: Column<i64>,
    /// `[rows, seq_len]`: the piece's number within its row from 1; 0 on padding.
    pub segment_ids: Column<i32>,
    /// `[rows, seq_len]`: 1 where the label counts (a next token of the same document).
    pub loss_mask: Column<u8>,
    /// Where each sequence of the flattened batch begins (pieces, and each row's padding as one
    /// sequence), then `rows * seq_len`: flash-attention's varlen `cu_seqlens`.
    pub cu_seqlens: Column<i32>,
    /// The longest sequence of `cu_seqlens`.
    pub max_seqlen: u32,
}

impl TokenBatch {
    /// Reads the tokens of `rows` (from [`crate::RowCursor::read`]) into a batch whose columns
    /// come from `pool`: the compact form, expanded later ([`TokenBatch::expand`]) or carried
    /// to another process first.
    pub fn read<S: DocumentSource>(
        plan: &TokenPlan,
        source: &S,
        rows: &RowBlock,
        buf: &mut S::Buf,
        pool: &Arc<BatchPool>,
    ) -> Result<Self, TokenStreamError> {
        let mut batch = Self::empty(plan, rows, pool);
        let width = batch.seq_len + 1;
        let mut tokens = pool.take::<u32>(rows.specs.len() * width);
        for (i, row) in tokens.values_mut().chunks_exact_mut(width).enumerate() {
            batch.read_row(plan, source, rows, i, buf, row)?;
        }
        batch.tokens = tokens;
        Ok(batch)
    }

    /// Reads `rows` as [`TokenBatch::read`] does and derives their columns as it goes, a few
    /// rows at a time through `scratch` (small enough to stay in cache), so that the compact
    /// tokens are never written out: what a reader that hands batches straight to training
    /// does. [`TokenBatch::tokens`] rebuilds them if asked. Returns the batch and the time
    /// spent deriving (the rest was reading).
    pub fn read_expanded<S: DocumentSource>(
        plan: &TokenPlan,
        source: &S,
        rows: &RowBlock,
        buf: &mut S::Buf,
        scratch: &mut Vec<u32>,
        pool: &Arc<BatchPool>,
    ) -> Result<(Self, Duration), TokenStreamError> {
        let mut batch = Self::empty(plan, rows, pool);
        let count = rows.specs.len();
        let (s, width) = (batch.seq_len, batch.seq_len + 1);
        scratch.clear();
        scratch.resize(width * SCRATCH_ROWS, 0);
        let mut out = Outputs::take(pool, count, s, rows.pieces.len());
        let mut last = Vec::with_capacity(count);
        let mut deriving = Duration::ZERO;
        for first in (0..count).step_by(SCRATCH_ROWS) {
            let chunk = first..(first + SCRATCH_ROWS).min(count);
            for (i, row) in chunk.clone().zip(scratch.chunks_exact_mut(width)) {
                batch.read_row(plan, source, rows, i, buf, row)?;
                last.push(row[s]);
            }
            let started = Instant::now();
            for (i, row) in chunk.zip(scratch.chunks_exact(width)) {
                out.derive_row(i, s, batch.pad_id, row, batch.pieces_of(i));
            }
            deriving += started.elapsed();
        }
        batch.columns = Some(out.finish());
        batch.fused = Some(Fused {
            last,
            handed_on: None,
        });
        Ok((batch, deriving))
    }

    /// A batch of `rows`' steps with nothing read yet.
    fn empty(plan: &TokenPlan, rows: &RowBlock, pool: &Arc<BatchPool>) -> Self {
        let count = rows.specs.len();
        let mut row_pieces = Vec::with_capacity(count + 1);
        row_pieces.push(0);
        Self {
            seq_len: plan.config().seq_len as usize,
            pad_id: plan.config().pad_id,
            steps: Vec::with_capacity(count),
            padding: Vec::with_capacity(count),
            real: Vec::with_capacity(count),
            row_pieces,
            pieces: Vec::with_capacity(rows.pieces.len()),
            tokens: Column::empty(Arc::downgrade(pool)),
            columns: None,
            fused: None,
            rebuilt: std::sync::OnceLock::new(),
        }
    }

    /// Reads row `i` of `rows` into `row` (`seq_len + 1` tokens, padded) and records its
    /// step, pieces and real tokens.
    fn read_row<S: DocumentSource>(
        &mut self,
        plan: &TokenPlan,
        source: &S,
        rows: &RowBlock,
        i: usize,
        buf: &mut S::Buf,
        row: &mut [u32],
    ) -> Result<(), TokenStreamError> {
        let mut at = 0usize;
        for piece in rows.pieces_of(i) {
            let boundary = plan.boundary[piece.source as usize];
            let len = piece.len as usize;
            write_piece(
                source,
                buf,
                piece.source as usize,
                piece.doc,
                piece.start,
                boundary,
                &mut row[at..at + len],
            )?;
            at += len;
            self.pieces.push(BatchPiece {
                key: source.key(piece.source as usize, piece.doc),
                start: piece.start,
                len: piece.len,
            });
        }
        row[at..].fill(self.pad_id);
        let spec = &rows.specs[i];
        self.steps.push(spec.step);
        self.padding.push(spec.padding);
        self.real.push(at as u32);
        self.row_pieces.push(self.pieces.len() as u32);
        Ok(())
    }

    /// Rebuilds a batch from its compact parts (what crossed a process boundary): per row its
    /// step, padding flag and pieces (`row_pieces` offsets into `pieces`), and the rows'
    /// `seq_len + 1` tokens each. The pieces of a row must fit it.
    #[allow(clippy::too_many_arguments)]
    pub fn from_parts(
        seq_len: usize,
        pad_id: u32,
        steps: Vec<u64>,
        padding: Vec<bool>,
        row_pieces: Vec<u32>,
        pieces: Vec<BatchPiece>,
        tokens: &[u32],
        pool: &Arc<BatchPool>,
    ) -> Result<Self, TokenStreamError> {
        let rows = steps.len();
        let bad = |what: String| TokenStreamError::Config(format!("a token batch's parts: {what}"));
        if padding.len() != rows || row_pieces.len() != rows + 1 {
            return Err(bad(format!(
                "{rows} steps, {} padding flags, {} piece offsets",
                padding.len(),
                row_pieces.len()
            )));
        }
        if tokens.len() != rows * (seq_len + 1) {
            return Err(bad(format!(
                "{} tokens for {rows} rows of {}",
                tokens.len(),
                seq_len + 1
            )));
        }
        let mut real = Vec::with_capacity(rows);
        for row in 0..rows {
            let (a, b) = (row_pieces[row] as usize, row_pieces[row + 1] as usize);
            if a > b || b > pieces.len() {
                return Err(bad(format!(
                    "row {row}'s pieces {a}..{b} of {}",
                    pieces.len()
                )));
            }
            let used: u64 = pieces[a..b].iter().map(|p| u64::from(p.len)).sum();
            if used > seq_len as u64 + 1 {
                return Err(bad(format!("row {row} holds {used} tokens")));
            }
            real.push(used as u32);
        }
        let mut column = pool.take::<u32>(tokens.len());
        column.values_mut().copy_from_slice(tokens);
        Ok(Self {
            seq_len,
            pad_id,
            steps,
            padding,
            real,
            row_pieces,
            pieces,
            tokens: column,
            columns: None,
            fused: None,
            rebuilt: std::sync::OnceLock::new(),
        })
    }

    /// Rows in the batch.
    pub fn rows(&self) -> usize {
        self.steps.len()
    }

    /// Tokens of input per row.
    pub fn seq_len(&self) -> usize {
        self.seq_len
    }

    /// The padding token.
    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }

    /// Each row's step.
    pub fn steps(&self) -> &[u64] {
        &self.steps
    }

    /// Whether each row is padding (no loss: a padding step or an empty bin).
    pub fn padding(&self) -> &[bool] {
        &self.padding
    }

    /// Each row's `seq_len + 1` tokens, one row after another. A batch read expanded
    /// ([`TokenBatch::read_expanded`]) rebuilds them from its input ids the first time, and
    /// has none to give if its columns were taken ([`TokenBatch::take_columns`]) before.
    pub fn tokens(&self) -> &[u32] {
        match &self.fused {
            None => self.tokens.values(),
            Some(fused) => self.rebuilt.get_or_init(|| self.rebuild(fused)),
        }
    }

    /// The tokens of a batch read expanded: each row's inputs, then its last token.
    fn rebuild(&self, fused: &Fused) -> Vec<u32> {
        let s = self.seq_len;
        let ids: &[i64] = match (&self.columns, &fused.handed_on) {
            (Some(columns), _) => columns.input_ids.values(),
            (None, Some(buffer)) => buffer.typed_data::<i64>(),
            (None, None) => &[],
        };
        let mut tokens = Vec::with_capacity(fused.last.len() * (s + 1));
        for (row, &last) in fused.last.iter().enumerate() {
            let Some(inputs) = ids.get(row * s..(row + 1) * s) else {
                break;
            };
            // Inputs are token ids (u32) widened, or the u32 pad id: narrowing is exact.
            tokens.extend(inputs.iter().map(|&id| id as u32));
            tokens.push(last);
        }
        tokens
    }

    /// Keeps the input ids' buffer of a batch read expanded whose columns move into Arrow
    /// arrays, so that [`TokenBatch::tokens`] can still rebuild its tokens.
    pub(crate) fn hand_on_input_ids(&mut self, buffer: &arrow_buffer::Buffer) {
        if let Some(fused) = &mut self.fused {
            fused.handed_on = Some(buffer.clone());
        }
    }

    /// Puts the compact tokens back (after [`TokenBatch::take_columns`]).
    pub(crate) fn restore_tokens(&mut self, tokens: Column<u32>) {
        self.tokens = tokens;
    }

    /// Where each row's pieces begin in [`TokenBatch::pieces`] (one entry more than rows).
    pub fn row_pieces(&self) -> &[u32] {
        &self.row_pieces
    }

    /// The document pieces of every row, row after row.
    pub fn pieces(&self) -> &[BatchPiece] {
        &self.pieces
    }

    /// The pieces of row `row`.
    pub fn pieces_of(&self, row: usize) -> &[BatchPiece] {
        &self.pieces[self.row_pieces[row] as usize..self.row_pieces[row + 1] as usize]
    }

    /// Real tokens of `seq_len + 1` in each row (label included).
    pub fn real_tokens(&self) -> &[u32] {
        &self.real
    }

    /// The derived columns, if [`TokenBatch::expand`] made them.
    pub fn columns(&self) -> Option<&Expanded> {
        self.columns.as_ref()
    }

    /// Takes the compact tokens and the derived columns out (for a binding that hands their
    /// buffers on).
    pub fn take_columns(&mut self) -> (Column<u32>, Option<Expanded>) {
        let empty = Column::empty(self.tokens.pool.clone());
        (
            std::mem::replace(&mut self.tokens, empty),
            self.columns.take(),
        )
    }

    /// Derives the training columns from the tokens and pieces (once; the buffers come from
    /// `pool`).
    pub fn expand(&mut self, pool: &Arc<BatchPool>) -> &Expanded {
        let columns = match self.columns.take() {
            Some(columns) => columns,
            None => self.derive(pool),
        };
        self.columns.insert(columns)
    }

    fn derive(&self, pool: &Arc<BatchPool>) -> Expanded {
        let (rows, s) = (self.rows(), self.seq_len);
        let mut out = Outputs::take(pool, rows, s, self.pieces.len());
        for (row, toks) in self.tokens().chunks_exact(s + 1).enumerate() {
            out.derive_row(row, s, self.pad_id, toks, self.pieces_of(row));
        }
        out.finish()
    }
}

/// The columns of a batch being derived, row by row.
struct Outputs {
    input_ids: Column<i64>,
    labels: Column<i64>,
    position_ids: Column<i64>,
    segment_ids: Column<i32>,
    loss_mask: Column<u8>,
    cu_seqlens: Column<i32>,
    /// Sequences of `cu_seqlens` so far.
    sequence: usize,
    max_seqlen: u32,
}

impl Outputs {
    /// Columns for `rows` rows of `s` inputs holding `pieces` pieces in all, from `pool`.
    fn take(pool: &Arc<BatchPool>, rows: usize, s: usize, pieces: usize) -> Self {
        Self {
            input_ids: pool.take::<i64>(rows * s),
            labels: pool.take::<i64>(rows * s),
            position_ids: pool.take::<i64>(rows * s),
            segment_ids: pool.take::<i32>(rows * s),
            loss_mask: pool.take::<u8>(rows * s),
            cu_seqlens: pool.take::<i32>(pieces + rows + 1),
            sequence: 0,
            max_seqlen: 0,
        }
    }

    /// Derives row `row` (its `s + 1` tokens `toks`, holding `pieces`, padded with `pad_id`).
    fn derive_row(
        &mut self,
        row: usize,
        s: usize,
        pad_id: u32,
        toks: &[u32],
        pieces: &[BatchPiece],
    ) {
        let base = row * s;
        // Exact slices, so the loops below run without bounds checks.
        let toks = &toks[..s + 1];
        let ids = &mut self.input_ids.values_mut()[base..base + s];
        let lab = &mut self.labels.values_mut()[base..base + s];
        let pos = &mut self.position_ids.values_mut()[base..base + s];
        let seg = &mut self.segment_ids.values_mut()[base..base + s];
        let mask = &mut self.loss_mask.values_mut()[base..base + s];
        let cu = self.cu_seqlens.values_mut();
        let mut at = 0usize;
        let mut number = 0i32;
        for piece in pieces {
            let end = at + piece.len as usize;
            if at >= s {
                break;
            }
            number += 1;
            let inputs = end.min(s);
            cu[self.sequence] = (base + at) as i32;
            self.sequence += 1;
            self.max_seqlen = self.max_seqlen.max((inputs - at) as u32);
            for (id, &token) in ids[at..inputs].iter_mut().zip(&toks[at..inputs]) {
                *id = i64::from(token);
            }
            for (offset, p) in pos[at..inputs].iter_mut().enumerate() {
                *p = offset as i64;
            }
            seg[at..inputs].fill(number);
            // A label is the next token of the same piece: within it, and for the piece's
            // last input only if the piece goes on past the inputs.
            let labelled = (end - 1).min(inputs);
            for (label, &token) in lab[at..labelled]
                .iter_mut()
                .zip(&toks[at + 1..labelled + 1])
            {
                *label = i64::from(token);
            }
            mask[at..labelled].fill(1);
            lab[labelled..inputs].fill(IGNORE_INDEX);
            mask[labelled..inputs].fill(0);
            at = end;
        }
        let padded = at.min(s);
        if padded < s {
            cu[self.sequence] = (base + padded) as i32;
            self.sequence += 1;
            self.max_seqlen = self.max_seqlen.max((s - padded) as u32);
            ids[padded..].fill(i64::from(pad_id));
            lab[padded..].fill(IGNORE_INDEX);
            pos[padded..].fill(0);
            seg[padded..].fill(0);
            mask[padded..].fill(0);
        }
    }

    /// The columns, `cu_seqlens` closed by the total.
    fn finish(mut self) -> Expanded {
        let total = self.input_ids.len() as i32;
        self.cu_seqlens.values_mut()[self.sequence] = total;
        self.cu_seqlens.truncate(self.sequence + 1);
        Expanded {
            input_ids: self.input_ids,
            labels: self.labels,
            position_ids: self.position_ids,
            segment_ids: self.segment_ids,
            loss_mask: self.loss_mask,
            cu_seqlens: self.cu_seqlens,
            max_seqlen: self.max_seqlen,
        }
    }
}

impl<T: ArrowNativeType> Column<T> {
    fn truncate(&mut self, len: usize) {
        if let Some(buffer) = self.buffer.as_mut() {
            buffer.truncate(len * std::mem::size_of::<T>());
        }
    }
}

/// Writes tokens `start..start + out.len()` of a document (its boundary tokens counted) into
/// `out`.
fn write_piece<S: DocumentSource>(
    source: &S,
    buf: &mut S::Buf,
    c: usize,
    doc: u64,
    start: u64,
    boundary: crate::plan::Boundary,
    out: &mut [u32],
) -> Result<(), TokenStreamError> {
    let stored = source.read(c, doc, buf)?;
    let raw = stored.len() as usize;
    let bos = usize::from(boundary.bos.is_some());
    let mut at = 0usize;
    let mut i = start as usize;
    if let (Some(token), 0) = (boundary.bos, i) {
        if let Some(slot) = out.first_mut() {
            *slot = token;
            at = 1;
            i = 1;
        }
    }
    // Stored tokens `i - bos ..`, as many as fit before the EOS.
    let from = i - bos;
    let take = (out.len() - at).min(raw.saturating_sub(from));
    stored.copy_to(from, &mut out[at..at + take]);
    at += take;
    if at < out.len() {
        match boundary.eos {
            Some(token) if at + 1 == out.len() => out[at] = token,
            _ => {
                return Err(TokenStreamError::read(LengthError {
                    source_name: source.name(c),
                    sample_id: source.key(c, doc).1,
                    stored: raw as u64,
                    wanted: start + out.len() as u64,
                }))
            }
        }
    }
    Ok(())
}

/// A document shorter when read than its length said.
#[derive(Debug, thiserror::Error)]
#[error(
    "{source_name}: document {sample_id} holds {stored} tokens but its length says at least \
     {wanted} (with boundary tokens)"
)]
struct LengthError {
    source_name: String,
    sample_id: u64,
    stored: u64,
    wanted: u64,
}
