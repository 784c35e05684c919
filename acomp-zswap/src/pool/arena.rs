//! The pool's own page allocator: backing pages cut from chunks of [`CHUNK_SIZE`] bytes
//! mapped from the kernel (`mmap`, with `MADV_HUGEPAGE` where the kernel has transparent
//! huge pages), kept and reused without zeroing, and given back to the kernel above a
//! high-water mark: as whole chunks where all their pages are free, else page by page
//! (`MADV_DONTNEED`, the page staying mapped for reuse), so that free pages never hold more
//! than the mark resident (but for a chunk just mapped). A store that opens a zspage in the steady state
//! takes pages the arena holds already: no `malloc`, no zeroing, no page fault (a new chunk
//! is populated once, when it is mapped: `MADV_POPULATE_WRITE`, or a write per page where
//! the kernel lacks it). zsmalloc does the same with the kernel's own pages: it never zeroes
//! a zspage's pages for reuse.
//!
//! The chunk itself, its mapping and the access to a page's bytes under the page's lock, is
//! `sys::Chunk`, with the crate's other `unsafe` code; the arena's bookkeeping is safe code.
//!
//! Each backing page has its own read-write lock (in an array beside the chunk's bytes, not
//! in them), as before the arena each page had one: a page's bytes are reached only through
//! [`BackingPage::read`], [`BackingPage::read_recursive`] and [`BackingPage::write`], which
//! hold it. A [`BackingPage`] holds its chunk (an `Arc`), so a chunk is unmapped only once
//! the arena has let it go and no handle holds one of its pages.

use std::collections::BTreeSet;
use std::sync::Arc;

use parking_lot::Mutex;

pub use crate::sys::{CHUNK_PAGES, CHUNK_SIZE};
use crate::sys::{Chunk, PageMut, PageRef};

/// The high-water mark, in free backing pages: a chunk whose pages are all free goes back
/// to the kernel when the arena's other free pages number at least this many, so that the
/// arena keeps at most one wholly free chunk, and none where partly used chunks hold a
/// chunk's worth of free pages already; and the most free pages the arena keeps resident:
/// a page freed beyond it, in a chunk still in use, goes back to the kernel on its own.
pub const ARENA_HIGH_PAGES: usize = CHUNK_PAGES;

/// A backing page: a page of a chunk, with its lock. Shared by its zspage and the handles of
/// its objects (cloning it clones the chunk's `Arc`).
#[derive(Clone)]
pub(super) struct BackingPage {
    chunk: Arc<Chunk>,
    index: u16,
}

impl BackingPage {
    /// The page's bytes, read-locked.
    pub(super) fn read(&self) -> PageRef<'_> {
        self.chunk.read(self.index)
    }

    /// The page's bytes, read-locked even where a writer waits: for a caller that holds
    /// several pages' locks at once.
    pub(super) fn read_recursive(&self) -> PageRef<'_> {
        self.chunk.read_recursive(self.index)
    }

    /// The page's bytes, write-locked.
    pub(super) fn write(&self) -> PageMut<'_> {
        self.chunk.write(self.index)
    }
}

/// A chunk as the arena keeps it: the chunk and its free pages.
struct ChunkSlot {
    chunk: Arc<Chunk>,
    /// Free pages still resident, taken first.
    free: Vec<u16>,
    /// Free pages given back to the kernel (`MADV_DONTNEED`): a page taken from here is
    /// faulted in, zero-filled, on its first write.
    released: Vec<u16>,
}

impl ChunkSlot {
    fn free_count(&self) -> usize {
        self.free.len() + self.released.len()
    }
}

#[derive(Default)]
struct ArenaState {
    /// Chunks by id; `None` for an id given back and not yet reused.
    chunks: Vec<Option<ChunkSlot>>,
    vacant: Vec<u32>,
    /// Chunks with a free page, keyed by (free pages, id): the first is the fullest, where
    /// pages are taken from.
    partial: BTreeSet<(u16, u32)>,
    /// Free pages in all chunks, resident or given back.
    free_pages: usize,
    /// Of those, the resident ones: never above [`ARENA_HIGH_PAGES`].
    resident_free: usize,
    /// Chunks mapped and in `chunks` (an id taken for a chunk being mapped is not one yet).
    mapped: usize,
}

/// The backing pages of a pool, in chunks. One lock, taken when a zspage opens or is
/// released, never while a chunk is mapped or unmapped.
#[derive(Default)]
pub(super) struct Arena {
    state: Mutex<ArenaState>,
}

impl Arena {
    /// `nr` free backing pages, with whatever bytes they last held, from the fullest chunks
    /// first (so that emptier chunks drain and can go back whole); a new chunk is mapped
    /// outside the lock where too few are free.
    ///
    /// # Panics
    ///
    /// Where the kernel refuses to map a chunk (out of memory), as a failed `Box::new` does.
    pub(super) fn take(&self, nr: usize) -> Vec<BackingPage> {
        debug_assert!(nr <= CHUNK_PAGES);
        let mut out = Vec::with_capacity(nr);
        loop {
            {
                let mut state = self.state.lock();
                if state.free_pages >= nr {
                    state.take(nr, &mut out);
                    return out;
                }
            }
            self.grow();
        }
    }

    /// Maps a new chunk and adds its pages, all free.
    fn grow(&self) {
        let id = {
            let mut state = self.state.lock();
            match state.vacant.pop() {
                Some(id) => id,
                None => {
                    state.chunks.push(None);
                    (state.chunks.len() - 1) as u32
                }
            }
        };
        let chunk = Chunk::map(id).unwrap_or_else(|| {
            std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(CHUNK_SIZE, CHUNK_SIZE).expect("a power of 2"),
            )
        });
        let mut state = self.state.lock();
        state.free_pages += CHUNK_PAGES;
        state.resident_free += CHUNK_PAGES;
        state.mapped += 1;
        state.partial.insert((CHUNK_PAGES as u16, id));
        state.chunks[id as usize] = Some(ChunkSlot {
            chunk: Arc::new(chunk),
            // Lowest index popped first.
            free: (0..CHUNK_PAGES as u16).rev().collect(),
            released: Vec::new(),
        });
    }

    /// Takes back the pages of a released zspage. A chunk whose pages are then all free goes
    /// back to the kernel where the arena's other free pages reach [`ARENA_HIGH_PAGES`]; a
    /// page freed while the arena's resident free pages are at the mark goes back on its own
    /// (`MADV_DONTNEED`), so that free pages in chunks still in use never hold more than the
    /// mark resident.
    pub(super) fn give(&self, pages: Vec<BackingPage>) {
        let mut unmap = Vec::new();
        let mut state = self.state.lock();
        for page in pages {
            let id = page.chunk.id() as usize;
            let over = state.resident_free >= ARENA_HIGH_PAGES;
            let slot = state.chunks[id]
                .as_mut()
                .expect("a page's chunk is mapped while the page is out");
            debug_assert!(Arc::ptr_eq(&slot.chunk, &page.chunk));
            debug_assert!(
                !slot.free.contains(&page.index) && !slot.released.contains(&page.index),
                "a page is given back once"
            );
            let before = slot.free_count() as u16;
            if over {
                // Under the arena's lock, so that no `take` hands the page out before its
                // memory is gone; no handle holds it (its zspage was released).
                slot.chunk.release(page.index);
                slot.released.push(page.index);
            } else {
                slot.free.push(page.index);
            }
            let resident = slot.free.len();
            let whole = slot.free_count() == CHUNK_PAGES;
            state.partial.remove(&(before, id as u32));
            state.free_pages += 1;
            state.resident_free += usize::from(!over);
            if whole && state.free_pages - CHUNK_PAGES >= ARENA_HIGH_PAGES {
                let slot = state.chunks[id].take().expect("checked above");
                state.vacant.push(id as u32);
                state.free_pages -= CHUNK_PAGES;
                state.resident_free -= resident;
                state.mapped -= 1;
                unmap.push(slot.chunk);
            } else {
                state.partial.insert((before + 1, id as u32));
            }
            // `page` is dropped here, its hold on the chunk with it.
        }
        drop(state);
        // Unmapped here, outside the lock (a chunk goes once no page of it is held).
        drop(unmap);
    }

    /// (Resident free pages, free pages given back, chunks mapped).
    pub(super) fn counts(&self) -> (usize, usize, usize) {
        let state = self.state.lock();
        (
            state.resident_free,
            state.free_pages - state.resident_free,
            state.mapped,
        )
    }
}

impl ArenaState {
    /// Moves `nr` free pages into `out`, from the chunks with the fewest free pages.
    fn take(&mut self, mut nr: usize, out: &mut Vec<BackingPage>) {
        while nr > 0 {
            let (free, id) = self
                .partial
                .pop_first()
                .expect("free_pages counts the chunks' free pages");
            let slot = self.chunks[id as usize]
                .as_mut()
                .expect("partial chunks are mapped");
            let n = nr.min(free as usize);
            for _ in 0..n {
                // Resident pages first: a released one faults on its first write.
                let index = match slot.free.pop() {
                    Some(index) => {
                        self.resident_free -= 1;
                        index
                    }
                    None => slot.released.pop().expect("n is at most its free pages"),
                };
                out.push(BackingPage {
                    chunk: Arc::clone(&slot.chunk),
                    index,
                });
            }
            if slot.free_count() > 0 {
                self.partial.insert((slot.free_count() as u16, id));
            }
            nr -= n;
            self.free_pages -= n;
        }
    }
}
