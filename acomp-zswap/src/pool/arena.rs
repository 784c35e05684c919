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
//! Growth: one chunk is mapped at a time. With growth ahead on (the tier's default,
//! [`Arena::set_grow_ahead`]), a `take` that leaves fewer than [`GROW_AHEAD_PAGES`] free
//! pages asks the arena's own thread for the next chunk, so that the page faults of growth
//! (the kernel's zeroing, and for a huge page its compaction: from 50 µs to several ms a
//! chunk on a VM) fall outside the stores; a `take` that finds too few pages meanwhile waits
//! for that chunk. Off, the taker that finds too few maps it. Either way the free pages kept
//! resident are under [`GROW_AHEAD_PAGES`] + a chunk while a chunk is new, and at most
//! [`ARENA_HIGH_PAGES`] after frees.
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

use parking_lot::{Condvar, Mutex};

pub use crate::sys::{CHUNK_PAGES, CHUNK_SIZE};
use crate::sys::{Chunk, PageMut, PageRef};

/// The high-water mark, in free backing pages: a chunk whose pages are all free goes back
/// to the kernel when the arena's other free pages number at least this many, so that the
/// arena keeps at most one wholly free chunk, and none where partly used chunks hold a
/// chunk's worth of free pages already; and the most free pages the arena keeps resident:
/// a page freed beyond it, in a chunk still in use, goes back to the kernel on its own.
pub const ARENA_HIGH_PAGES: usize = CHUNK_PAGES;

/// Free pages under which an arena that grows ahead ([`Arena::set_grow_ahead`]) maps its
/// next chunk on its own thread: half a chunk, a few milliseconds of stores.
pub const GROW_AHEAD_PAGES: usize = CHUNK_PAGES / 2;

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
    /// Growth ahead, on the arena's own thread.
    ahead: Ahead,
}

/// The state of growth ahead ([`Arena::set_grow_ahead`]).
#[derive(Default)]
struct Ahead {
    /// On: a `take` that leaves fewer than [`GROW_AHEAD_PAGES`] free asks for a chunk.
    enabled: bool,
    /// The thread was started.
    started: bool,
    /// A chunk is asked of the thread or being mapped (by it or a taker): one at a time.
    growing: bool,
    /// The thread is asked for a chunk.
    asked: bool,
    /// The arena is gone: the thread ends.
    closed: bool,
}

/// What the arena's users and its thread share.
#[derive(Default)]
struct Shared {
    state: Mutex<ArenaState>,
    /// The thread waits here for a chunk to map.
    work: Condvar,
    /// Takers wait here while the thread maps a chunk.
    grown: Condvar,
}

/// The backing pages of a pool, in chunks. One lock, taken when a zspage opens or is
/// released, never while a chunk is mapped or unmapped.
#[derive(Default)]
pub(super) struct Arena {
    shared: Arc<Shared>,
}

impl Drop for Arena {
    fn drop(&mut self) {
        // The thread, if any, ends (after the chunk it may be mapping); the chunks go with
        // the last holder of `shared`.
        self.shared.state.lock().ahead.closed = true;
        self.shared.work.notify_all();
    }
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
        let mut state = self.shared.state.lock();
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
                    if start {
                        self.start_thread();
                    } else {
                        self.shared.work.notify_one();
                    }
                }
                return out;
            }
            if state.ahead.growing {
                // A chunk is being mapped (by the arena's thread or another taker): wait for
                // it rather than map another.
                self.shared.grown.wait(&mut state);
                continue;
            }
            state.ahead.growing = true;
            drop(state);
            let mapped = self.shared.grow();
            state = self.shared.state.lock();
            state.ahead.growing = false;
            self.shared.grown.notify_all();
            if !mapped {
                drop(state);
                std::alloc::handle_alloc_error(
                    std::alloc::Layout::from_size_align(CHUNK_SIZE, CHUNK_SIZE)
                        .expect("a power of 2"),
                );
            }
        }
    }

    /// Growth ahead: on, a `take` that leaves fewer than [`GROW_AHEAD_PAGES`] free pages
    /// has the arena's own thread (started then, ended with the arena) map the next chunk,
    /// so that a store does not wait on the kernel's page faults (its zeroing, and for a huge
    /// page its compaction); a `take` that finds too few free pages while that chunk is
    /// being mapped waits for it. Off (the default), the thread that finds too few free
    /// pages maps the chunk.
    pub(super) fn set_grow_ahead(&self, on: bool) {
        self.shared.state.lock().ahead.enabled = on;
    }

    /// Starts the thread that maps chunks ahead; where the system refuses a thread, growth
    /// ahead is turned off and takers map chunks themselves.
    fn start_thread(&self) {
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("acomp-zswap-arena".into())
            .spawn(move || shared.grow_ahead());
        if spawned.is_err() {
            let mut state = self.shared.state.lock();
            state.ahead.enabled = false;
            state.ahead.growing = false;
            state.ahead.asked = false;
            drop(state);
            self.shared.grown.notify_all();
        }
    }
}

impl Shared {
    /// Maps a new chunk and adds its pages, all free; `false` where the kernel refuses the
    /// mapping (out of memory).
    fn grow(&self) -> bool {
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
        let Some(chunk) = Chunk::map(id) else {
            self.state.lock().vacant.push(id);
            return false;
        };
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
        true
    }

    /// The arena's thread: maps a chunk each time a taker asks, until the arena is gone. A
    /// chunk the kernel refuses is left to the takers (who fail as an allocation does).
    fn grow_ahead(&self) {
        let mut state = self.state.lock();
        loop {
            while !state.ahead.asked && !state.ahead.closed {
                self.work.wait(&mut state);
            }
            if state.ahead.closed {
                return;
            }
            state.ahead.asked = false;
            drop(state);
            let mapped = self.grow();
            state = self.state.lock();
            state.ahead.growing = false;
            if !mapped {
                state.ahead.enabled = false;
            }
            self.grown.notify_all();
        }
    }
}

impl Arena {
    /// Takes back the pages of a released zspage. A chunk whose pages are then all free goes
    /// back to the kernel where the arena's other free pages reach [`ARENA_HIGH_PAGES`]; a
    /// page freed while the arena's resident free pages are at the mark goes back on its own
    /// (`MADV_DONTNEED`), so that free pages in chunks still in use never hold more than the
    /// mark resident.
    pub(super) fn give(&self, pages: Vec<BackingPage>) {
        let mut unmap = Vec::new();
        let mut state = self.shared.state.lock();
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
        let state = self.shared.state.lock();
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
