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
use crate::{IdsDtype, TokenPlan, TokenStreamError};
use arrow_buffer::{ArrowNativeType, MutableBuffer};
use std::sync::{Arc, Mutex, Weak};

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
    pub(crate) fn take<T: ArrowNativeType>(self: &Arc<Self>, len: usize) -> Column<T> {
        let bytes = len * std::mem::size_of::<T>();
        // The smallest buffer that fits, so a small column does not take a large one that a
        // later large column of the same batch then has to allocate again; of those, the one
        // given back last, whose memory is likeliest still in cache.
        let reused = self.0.lock().ok().and_then(|mut free| {
            let at = free
                .iter()
                .enumerate()
                .rev()
                .filter(|(_, b)| b.capacity() >= bytes)
                .min_by_key(|(_, b)| b.capacity())
                .map(|(at, _)| at)?;
            Some(free.remove(at))
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
    pub(crate) fn empty(pool: Weak<BatchPool>) -> Self {
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

    pub(crate) fn values_mut(&mut self) -> &mut [T] {
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
    /// The type its id columns are derived in (every token id fits it).
    ids_dtype: IdsDtype,
    /// Per row: the rank's step, whether it is padding, its real tokens (of `seq_len + 1`).
    steps: Vec<u64>,
    padding: Vec<bool>,
    real: Vec<u32>,
    /// Per row, where its pieces begin in `pieces` (one entry more than rows).
    row_pieces: Vec<u32>,
    pieces: Vec<BatchPiece>,
    /// `rows * (seq_len + 1)` token ids.
    tokens: Column<u32>,
    columns: Option<Expanded>,
}

/// The columns [`TokenBatch::expand`] derives.
#[derive(Debug)]
pub struct Expanded {
    /// `[rows, seq_len]`: the row's first `seq_len` tokens (`pad_id` on padding).
    pub input_ids: IdColumn,
    /// `[rows, seq_len]`: the next token where it belongs to the same document, else
    /// [`IGNORE_INDEX`].
    pub labels: IdColumn,
    /// `[rows, seq_len]`: the position within its piece of document (0 at every document
    /// start and at the row's start; 0 on padding).
    pub position_ids: IdColumn,
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

/// An id column in its batch's [`IdsDtype`].
#[derive(Debug)]
pub enum IdColumn {
    /// `int64` ids.
    Int64(Column<i64>),
    /// `int32` ids.
    Int32(Column<i32>),
}

impl IdColumn {
    /// The type of its values.
    pub fn dtype(&self) -> IdsDtype {
        match self {
            Self::Int64(_) => IdsDtype::Int64,
            Self::Int32(_) => IdsDtype::Int32,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Self::Int64(c) => c.len(),
            Self::Int32(c) => c.len(),
        }
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values, widened to `i64`.
    pub fn to_i64(&self) -> Vec<i64> {
        match self {
            Self::Int64(c) => c.values().to_vec(),
            Self::Int32(c) => c.values().iter().map(|&v| i64::from(v)).collect(),
        }
    }
}

/// A type of id column values: what [`TokenBatch::derive_into`] writes for each [`IdsDtype`].
pub(crate) trait IdValue: ArrowNativeType {
    /// `IGNORE_INDEX` in this type.
    const IGNORE: Self;
    /// A token id (one [`TokenBatch::with_ids_dtype`] checked fits).
    fn of_id(id: u32) -> Self;
    /// A position within a row (below `MAX_SEQ_LEN`).
    fn of_position(at: usize) -> Self;
    /// The column, typed by its dtype.
    fn column(column: Column<Self>) -> IdColumn;
}

impl IdValue for i64 {
    const IGNORE: Self = IGNORE_INDEX;
    fn of_id(id: u32) -> Self {
        i64::from(id)
    }
    fn of_position(at: usize) -> Self {
        at as i64
    }
    fn column(column: Column<Self>) -> IdColumn {
        IdColumn::Int64(column)
    }
}

impl IdValue for i32 {
    const IGNORE: Self = IGNORE_INDEX as i32;
    fn of_id(id: u32) -> Self {
        id as i32
    }
    fn of_position(at: usize) -> Self {
        at as i32
    }
    fn column(column: Column<Self>) -> IdColumn {
        IdColumn::Int32(column)
    }
}

impl TokenBatch {
    /// Reads the tokens of `rows` (from [`crate::RowCursor::read`]) into a batch whose columns
    /// come from `pool`.
    pub fn read<S: DocumentSource>(
        plan: &TokenPlan,
        source: &S,
        rows: &RowBlock,
        buf: &mut S::Buf,
        pool: &Arc<BatchPool>,
    ) -> Result<Self, TokenStreamError> {
        let seq_len = plan.config().seq_len as usize;
        let width = seq_len + 1;
        let count = rows.specs.len();
        let pad_id = plan.config().pad_id;
        let mut tokens = pool.take::<u32>(count * width);
        let mut batch = Self {
            seq_len,
            pad_id,
            ids_dtype: IdsDtype::Int64,
            steps: Vec::with_capacity(count),
            padding: Vec::with_capacity(count),
            real: Vec::with_capacity(count),
            row_pieces: Vec::with_capacity(count + 1),
            pieces: Vec::with_capacity(rows.pieces.len()),
            tokens: Column::empty(Arc::downgrade(pool)),
            columns: None,
        };
        batch.row_pieces.push(0);
        let out = tokens.values_mut();
        for (i, spec) in rows.specs.iter().enumerate() {
            let row = &mut out[i * width..(i + 1) * width];
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
                batch.pieces.push(BatchPiece {
                    key: source.key(piece.source as usize, piece.doc),
                    start: piece.start,
                    len: piece.len,
                });
            }
            row[at..].fill(pad_id);
            batch.steps.push(spec.step);
            batch.padding.push(spec.padding);
            batch.real.push(at as u32);
            batch.row_pieces.push(batch.pieces.len() as u32);
        }
        batch.tokens = tokens;
        let dtype = plan.config().ids_dtype;
        if source.ids_in_16_bits() {
            // Stored ids are below 2^16 and the boundary and padding ids were checked with
            // the settings: every id fits.
            batch.ids_dtype = dtype;
            return Ok(batch);
        }
        batch.with_ids_dtype(dtype)
    }

    /// The batch with its id columns derived in `dtype`; a token id that `dtype` does not hold
    /// is [`TokenStreamError::Config`] naming it and its document (no wrapped id is ever
    /// derived).
    pub fn with_ids_dtype(mut self, dtype: IdsDtype) -> Result<Self, TokenStreamError> {
        let tokens = if dtype == IdsDtype::Int64 {
            &[]
        } else {
            self.tokens.values()
        };
        // Every id's bits or-ed together first (one pass the compiler vectorises; an id past
        // `i32::MAX` is one whose top bit is set); the offender is looked for only where there
        // is one.
        if !dtype.holds(tokens.iter().fold(0, |bits, &id| bits | id)) {
            let at = tokens.iter().position(|&id| !dtype.holds(id)).unwrap_or(0);
            let (row, mut offset) = (at / (self.seq_len + 1), at % (self.seq_len + 1));
            let piece = self.pieces_of(row).iter().find(|p| {
                let inside = offset < p.len as usize;
                offset = offset.saturating_sub(p.len as usize);
                inside
            });
            let owner = piece.map_or_else(
                || "the padding".to_string(),
                |p| format!("document (cache {}, sample {})", p.key.0, p.key.1),
            );
            return Err(TokenStreamError::Config(format!(
                "{owner} holds token id {}, past ids_dtype {:?} (ids up to {})",
                tokens[at],
                dtype.name(),
                i32::MAX
            )));
        }
        self.ids_dtype = dtype;
        Ok(self)
    }

    /// The type the id columns are derived in.
    pub fn ids_dtype(&self) -> IdsDtype {
        self.ids_dtype
    }

    /// Rebuilds a batch from its compact parts (what crossed a process boundary): per row its
    /// step, padding flag and pieces (`row_pieces` offsets into `pieces`), and the rows'
    /// `seq_len + 1` tokens each, of 32 or 16 bits. The pieces of a row must fit it.
    #[allow(clippy::too_many_arguments)]
    pub fn from_parts<T: Copy + Into<u32>>(
        seq_len: usize,
        pad_id: u32,
        steps: Vec<u64>,
        padding: Vec<bool>,
        row_pieces: Vec<u32>,
        pieces: Vec<BatchPiece>,
        tokens: &[T],
        pool: &Arc<BatchPool>,
    ) -> Result<Self, TokenStreamError> {
        if tokens.len() != steps.len() * (seq_len + 1) {
            return Err(TokenStreamError::Config(format!(
                "a token batch's parts: {} tokens for {} rows of {}",
                tokens.len(),
                steps.len(),
                seq_len + 1
            )));
        }
        // The parts are checked before a buffer is taken and filled.
        let empty = Column::empty(Arc::downgrade(pool));
        let mut batch = Self::over_parts(
            seq_len,
            pad_id,
            steps,
            padding,
            row_pieces,
            pieces,
            empty,
            IdsDtype::Int64,
        )?;
        let mut column = pool.take::<u32>(tokens.len());
        for (to, &from) in column.values_mut().iter_mut().zip(tokens) {
            *to = from.into();
        }
        batch.tokens = column;
        Ok(batch)
    }

    /// [`TokenBatch::from_parts`] over a column of tokens it keeps as it is (read in place
    /// from where the batch arrived), whose ids are known to fit `ids_dtype`; with no tokens
    /// while `tokens` is empty.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn over_parts(
        seq_len: usize,
        pad_id: u32,
        steps: Vec<u64>,
        padding: Vec<bool>,
        row_pieces: Vec<u32>,
        pieces: Vec<BatchPiece>,
        tokens: Column<u32>,
        ids_dtype: IdsDtype,
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
        if !tokens.is_empty() && tokens.len() != rows * (seq_len + 1) {
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
        Ok(Self {
            seq_len,
            pad_id,
            ids_dtype,
            steps,
            padding,
            real,
            row_pieces,
            pieces,
            tokens,
            columns: None,
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

    /// Each row's `seq_len + 1` tokens, one row after another.
    pub fn tokens(&self) -> &[u32] {
        self.tokens.values()
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

    /// Puts the compact tokens back (after [`TokenBatch::take_columns`]).
    pub(crate) fn restore_tokens(&mut self, tokens: Column<u32>) {
        self.tokens = tokens;
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
        match self.ids_dtype {
            IdsDtype::Int64 => self.derive_as::<i64>(pool),
            IdsDtype::Int32 => self.derive_as::<i32>(pool),
        }
    }

    fn derive_as<T: IdValue>(&self, pool: &Arc<BatchPool>) -> Expanded {
        let cells = self.rows() * self.seq_len;
        let mut input_ids = pool.take::<T>(cells);
        let mut labels = pool.take::<T>(cells);
        let mut position_ids = pool.take::<T>(cells);
        let mut segment_ids = pool.take::<i32>(cells);
        let mut loss_mask = pool.take::<u8>(cells);
        let mut cu = pool.take::<i32>(self.sequences_at_most());
        let (sequences, max_seqlen) = self.derive_into(DerivedMut {
            input_ids: input_ids.values_mut(),
            labels: labels.values_mut(),
            position_ids: position_ids.values_mut(),
            segment_ids: segment_ids.values_mut(),
            loss_mask: loss_mask.values_mut(),
            cu_seqlens: cu.values_mut(),
        });
        cu.truncate(sequences);
        Expanded {
            input_ids: T::column(input_ids),
            labels: T::column(labels),
            position_ids: T::column(position_ids),
            segment_ids,
            loss_mask,
            cu_seqlens: cu,
            max_seqlen,
        }
    }

    /// Entries `cu_seqlens` may need: one per piece, one per row's padding, one for the end.
    pub(crate) fn sequences_at_most(&self) -> usize {
        self.pieces.len() + self.rows() + 1
    }

    /// Writes the columns into `out` (each `rows * seq_len` values, `cu_seqlens`
    /// [`TokenBatch::sequences_at_most`]); returns the entries of `cu_seqlens` written and
    /// `max_seqlen`.
    pub(crate) fn derive_into<T: IdValue>(&self, out: DerivedMut<'_, T>) -> (usize, u32) {
        let (rows, s) = (self.rows(), self.seq_len);
        let mut max_seqlen = 0u32;
        let mut sequence = 0usize;
        {
            let DerivedMut {
                input_ids: ids,
                labels: lab,
                position_ids: pos,
                segment_ids: seg,
                loss_mask: mask,
                cu_seqlens: cu,
            } = out;
            let tokens = self.tokens.values();
            let pad = T::of_id(self.pad_id);
            // Row by row over exact slices, so the loops below run without bounds checks.
            for row in 0..rows {
                let base = row * s;
                let toks = &tokens[row * (s + 1)..(row + 1) * (s + 1)];
                let ids = &mut ids[base..base + s];
                let lab = &mut lab[base..base + s];
                let pos = &mut pos[base..base + s];
                let seg = &mut seg[base..base + s];
                let mask = &mut mask[base..base + s];
                let mut at = 0usize;
                let mut number = 0i32;
                for piece in self.pieces_of(row) {
                    let end = at + piece.len as usize;
                    if at >= s {
                        break;
                    }
                    number += 1;
                    let inputs = end.min(s);
                    cu[sequence] = (base + at) as i32;
                    sequence += 1;
                    max_seqlen = max_seqlen.max((inputs - at) as u32);
                    for (id, &token) in ids[at..inputs].iter_mut().zip(&toks[at..inputs]) {
                        *id = T::of_id(token);
                    }
                    for (offset, p) in pos[at..inputs].iter_mut().enumerate() {
                        *p = T::of_position(offset);
                    }
                    seg[at..inputs].fill(number);
                    // A label is the next token of the same piece: within it, and for the
                    // piece's last input only if the piece goes on past the inputs.
                    let labelled = (end - 1).min(inputs);
                    for (label, &token) in lab[at..labelled]
                        .iter_mut()
                        .zip(&toks[at + 1..labelled + 1])
                    {
                        *label = T::of_id(token);
                    }
                    mask[at..labelled].fill(1);
                    lab[labelled..inputs].fill(T::IGNORE);
                    mask[labelled..inputs].fill(0);
                    at = end;
                }
                let padded = at.min(s);
                if padded < s {
                    cu[sequence] = (base + padded) as i32;
                    sequence += 1;
                    max_seqlen = max_seqlen.max((s - padded) as u32);
                    ids[padded..].fill(pad);
                    lab[padded..].fill(T::IGNORE);
                    pos[padded..].fill(T::of_position(0));
                    seg[padded..].fill(0);
                    mask[padded..].fill(0);
                }
            }
            cu[sequence] = (rows * s) as i32;
            sequence += 1;
        }
        (sequence, max_seqlen)
    }
}

/// Where [`TokenBatch::derive_into`] writes the columns: pooled buffers, or a slot of shared
/// memory (`crate::transfer`).
pub(crate) struct DerivedMut<'a, T> {
    pub(crate) input_ids: &'a mut [T],
    pub(crate) labels: &'a mut [T],
    pub(crate) position_ids: &'a mut [T],
    pub(crate) segment_ids: &'a mut [i32],
    pub(crate) loss_mask: &'a mut [u8],
    pub(crate) cu_seqlens: &'a mut [i32],
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
