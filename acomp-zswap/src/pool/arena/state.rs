//! The arena's bookkeeping (`ArenaState`, under its lock): each chunk's free pages, the
//! chunks given back whole, and the taking and putting back of pages, in safe code.

use std::collections::BTreeSet;

use super::page_set::PageSet;
use super::thread::Ahead;
use super::{ARENA_HIGH_PAGES, BackingPage, CHUNK_PAGES};

/// Chunks [`ArenaState::take`] looks at, fullest first, for a run of free pages in a row.
const RUN_SEARCH: usize = 8;

/// A chunk's free pages, as the arena keeps them.
#[derive(Default)]
pub(super) struct ChunkSlot {
    /// Free pages still resident, taken first: lowest first, or a run in a row.
    pub(super) free: PageSet,
    /// Free pages given back to the kernel (`MADV_DONTNEED`): a page taken from here is
    /// faulted in, zero-filled, on its first write.
    pub(super) released: Vec<u16>,
}

impl ChunkSlot {
    pub(super) fn free_count(&self) -> usize {
        self.free.len() + self.released.len()
    }
}

#[derive(Default)]
pub(super) struct ArenaState {
    /// Each chunk's free pages, by chunk number (the chunk table's index). A chunk given
    /// back whole has none here.
    pub(super) slots: Vec<ChunkSlot>,
    /// Chunks given back whole (`MADV_DONTNEED`), mapped, not resident: populated again
    /// before a new chunk is mapped.
    pub(super) released_chunks: Vec<u32>,
    /// Chunks being given back or taken back, outside the lock: neither in use nor in
    /// `released_chunks` yet.
    pub(super) moving: usize,
    /// Chunks with a free page, keyed by (free pages, id): the first is the fullest, where
    /// pages are taken from.
    pub(super) partial: BTreeSet<(u16, u32)>,
    /// Free pages in chunks in use, resident or given back.
    pub(super) free_pages: usize,
    /// Of those, the resident ones: never above [`ARENA_HIGH_PAGES`] but for a chunk just
    /// mapped or populated, and, where the arena's thread gives pages back, until it has.
    pub(super) resident_free: usize,
    /// Free pages the arena's thread is giving back, out of every list meanwhile.
    pub(super) trimming: usize,
    /// Growth ahead, on the arena's own thread.
    pub(super) ahead: Ahead,
}

impl ArenaState {
    /// Chunks in use: holding pages in zspages or kept free pages.
    pub(super) fn in_use(&self) -> usize {
        self.slots.len() - self.released_chunks.len() - self.moving
    }
}

impl ArenaState {
    /// Puts free page `index` of chunk `id` back in its chunk's list (`released` where its
    /// memory was given back, else `free`). Where all the chunk's pages are then free and
    /// the arena's other free pages reach [`ARENA_HIGH_PAGES`], takes the chunk out of every
    /// list (counted in `moving`) and returns true: the caller gives it back whole.
    pub(super) fn put_back(&mut self, id: u32, index: u16, released: bool) -> bool {
        let slot = &mut self.slots[id as usize];
        debug_assert!(
            !slot.free.contains(index) && !slot.released.contains(&index),
            "a page is given back once"
        );
        let before = slot.free_count() as u16;
        if released {
            slot.released.push(index);
        } else {
            slot.free.insert(index);
        }
        let resident = slot.free.len();
        let all_free = slot.free_count() == CHUNK_PAGES;
        self.partial.remove(&(before, id));
        self.free_pages += 1;
        self.resident_free += usize::from(!released);
        if all_free && self.free_pages - CHUNK_PAGES >= ARENA_HIGH_PAGES {
            let slot = &mut self.slots[id as usize];
            slot.free.clear();
            slot.released.clear();
            self.free_pages -= CHUNK_PAGES;
            self.resident_free -= resident;
            self.moving += 1;
            true
        } else {
            self.partial.insert((before + 1, id));
            false
        }
    }

    /// Adds chunk `id`'s pages, all free and resident.
    pub(super) fn add_chunk(&mut self, id: u32) {
        self.free_pages += CHUNK_PAGES;
        self.resident_free += CHUNK_PAGES;
        self.partial.insert((CHUNK_PAGES as u16, id));
        self.slots[id as usize].free.fill();
    }

    /// Moves `nr` free pages into `out`: `nr` resident pages in a row of one chunk where
    /// one of the [`RUN_SEARCH`] chunks with the fewest free pages has them (the first such
    /// chunk, the lowest such run), so that an object straddling two of them is contiguous
    /// in memory (`Pool::read_sg` hands it out as one fragment); else from the chunks with
    /// the fewest free pages, each chunk's lowest first, resident ones before given back,
    /// and handed out in the order of their numbers.
    pub(super) fn take(&mut self, mut nr: usize, out: &mut Vec<BackingPage>) {
        if nr > 1 && self.take_run(nr, out) {
            return;
        }
        while nr > 0 {
            let (free, id) = self
                .partial
                .pop_first()
                .expect("free_pages counts the chunks' free pages");
            let slot = &mut self.slots[id as usize];
            let n = nr.min(free as usize);
            for _ in 0..n {
                // Resident pages first: a released one faults on its first write.
                let index = match slot.free.pop_lowest() {
                    Some(index) => {
                        self.resident_free -= 1;
                        index
                    }
                    None => slot.released.pop().expect("n is at most its free pages"),
                };
                out.push(BackingPage::new(id as usize, index));
            }
            if slot.free_count() > 0 {
                self.partial.insert((slot.free_count() as u16, id));
            }
            nr -= n;
            self.free_pages -= n;
        }
        // In the order of their numbers: pages of one chunk in a row, where some are, are
        // neighbours in the zspage too.
        out.sort_unstable_by_key(|page| page.0);
    }

    /// Moves a run of `nr` resident free pages in a row into `out`, if one of the first
    /// [`RUN_SEARCH`] chunks by fewest free pages has one; false, having moved nothing,
    /// otherwise.
    pub(super) fn take_run(&mut self, nr: usize, out: &mut Vec<BackingPage>) -> bool {
        let found = self
            .partial
            .iter()
            .take(RUN_SEARCH)
            .filter(|&&(_, id)| self.slots[id as usize].free.len() >= nr)
            .find_map(|&(free, id)| {
                let first = self.slots[id as usize].free.find_run(nr)?;
                Some((free, id, first))
            });
        let Some((free, id, first)) = found else {
            return false;
        };
        self.slots[id as usize].free.remove_run(first, nr);
        self.partial.remove(&(free, id));
        if free as usize > nr {
            self.partial.insert((free - nr as u16, id));
        }
        self.free_pages -= nr;
        self.resident_free -= nr;
        out.extend((first..first + nr as u16).map(|index| BackingPage::new(id as usize, index)));
        true
    }
}
