//! Reading and writing objects through their handles (`zs_obj_write`,
//! `zs_obj_read_sg_begin`): one fragment, two where an object straddles backing pages, or a
//! chain of objects for a frame larger than a page.

use std::io::IoSlice;
use std::sync::atomic::Ordering::Relaxed;

use super::{Handle, PAGE_SIZE, Pool};

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
    /// `zs_obj_read_sg_begin` does: one where they lie in one backing page, two where they
    /// straddle a boundary. The pages are read-locked while `f` runs.
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
        let page = self.arena.read(handle.first);
        if first == len {
            f(&[IoSlice::new(&page[off..off + len])])
        } else {
            self.straddled_reads.fetch_add(1, Relaxed);
            // Pages are always locked in zspage order, so readers and writers never deadlock.
            let next = self
                .arena
                .read(handle.second().expect("a straddling object has two pages"));
            f(&[
                IoSlice::new(&page[off..]),
                IoSlice::new(&next[..len - first]),
            ])
        }
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
            guards.push(self.arena.read_recursive(h.first));
            spans.push((guards.len() - 1, off..off + first));
            if first < take {
                self.straddled_reads.fetch_add(1, Relaxed);
                let next = h.second().expect("a straddling object has two pages");
                guards.push(self.arena.read_recursive(next));
                spans.push((guards.len() - 1, 0..take - first));
            }
            left -= take;
        }
        assert_eq!(left, 0, "{len} bytes out of a shorter chain");
        let frags: Vec<IoSlice<'_>> = spans
            .into_iter()
            .map(|(g, r)| IoSlice::new(&guards[g][r]))
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
}
