//! A batch handed to another process of the same machine in a slot of shared memory
//! (`shared-slots`), its columns derived by the sender and read in place by the receiver.
//!
//! Through a pipe, a batch crosses in its compact form and the receiver derives the columns
//! itself: the receiver (a training process, one per accelerator) pays for the pipe's copies
//! and for deriving, about a millisecond for a batch of 64 rows of 2,048 tokens, while its
//! `DataLoader` workers wait. In a slot, the sender (a worker) derives the columns into shared
//! memory and sends a ticket of a few dozen bytes; the receiver maps the sender's arena once
//! and its tensors are views of the slot, which frees when the last of them is dropped.
//!
//! A slot holds, each part aligned to 64 bytes: a header of nine u64 (magic, rows, `seq_len`,
//! `pad_id`, pieces, `cu_seqlens` entries, `max_seqlen`, bytes used, bytes per id), then the row columns
//! (steps, padding, piece offsets, the pieces' four fields as arrays), each row's last token
//! (u32; the others are its `input_ids`), and the six tensor columns as [`TokenBatch::expand`] derives them.
//! It is a layout of one machine's memory between two processes of one build, not a format:
//! it is checked on receipt (sizes against the slot) but never stored.
//!
//! A sender sends in a slot only where its process enabled it ([`enable_sending`]) and a slot
//! is free; otherwise, and for a batch with more pieces than a slot has room for, the caller
//! sends the compact form as before, so a receiver that keeps its batches never stalls one.

use crate::arrow::TensorArrays;
use crate::batch::{BatchPiece, BatchPool, Column, DerivedMut, IdValue, TokenBatch};
use crate::{IdsDtype, SharedTokenBatch, TokenStreamError};
use arrow_array::types::{Int32Type, Int64Type, UInt8Type};
use arrow_array::{ArrayRef, ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::{Buffer, ScalarBuffer};
use shared_slots::{FillSlot, Inbox, Outbox, ReceivedSlot, Ticket};
use std::ops::Range;
use std::sync::Arc;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

const MAGIC: u64 = u64::from_le_bytes(*b"DSRTTB01");
const HEADER_WORDS: usize = 9;
const ALIGN: usize = 64;

/// Pieces a slot has room for per row: a document every 16 tokens on average, at least 8.
fn pieces_room(rows: usize, seq_len: usize) -> usize {
    rows * (seq_len / 16).max(8)
}

/// Where each part of a batch lies in a slot.
struct Layout {
    steps: Range<usize>,
    padding: Range<usize>,
    row_pieces: Range<usize>,
    cache_ids: Range<usize>,
    sample_ids: Range<usize>,
    starts: Range<usize>,
    lens: Range<usize>,
    last_tokens: Range<usize>,
    input_ids: Range<usize>,
    labels: Range<usize>,
    position_ids: Range<usize>,
    segment_ids: Range<usize>,
    loss_mask: Range<usize>,
    cu_seqlens: Range<usize>,
    total: usize,
}

impl Layout {
    /// The layout of a batch of `rows` rows of `seq_len` with `pieces` pieces and ids of
    /// `ids`; `None` past `usize` (a size no slot has).
    fn of(rows: usize, seq_len: usize, pieces: usize, ids: IdsDtype) -> Option<Self> {
        let mut at = HEADER_WORDS * 8;
        let mut part = |count: usize, width: usize| -> Option<Range<usize>> {
            let start = at.checked_next_multiple_of(ALIGN)?;
            let end = start.checked_add(count.checked_mul(width)?)?;
            at = end;
            Some(start..end)
        };
        let cells = rows.checked_mul(seq_len)?;
        let sequences = pieces.checked_add(rows)?.checked_add(1)?;
        Some(Self {
            steps: part(rows, 8)?,
            padding: part(rows, 1)?,
            row_pieces: part(rows.checked_add(1)?, 4)?,
            cache_ids: part(pieces, 8)?,
            sample_ids: part(pieces, 8)?,
            starts: part(pieces, 8)?,
            lens: part(pieces, 4)?,
            last_tokens: part(rows, 4)?,
            input_ids: part(cells, ids.width())?,
            labels: part(cells, ids.width())?,
            position_ids: part(cells, ids.width())?,
            segment_ids: part(cells, 4)?,
            loss_mask: part(cells, 1)?,
            cu_seqlens: part(sequences, 4)?,
            total: at,
        })
    }
}

/// Makes this process send batches in slots ([`SharedTokenBatch::send_in_slot`]): a
/// `DataLoader` worker, whose receiver is the training process.
pub fn enable_sending() {
    Outbox::enable();
}

/// Whether this process sends batches in slots.
pub fn sending_enabled() -> bool {
    Outbox::enabled()
}

/// `bytes` as `T` values (the slot's parts are aligned, so this fails only on a bug).
fn typed_mut<T: FromBytes + IntoBytes + KnownLayout + ?Sized>(bytes: &mut [u8]) -> &mut T {
    T::mut_from_bytes(bytes).unwrap_or_else(|_| unreachable!("slot parts are aligned"))
}

fn typed<'a, T: FromBytes + KnownLayout + Immutable + ?Sized>(
    bytes: &'a [u8],
    what: &str,
) -> Result<&'a T, TokenStreamError> {
    T::ref_from_bytes(bytes)
        .map_err(|_| TokenStreamError::Config(format!("a batch's slot: {what} is not aligned")))
}

impl TokenBatch {
    /// Writes the batch into `slot` at `layout`; the columns are derived in place.
    fn write_slot(&self, layout: &Layout, slot: &mut FillSlot) {
        let pieces = self.pieces();
        let [header, steps, padding, row_pieces, cache_ids, sample_ids, starts, lens, last_tokens, input_ids, labels, position_ids, segment_ids, loss_mask, cu_seqlens] =
            split_parts(
                slot.bytes_mut(),
                [
                    &(0..HEADER_WORDS * 8),
                    &layout.steps,
                    &layout.padding,
                    &layout.row_pieces,
                    &layout.cache_ids,
                    &layout.sample_ids,
                    &layout.starts,
                    &layout.lens,
                    &layout.last_tokens,
                    &layout.input_ids,
                    &layout.labels,
                    &layout.position_ids,
                    &layout.segment_ids,
                    &layout.loss_mask,
                    &layout.cu_seqlens,
                ],
            );
        typed_mut::<[u64]>(steps).copy_from_slice(self.steps());
        for (to, &from) in padding.iter_mut().zip(self.padding()) {
            *to = u8::from(from);
        }
        typed_mut::<[u32]>(row_pieces).copy_from_slice(self.row_pieces());
        let fields = [cache_ids, sample_ids, starts].map(typed_mut::<[u64]>);
        for (i, piece) in pieces.iter().enumerate() {
            fields[0][i] = piece.key.0;
            fields[1][i] = piece.key.1;
            fields[2][i] = piece.start;
        }
        for (to, piece) in typed_mut::<[u32]>(lens).iter_mut().zip(pieces) {
            *to = piece.len;
        }
        // A row's tokens but its last are its inputs: only the last is sent beside them.
        let width = self.seq_len() + 1;
        let rows = self.tokens().chunks_exact(width);
        for (to, row) in typed_mut::<[u32]>(last_tokens).iter_mut().zip(rows) {
            *to = row[width - 1];
        }
        let columns = [
            input_ids,
            labels,
            position_ids,
            segment_ids,
            loss_mask,
            cu_seqlens,
        ];
        let (sequences, max_seqlen) = match self.ids_dtype() {
            IdsDtype::Int64 => self.derive_in_slot::<i64>(columns),
            IdsDtype::Int32 => self.derive_in_slot::<i32>(columns),
        };
        typed_mut::<[u64]>(header).copy_from_slice(&[
            MAGIC,
            self.rows() as u64,
            self.seq_len() as u64,
            u64::from(self.pad_id()),
            pieces.len() as u64,
            sequences as u64,
            u64::from(max_seqlen),
            layout.total as u64,
            self.ids_dtype().width() as u64,
        ]);
    }

    /// Derives the columns into a slot's six tensor parts, the ids as `T`.
    fn derive_in_slot<T: IdValue + FromBytes + IntoBytes + KnownLayout>(
        &self,
        [input_ids, labels, position_ids, segment_ids, loss_mask, cu_seqlens]: [&mut [u8]; 6],
    ) -> (usize, u32) {
        self.derive_into(DerivedMut::<T> {
            input_ids: typed_mut(input_ids),
            labels: typed_mut(labels),
            position_ids: typed_mut(position_ids),
            segment_ids: typed_mut(segment_ids),
            loss_mask,
            cu_seqlens: typed_mut(cu_seqlens),
        })
    }
}

/// `bytes` cut at `ranges` (in order, not overlapping; the gaps between them skipped).
fn split_parts<'a, const N: usize>(
    mut bytes: &'a mut [u8],
    ranges: [&Range<usize>; N],
) -> [&'a mut [u8]; N] {
    let mut at = 0;
    ranges.map(|range| {
        let rest = std::mem::take(&mut bytes);
        let (_, rest) = rest.split_at_mut(range.start - at);
        let (part, rest) = rest.split_at_mut(range.len());
        bytes = rest;
        at = range.end;
        part
    })
}

/// A part of a received slot: the owner of an Arrow buffer's memory, which keeps the slot
/// (and so its values) until the last buffer over it drops.
struct SlotPart {
    slot: Arc<ReceivedSlot>,
    range: Range<usize>,
}

impl AsRef<[u8]> for SlotPart {
    fn as_ref(&self) -> &[u8] {
        &self.slot.as_ref().as_ref()[self.range.clone()]
    }
}

/// The bytes of `range` of the slot as an Arrow buffer that keeps the slot.
fn slot_buffer(slot: &Arc<ReceivedSlot>, range: Range<usize>) -> Buffer {
    let owner = SlotPart {
        slot: Arc::clone(slot),
        range,
    };
    Buffer::from(bytes::Bytes::from_owner(owner))
}

fn slot_array<T: ArrowPrimitiveType>(
    slot: &Arc<ReceivedSlot>,
    range: Range<usize>,
    len: usize,
) -> ArrayRef {
    let buffer = slot_buffer(slot, range);
    Arc::new(PrimitiveArray::<T>::new(
        ScalarBuffer::new(buffer, 0, len),
        None,
    ))
}

/// An id column of `ids` in the slot.
fn id_array(slot: &Arc<ReceivedSlot>, range: Range<usize>, len: usize, ids: IdsDtype) -> ArrayRef {
    match ids {
        IdsDtype::Int64 => slot_array::<Int64Type>(slot, range, len),
        IdsDtype::Int32 => slot_array::<Int32Type>(slot, range, len),
    }
}

impl SharedTokenBatch {
    /// Sends the batch in a slot of this process's arena, deriving its columns there: the
    /// ticket to give the receiving process, or `None` where this process does not send in
    /// slots ([`enable_sending`]), no slot is free, or the batch has more pieces than a slot
    /// has room for (send [`SharedTokenBatch::transfer`] instead).
    pub fn send_in_slot(&self) -> Result<Option<Ticket>, TokenStreamError> {
        if !Outbox::enabled() {
            return Ok(None);
        }
        self.with_batch(|batch| {
            let (rows, seq_len) = (batch.rows(), batch.seq_len());
            if batch.tokens().len() != rows * (seq_len + 1) {
                return Ok(None);
            }
            let ids = batch.ids_dtype();
            let needed = Layout::of(rows, seq_len, batch.pieces().len(), ids);
            let room = Layout::of(rows, seq_len, pieces_room(rows, seq_len), ids);
            let (Some(layout), Some(room)) = (needed, room) else {
                return Ok(None);
            };
            let Some(mut slot) = Outbox::fill(layout.total, room.total) else {
                return Ok(None);
            };
            batch.write_slot(&layout, &mut slot);
            Ok(Some(slot.send()))
        })
    }

    /// The batch a ticket of [`SharedTokenBatch::send_in_slot`] names, its columns read in
    /// place (the slot is freed when the last array over them drops); the rows' steps, pieces
    /// and last tokens are copied, and its compact tokens are rebuilt from its `input_ids`
    /// only if asked for. A ticket received already, or a slot whose
    /// contents do not fit it, is an error naming what is wrong.
    pub fn receive_from_slot(
        ticket: &Ticket,
        pool: Arc<BatchPool>,
    ) -> Result<Self, TokenStreamError> {
        let slot = Arc::new(Inbox::receive(ticket)?);
        let bytes = slot.as_ref().as_ref();
        let bad = |what: String| {
            TokenStreamError::Config(format!(
                "the batch in slot {} of {}: {what}",
                ticket.slot,
                ticket.path.display()
            ))
        };
        let header: &[u64] = typed(&bytes[..HEADER_WORDS * 8], "the header")?;
        if header[0] != MAGIC {
            return Err(bad("no batch magic".into()));
        }
        let field = |i: usize| {
            usize::try_from(header[i]).map_err(|_| bad(format!("header field {i} past usize")))
        };
        let (rows, seq_len, pieces, sequences) = (field(1)?, field(2)?, field(4)?, field(5)?);
        let pad_id = u32::try_from(header[3]).map_err(|_| bad("a pad id past u32".into()))?;
        let max_seqlen =
            u32::try_from(header[6]).map_err(|_| bad("a max_seqlen past u32".into()))?;
        let ids = match header[8] {
            8 => IdsDtype::Int64,
            4 => IdsDtype::Int32,
            other => return Err(bad(format!("ids of {other} bytes"))),
        };
        let layout = Layout::of(rows, seq_len, pieces, ids)
            .filter(|l| l.total <= bytes.len() && header[7] == l.total as u64)
            .ok_or_else(|| {
                bad(format!(
                    "{rows} rows of {seq_len} with {pieces} pieces do not fit its {} bytes",
                    bytes.len()
                ))
            })?;
        if sequences == 0 || sequences > pieces + rows + 1 {
            return Err(bad(format!(
                "{sequences} cu_seqlens entries for {pieces} pieces"
            )));
        }
        let u64s = |range: &Range<usize>, what| typed::<[u64]>(&bytes[range.clone()], what);
        let u32s = |range: &Range<usize>, what| typed::<[u32]>(&bytes[range.clone()], what);
        let (cache_ids, sample_ids, starts) = (
            u64s(&layout.cache_ids, "cache ids")?,
            u64s(&layout.sample_ids, "sample ids")?,
            u64s(&layout.starts, "starts")?,
        );
        let lens = u32s(&layout.lens, "lengths")?;
        let pieces: Vec<BatchPiece> = (0..pieces)
            .map(|i| BatchPiece {
                key: (cache_ids[i], sample_ids[i]),
                start: starts[i],
                len: lens[i],
            })
            .collect();
        let last_tokens = u32s(&layout.last_tokens, "last tokens")?.to_vec();
        let batch = TokenBatch::over_parts(
            seq_len,
            pad_id,
            u64s(&layout.steps, "steps")?.to_vec(),
            bytes[layout.padding.clone()]
                .iter()
                .map(|&b| b != 0)
                .collect(),
            u32s(&layout.row_pieces, "piece offsets")?.to_vec(),
            pieces,
            // No tokens until asked for: they are rebuilt from `input_ids` and `last_tokens`.
            Column::empty(Arc::downgrade(&pool)),
            // The sender checked its tokens against the type when it read them.
            ids,
        )?;
        let cells = rows * seq_len;
        let cu = layout.cu_seqlens.start..layout.cu_seqlens.start + 4 * sequences;
        let arrays = TensorArrays {
            input_ids: id_array(&slot, layout.input_ids, cells, ids),
            labels: id_array(&slot, layout.labels, cells, ids),
            position_ids: id_array(&slot, layout.position_ids, cells, ids),
            segment_ids: slot_array::<Int32Type>(&slot, layout.segment_ids, cells),
            loss_mask: slot_array::<UInt8Type>(&slot, layout.loss_mask, cells),
            cu_seqlens: slot_array::<Int32Type>(&slot, cu, sequences),
        };
        let record = batch.expanded_from(arrays)?;
        Ok(Self::received(
            batch,
            pool,
            (record, max_seqlen),
            last_tokens,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TokenPlan;
    use crate::{RowBlock, RowCursor, RunConfig, SyntheticSource, SyntheticSpec, TokenConfig};
    use arrow_array::cast::AsArray;
    use arrow_array::RecordBatch;

    fn batches(count: u64) -> Vec<TokenBatch> {
        batches_of(count, IdsDtype::Int64)
    }

    fn batches_of(count: u64, ids_dtype: IdsDtype) -> Vec<TokenBatch> {
        let source = SyntheticSource::new(vec![SyntheticSpec::new(3000, 4, 90)]);
        let config = TokenConfig {
            seq_len: 64,
            ids_dtype,
            ..TokenConfig::default()
        };
        let plan = TokenPlan::new(&source, &config, &RunConfig::default()).unwrap();
        let pool = BatchPool::new();
        let mut cursor = RowCursor::new(&plan, &source);
        (0..count)
            .map(|i| {
                let mut rows = RowBlock::default();
                cursor
                    .read(&plan, &source, i * 8..(i + 1) * 8, &mut rows)
                    .unwrap();
                TokenBatch::read(&plan, &source, &rows, &mut Default::default(), &pool).unwrap()
            })
            .collect()
    }

    fn expanded(batch: &SharedTokenBatch) -> RecordBatch {
        batch.expanded().unwrap().0
    }

    #[test]
    fn a_batch_sent_in_a_slot_arrives_with_the_columns_the_receiver_would_derive() {
        enable_sending();
        assert!(sending_enabled());
        let pool = BatchPool::new();
        let originals: Vec<SharedTokenBatch> = batches(6)
            .into_iter()
            .map(|b| SharedTokenBatch::new(b, Arc::clone(&pool)))
            .collect();
        let mut received = Vec::new();
        for original in &originals[..4] {
            let ticket = original.send_in_slot().unwrap().expect("a free slot");
            let back = SharedTokenBatch::receive_from_slot(&ticket, Arc::clone(&pool)).unwrap();
            assert_eq!(expanded(&back), expanded(original));
            assert_eq!(back.max_seqlen().unwrap(), original.max_seqlen().unwrap());
            assert_eq!(back.compact().unwrap(), original.compact().unwrap());
            // A ticket is taken once.
            let again = SharedTokenBatch::receive_from_slot(&ticket, Arc::clone(&pool));
            assert!(again.unwrap_err().to_string().contains("not waiting"));
            received.push(back);
        }
        // Every slot is held by a received batch: the sender is told to send another way.
        assert!(originals[4].send_in_slot().unwrap().is_none());
        // The columns keep the slot, not the batch: a tensor outliving its batch stays valid.
        let columns = expanded(&received[0]);
        received.remove(0);
        assert!(originals[4].send_in_slot().unwrap().is_none());
        drop(columns);
        let ticket = originals[4].send_in_slot().unwrap().expect("a slot freed");
        let back = SharedTokenBatch::receive_from_slot(&ticket, Arc::clone(&pool)).unwrap();
        assert_eq!(expanded(&back), expanded(&originals[4]));

        // Int32 ids arrive as int32 columns. In this same test: the process has one outbox,
        // whose slots another test running at once would take (and whose size the first
        // batch sent sets).
        drop((back, received));
        for batch in batches_of(2, IdsDtype::Int32) {
            let original = SharedTokenBatch::new(batch, Arc::clone(&pool));
            let ticket = original.send_in_slot().unwrap().expect("a free slot");
            let back = SharedTokenBatch::receive_from_slot(&ticket, Arc::clone(&pool)).unwrap();
            let record = expanded(&back);
            for name in ["input_ids", "labels", "position_ids"] {
                let values = record.column_by_name(name).unwrap().as_fixed_size_list();
                assert_eq!(values.value_type(), arrow_schema::DataType::Int32, "{name}");
            }
            assert_eq!(record, expanded(&original));
            assert_eq!(back.compact().unwrap(), original.compact().unwrap());
        }
    }

    #[test]
    fn a_slot_whose_contents_do_not_fit_its_header_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let arena = shared_slots::Arena::create(dir.path(), 1, 4096).unwrap();
        let mut slot = arena.try_fill().unwrap();
        let bytes = slot.bytes_mut();
        bytes[..8].copy_from_slice(&MAGIC.to_le_bytes());
        bytes[8..16].copy_from_slice(&1000u64.to_le_bytes()); // 1,000 rows in 4 KiB
        bytes[16..24].copy_from_slice(&2048u64.to_le_bytes());
        bytes[64..72].copy_from_slice(&8u64.to_le_bytes()); // int64 ids
        let ticket = slot.send();
        let error = SharedTokenBatch::receive_from_slot(&ticket, BatchPool::new()).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("1000 rows of 2048") && text.contains("slot 0"),
            "{text}"
        );
    }
}
