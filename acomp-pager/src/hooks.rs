//! Test hooks, built only with the `test-hooks` feature (the crate's own tests enable it;
//! it is not for users; building this workspace's tests, examples or benches from its root
//! turns it on too, where every hook stays off): what a kernel does now and then made to
//! happen every time, on the calling thread only (a test's own page-outs, not its
//! neighbours'), so that the pager's answer to it runs on any kernel with `UFFDIO_MOVE`.
//!
//! - [`short_moves`]: each `UFFDIO_MOVE` moves and counts as Linux 6.18's `move_pages` does
//!   when the kernel's swap changes a page under it (`mm/userfaultfd.c`: the retry's
//!   success leaves the `EAGAIN` set, so what it moved is not counted, and the next pass
//!   stops at the page it finds moved): the first `k` pages moved and counted, the next `m`
//!   (at least one) moved and not counted, the rest not moved; the error `EAGAIN` where
//!   `k > 0` (the ioctl's answer to a short count), `EEXIST` where `k == 0`. The shapes
//!   cycle: the last page alone uncounted; one page moved, none counted; half counted, two
//!   uncounted. The pages the count leaves out are found by `Batch::moved_uncounted` and
//!   the put-back's checks.
//! - [`unreadable_page_tables`]: `/proc/self/pagemap` reads as if it could not be opened,
//!   as under a seccomp profile or a `/proc` not mounted: a page table answers from
//!   `mincore` (present or not known), and a page moved out uncounted that `mincore` does
//!   not find is found by moving it back.

use std::cell::Cell;

thread_local! {
    static SHORT_MOVES: Cell<bool> = const { Cell::new(false) };
    static SHORTENED: Cell<u64> = const { Cell::new(0) };
    static NO_PAGEMAP: Cell<bool> = const { Cell::new(false) };
}

/// On the calling thread, from now (`true`) or no longer (`false`): every `UFFDIO_MOVE`
/// moves and counts short, as the module's docs say.
pub fn short_moves(on: bool) {
    SHORT_MOVES.with(|s| s.set(on));
}

/// Moves made short on the calling thread so far.
pub fn moves_shortened() -> u64 {
    SHORTENED.with(Cell::get)
}

/// On the calling thread, from now (`true`) or no longer (`false`): `/proc/self/pagemap`
/// cannot be read.
pub fn unreadable_page_tables(on: bool) {
    NO_PAGEMAP.with(|s| s.set(on));
}

/// Whether [`short_moves`] is on for the calling thread.
pub(crate) fn shortening() -> bool {
    SHORT_MOVES.with(Cell::get)
}

/// The next short move's shape for a move of `pages` pages (at least one): `(k, m)`, the
/// pages moved and counted, then moved and not counted.
pub(crate) fn short_shape(pages: usize) -> (usize, usize) {
    let n = SHORTENED.with(|s| {
        s.set(s.get() + 1);
        s.get()
    });
    let (k, m) = match n % 3 {
        1 => (pages - 1, 1),
        2 => (0, 1),
        _ => ((pages - 1) / 2, 2),
    };
    (k, m.min(pages - k))
}

/// The error a short move of `k` counted pages answers with.
pub(crate) fn short_errno(k: usize) -> i32 {
    if k > 0 { libc::EAGAIN } else { libc::EEXIST }
}

/// Whether [`unreadable_page_tables`] is on for the calling thread.
pub(crate) fn pagemap_unreadable() -> bool {
    NO_PAGEMAP.with(Cell::get)
}
