//! The pool's chunks of backing pages (`pool/arena.rs`): the mapping calls (`mmap`,
//! `madvise` for population, `munmap` when the pool goes), the release of a
//! page or of a whole chunk (`MADV_DONTNEED`), the count of a chunk's resident pages
//! (`mincore`), and the calls that hand out a page's bytes under its lock, or two
//! neighbouring pages' bytes as one slice under both locks. The arena keeps
//! the bookkeeping, in safe code.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::PAGE_SIZE;

/// Bytes in one chunk the arena maps: 2 MiB, the size of a transparent huge page on x86-64
/// and arm64 (4 KiB base pages), where the system's THP setting gives one.
pub const CHUNK_SIZE: usize = 2 << 20;

/// Backing pages in one chunk.
pub const CHUNK_PAGES: usize = CHUNK_SIZE / PAGE_SIZE;

/// One mapping of [`CHUNK_SIZE`] bytes and the locks of its pages. Unmapped when dropped
/// (the arena keeps its chunks as long as the pool lives).
pub(crate) struct Chunk {
    base: NonNull<u8>,
    locks: Box<[RwLock<()>]>,
}

// SAFETY:
// - `base` points to a private mapping that lives as long as the `Chunk` (unmapped in `drop`
//   only);
// - its bytes are read only under a read lock of their page and written only under its
//   write lock (`Chunk::read`, `Chunk::write`), so threads never race on them.
unsafe impl Send for Chunk {}
// SAFETY: as for `Send`: every access to the mapping goes through a page's lock.
unsafe impl Sync for Chunk {}

impl Chunk {
    /// Maps a chunk, aligned to its size (so that it can be one huge page where the system
    /// gives them unasked) and populates it. `None` where the kernel refuses the mapping.
    pub(crate) fn map() -> Option<Chunk> {
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
        // No MADV_HUGEPAGE: where the kernel must compact memory to find a huge page
        // (`defrag` is `madvise` by default), populating a chunk took 4-5 ms against under
        // 1 ms of base pages, and stores through the tier ran at half the speed
        // (BENCHMARKS.md, "The arena's thread"); the system's own THP setting applies.
        let chunk = Chunk {
            base,
            locks: (0..CHUNK_PAGES).map(|_| RwLock::new(())).collect(),
        };
        chunk.populate();
        Some(chunk)
    }

    /// Faults every page of the chunk in (`MADV_POPULATE_WRITE`, or a write of a zero per
    /// page where the kernel lacks it: a kernel before 5.14), so that a page taken later
    /// does not fault. The caller has no page of the chunk out: a new chunk, or one given
    /// back whole ([`Chunk::release_all`]), whose pages read as zeros. Every page's write
    /// lock is held meanwhile.
    pub(crate) fn populate(&self) {
        let _guards: Vec<_> = self.locks.iter().map(|l| l.write()).collect();
        #[cfg(target_os = "linux")]
        // SAFETY:
        // - `[base, base + CHUNK_SIZE)` is the chunk's own mapping, alive while `self` is;
        //   MADV_POPULATE_WRITE faults its pages in and changes no byte;
        // - every page's write lock is held: no reference to its bytes exists meanwhile.
        let populated = unsafe {
            libc::madvise(
                self.base.as_ptr().cast(),
                CHUNK_SIZE,
                libc::MADV_POPULATE_WRITE,
            ) == 0
        };
        #[cfg(not(target_os = "linux"))]
        let populated = false;
        if !populated {
            for page in 0..CHUNK_PAGES {
                // SAFETY:
                // - the byte lies in the chunk's mapping (`page < CHUNK_PAGES`);
                // - every page's write lock is held: no reference to these bytes exists;
                //   a volatile write, so that it is not elided. The caller's pages read
                //   as zeros (new, or given back), so a zero written changes nothing.
                unsafe { self.base.add(page * PAGE_SIZE).write_volatile(0) };
            }
        }
    }

    /// Gives the whole chunk's memory back to the kernel (`MADV_DONTNEED` over its
    /// [`CHUNK_SIZE`] bytes; a huge page goes whole): it stays mapped, not resident, its
    /// pages reading as zeros until [`Chunk::populate`] or a write faults them in again.
    /// The caller has no page of the chunk out. Every page's write lock is held meanwhile.
    pub(crate) fn release_all(&self) {
        let _guards: Vec<_> = self.locks.iter().map(|l| l.write()).collect();
        // SAFETY:
        // - `[base, base + CHUNK_SIZE)` is the chunk's own private anonymous mapping, where
        //   MADV_DONTNEED only replaces the pages' contents with zeros;
        // - every page's write lock is held: no reference to their bytes exists meanwhile.
        // A failure leaves the pages resident, as they were: nothing to undo.
        unsafe {
            libc::madvise(self.base.as_ptr().cast(), CHUNK_SIZE, libc::MADV_DONTNEED);
        }
    }

    /// How many of the chunk's pages are resident now (`mincore`): what the kernel
    /// counts in the process's RSS. `None` where the call fails.
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn resident_pages(&self) -> Option<usize> {
        let mut vec = [0u8; CHUNK_PAGES];
        // SAFETY:
        // - `[base, base + CHUNK_SIZE)` is the chunk's own mapping, page-aligned;
        // - `vec` has one byte for each of its CHUNK_PAGES pages, as mincore writes;
        // - mincore reads no byte of the mapping, so no lock is needed.
        let rc = unsafe {
            libc::mincore(
                self.base.as_ptr().cast(),
                CHUNK_SIZE,
                vec.as_mut_ptr().cast(),
            )
        };
        (rc == 0).then(|| vec.iter().filter(|&&b| b & 1 != 0).count())
    }

    /// Page `index`'s bytes, read-locked.
    pub(crate) fn read(&self, index: u16) -> PageRef<'_> {
        self.shared(index, self.locks[index as usize].read())
    }

    /// Page `index`'s bytes, read-locked even where a writer waits (parking_lot's
    /// `read_recursive`): for a caller that holds several pages' locks at once.
    pub(crate) fn read_recursive(&self, index: u16) -> PageRef<'_> {
        self.shared(index, self.locks[index as usize].read_recursive())
    }

    /// Pages `index` and `index + 1` as one slice of two pages, both read-locked (`index`'s
    /// lock first, as a zspage's pages are always locked in order), where `index + 1` is a
    /// page of this chunk: one mapping, so the two pages are contiguous in memory. `None`,
    /// having locked nothing, where `index` is the chunk's last page (the next page, if
    /// any, is another chunk's, in another mapping). With `recursive`, the locks are taken
    /// as by [`Chunk::read_recursive`].
    pub(crate) fn read_pair(&self, index: u16, recursive: bool) -> Option<PairRef<'_>> {
        let next = index as usize + 1;
        if next >= CHUNK_PAGES {
            return None;
        }
        let lock = |i: usize| {
            if recursive {
                self.locks[i].read_recursive()
            } else {
                self.locks[i].read()
            }
        };
        let guards = [lock(index as usize), lock(next)];
        // SAFETY:
        // - `index + 1 < CHUNK_PAGES` (checked above), so both pages, `2 * PAGE_SIZE` bytes
        //   from page `index`'s start, lie in the chunk's one mapping, alive while `self`
        //   is, so for the borrow's lifetime;
        // - `guards` read-lock both pages for as long as the reference lives (both in the
        //   `PairRef`), and every write to a page holds its write lock (`write`): no `&mut`
        //   to these bytes exists meanwhile.
        let bytes = unsafe { &*self.page(index).cast::<[u8; 2 * PAGE_SIZE]>() };
        Some(PairRef {
            _guards: guards,
            bytes,
        })
    }

    fn shared<'a>(&'a self, index: u16, guard: RwLockReadGuard<'a, ()>) -> PageRef<'a> {
        // SAFETY:
        // - the page lies in the chunk's mapping (`Chunk::page`), alive while `self` is,
        //   so for `'a`;
        // - `guard` read-locks this page for as long as the reference lives (both in the
        //   `PageRef`), and every write to the page holds its write lock (`write`): no
        //   `&mut` to these bytes exists meanwhile.
        let bytes = unsafe { &*self.page(index) };
        PageRef {
            _guard: guard,
            bytes,
        }
    }

    /// Page `index`'s bytes, write-locked.
    pub(crate) fn write(&self, index: u16) -> PageMut<'_> {
        let guard = self.locks[index as usize].write();
        // SAFETY:
        // - the page lies in the chunk's mapping, alive while `self` is;
        // - `guard` write-locks this page for as long as the reference lives, and every
        //   other access to it holds its lock: this is the only reference to these bytes.
        let bytes = unsafe { &mut *self.page(index) };
        PageMut {
            _guard: guard,
            bytes,
        }
    }

    /// Gives the memory of pages `first..first + n` back to the kernel (`MADV_DONTNEED`, one
    /// call for the run): the pages stay mapped, and read as zeros, faulted in anew, once
    /// written again. Done under their write locks.
    ///
    /// # Panics
    ///
    /// If the run passes the chunk's end.
    pub(crate) fn release(&self, first: u16, n: u16) {
        let run = first as usize..first as usize + n as usize;
        let _guards: Vec<_> = self.locks[run].iter().map(|l| l.write()).collect();
        // SAFETY:
        // - the run lies in the chunk's mapping (the slice of `locks` above is bounds-checked
        //   against CHUNK_PAGES), a private anonymous one, where MADV_DONTNEED only replaces
        //   the pages' contents with zeros;
        // - their write locks are held: no reference to their bytes exists meanwhile.
        // A failure leaves the pages resident, as they were: nothing to undo.
        unsafe {
            libc::madvise(
                self.page(first).cast(),
                n as usize * PAGE_SIZE,
                libc::MADV_DONTNEED,
            );
        }
    }

    /// Page `index`'s bytes, as a pointer.
    fn page(&self, index: u16) -> *mut [u8; PAGE_SIZE] {
        debug_assert!((index as usize) < CHUNK_PAGES);
        // SAFETY:
        // - `index < CHUNK_PAGES` (every index comes from the arena's free lists, all below
        //   it, and `locks[index]`, taken first, is bounds-checked), so the offset stays
        //   inside the mapping of CHUNK_SIZE bytes.
        unsafe { self.base.add(index as usize * PAGE_SIZE).cast().as_ptr() }
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY:
        // - `base` is the start of this chunk's own mapping of CHUNK_SIZE bytes, unmapped
        //   once: every `PageRef` and `PageMut` borrows the chunk, so none outlives this.
        unsafe { libc::munmap(self.base.as_ptr().cast(), CHUNK_SIZE) };
    }
}

/// A page's bytes, read-locked.
pub(crate) struct PageRef<'a> {
    _guard: RwLockReadGuard<'a, ()>,
    bytes: &'a [u8; PAGE_SIZE],
}

/// Two neighbouring pages' bytes, one slice, both read-locked ([`Chunk::read_pair`]).
pub(crate) struct PairRef<'a> {
    _guards: [RwLockReadGuard<'a, ()>; 2],
    bytes: &'a [u8; 2 * PAGE_SIZE],
}

/// A page's bytes, write-locked.
pub(crate) struct PageMut<'a> {
    _guard: RwLockWriteGuard<'a, ()>,
    bytes: &'a mut [u8; PAGE_SIZE],
}

impl Deref for PageRef<'_> {
    type Target = [u8; PAGE_SIZE];
    fn deref(&self) -> &Self::Target {
        self.bytes
    }
}

impl Deref for PairRef<'_> {
    type Target = [u8; 2 * PAGE_SIZE];
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
