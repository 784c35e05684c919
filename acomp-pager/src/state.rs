//! The state of each page of a region: one byte, changed only by the thread that holds the
//! page ([`BUSY`]), so that a fault, a page-out and the program's `MADV_DONTNEED` never
//! act on one page at once.
//!
//! | state | the page's table entry | the tier |
//! | --- | --- | --- |
//! | [`UNTOUCHED`] | none: reads as zeros | nothing |
//! | [`RESIDENT`] | mapped, writable (or the zero page) | nothing |
//! | [`CLEAN`] | mapped, write-protected | a copy of the same bytes |
//! | [`OUT`] | none | the page |
//!
//! A holder never waits for another thread while it holds a page, except for the kernel's
//! ioctls, and a fault that finds its page held is deferred (`Shared::defer`) rather than
//! waited on: the handler threads never block on a page, so a page-out that waits for a
//! handler (its own `MADV_DONTNEED`'s remove event must be read) cannot deadlock.
//!
//! The bytes live in a mapping of their own, zero (`UNTOUCHED`) until written, and a bitmap
//! marks each run of [`LEAF_PAGES`] pages of which one was ever held: a region costs memory
//! and time for what was touched, not for its length (a 1 TiB region of which 64 pages
//! were touched walks 64 runs, not 2^28 pages).

use std::io;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use crate::sys::Zeroed;

/// Pages of a run marked touched as one (a page of the state array).
pub const LEAF_PAGES: usize = 4096;

/// Never written since the region was made or since the program dropped it: zeros.
pub const UNTOUCHED: u8 = 0;
/// In memory, its bytes known only to the program.
pub const RESIDENT: u8 = 1;
/// In memory, write-protected, and the tier holds a copy of the same bytes.
pub const CLEAN: u8 = 2;
/// Paged out: in the tier only.
pub const OUT: u8 = 3;
/// Held by a thread that is changing it.
pub const BUSY: u8 = 4;
/// With [`BUSY`]: the program's `MADV_DONTNEED` (or `MADV_REMOVE`) covered the page while
/// it was held; the holder drops what it had and leaves the page as zeros.
pub const ZAPPED: u8 = 0x80;
const MASK: u8 = 0x7f;

/// The states of a region's pages.
#[derive(Debug)]
pub struct States {
    pages: Zeroed<AtomicU8>,
    /// A bit for each run of [`LEAF_PAGES`] pages: set before any of its pages is first
    /// held, never cleared.
    touched: Zeroed<AtomicU64>,
}

/// What [`States::acquire`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquired {
    /// The page is now held; its state before.
    Held(u8),
    /// Another thread holds it; `zapped` if the program dropped it meanwhile.
    Busy { zapped: bool },
}

impl States {
    /// `pages` pages, all [`UNTOUCHED`], made in O(1).
    ///
    /// # Errors
    ///
    /// `mmap`'s, for the arrays.
    pub fn new(pages: usize) -> io::Result<States> {
        Ok(States {
            pages: Zeroed::new(pages)?,
            touched: Zeroed::new(pages.div_ceil(LEAF_PAGES).div_ceil(64))?,
        })
    }

    /// Marks page `p`'s run touched. `SeqCst`, as the reads of [`States::touched_runs`]: a
    /// walker that finds the bit clear is ordered before this, and so before the page is
    /// held.
    fn touch(&self, p: usize) {
        let leaf = p / LEAF_PAGES;
        let (word, bit) = (&self.touched[leaf / 64], 1u64 << (leaf % 64));
        if word.load(Ordering::SeqCst) & bit == 0 {
            word.fetch_or(bit, Ordering::SeqCst);
        }
    }

    /// The runs of pages of `[first, end)` that may hold anything but [`UNTOUCHED`] pages,
    /// as `[start, stop)` ranges in order, neighbours merged. A page outside them was never
    /// held before the walk read its run's bit.
    pub fn touched_runs(&self, first: usize, end: usize) -> Vec<(usize, usize)> {
        let mut runs = Vec::new();
        self.for_each_touched_run(first, end, |a, b| runs.push((a, b)));
        runs
    }

    /// [`States::touched_runs`] without allocating (for a fault served in a signal
    /// handler): `f` called with each run, in order.
    pub fn for_each_touched_run(&self, first: usize, end: usize, mut f: impl FnMut(usize, usize)) {
        if first >= end {
            return;
        }
        let (first_leaf, last_leaf) = (first / LEAF_PAGES, (end - 1) / LEAF_PAGES);
        let mut open: Option<(usize, usize)> = None;
        let mut w = first_leaf / 64;
        while w <= last_leaf / 64 {
            let mut bits = self.touched[w].load(Ordering::SeqCst);
            while bits != 0 {
                let leaf = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if leaf < first_leaf || leaf > last_leaf {
                    continue;
                }
                let start = (leaf * LEAF_PAGES).max(first);
                let stop = ((leaf + 1) * LEAF_PAGES).min(end);
                match &mut open {
                    Some(run) if run.1 == start => run.1 = stop,
                    _ => {
                        if let Some((a, b)) = open.take() {
                            f(a, b);
                        }
                        open = Some((start, stop));
                    }
                }
            }
            w += 1;
        }
        if let Some((a, b)) = open {
            f(a, b);
        }
    }

    /// The number of pages.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// The state of page `p` as last released (or [`BUSY`]), without holding it.
    pub fn peek(&self, p: usize) -> u8 {
        self.pages[p].load(Ordering::Acquire) & MASK
    }

    /// Holds page `p` unless another thread does.
    pub fn acquire(&self, p: usize) -> Acquired {
        let page = &self.pages[p];
        let mut s = page.load(Ordering::Acquire);
        if s == UNTOUCHED {
            self.touch(p);
        }
        loop {
            if s & MASK == BUSY {
                return Acquired::Busy {
                    zapped: s & ZAPPED != 0,
                };
            }
            match page.compare_exchange_weak(s, BUSY, Ordering::Acquire, Ordering::Acquire) {
                Ok(_) => return Acquired::Held(s),
                Err(now) => s = now,
            }
        }
    }

    /// Holds page `p`, waiting (spinning, then yielding) while a fault handler holds it.
    /// Only for callers outside the handler threads: a handler holds a page for the length
    /// of one tier call and one ioctl, and never waits while it does.
    pub fn acquire_wait(&self, p: usize) -> u8 {
        let mut spins = 0u32;
        loop {
            if let Acquired::Held(s) = self.acquire(p) {
                return s;
            }
            back_off(&mut spins);
        }
    }

    /// Waits (as [`States::acquire_wait`] does) until page `p` is not held, without holding
    /// it: for a fault served on the faulting thread, which then retries its access.
    pub fn wait_released(&self, p: usize) {
        let mut spins = 0u32;
        while self.peek(p) == BUSY {
            back_off(&mut spins);
        }
    }

    /// True if the program dropped page `p` while it was held.
    pub fn zapped(&self, p: usize) -> bool {
        self.pages[p].load(Ordering::Acquire) & ZAPPED != 0
    }

    /// Marks a held page as dropped by the program; false if it is not held.
    pub fn mark_zapped(&self, p: usize) -> bool {
        let page = &self.pages[p];
        let mut s = page.load(Ordering::Acquire);
        while s & MASK == BUSY {
            match page.compare_exchange_weak(s, s | ZAPPED, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
        false
    }

    /// Releases a held page into `state`. Returns false, leaving the page held, if the
    /// program dropped it meanwhile ([`ZAPPED`]): the caller then releases it with
    /// [`States::release_zapped`] after dropping what it held.
    pub fn release(&self, p: usize, state: u8) -> bool {
        debug_assert!(state < BUSY);
        self.pages[p]
            .compare_exchange(BUSY, state, Ordering::Release, Ordering::Relaxed)
            .is_ok()
    }

    /// Releases a held page that the program dropped, into `state`.
    pub fn release_zapped(&self, p: usize, state: u8) {
        debug_assert!(state < BUSY);
        self.pages[p].store(state, Ordering::Release);
    }
}

/// A waiter's pause between two looks at a held page: a spin for the first 64, then the
/// CPU yielded (the holder may be waiting for it).
fn back_off(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_page_is_busy_until_released_and_a_zap_is_seen_by_the_holder() {
        let s = States::new(2).unwrap();
        assert_eq!(s.acquire(0), Acquired::Held(UNTOUCHED));
        assert_eq!(s.acquire(0), Acquired::Busy { zapped: false });
        assert!(s.release(0, OUT));
        assert_eq!(s.peek(0), OUT);
        assert_eq!(s.acquire(0), Acquired::Held(OUT));
        assert!(s.mark_zapped(0));
        assert_eq!(s.acquire(0), Acquired::Busy { zapped: true });
        assert!(
            !s.release(0, RESIDENT),
            "a zapped page is not released as if nothing happened"
        );
        s.release_zapped(0, UNTOUCHED);
        assert_eq!(s.peek(0), UNTOUCHED);
        assert!(!s.mark_zapped(1), "a page nobody holds is not marked");
    }

    #[test]
    fn only_runs_with_a_page_once_held_are_walked() {
        let pages = 70 * LEAF_PAGES + 5;
        let s = States::new(pages).unwrap();
        assert_eq!(s.touched_runs(0, pages), vec![]);
        for p in [3, LEAF_PAGES + 1, 65 * LEAF_PAGES, 70 * LEAF_PAGES + 4] {
            assert_eq!(s.acquire(p), Acquired::Held(UNTOUCHED));
            assert!(s.release(p, RESIDENT));
        }
        assert_eq!(
            s.touched_runs(0, pages),
            vec![
                (0, 2 * LEAF_PAGES),
                (65 * LEAF_PAGES, 66 * LEAF_PAGES),
                (70 * LEAF_PAGES, pages)
            ]
        );
        // Clipped to the range asked for.
        assert_eq!(
            s.touched_runs(10, 65 * LEAF_PAGES + 7),
            vec![(10, 2 * LEAF_PAGES), (65 * LEAF_PAGES, 65 * LEAF_PAGES + 7)]
        );
        assert_eq!(s.touched_runs(2 * LEAF_PAGES, 65 * LEAF_PAGES), vec![]);
    }
}
