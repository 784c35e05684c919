//! The pool's own page allocator: backing pages cut from chunks of [`CHUNK_SIZE`] bytes
//! mapped from the kernel (`mmap`; no `MADV_HUGEPAGE`, whose compaction made a chunk cost
//! 4-5 ms to populate), kept and reused without zeroing, and given back to the kernel above a
//! high-water mark: as whole chunks where all their pages are free (`MADV_DONTNEED` over the
//! chunk: it stays mapped, not resident, and is populated again by the next growth before a
//! new chunk is mapped), else page by page (`MADV_DONTNEED`, the page staying mapped for
//! reuse), so that free pages never hold more than the mark resident (but for a chunk just
//! mapped or populated). A store that opens a zspage in the steady state takes pages the
//! arena holds already: no `malloc`, no zeroing, no page fault (a chunk is populated once,
//! when it is mapped or taken back: `MADV_POPULATE_WRITE`, or a write per page where the
//! kernel lacks it). zsmalloc does the same with the kernel's own pages: it never zeroes a
//! zspage's pages for reuse.
//!
//! The chunks sit in an append-only table (`boxcar::Vec`), never unmapped while the pool
//! lives: a [`BackingPage`] is a plain number (chunk × [`CHUNK_PAGES`] + page), 4 bytes with
//! no `Arc` and no `Drop`, and a page is reached as `&chunks[n / CHUNK_PAGES]`, for the
//! pool's lifetime, in safe code. The chunk itself, its mapping and the access to an
//! object's bytes, is `sys::Chunk`, with the crate's other `unsafe` code; the arena's
//! bookkeeping is safe code, but for the calls that change a chunk's memory (population,
//! release), whose contract, no page of the run out, the bookkeeping holds.
//!
//! A zspage's pages are taken as a run of free pages in a row of one chunk where one of the
//! few chunks with the fewest free pages has one (each chunk's resident free pages are a
//! bitmap), so that an object straddling two of them lies in one mapping, contiguous, and is
//! read as one fragment; else the fewest-free chunks' lowest pages, sorted by number.
//!
//! Growth and giving back happen one chunk at a time, by the taker or the arena's own
//! thread where it runs (`arena/thread.rs`, its docs for the costs it takes off the stores).
//!
//! No lock guards a page's bytes: an object's are reached through [`Arena::bytes`] and
//! [`Arena::bytes_mut`], whose callers (`pool/access.rs`) hold the object's handle borrowed
//! (`sys/chunk.rs`'s docs give the rule).

// The crate's `unsafe` is in `sys/` but for the calls here (and in `thread.rs`) that change
// a chunk's memory (population, release), whose contract, no page of the run out, is this
// module's bookkeeping.
#![allow(unsafe_code)]

use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::sys::Chunk;
pub use crate::sys::{CHUNK_PAGES, CHUNK_SIZE};
use state::{ArenaState, ChunkSlot};

mod page_set;
mod state;
mod thread;

/// The high-water mark, in free backing pages: a chunk whose pages are all free goes back
/// to the kernel when the arena's other free pages number at least this many, so that the
/// arena keeps at most one wholly free chunk resident, and none where partly used chunks
/// hold a chunk's worth of free pages already; and the most free pages the arena keeps
/// resident: a page freed beyond it, in a chunk still in use, goes back to the kernel on its
/// own.
pub const ARENA_HIGH_PAGES: usize = CHUNK_PAGES;

/// Free pages under which an arena with its thread
/// ([`Builder::arena_thread`](crate::Builder::arena_thread)) adds its next chunk on that
/// thread: half a chunk, a few milliseconds of stores.
pub const GROW_AHEAD_PAGES: usize = CHUNK_PAGES / 2;

/// Resident free pages beyond [`ARENA_HIGH_PAGES`] at which `give` asks the arena's thread
/// to give them back: a run of frees is given back in a few calls, not a call a page.
pub const TRIM_SLACK: usize = 64;

/// A backing page: its number in the arena, chunk × [`CHUNK_PAGES`] + page. Shared by its
/// zspage and the handles of its objects; its bytes are reached through the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BackingPage(pub(super) u32);

impl BackingPage {
    /// (Chunk, page in the chunk).
    fn split(self) -> (usize, u16) {
        (self.chunk(), self.index())
    }

    pub(super) fn new(chunk: usize, index: u16) -> Self {
        BackingPage(u32::try_from(chunk * CHUNK_PAGES + index as usize).expect("2^32 pages"))
    }

    /// Its chunk's number.
    #[inline]
    pub(super) fn chunk(self) -> usize {
        self.0 as usize / CHUNK_PAGES
    }

    /// Its index in its chunk.
    #[inline]
    pub(super) fn index(self) -> u16 {
        (self.0 as usize % CHUNK_PAGES) as u16
    }

    /// Page `index` of its own chunk (below [`CHUNK_PAGES`]): a page number no larger than
    /// the chunk's last, so no check on a read path ([`BackingPage::new`] checks its
    /// product).
    #[inline]
    pub(super) fn in_chunk(self, index: u16) -> Self {
        debug_assert!((index as usize) < CHUNK_PAGES, "page {index} of a chunk");
        BackingPage(self.0 - u32::from(self.index()) + u32::from(index))
    }
}

/// The backing pages of a pool, in chunks. One lock, taken when a zspage opens or is
/// released, never while a chunk is mapped, populated or given back.
#[derive(Default)]
pub(super) struct Arena {
    /// Shared with the arena's thread, where it grows ahead.
    inner: Arc<Inner>,
}

/// What the arena's users and its thread share.
#[derive(Default)]
struct Inner {
    /// Every chunk mapped, by number; append-only, so that a page's chunk is reached without
    /// a lock and lives as long as the arena.
    chunks: boxcar::Vec<Chunk>,
    state: Mutex<ArenaState>,
    /// The thread waits here for a chunk to add.
    work: Condvar,
    /// Takers wait here while a chunk is being added.
    grown: Condvar,
    /// [`Arena::settle`] waits here while the thread gives pages back.
    trimmed: Condvar,
}

impl Drop for Arena {
    fn drop(&mut self) {
        // The thread, if any, ends (after the chunk it may be adding); the chunks go with
        // the last holder of `inner`.
        self.inner.state.lock().ahead.closed = true;
        self.inner.work.notify_all();
    }
}

impl Arena {
    /// `len` bytes from byte `off` of page `page`: within the page, or on into the next
    /// page of its chunk.
    ///
    /// # Safety
    ///
    /// As [`Chunk::bytes`]: nothing writes these bytes while the slice lives.
    ///
    /// # Panics
    ///
    /// If the bytes pass the end of `page`'s chunk.
    pub(super) unsafe fn bytes(&self, page: BackingPage, off: usize, len: usize) -> &[u8] {
        let (chunk, index) = page.split();
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.chunks[chunk].bytes(index, off, len) }
    }

    /// [`Arena::bytes`], to write.
    ///
    /// # Safety
    ///
    /// As [`Chunk::bytes_mut`]: no other reference to these bytes exists while the slice
    /// lives.
    ///
    /// # Panics
    ///
    /// If the bytes pass the end of `page`'s chunk.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn bytes_mut(&self, page: BackingPage, off: usize, len: usize) -> &mut [u8] {
        let (chunk, index) = page.split();
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.chunks[chunk].bytes_mut(index, off, len) }
    }

    /// Whether `second` is the next page of `first`'s chunk: neighbours in one mapping, so
    /// contiguous in memory (page numbers in a row across two chunks are not).
    pub(super) fn neighbours(&self, first: BackingPage, second: BackingPage) -> bool {
        second.0 == first.0.wrapping_add(1) && (first.split().1 as usize) < CHUNK_PAGES - 1
    }

    /// `nr` free backing pages, with whatever bytes they last held, from the fullest chunks
    /// first (so that emptier chunks drain and can go back whole), `nr` in a row of one chunk
    /// where one of the first few has them (`ArenaState::take`); a chunk is added outside
    /// the lock where too few are free (`Inner::grow`), by the arena's thread where it runs.
    ///
    /// # Panics
    ///
    /// Where the kernel refuses to map a chunk (out of memory), as a failed `Box::new` does.
    pub(super) fn take(&self, nr: usize) -> Vec<BackingPage> {
        debug_assert!(nr <= CHUNK_PAGES);
        let mut out = Vec::with_capacity(nr);
        let mut state = self.inner.state.lock();
        loop {
            if state.free_pages >= nr {
                state.take(nr, &mut out);
                let low = state.free_pages < GROW_AHEAD_PAGES;
                let ahead = &mut state.ahead;
                if ahead.enabled && !ahead.growing && low {
                    ahead.growing = true;
                    ahead.asked = true;
                    let start = !std::mem::replace(&mut ahead.started, true);
                    drop(state);
                    self.wake(start);
                }
                return out;
            }
            if state.ahead.growing {
                // A chunk is being added (by the arena's thread or another taker): wait for
                // it rather than add another.
                self.inner.grown.wait(&mut state);
                continue;
            }
            state.ahead.growing = true;
            drop(state);
            let grown = self.inner.grow();
            state = self.inner.state.lock();
            state.ahead.growing = false;
            self.inner.grown.notify_all();
            if !grown {
                drop(state);
                std::alloc::handle_alloc_error(
                    std::alloc::Layout::from_size_align(CHUNK_SIZE, CHUNK_SIZE)
                        .expect("a power of 2"),
                );
            }
        }
    }
}

impl Inner {
    /// Adds a chunk's pages, all free: a chunk given back whole, populated again, or else a
    /// new chunk mapped; `false` where the kernel refuses the mapping (out of memory).
    fn grow(&self) -> bool {
        let reused = {
            let mut state = self.state.lock();
            let id = state.released_chunks.pop();
            state.moving += usize::from(id.is_some());
            id
        };
        match reused {
            Some(id) => {
                // SAFETY: a chunk given back whole: in `moving`, in no list, none of its pages
                // out or taken until `add_chunk` below.
                unsafe { self.chunks[id as usize].populate() };
                let mut state = self.state.lock();
                state.moving -= 1;
                state.add_chunk(id);
            }
            None => {
                let Some(chunk) = Chunk::map() else {
                    return false;
                };
                // Pushed under the lock, so that the table's numbers and `slots` agree.
                let mut state = self.state.lock();
                let id = self.chunks.push(chunk);
                debug_assert_eq!(id, state.slots.len());
                state.slots.push(ChunkSlot::default());
                state.add_chunk(id as u32);
            }
        }
        true
    }

    /// Gives chunks back whole, outside the lock: no page of them is out, and none is taken
    /// (they are in no list, counted in `moving`) until they are in `released_chunks`.
    fn give_back_whole(&self, whole: &[u32]) {
        for &id in whole {
            // SAFETY: all its pages are free and it is in no list (in `moving`): no page of
            // it is out, and none is taken meanwhile.
            unsafe { self.chunks[id as usize].release_all() };
        }
        let mut state = self.state.lock();
        state.moving -= whole.len();
        state.released_chunks.extend_from_slice(whole);
    }
}

impl Arena {
    /// Takes back the pages of a released zspage. A chunk whose pages are then all free goes
    /// back to the kernel whole where the arena's other free pages reach
    /// [`ARENA_HIGH_PAGES`] (it stays mapped, for the next growth); a page freed while the
    /// arena's resident free pages are at the mark goes back on its own (`MADV_DONTNEED`),
    /// so that free pages in chunks still in use never hold more than the mark resident.
    pub(super) fn give(&self, pages: &[BackingPage]) {
        let mut whole = Vec::new();
        let mut state = self.inner.state.lock();
        let thread = state.ahead.enabled;
        for &page in pages {
            let (chunk, index) = page.split();
            let over = !thread && state.resident_free >= ARENA_HIGH_PAGES;
            if over {
                // SAFETY: no handle names the page (its zspage was released), and under
                // the arena's lock no `take` hands it out before its memory is gone.
                unsafe { self.inner.chunks[chunk].release(index, 1) };
            }
            if state.put_back(chunk as u32, index, over) {
                whole.push(chunk as u32);
            }
        }
        // Pages beyond the mark: the arena's thread gives them back, where it runs.
        let trim =
            thread && !state.ahead.trim && state.resident_free > ARENA_HIGH_PAGES + TRIM_SLACK;
        let ahead = &mut state.ahead;
        let start = trim && !std::mem::replace(&mut ahead.started, true);
        ahead.trim |= trim;
        drop(state);
        if trim {
            self.wake(start);
        }
        if !whole.is_empty() {
            self.inner.give_back_whole(&whole);
        }
    }

    /// (Resident free pages, free pages given back (or being given back), chunks in use,
    /// chunks given back whole).
    pub(super) fn counts(&self) -> (usize, usize, usize, usize) {
        let state = self.inner.state.lock();
        (
            state.resident_free,
            state.free_pages - state.resident_free + state.trimming,
            state.in_use(),
            state.released_chunks.len(),
        )
    }

    /// Pages of the arena's chunks resident now, as the kernel counts them (`mincore`).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(super) fn resident_pages(&self) -> usize {
        self.inner
            .chunks
            .iter()
            .map(|(_, c)| c.resident_pages().expect("mincore on a mapped chunk"))
            .sum()
    }
}
