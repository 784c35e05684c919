//! [`Walk`]: a cursor over the source and destination fragments of one request.

use std::io::{IoSlice, IoSliceMut};

/// A cursor over the source and destination fragments of one request: the counterpart of
/// the kernel's `struct acomp_walk` (`acomp_walk_next_src`, `acomp_walk_done_src`,
/// `acomp_walk_next_dst`, `acomp_walk_done_dst`).
///
/// Algorithms take a chunk of source with [`next_src`](Walk::next_src), say how much they
/// used with [`done_src`](Walk::done_src), and likewise for the destination. A chunk is
/// the unused rest of the current fragment; zero-length fragments are skipped, so a chunk is
/// empty only when that side is used up.
///
/// `'w` is the request's borrow of both lists; `'a`, the destination buffers' own.
/// Invariants: `consumed() <= slen()` and `produced() <= dlen()`.
///
/// ```
/// # #[cfg(feature = "unstable-algorithm")] {
/// use std::io::{IoSlice, IoSliceMut};
/// use acomp::alg::Walk;
///
/// let (a, b) = (*b"abc", *b"de");
/// let src = [IoSlice::new(&a), IoSlice::new(&[]), IoSlice::new(&b)];
/// let (mut x, mut y) = ([0u8; 4], [0u8; 4]);
/// let mut dst = [IoSliceMut::new(&mut x), IoSliceMut::new(&mut y)];
/// let mut walk = Walk::new(&src, &mut dst);
/// assert_eq!((walk.slen(), walk.dlen()), (5, 8));
/// // Copy the source into the destination, chunk by chunk.
/// while walk.src_remaining() > 0 {
///     let s = walk.next_src();
///     let d = walk.next_dst();
///     let n = s.len().min(d.len());
///     d[..n].copy_from_slice(&s[..n]);
///     walk.done_src(n);
///     walk.done_dst(n);
/// }
/// assert_eq!(walk.produced(), 5);
/// assert_eq!((&x, &y[..1]), (b"abcd", &b"e"[..]));
/// # }
/// ```
#[derive(Debug)]
pub struct Walk<'w, 'a> {
    src: &'w [IoSlice<'w>],
    src_idx: usize,
    src_off: usize,
    dst: &'w mut [IoSliceMut<'a>],
    dst_idx: usize,
    dst_off: usize,
    slen: usize,
    dlen: usize,
    consumed: usize,
    produced: usize,
}

impl<'w, 'a> Walk<'w, 'a> {
    /// Starts a walk at the first byte of both sides.
    #[inline]
    pub fn new(src: &'w [IoSlice<'_>], dst: &'w mut [IoSliceMut<'a>]) -> Self {
        let slen = src.iter().map(|s| s.len()).sum();
        let dlen = dst.iter().map(|d| d.len()).sum();
        let mut walk = Walk {
            src,
            src_idx: 0,
            src_off: 0,
            dst,
            dst_idx: 0,
            dst_off: 0,
            slen,
            dlen,
            consumed: 0,
            produced: 0,
        };
        walk.skip_empty_src();
        walk.skip_empty_dst();
        walk
    }

    /// Total source bytes (the kernel's `slen`).
    #[inline]
    pub fn slen(&self) -> usize {
        self.slen
    }

    /// Total destination capacity in bytes (the kernel's `dlen` on entry).
    #[inline]
    pub fn dlen(&self) -> usize {
        self.dlen
    }

    /// Source bytes marked consumed so far.
    #[inline]
    #[cfg_attr(not(feature = "unstable-algorithm"), allow(dead_code))] // for algorithm writers
    pub fn consumed(&self) -> usize {
        self.consumed
    }

    /// Destination bytes marked produced so far: the output is the first `produced()`
    /// bytes of the destination fragments, in order.
    #[inline]
    pub fn produced(&self) -> usize {
        self.produced
    }

    /// Source bytes not yet consumed.
    #[inline]
    pub fn src_remaining(&self) -> usize {
        self.slen - self.consumed
    }

    /// Destination bytes not yet produced.
    #[inline]
    pub fn dst_remaining(&self) -> usize {
        self.dlen - self.produced
    }

    /// The next source chunk: the unused rest of the current source fragment, never empty
    /// unless the source is used up.
    #[inline]
    pub fn next_src(&self) -> &'w [u8] {
        let src: &'w [IoSlice<'w>] = self.src;
        match src.get(self.src_idx) {
            Some(s) => &s[self.src_off..],
            None => &[],
        }
    }

    /// Marks `used` bytes of the chunk [`next_src`](Walk::next_src) returned as consumed.
    ///
    /// # Panics
    ///
    /// If `used` is larger than that chunk.
    #[inline]
    pub fn done_src(&mut self, used: usize) {
        let len = self.next_src().len();
        assert!(used <= len, "done_src({used}) past a chunk of {len} bytes");
        self.src_off += used;
        self.consumed += used;
        if used == len {
            self.skip_empty_src();
        }
    }

    /// The next destination chunk: the unused rest of the current destination fragment,
    /// never empty unless the destination is full.
    #[inline]
    pub fn next_dst(&mut self) -> &mut [u8] {
        match self.dst.get_mut(self.dst_idx) {
            Some(d) => &mut d[self.dst_off..],
            None => &mut [],
        }
    }

    /// Marks the first `used` bytes of the chunk [`next_dst`](Walk::next_dst) returned as
    /// produced.
    ///
    /// # Panics
    ///
    /// If `used` is larger than that chunk.
    #[inline]
    pub fn done_dst(&mut self, used: usize) {
        let len = self.next_dst().len();
        assert!(used <= len, "done_dst({used}) past a chunk of {len} bytes");
        self.dst_off += used;
        self.produced += used;
        if used == len {
            self.skip_empty_dst();
        }
    }

    /// Whole source and whole destination as two single slices, when the first (non-empty)
    /// fragment of each side spans all of it and nothing was used yet: the kernel's rule for
    /// its one-shot path (`dcur == req->dlen && scur == req->slen` in `crypto/zstd.c`).
    /// `None` otherwise.
    #[inline]
    pub fn one_shot(&mut self) -> Option<(&'w [u8], &mut [u8])> {
        if !self.is_one_shot() {
            return None;
        }
        let src = self.next_src();
        Some((src, self.next_dst()))
    }

    /// Whether [`one_shot`](Walk::one_shot) would give the two slices.
    #[inline]
    pub fn is_one_shot(&self) -> bool {
        self.consumed == 0
            && self.produced == 0
            && self.next_src().len() == self.slen
            && self
                .dst
                .get(self.dst_idx)
                .map_or(0, |d| d.len() - self.dst_off)
                == self.dlen
    }

    /// Copies the next source bytes, across fragments, into `buf` without consuming them.
    /// Returns how many were copied: `buf.len()`, or fewer where the source ends first.
    pub fn peek_src(&self, buf: &mut [u8]) -> usize {
        let mut n = 0;
        let mut off = self.src_off;
        for s in self.src.iter().skip(self.src_idx) {
            let take = (s.len() - off).min(buf.len() - n);
            buf[n..n + take].copy_from_slice(&s[off..off + take]);
            n += take;
            off = 0;
            if n == buf.len() {
                break;
            }
        }
        n
    }

    /// The source fragments, as the request gave them.
    pub(crate) fn src_fragments(&self) -> &'w [IoSlice<'w>] {
        self.src
    }

    /// Moves past used-up and zero-length source fragments.
    fn skip_empty_src(&mut self) {
        skip_used(self.src, &mut self.src_idx, &mut self.src_off);
    }

    /// Moves past used-up and zero-length destination fragments.
    fn skip_empty_dst(&mut self) {
        skip_used(self.dst, &mut self.dst_idx, &mut self.dst_off);
    }
}

/// Advances `(idx, off)` past the fragments of `frags` that `off` has used up, and past
/// zero-length ones, to the first byte not used yet (or to `frags.len()`).
#[inline]
fn skip_used<F: std::ops::Deref<Target = [u8]>>(frags: &[F], idx: &mut usize, off: &mut usize) {
    while frags.get(*idx).is_some_and(|f| *off == f.len()) {
        *idx += 1;
        *off = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_empty_fragments_and_spans() {
        let a = [1u8, 2, 3];
        let src = [IoSlice::new(&[]), IoSlice::new(&a), IoSlice::new(&[])];
        let mut x = [0u8; 5];
        let mut dst = [IoSliceMut::new(&mut []), IoSliceMut::new(&mut x)];
        let mut walk = Walk::new(&src, &mut dst);
        let (s, d) = walk.one_shot().expect("one fragment each side");
        assert_eq!((s, d.len()), (&a[..], 5));
    }

    #[test]
    fn two_fragments_are_not_one_shot() {
        let (a, b) = ([1u8], [2u8]);
        let src = [IoSlice::new(&a), IoSlice::new(&b)];
        let mut x = [0u8; 5];
        let mut dst = [IoSliceMut::new(&mut x)];
        let mut walk = Walk::new(&src, &mut dst);
        assert!(walk.one_shot().is_none());
        let mut buf = [0u8; 4];
        assert_eq!(walk.peek_src(&mut buf), 2);
        assert_eq!(&buf[..2], &[1, 2]);
        walk.done_src(1);
        assert_eq!(walk.next_src(), &[2]);
        assert_eq!(walk.peek_src(&mut buf[..1]), 1);
        walk.done_src(1);
        assert_eq!(walk.next_src(), &[] as &[u8]);
        assert_eq!(walk.src_remaining(), 0);
    }

    #[test]
    fn empty_sides() {
        let mut walk = Walk::new(&[], &mut []);
        assert_eq!((walk.slen(), walk.dlen()), (0, 0));
        assert!(walk.next_dst().is_empty());
        assert!(walk.one_shot().is_some());
    }

    #[test]
    #[should_panic(expected = "past a chunk")]
    fn done_past_chunk_panics() {
        let a = [1u8, 2];
        let src = [IoSlice::new(&a)];
        let mut walk = Walk::new(&src, &mut []);
        walk.done_src(3);
    }
}
