//! Test hooks, built only with the `test-hooks` feature (the crate's own tests enable it;
//! it is not for users): what a kernel does now and then made to happen every time, on the
//! calling thread only (a test's own page-outs, not its neighbours'), so that the pager's
//! answer to it runs on any kernel.
//!
//! - [`short_moves`]: each `UFFDIO_MOVE` that moves its pages is reported one page short,
//!   with an error, as Linux 6.18's `move_pages` can (an `EAGAIN` left set while its retry
//!   moves the page; the next pass finds the page moved, `EEXIST`): the pages the count
//!   leaves out are found by `Batch::moved_uncounted` and the put-back's checks.
//! - [`unreadable_page_tables`]: `/proc/self/pagemap` reads as if it could not be opened,
//!   as under a seccomp profile or a `/proc` not mounted: a page table answers from
//!   `mincore`, and an uncounted move is found by moving the page back.

use std::cell::Cell;

thread_local! {
    static SHORT_MOVES: Cell<bool> = const { Cell::new(false) };
    static SHORTENED: Cell<u64> = const { Cell::new(0) };
    static NO_PAGEMAP: Cell<bool> = const { Cell::new(false) };
}

/// On the calling thread, from now (`true`) or no longer (`false`): every `UFFDIO_MOVE`
/// that moved all its pages is reported one page short, its error `EAGAIN` and `EEXIST` in
/// turn (a move of one page: none counted). The pages did move.
pub fn short_moves(on: bool) {
    SHORT_MOVES.with(|s| s.set(on));
}

/// Moves reported short on the calling thread so far.
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

/// What [`short_moves`] makes of a move that moved `len` bytes whole: the count and the
/// error to report.
pub(crate) fn shorten(len: usize) -> (usize, i32) {
    let n = SHORTENED.with(|s| {
        s.set(s.get() + 1);
        s.get()
    });
    let errno = if n % 2 == 1 {
        libc::EAGAIN
    } else {
        libc::EEXIST
    };
    (len.saturating_sub(crate::PAGE_SIZE), errno)
}

/// Whether [`unreadable_page_tables`] is on for the calling thread.
pub(crate) fn pagemap_unreadable() -> bool {
    NO_PAGEMAP.with(Cell::get)
}
