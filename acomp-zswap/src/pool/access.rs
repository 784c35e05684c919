//! Reading and writing objects through their handles (`zs_obj_write`,
//! `zs_obj_read_sg_begin`): one fragment, two where an object straddles backing pages that
//! are not neighbours in one chunk, or a chain of objects for a frame larger than a page.

// The crate's `unsafe` is in `sys/` but for the borrows of objects' bytes here: they hold by
// the handles' own borrows (`sys/chunk.rs`), which only this module and `Pool` know of.
#![allow(unsafe_code)]

use std::io::IoSlice;
use std::sync::atomic::Ordering::Relaxed;

use super::{BackingPage, Handle, PAGE_SIZE, Pool, Second};

impl Pool {
    /// The byte offset of the object in its first page, and the bytes the object takes.
    pub(super) fn place(&self, handle: &Handle) -> (usize, usize) {
        let size = self.classes[handle.class()].info.size;
        (handle.obj() as usize * size % PAGE_SIZE, size)
    }

    /// The page the object ends in, where it straddles two: its handle's, or, where it ends
    /// in another chunk than it starts, its zspage's row's, under its class's lock (a
    /// zspage's pages come from two chunks only where no chunk had a run of them free).
    pub(super) fn second_page(&self, handle: &Handle) -> Option<BackingPage> {
        match handle.second() {
            Second::None => None,
            Second::Page(page) => Some(page),
            Second::OtherChunk => {
                Some(self.classes[handle.class()].page_after(handle.zspage, handle.obj()))
            }
        }
    }

    /// Copies `data` into the object (`zs_obj_write`), across a page boundary if the object
    /// straddles one. The handle is borrowed exclusively: no read of the object runs
    /// meanwhile, which is what lets reads and writes go to the pages with no lock.
    ///
    /// # Panics
    ///
    /// If `data` is larger than the object's class.
    pub fn write(&self, handle: &mut Handle, data: &[u8]) {
        let (off, size) = self.place(handle);
        assert!(
            data.len() <= size,
            "{} bytes into a {size}-byte object",
            data.len()
        );
        let first = data.len().min(PAGE_SIZE - off);
        let copy = |page, off, data: &[u8]| {
            // SAFETY: the bytes are the object's own (its place and class, within its
            // pages), objects never overlap, and every access to them goes through its one
            // handle, here borrowed exclusively: no other reference to them exists.
            unsafe { self.arena.bytes_mut(page, off, data.len()) }.copy_from_slice(data);
        };
        copy(handle.first, off, &data[..first]);
        if first < data.len() {
            let second = self
                .second_page(handle)
                .expect("a straddling object has two pages");
            copy(second, 0, &data[first..]);
        }
    }

    /// `len` bytes of an object's from byte `off` of `page` (on into the next page of its
    /// chunk where they pass its end), for as long as `_handle`, the object's, is borrowed:
    /// every write needs it exclusively, so nothing writes them meanwhile.
    fn object_bytes<'a>(
        &'a self,
        _handle: &'a Handle,
        page: BackingPage,
        off: usize,
        len: usize,
    ) -> &'a [u8] {
        // SAFETY: the bytes are the object's own (callers pass its place, within its pages),
        // objects never overlap, and the slice lives no longer than the borrow of its one
        // handle, which every write and free needs exclusively or by value.
        unsafe { self.arena.bytes(page, off, len) }
    }

    /// Hands `f` the first `len` bytes of the object as fragments, as
    /// `zs_obj_read_sg_begin` does: one where they lie in one backing page, and one too where
    /// they straddle two pages that are neighbours in one chunk (page n and n + 1 of one
    /// mapping: contiguous in memory), else two. No lock guards the bytes (the class's is
    /// taken only to find the second page of an object across two chunks,
    /// [`Pool::second_page`]): the handle is borrowed
    /// while `f` runs, and every write needs it exclusively ([`Pool::write`],
    /// [`Pool::migrate`], [`Pool::free`]).
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
            return f(&[IoSlice::new(self.object_bytes(
                handle,
                handle.first,
                off,
                len,
            ))]);
        }
        self.straddled_reads.fetch_add(1, Relaxed);
        let second = self
            .second_page(handle)
            .expect("a straddling object has two pages");
        if !self.split_reads() && self.arena.neighbours(handle.first, second) {
            self.joined_reads.fetch_add(1, Relaxed);
            // The object runs on into the next page of the same chunk.
            return f(&[IoSlice::new(self.object_bytes(
                handle,
                handle.first,
                off,
                len,
            ))]);
        }
        f(&[
            IoSlice::new(self.object_bytes(handle, handle.first, off, first)),
            IoSlice::new(self.object_bytes(handle, second, 0, len - first)),
        ])
    }

    /// Hands `f` the first `len` bytes of a chain of objects, all full but the last, as one
    /// scatter-gather list: an object larger than a page (a folio's frame, `Zswap::store_folio`) kept
    /// in page-sized pieces, as zram's multi-page compression keeps its large objects. Each
    /// piece gives one fragment, or two where it straddles pages that are not neighbours in
    /// one chunk. No lock guards the bytes, as in [`Pool::read_sg`].
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
        let mut frags: Vec<IoSlice<'_>> = Vec::with_capacity(2 * handles.len());
        let mut left = len;
        for h in handles {
            let (off, size) = self.place(h);
            let take = left.min(size);
            let first = take.min(PAGE_SIZE - off);
            left -= take;
            if first == take {
                frags.push(IoSlice::new(self.object_bytes(h, h.first, off, take)));
                continue;
            }
            self.straddled_reads.fetch_add(1, Relaxed);
            let next = self
                .second_page(h)
                .expect("a straddling object has two pages");
            if !self.split_reads() && self.arena.neighbours(h.first, next) {
                self.joined_reads.fetch_add(1, Relaxed);
                frags.push(IoSlice::new(self.object_bytes(h, h.first, off, take)));
                continue;
            }
            frags.extend([
                IoSlice::new(self.object_bytes(h, h.first, off, first)),
                IoSlice::new(self.object_bytes(h, next, 0, take - first)),
            ]);
        }
        assert_eq!(left, 0, "{len} bytes out of a shorter chain");
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
                || !self
                    .second_page(handle)
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
