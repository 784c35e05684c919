//! Frames of any length up to many pages (a folio's, `Zswap::store_folio`): kept in one
//! object where they fit a page, else in a chain of page-sized objects and a tail, as
//! zram's multi-page compression keeps its large objects. Cut, read, copied out, moved
//! and freed here, in one place.

use std::io::IoSlice;

use super::{Handle, PAGE_SIZE, Pool};

/// Copies fragments, in order, to the start of `out`: the one loop that gathers an
/// object's fragments (one object's or a chain's) into a buffer.
///
/// # Panics
///
/// If `out` is shorter than the fragments.
pub fn copy_frags(frags: &[IoSlice<'_>], out: &mut [u8]) {
    let mut at = 0;
    for f in frags {
        out[at..at + f.len()].copy_from_slice(f);
        at += f.len();
    }
}

impl Pool {
    /// Writes `data` into objects of at most a page each, taken from `alloc` (given each
    /// piece's length), and returns them in order. Where `alloc` fails, the objects taken
    /// so far are freed and its error returned.
    ///
    /// # Errors
    ///
    /// `alloc`'s.
    pub fn write_frame<E>(
        &self,
        data: &[u8],
        mut alloc: impl FnMut(usize) -> Result<Handle, E>,
    ) -> Result<Vec<Handle>, E> {
        let mut chunks = Vec::with_capacity(data.len().div_ceil(PAGE_SIZE));
        for piece in data.chunks(PAGE_SIZE) {
            match alloc(piece.len()) {
                Ok(mut h) => {
                    self.write(&mut h, piece);
                    chunks.push(h);
                }
                Err(e) => {
                    self.free_frame(chunks);
                    return Err(e);
                }
            }
        }
        Ok(chunks)
    }

    /// Hands `f` the first `len` bytes of a frame as fragments: one object's (one or two
    /// fragments, [`Pool::read_sg`]) or a chain's ([`Pool::read_chain_sg`]).
    ///
    /// # Panics
    ///
    /// If the objects hold fewer than `len` bytes.
    pub fn read_frame_sg<R>(
        &self,
        chunks: &[Handle],
        len: usize,
        f: impl FnOnce(&[IoSlice<'_>]) -> R,
    ) -> R {
        if let [one] = chunks {
            self.read_sg(one, len, f)
        } else {
            self.read_chain_sg(chunks, len, f)
        }
    }

    /// Copies the first `out.len()` bytes of a frame into `out`, as zsmalloc copies an
    /// object that straddles pages into a buffer of its own to map it.
    ///
    /// # Panics
    ///
    /// If the objects hold fewer than `out.len()` bytes.
    pub fn read_into(&self, chunks: &[Handle], out: &mut [u8]) {
        self.read_frame_sg(chunks, out.len(), |frags| copy_frags(frags, out));
    }

    /// Compaction of a frame of `length` bytes: moves its object at `place`, if it has one
    /// there. Returns whether it moved.
    pub fn migrate_frame(
        &self,
        chunks: &mut [Handle],
        length: usize,
        place: (u16, u32, u16),
    ) -> bool {
        let last = chunks.len().saturating_sub(1);
        let tail = length - last * PAGE_SIZE;
        chunks.iter_mut().enumerate().any(|(i, h)| {
            h.place() == place && self.migrate(h, if i == last { tail } else { PAGE_SIZE })
        })
    }

    /// Frees a frame's objects.
    pub fn free_frame(&self, chunks: Vec<Handle>) {
        chunks.into_iter().for_each(|h| self.free(h));
    }
}
