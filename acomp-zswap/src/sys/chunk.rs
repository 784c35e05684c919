//! The pool's chunks of backing pages (`pool/arena.rs`): the mapping calls (`mmap`,
//! `madvise` for population, `munmap` when the pool goes), the release of a
//! page or of a whole chunk (`MADV_DONTNEED`), the count of a chunk's resident pages
//! (`mincore`), and the calls that hand out an object's bytes. The arena keeps the
//! bookkeeping, in safe code.
//!
//! No lock guards the bytes: an object's bytes are reached only through its one
//! [`Handle`](crate::pool::Handle) from its own pool (`pool/access.rs`; no code outside the
//! crate can make a pool, so no handle meets another pool), read through a shared borrow of it and
//! written through an exclusive one, so that Rust's own borrows keep a write from meeting a
//! read of the same bytes; objects never overlap, and pages out of every zspage are
//! touched only by the arena (population, release), which hands none out meanwhile. As
//! zsmalloc's `zs_obj_read_sg_begin` takes no lock of the page but relies on the caller's
//! own (zswap's entry, zram's slot lock). The functions that hand out bytes or change a
//! page's memory are `unsafe`, their callers holding those rules.

use std::ptr::NonNull;

use crate::PAGE_SIZE;

/// Bytes in one chunk the arena maps: 2 MiB, the size of a transparent huge page on x86-64
/// and arm64 (4 KiB base pages), where the system's THP setting gives one.
pub const CHUNK_SIZE: usize = 2 << 20;

/// Backing pages in one chunk.
pub const CHUNK_PAGES: usize = CHUNK_SIZE / PAGE_SIZE;

/// One mapping of [`CHUNK_SIZE`] bytes. Unmapped when dropped (the arena keeps its chunks
/// as long as the pool lives).
pub(crate) struct Chunk {
    base: NonNull<u8>,
}

// SAFETY:
// - `base` points to a private mapping that lives as long as the `Chunk` (unmapped in `drop`
//   only);
// - its bytes are reached only through `bytes` and `bytes_mut` (and changed by `populate`,
//   `release`, `release_all`), `unsafe` functions whose callers keep a write from meeting
//   any other access to the same bytes (the module's docs), so threads never race on them.
unsafe impl Send for Chunk {}
// SAFETY: as for `Send`.
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
                libc::munmap(
                    raw.cast::<u8>().wrapping_add(head + CHUNK_SIZE).cast(),
                    tail,
                );
            }
        }
        // From the mapping's own pointer, so that `base` keeps its provenance.
        let base =
            NonNull::new(raw.cast::<u8>().wrapping_add(head)).expect("mmap does not map page 0");
        // No MADV_HUGEPAGE: where the kernel must compact memory to find a huge page
        // (`defrag` is `madvise` by default), populating a chunk took 4-5 ms against under
        // 1 ms of base pages, and stores through the tier ran at half the speed
        // (BENCHMARKS.md, "The arena's thread"); the system's own THP setting applies.
        let chunk = Chunk { base };
        // SAFETY: a new chunk: nothing of it is out.
        unsafe { chunk.populate() };
        Some(chunk)
    }

    /// Faults every page of the chunk in (`MADV_POPULATE_WRITE`, or a write of a zero per
    /// page where the kernel lacks it: a kernel before 5.14), so that a page taken later
    /// does not fault. The caller has no page of the chunk out: a new chunk, or one given
    /// back whole ([`Chunk::release_all`]), whose pages read as zeros.
    ///
    /// # Safety
    ///
    /// No reference to any byte of the chunk exists while it runs: no page of it is out.
    pub(crate) unsafe fn populate(&self) {
        #[cfg(target_os = "linux")]
        // SAFETY:
        // - `[base, base + CHUNK_SIZE)` is the chunk's own mapping, alive while `self` is;
        //   MADV_POPULATE_WRITE faults its pages in and changes no byte;
        // - no reference to its bytes exists meanwhile (the caller's contract).
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
                // - no reference to these bytes exists (the caller's contract); a volatile
                //   write, so that it is not elided. The caller's pages read
                //   as zeros (new, or given back), so a zero written changes nothing.
                unsafe { self.base.add(page * PAGE_SIZE).write_volatile(0) };
            }
        }
    }

    /// Gives the whole chunk's memory back to the kernel (`MADV_DONTNEED` over its
    /// [`CHUNK_SIZE`] bytes; a huge page goes whole): it stays mapped, not resident, its
    /// pages reading as zeros until [`Chunk::populate`] or a write faults them in again.
    ///
    /// # Safety
    ///
    /// No reference to any byte of the chunk exists while it runs: no page of it is out.
    pub(crate) unsafe fn release_all(&self) {
        // SAFETY:
        // - `[base, base + CHUNK_SIZE)` is the chunk's own private anonymous mapping, where
        //   MADV_DONTNEED only replaces the pages' contents with zeros;
        // - no reference to their bytes exists meanwhile (the caller's contract).
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
        // - mincore reads no byte of the mapping.
        let rc = unsafe {
            libc::mincore(
                self.base.as_ptr().cast(),
                CHUNK_SIZE,
                vec.as_mut_ptr().cast(),
            )
        };
        (rc == 0).then(|| vec.iter().filter(|&&b| b & 1 != 0).count())
    }

    /// `len` bytes from byte `off` of page `index`: within the page, or on into the next
    /// page of this chunk (neighbours in one mapping, so contiguous in memory).
    ///
    /// # Safety
    ///
    /// While the slice lives, nothing writes any of these bytes: they are one object's, and
    /// the caller holds a shared borrow of its handle, which every write needs exclusively.
    ///
    /// # Panics
    ///
    /// If the bytes pass the chunk's end.
    pub(crate) unsafe fn bytes(&self, index: u16, off: usize, len: usize) -> &[u8] {
        let start = self.span(index, off, len);
        // SAFETY:
        // - `[start, start + len)` lies in the chunk's mapping (`span`), alive while `self`
        //   is, so for the borrow's lifetime;
        // - nothing writes these bytes while the slice lives (the caller's contract).
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(start), len) }
    }

    /// [`Chunk::bytes`], to write.
    ///
    /// # Safety
    ///
    /// While the slice lives, no other reference to any of these bytes exists: they are one
    /// object's, and the caller holds its handle exclusively.
    ///
    /// # Panics
    ///
    /// If the bytes pass the chunk's end.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn bytes_mut(&self, index: u16, off: usize, len: usize) -> &mut [u8] {
        let start = self.span(index, off, len);
        // SAFETY:
        // - `[start, start + len)` lies in the chunk's mapping (`span`), alive while `self`
        //   is, so for the borrow's lifetime;
        // - no other reference to these bytes exists while the slice lives (the caller's
        //   contract): objects never overlap, so other objects' slices are apart from it.
        unsafe { std::slice::from_raw_parts_mut(self.base.as_ptr().add(start), len) }
    }

    /// The byte offset in the mapping of `len` bytes from byte `off` of page `index`,
    /// checked to end within the chunk.
    fn span(&self, index: u16, off: usize, len: usize) -> usize {
        let start = index as usize * PAGE_SIZE + off;
        assert!(
            start.checked_add(len).is_some_and(|end| end <= CHUNK_SIZE),
            "{len} bytes from byte {off} of page {index} pass the chunk's end"
        );
        start
    }

    /// Gives the memory of pages `first..first + n` back to the kernel (`MADV_DONTNEED`, one
    /// call for the run): the pages stay mapped, and read as zeros, faulted in anew, once
    /// written again.
    ///
    /// # Safety
    ///
    /// No reference to any byte of the run exists while it runs: its pages are free, in no
    /// zspage.
    ///
    /// # Panics
    ///
    /// If the run passes the chunk's end.
    pub(crate) unsafe fn release(&self, first: u16, n: u16) {
        let start = self.span(first, 0, n as usize * PAGE_SIZE);
        // SAFETY:
        // - the run lies in the chunk's mapping (`span`), a private anonymous one, where
        //   MADV_DONTNEED only replaces the pages' contents with zeros;
        // - no reference to their bytes exists meanwhile (the caller's contract).
        // A failure leaves the pages resident, as they were: nothing to undo.
        unsafe {
            libc::madvise(
                self.base.as_ptr().add(start).cast(),
                n as usize * PAGE_SIZE,
                libc::MADV_DONTNEED,
            );
        }
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY:
        // - `base` is the start of this chunk's own mapping of CHUNK_SIZE bytes, unmapped
        //   once: every slice of it borrows the chunk, so none outlives this.
        unsafe { libc::munmap(self.base.as_ptr().cast(), CHUNK_SIZE) };
    }
}
