//! Packing documents whole into bins of `seq_len` tokens, over a bounded number of open bins.
//!
//! Each document (or piece of one, see `LongDocs`) goes into an open bin with room for it: the
//! first such bin (`first_fit`, by slot) or the one it leaves the least room in (`best_fit`).
//! When no open bin has room and every slot holds a bin, the fullest bin is closed (emitted)
//! and its slot takes the document. A bin that becomes exactly full is emitted at once; at the
//! end of the stream the open bins are emitted in slot order. Closing one bin where Grain's
//! packers close all of them (and pad every one) is why this pads less for the same number of
//! bins.

// Rooms and lengths are at most seq_len (below 2^24) and slots below 2^32.
#![allow(clippy::cast_possible_truncation)]

use crate::rows::Piece;
use crate::PackMode;

/// One open bin.
#[derive(Debug, Clone, Default)]
struct OpenBin {
    used: u64,
    pieces: Vec<Piece>,
}

/// Bins being filled; see the module's description.
#[derive(Debug, Clone)]
pub(crate) struct Packer {
    capacity: u64,
    best_fit: bool,
    /// Whether bins remember their pieces (counting needs only their fill).
    record: bool,
    bins: Vec<OpenBin>,
    /// Slots holding a bin.
    open: Vec<bool>,
    /// Open bins by room then slot: `room << 32 | slot`, sorted.
    by_room: Vec<u64>,
    /// Max room per node of a segment tree over slots (closed slots: 0), for first fit.
    tree: Vec<u64>,
    leaves: usize,
}

/// What a bin holds when it is emitted.
pub(crate) struct Emitted<'a> {
    pub(crate) pieces: &'a [Piece],
    pub(crate) used: u64,
}

impl Packer {
    /// Bins of `capacity` tokens, `slots` of them open at most.
    pub(crate) fn new(mode: PackMode, capacity: u64, slots: usize, record: bool) -> Self {
        let leaves = slots.next_power_of_two();
        Self {
            capacity,
            best_fit: mode == PackMode::BestFit,
            record,
            bins: vec![OpenBin::default(); slots],
            open: vec![false; slots],
            by_room: Vec::with_capacity(slots),
            tree: vec![0; 2 * leaves],
            leaves,
        }
    }

    /// Empties every bin (emitting none).
    pub(crate) fn reset(&mut self) {
        for (bin, open) in self.bins.iter_mut().zip(&mut self.open) {
            bin.used = 0;
            bin.pieces.clear();
            *open = false;
        }
        self.by_room.clear();
        self.tree.iter_mut().for_each(|t| *t = 0);
    }

    /// Places `piece` (`0 < piece.len <= capacity`), emitting the bins it closes.
    pub(crate) fn add(&mut self, piece: Piece, emit: &mut impl FnMut(Emitted<'_>)) {
        let len = u64::from(piece.len);
        if len == self.capacity {
            emit(Emitted {
                pieces: std::slice::from_ref(&piece),
                used: len,
            });
            return;
        }
        let slot = if self.best_fit {
            self.tightest(len)
        } else {
            self.first_with_room(len)
        };
        let slot = match slot {
            Some(slot) => slot,
            None => match self.open.iter().position(|open| !open) {
                Some(free) => {
                    self.open[free] = true;
                    free
                }
                None => {
                    let fullest = (self.by_room[0] & u64::from(u32::MAX)) as usize;
                    self.close(fullest, emit);
                    self.open[fullest] = true;
                    fullest
                }
            },
        };
        self.remove_room(slot);
        let bin = &mut self.bins[slot];
        bin.used += len;
        if self.record {
            bin.pieces.push(piece);
        }
        if bin.used == self.capacity {
            self.close(slot, emit);
        } else {
            self.set_room(slot);
        }
    }

    /// Emits every open bin, in slot order.
    pub(crate) fn finish(&mut self, emit: &mut impl FnMut(Emitted<'_>)) {
        for slot in 0..self.bins.len() {
            if self.open[slot] {
                self.remove_room(slot);
                self.close(slot, emit);
            }
        }
    }

    /// Emits the bin in `slot` and frees the slot.
    fn close(&mut self, slot: usize, emit: &mut impl FnMut(Emitted<'_>)) {
        self.remove_room(slot);
        let bin = &mut self.bins[slot];
        emit(Emitted {
            pieces: &bin.pieces,
            used: bin.used,
        });
        bin.used = 0;
        bin.pieces.clear();
        self.open[slot] = false;
        self.set_tree(slot, 0);
    }

    fn room(&self, slot: usize) -> u64 {
        self.capacity - self.bins[slot].used
    }

    /// Forgets `slot`'s entry in the room index (if it has one).
    fn remove_room(&mut self, slot: usize) {
        if !self.open[slot] {
            return;
        }
        let key = self.room(slot) << 32 | slot as u64;
        if let Ok(at) = self.by_room.binary_search(&key) {
            self.by_room.remove(at);
        }
    }

    /// Records `slot`'s room in the index and the tree.
    fn set_room(&mut self, slot: usize) {
        let room = self.room(slot);
        let key = room << 32 | slot as u64;
        let at = self.by_room.partition_point(|&k| k < key);
        self.by_room.insert(at, key);
        self.set_tree(slot, room);
    }

    /// The open bin with the least room at least `len` (the lowest slot among equals).
    fn tightest(&self, len: u64) -> Option<usize> {
        let at = self.by_room.partition_point(|&k| k >> 32 < len);
        self.by_room
            .get(at)
            .map(|&k| (k & u64::from(u32::MAX)) as usize)
    }

    /// The lowest slot whose open bin has room for `len`.
    fn first_with_room(&self, len: u64) -> Option<usize> {
        if self.tree[1] < len {
            return None;
        }
        let mut node = 1;
        while node < self.leaves {
            node = if self.tree[2 * node] >= len {
                2 * node
            } else {
                2 * node + 1
            };
        }
        Some(node - self.leaves)
    }

    fn set_tree(&mut self, slot: usize, room: u64) {
        let mut node = slot + self.leaves;
        self.tree[node] = room;
        while node > 1 {
            node /= 2;
            self.tree[node] = self.tree[2 * node].max(self.tree[2 * node + 1]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(len: u32, doc: u64) -> Piece {
        Piece {
            source: 0,
            doc,
            start: 0,
            len,
        }
    }

    fn pack(mode: PackMode, lens: &[u32], capacity: u64, slots: usize) -> Vec<Vec<u64>> {
        let mut packer = Packer::new(mode, capacity, slots, true);
        let mut bins = Vec::new();
        let mut emit = |bin: Emitted<'_>| {
            assert_eq!(
                bin.used,
                bin.pieces.iter().map(|p| u64::from(p.len)).sum::<u64>()
            );
            assert!(bin.used <= capacity);
            bins.push(bin.pieces.iter().map(|p| p.doc).collect::<Vec<u64>>());
        };
        for (doc, &len) in lens.iter().enumerate() {
            packer.add(piece(len, doc as u64), &mut emit);
        }
        packer.finish(&mut emit);
        bins
    }

    #[test]
    fn every_piece_lands_in_exactly_one_bin_within_capacity() {
        let lens: Vec<u32> = (0..2000u64)
            .map(|i| (dsrt_plan::mix(&[i]) % 100 + 1) as u32)
            .collect();
        for mode in [PackMode::FirstFit, PackMode::BestFit] {
            for slots in [1, 2, 7, 64] {
                let bins = pack(mode, &lens, 128, slots);
                let mut docs: Vec<u64> = bins.iter().flatten().copied().collect();
                docs.sort_unstable();
                assert_eq!(docs, (0..2000).collect::<Vec<u64>>(), "{mode:?} {slots}");
            }
        }
    }

    #[test]
    fn best_fit_takes_the_tightest_bin_and_first_fit_the_first() {
        // 6 opens a bin, 3 joins it (room 1), 4 opens the second, 1 fills the first, which is
        // emitted at once; the second is emitted at the end.
        for mode in [PackMode::BestFit, PackMode::FirstFit] {
            assert_eq!(
                pack(mode, &[6, 3, 4, 1], 10, 2),
                vec![vec![0, 1, 3], vec![2]]
            );
        }
        // Rooms 4 and 1 (after 6, 9); a 1 goes to the room-1 bin with best fit, the first
        // bin with first fit.
        let best = pack(PackMode::BestFit, &[6, 9, 1], 10, 2);
        assert_eq!(best, vec![vec![1, 2], vec![0]]);
        let first = pack(PackMode::FirstFit, &[6, 9, 1], 10, 2);
        assert_eq!(first, vec![vec![0, 2], vec![1]]);
    }

    #[test]
    fn a_full_house_closes_the_fullest_bin() {
        // Slots hold 5 and 8; a 7 fits neither: the 8 (fullest) is emitted first.
        let bins = pack(PackMode::BestFit, &[5, 8, 7], 10, 2);
        assert_eq!(bins, vec![vec![1], vec![0], vec![2]]);
    }
}
