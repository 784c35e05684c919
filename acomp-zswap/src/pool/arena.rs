//! The pool's own page allocator: backing pages cut from chunks of [`CHUNK_SIZE`] bytes
//! mapped from the kernel (`mmap`, with `MADV_HUGEPAGE` where the kernel has transparent
//! huge pages), kept and reused without zeroing, and given back to the kernel only as whole
//! chunks, only above a high-water mark. A store that opens a zspage in the steady state
//! takes pages the arena holds already: no `malloc`, no zeroing, no page fault (a new chunk
//! is populated once, when it is mapped: `MADV_POPULATE_WRITE`, or a write per page where
//! the kernel lacks it). zsmalloc does the same with the kernel's own pages: it never zeroes
//! a zspage's pages for reuse.
//!
//! Every `unsafe` block of the pool is here: the mapping calls and the two that hand out a
//! page's bytes under its lock.
//!
//! Each backing page has its own read-write lock (in an array beside the chunk's bytes, not
//! in them), as before the arena each page had one: a page's bytes are reached only through
//! [`BackingPage::read`], [`BackingPage::read_recursive`] and [`BackingPage::write`], which
//! hold it. A [`BackingPage`] holds its chunk (an `Arc`), so a chunk is unmapped only once
//! the arena has let it go and no handle holds one of its pages.

use std::collections::BTreeSet;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::PAGE_SIZE;

/// Bytes in one chunk the arena maps: 2 MiB, one transparent huge page on x86-64 and
/// arm64 (4 KiB base pages).
pub const CHUNK_SIZE: usize = 2 << 20;

/// Backing pages in one chunk.
pub const CHUNK_PAGES: usize = CHUNK_SIZE / PAGE_SIZE;

/// The high-water mark, in free backing pages: a chunk whose pages are all free goes back
/// to the kernel when the arena's other free pages number at least this many, so that the
/// arena keeps at most one wholly free chunk, and none where partly used chunks hold a
/// chunk's worth of free pages already.
pub const ARENA_HIGH_PAGES: usize = CHUNK_PAGES;

/// One mapping of [`CHUNK_SIZE`] bytes and the locks of its pages. Unmapped when dropped.
pub(super) struct Chunk {
    /// The chunk's slot in the arena.
    id: u32,
    base: NonNull<u8>,
    locks: Box<[RwLock<()>]>,
}

// SAFETY:
// - `base` points to a private mapping that lives as long as the `Chunk` (unmapped in `drop`
//   only);
// - its bytes are read only under a read lock of their page and written only under its
//   write lock (`BackingPage`), so threads never race on them.
unsafe impl Send for Chunk {}
// SAFETY: as for `Send`: every access to the mapping goes through a page's lock.
unsafe impl Sync for Chunk {}

impl Chunk {
    /// Maps a chunk, aligned to its size (so that it can be one huge page), asks for huge
    /// pages and populates it. `None` where the kernel refuses the mapping.
    fn map(id: u32) -> Option<Chunk> {
        let len = 2 * CHUNK_SIZE;
        // SAFETY:
        // - a new anonymous private mapping: no address given, so it overlaps nothing of
        //   ours; the result is checked against MAP_FAILED before use.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return None;
        }
        let start = raw as usize;
        let aligned = start.next_multiple_of(CHUNK_SIZE);
        let (head, tail) = (aligned - start, start + len - (aligned + CHUNK_SIZE));
        // SAFETY:
        // - `[start, start + head)` and `[aligned + CHUNK_SIZE, start + len)` lie in the
        //   mapping just made (head + CHUNK_SIZE + tail == len), which nothing else knows of;
        //   a length of 0 is skipped.
        unsafe {
            if head > 0 {
                libc::munmap(raw, head);
            }
            if tail > 0 {
                libc::munmap((aligned + CHUNK_SIZE) as *mut libc::c_void, tail);
            }
        }
        let base = NonNull::new(aligned as *mut u8).expect("mmap does not map page 0");
        #[cfg(target_os = "linux")]
        // SAFETY:
        // - `[aligned, aligned + CHUNK_SIZE)` is the mapping kept above; advice changes no
        //   byte of it (MADV_POPULATE_WRITE faults its pages in, zero as mapped). Either call
        //   may fail (no THP, a kernel before 5.14): the fallback below touches the pages.
        let populated = unsafe {
            libc::madvise(
                aligned as *mut libc::c_void,
                CHUNK_SIZE,
                libc::MADV_HUGEPAGE,
            );
            libc::madvise(
                aligned as *mut libc::c_void,
                CHUNK_SIZE,
                libc::MADV_POPULATE_WRITE,
            ) == 0
        };
        #[cfg(not(target_os = "linux"))]
        let populated = false;
        if !populated {
            for page in 0..CHUNK_PAGES {
                // SAFETY:
                // - the byte lies in the mapping kept above, which no one else can reach yet
                //   (the chunk is not built); a volatile write so that it is not elided.
                unsafe { base.add(page * PAGE_SIZE).write_volatile(0) };
            }
        }
        Some(Chunk {
            id,
            base,
            locks: (0..CHUNK_PAGES).map(|_| RwLock::new(())).collect(),
        })
    }

    /// Page `index`'s bytes, as a pointer.
    fn page(&self, index: u16) -> *mut [u8; PAGE_SIZE] {
        debug_assert!((index as usize) < CHUNK_PAGES);
        // SAFETY:
        // - `index < CHUNK_PAGES` (every index comes from the arena's free lists, all below
        //   it), so the offset stays inside the mapping of CHUNK_SIZE bytes.
        unsafe { self.base.add(index as usize * PAGE_SIZE).cast().as_ptr() }
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY:
        // - `base` is the start of this chunk's own mapping of CHUNK_SIZE bytes, unmapped
        //   once: no `BackingPage` of it is left (each holds the `Arc` being dropped), so no
        //   reference into it outlives this.
        unsafe { libc::munmap(self.base.as_ptr().cast(), CHUNK_SIZE) };
    }
}

/// A backing page: a page of a chunk, with its lock. Shared by its zspage and the handles of
/// its objects (cloning it clones the chunk's `Arc`).
#[derive(Clone)]
pub(super) struct BackingPage {
    chunk: Arc<Chunk>,
    index: u16,
}

/// A page's bytes, read-locked.
pub(super) struct PageRef<'a> {
    _guard: RwLockReadGuard<'a, ()>,
    bytes: &'a [u8; PAGE_SIZE],
}

/// A page's bytes, write-locked.
pub(super) struct PageMut<'a> {
    _guard: RwLockWriteGuard<'a, ()>,
    bytes: &'a mut [u8; PAGE_SIZE],
}

impl Deref for PageRef<'_> {
    type Target = [u8; PAGE_SIZE];
    fn deref(&self) -> &Self::Target {
        self.bytes
    }
}

impl Deref for PageMut<'_> {
    type Target = [u8; PAGE_SIZE];
    fn deref(&self) -> &Self::Target {
        self.bytes
    }
}

impl DerefMut for PageMut<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.bytes
    }
}

impl BackingPage {
    fn lock(&self) -> &RwLock<()> {
        &self.chunk.locks[self.index as usize]
    }

    fn shared<'a>(&'a self, guard: RwLockReadGuard<'a, ()>) -> PageRef<'a> {
        // SAFETY:
        // - the page lies in the chunk's mapping (`Chunk::page`), alive while `self` holds
        //   the chunk, so for `'a`;
        // - `guard` read-locks this page for as long as the reference lives (both in the
        //   `PageRef`), and every write to the page holds its write lock (`write`): no
        //   `&mut` to these bytes exists meanwhile.
        let bytes = unsafe { &*self.chunk.page(self.index) };
        PageRef {
            _guard: guard,
            bytes,
        }
    }

    /// The page's bytes, read-locked.
    pub(super) fn read(&self) -> PageRef<'_> {
        self.shared(self.lock().read())
    }

    /// The page's bytes, read-locked even where a writer waits (parking_lot's
    /// `read_recursive`): for a caller that holds several pages' locks at once.
    pub(super) fn read_recursive(&self) -> PageRef<'_> {
        self.shared(self.lock().read_recursive())
    }

    /// The page's bytes, write-locked.
    pub(super) fn write(&self) -> PageMut<'_> {
        let guard = self.lock().write();
        // SAFETY:
        // - the page lies in the chunk's mapping, alive while `self` holds the chunk;
        // - `guard` write-locks this page for as long as the reference lives, and every
        //   other access to it holds its lock: this is the only reference to these bytes.
        let bytes = unsafe { &mut *self.chunk.page(self.index) };
        PageMut {
            _guard: guard,
            bytes,
        }
    }
}

/// A chunk as the arena keeps it: the chunk and its free pages.
struct ChunkSlot {
    chunk: Arc<Chunk>,
    free: Vec<u16>,
}

#[derive(Default)]
struct ArenaState {
    /// Chunks by id; `None` for an id given back and not yet reused.
    chunks: Vec<Option<ChunkSlot>>,
    vacant: Vec<u32>,
    /// Chunks with a free page, keyed by (free pages, id): the first is the fullest, where
    /// pages are taken from.
    partial: BTreeSet<(u16, u32)>,
    /// Free pages in all chunks.
    free_pages: usize,
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
        state.partial.insert((CHUNK_PAGES as u16, id));
        state.chunks[id as usize] = Some(ChunkSlot {
            chunk: Arc::new(chunk),
            // Lowest index popped first.
            free: (0..CHUNK_PAGES as u16).rev().collect(),
        });
    }

    /// Takes back the pages of a released zspage. A chunk whose pages are then all free goes
    /// back to the kernel where the arena's other free pages reach [`ARENA_HIGH_PAGES`].
    pub(super) fn give(&self, pages: Vec<BackingPage>) {
        let mut unmap = Vec::new();
        let mut state = self.state.lock();
        for page in pages {
            let id = page.chunk.id as usize;
            let slot = state.chunks[id]
                .as_mut()
                .expect("a page's chunk is mapped while the page is out");
            debug_assert!(Arc::ptr_eq(&slot.chunk, &page.chunk));
            debug_assert!(
                !slot.free.contains(&page.index),
                "a page is given back once"
            );
            let before = slot.free.len() as u16;
            slot.free.push(page.index);
            let whole = slot.free.len() == CHUNK_PAGES;
            state.partial.remove(&(before, id as u32));
            state.free_pages += 1;
            if whole && state.free_pages - CHUNK_PAGES >= ARENA_HIGH_PAGES {
                let slot = state.chunks[id].take().expect("checked above");
                state.vacant.push(id as u32);
                state.free_pages -= CHUNK_PAGES;
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

    /// (Free pages, chunks mapped).
    pub(super) fn counts(&self) -> (usize, usize) {
        let state = self.state.lock();
        let chunks = state.chunks.len() - state.vacant.len();
        (state.free_pages, chunks)
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
                let index = slot.free.pop().expect("n is at most its free pages");
                out.push(BackingPage {
                    chunk: Arc::clone(&slot.chunk),
                    index,
                });
            }
            if !slot.free.is_empty() {
                self.partial.insert((slot.free.len() as u16, id));
            }
            nr -= n;
            self.free_pages -= n;
        }
    }
}
