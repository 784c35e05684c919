//! Reading and writing objects through their handles (`zs_obj_write`,
//! `zs_obj_read_sg_begin`): one fragment, two where an object straddles backing pages that
//! are not neighbours in one chunk, or a chain of objects for a frame larger than a page.

use std::io::IoSlice;
use std::sync::atomic::Ordering::Relaxed;

use super::{Handle, PAGE_SIZE, Pool};
use crate::sys::{PageRef, PairRef};

impl Pool {
    /// The byte offset of the object in its first page, and the bytes the object takes.
    pub(super) fn place(&self, handle: &Handle) -> (usize, usize) {
        let size = self.classes[handle.class as usize].info.size;
        (handle.obj as usize * size % PAGE_SIZE, size)
    }

    /// Copies `data` into the object (`zs_obj_write`), across a page boundary if the object
    /// straddles one.
    ///
    /// # Panics
    ///
    /// If `data` is larger than the object's class.
    pub fn write(&self, handle: &Handle, data: &[u8]) {
        let (off, size) = self.place(handle);
        assert!(
            data.len() <= size,
            "{} bytes into a {size}-byte object",
            data.len()
        );
        let first = data.len().min(PAGE_SIZE - off);
        self.arena.write(handle.first)[off..off + first].copy_from_slice(&data[..first]);
        if first < data.len() {
            let second = handle.second().expect("a straddling object has two pages");
            self.arena.write(second)[..data.len() - first].copy_from_slice(&data[first..]);
        }
    }

    /// Hands `f` the first `len` bytes of the object as fragments, as
    /// `zs_obj_read_sg_begin` does: one where they lie in one backing page, and one too where
    /// they straddle two pages that are neighbours in one chunk (page n and n + 1 of one
    /// mapping: contiguous in memory), else two. The pages are read-locked while `f` runs.
    ///
    /// # Panics
    ///
    /// If `len` is larger than the object.
    pub fn read_sg<R>(
        &self,
        handle: &Handle,
        len: usize,
        f: impl FnOnce(&[IoSlice<'_>]) -> R,
    ) -> R {
        let (off, size) = self.place(handle);
        assert!(len <= size, "{len} bytes out of a {size}-byte object");
        let first = len.min(PAGE_SIZE - off);
        if first == len {
            let page = self.arena.read(handle.first);
            return f(&[IoSlice::new(&page[off..off + len])]);
        }
        self.straddled_reads.fetch_add(1, Relaxed);
        let second = handle.second().expect("a straddling object has two pages");
        // Pages are always locked in zspage order, so readers and writers never deadlock.
        if !self.split_reads() {
            if let Some(pair) = self.arena.read_pair(handle.first, second, false) {
                self.joined_reads.fetch_add(1, Relaxed);
                return f(&[IoSlice::new(&pair[off..off + len])]);
            }
        }
        let page = self.arena.read(handle.first);
        let next = self.arena.read(second);
        f(&[
            IoSlice::new(&page[off..]),
            IoSlice::new(&next[..len - first]),
        ])
    }

    /// Hands `f` the first `len` bytes of a chain of objects, all full but the last, as one
    /// scatter-gather list: an object larger than a page (a folio's frame, `Zswap::store_folio`) kept
    /// in page-sized pieces, as zram's multi-page compression keeps its large objects. Each
    /// piece gives one fragment, or two where it straddles a boundary.
    ///
    /// # Panics
    ///
    /// If the objects hold fewer than `len` bytes.
    pub fn read_chain_sg<R>(
        &self,
        handles: &[Handle],
        len: usize,
        f: impl FnOnce(&[IoSlice<'_>]) -> R,
    ) -> R {
        // Several pages are read-locked at once: `read_recursive`, so that a writer waiting
        // on one of them cannot make two such readers wait on each other.
        let mut guards = Vec::with_capacity(2 * handles.len());
        let mut spans = Vec::with_capacity(2 * handles.len());
        let mut left = len;
        for h in handles {
            let (off, size) = self.place(h);
            let take = left.min(size);
            let first = take.min(PAGE_SIZE - off);
            left -= take;
            if first == take {
                guards.push(Locked::Page(self.arena.read_recursive(h.first)));
                spans.push((guards.len() - 1, off..off + first));
                continue;
            }
            self.straddled_reads.fetch_add(1, Relaxed);
            let next = h.second().expect("a straddling object has two pages");
            if !self.split_reads() {
                if let Some(pair) = self.arena.read_pair(h.first, next, true) {
                    self.joined_reads.fetch_add(1, Relaxed);
                    guards.push(Locked::Pair(pair));
                    spans.push((guards.len() - 1, off..off + take));
                    continue;
                }
            }
            guards.push(Locked::Page(self.arena.read_recursive(h.first)));
            spans.push((guards.len() - 1, off..off + first));
            guards.push(Locked::Page(self.arena.read_recursive(next)));
            spans.push((guards.len() - 1, 0..take - first));
        }
        assert_eq!(left, 0, "{len} bytes out of a shorter chain");
        let frags: Vec<IoSlice<'_>> = spans
            .into_iter()
            .map(|(g, r)| IoSlice::new(&guards[g].bytes()[r]))
            .collect();
        f(&frags)
    }

    /// Whether the first `len` bytes of the object straddle two backing pages (for the
    /// `inspect` feature's `Zswap::straddles`).
    #[cfg(any(test, feature = "inspect"))]
    pub fn straddles(&self, handle: &Handle, len: usize) -> bool {
        let (off, _) = self.place(handle);
        off + len > PAGE_SIZE
    }

    /// Whether [`Pool::read_sg`] of the first `len` bytes of the object hands out two
    /// fragments: they straddle two backing pages that are not neighbours in one chunk (or
    /// [`Pool::set_split_reads`] is on).
    #[cfg(any(test, feature = "inspect"))]
    pub fn two_fragments(&self, handle: &Handle, len: usize) -> bool {
        self.straddles(handle, len)
            && (self.split_reads()
                || !handle
                    .second()
                    .is_some_and(|second| self.arena.neighbours(handle.first, second)))
    }

    /// Test hook: with `on`, reads hand an object that straddles neighbouring pages out as
    /// two fragments, as they do for pages apart, so that a test reaches acomp's
    /// multi-fragment path through any pool.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn set_split_reads(&self, on: bool) {
        self.split_reads.store(on, Relaxed);
    }

    /// Whether reads split every straddling object ([`Pool::set_split_reads`]): never in a
    /// user's build.
    #[inline(always)]
    fn split_reads(&self) -> bool {
        #[cfg(any(test, feature = "test-hooks"))]
        return self.split_reads.load(Relaxed);
        #[cfg(not(any(test, feature = "test-hooks")))]
        false
    }
}

/// A read lock [`Pool::read_chain_sg`] holds: one page's, or two neighbours' at once.
enum Locked<'a> {
    Page(PageRef<'a>),
    Pair(PairRef<'a>),
}

impl Locked<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Locked::Page(p) => &p[..],
            Locked::Pair(p) => &p[..],
        }
    }
}
