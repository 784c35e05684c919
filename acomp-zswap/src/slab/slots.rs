//! The entries' slots (`slab.rs`), by number: an append-only table that never moves what it
//! holds and keeps nothing per slot beyond the [`Entry`]. Slots come in chunks, each
//! allocated whole with every entry made (empty: dead, generation 0, in no list) before its
//! pointer is published, so that every slot of a chunk a reader can reach is an entry and
//! no flag tells a written slot from one being written: the entries' own lock and
//! generation say the rest. The chunks double from [`FIRST_SLOTS`] up to [`CHUNK_SLOTS`],
//! then stay at that size, so that a small tier stays small and a large one has at most
//! one chunk's slots made ahead of use. They hang off a directory of two levels,
//! [`DIR_SLOTS`] pointers each, each pointer set once (`OnceLock`): a read is two atomic
//! loads and an index, no lock, and no `unsafe`. boxcar 0.2 (0.2.14, its latest), which
//! this replaces, pays an 8-byte `active` flag per slot for slots read while being
//! written, which this table has none of.
//!
//! Slot numbers reach readers only through the index and the lists, both written after the
//! slot was taken and its entry set under its lock; new slot numbers are given out under the
//! lists' lock (`Lists::take` in `lru.rs` counts them), which makes a chunk when it gives
//! out its first slot ([`Slots::make`]: 4096 entries written, once every 4096 new slots).

use std::sync::OnceLock;

use super::entry::Entry;

/// Slots in the first chunk: 64.
pub(crate) const FIRST_SLOTS: usize = 1 << FIRST_SHIFT;
const FIRST_SHIFT: u32 = 6;

/// Slots in each chunk from the seventh on: 4096 (160 KiB of 40-byte entries).
pub(crate) const CHUNK_SLOTS: usize = 1 << CHUNK_SHIFT;
const CHUNK_SHIFT: u32 = 12;

/// Slots in the doubling chunks, `FIRST_SLOTS` to `CHUNK_SLOTS / 2`: 4032.
const SMALL_SLOTS: usize = CHUNK_SLOTS - FIRST_SLOTS;
/// How many doubling chunks there are: 6.
const SMALL_CHUNKS: usize = (CHUNK_SHIFT - FIRST_SHIFT) as usize;

/// Pointers in each level of the directory: 1024 (16 KiB a level).
const DIR_SLOTS: usize = 1 << DIR_SHIFT;
const DIR_SHIFT: u32 = 10;

/// Slots the two levels hold: 2^32 less 20,480. The lists give out no more (they would be
/// 16 TiB of pages: beyond any pool and device).
pub(crate) const MAX_SLOTS: u32 =
    (SMALL_SLOTS + (DIR_SLOTS * DIR_SLOTS - SMALL_CHUNKS) * CHUNK_SLOTS) as u32;
const _: () = assert!(
    (SMALL_SLOTS + (DIR_SLOTS * DIR_SLOTS - SMALL_CHUNKS) * CHUNK_SLOTS) < (u32::MAX as usize)
);

/// A chunk of the slot table: its entries, one allocation (not `sys::chunk::Chunk`, the
/// pool's mapped memory).
type SlotChunk = Box<[Entry]>;
type Dir = Box<[OnceLock<SlotChunk>; DIR_SLOTS]>;

/// The slots of the tier, by number.
pub(crate) struct Slots {
    top: Box<[OnceLock<Dir>; DIR_SLOTS]>,
}

fn dir<T>() -> Box<[OnceLock<T>; DIR_SLOTS]> {
    let v: Box<[OnceLock<T>]> = (0..DIR_SLOTS).map(|_| OnceLock::new()).collect();
    v.try_into()
        .unwrap_or_else(|_| unreachable!("DIR_SLOTS pointers"))
}

fn chunk(len: usize) -> SlotChunk {
    (0..len).map(|_| Entry::default()).collect()
}

impl Default for Slots {
    fn default() -> Self {
        Slots { top: dir() }
    }
}

/// Where slot `i` is: its chunk's number, its place in the chunk, and the chunk's length.
fn place(i: u32) -> (usize, usize, usize) {
    let i = i as usize;
    if i < SMALL_SLOTS {
        // Chunk c holds FIRST_SLOTS << c slots from FIRST_SLOTS * (2^c - 1).
        let c = ((i + FIRST_SLOTS).ilog2() - FIRST_SHIFT) as usize;
        (c, i - FIRST_SLOTS * ((1 << c) - 1), FIRST_SLOTS << c)
    } else {
        let i = i - SMALL_SLOTS;
        (
            SMALL_CHUNKS + (i >> CHUNK_SHIFT),
            i & (CHUNK_SLOTS - 1),
            CHUNK_SLOTS,
        )
    }
}

impl Slots {
    /// Slot `i`, which [`Slots::make`] made.
    ///
    /// # Panics
    ///
    /// Where `i`'s chunk was never made: a slot number no one was given.
    pub(crate) fn get(&self, i: u32) -> &Entry {
        let (c, at, _) = place(i);
        // Masked: no slot at or past MAX_SLOTS is given out, and the mask is one instruction
        // where a bounds check is two.
        let chunk = self.top[(c >> DIR_SHIFT) & (DIR_SLOTS - 1)]
            .get()
            .and_then(|dir| dir[c & (DIR_SLOTS - 1)].get())
            .expect("a slot given out");
        &chunk[at]
    }

    /// Bytes of the chunks made for the first `taken` slots and of the directory (for the
    /// `inspect` feature).
    #[cfg(feature = "inspect")]
    pub(crate) fn bytes(&self, taken: u32) -> usize {
        let made = match taken.checked_sub(1) {
            None => 0,
            Some(last) => {
                let (_, at, len) = place(last);
                last as usize - at + len
            }
        };
        let dirs = self.top.iter().filter(|d| d.get().is_some()).count();
        made * size_of::<Entry>() + (1 + dirs) * DIR_SLOTS * size_of::<OnceLock<SlotChunk>>()
    }

    /// Makes slot `i`'s chunk (and directory) where it is the first of it: for a slot number
    /// the lists give out new (`lru.rs`, `Lists::take`, under the lists' lock), before
    /// anyone learns it.
    pub(crate) fn make(&self, i: u32) {
        let (c, _, len) = place(i);
        self.top[c >> DIR_SHIFT].get_or_init(dir)[c & (DIR_SLOTS - 1)].get_or_init(|| chunk(len));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_fill_the_chunks_in_order_without_gaps_or_overlaps() {
        // The doubling chunks, then the fixed ones, each from where the last ended.
        let starts = [0, 64, 192, 448, 960, 1984, 4032, 8128, 12224];
        for (c, w) in starts.windows(2).enumerate() {
            let len = w[1] - w[0];
            assert_eq!(place(w[0]), (c, 0, len as usize), "chunk {c}'s first");
            assert_eq!(place(w[1] - 1), (c, len as usize - 1, len as usize));
        }
        // The last slot is the last of the directory's last chunk.
        let last = place(MAX_SLOTS - 1);
        assert_eq!(
            last,
            (DIR_SLOTS * DIR_SLOTS - 1, CHUNK_SLOTS - 1, CHUNK_SLOTS)
        );
    }
}
