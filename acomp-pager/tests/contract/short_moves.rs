//! A move that counts short loses no page. Linux 6.18's `UFFDIO_MOVE` can move pages and
//! leave them out of the count it returns (an `EAGAIN` left set while its retry moves the
//! page, then `EEXIST` on the page it finds moved), which `system_swap`'s race with the
//! kernel's swap meets now and then, and only on that kernel. Here the crate's test hook
//! (`hooks::short_moves`) gives every move the test's own thread makes that kernel's shape,
//! on any kernel with `UFFDIO_MOVE` (6.8 and later; before it the tests print `SKIPPED`):
//! some pages moved and counted, then some moved uncounted, then the rest not moved, the
//! three shapes of `hooks.rs` in turn; through the page-out's move out, its put-back of
//! pages the tier refused, and its drop of pages stored. Each test runs with
//! `/proc/self/pagemap` readable, then unreadable (`hooks::unreadable_page_tables`: the
//! tables answer from `mincore`, and a page `mincore` does not find is asked for by moving
//! it back).
//!
//! Planted, each by hand, fails: the move out's check of the scratch mapping's table
//! skipped (the move-out and put-back tests: pages lost as zeros); a page the scratch
//! mapping's table says is not there taken as moved (the move-out test hangs reading it,
//! the watchdog aborts); the move-back probe taking `EEXIST` for a page still out (the
//! move-out test, without a page table, hangs); the put-back's `EEXIST` and table checks
//! skipped (the put-back test hangs). The drop's own step over a page moved uncounted
//! skipped, the drop test still passes: its check of the region's table after a run not
//! moved whole drops what is left, so that it holds the outcome, not that path.

use acomp_pager::{Error, PAGE_SIZE, Pager, Region, Stats, hooks};

use crate::common::{self, Mem, page};

/// Pages of each test: 8 batches, all paged out on the calling thread (no helper threads
/// under 16 batches), so that the hook, which is the thread's, sees every move.
const PAGES: usize = 256;
/// The batches of [`PAGES`], 32 pages each.
const BATCHES: u64 = (PAGES / 32) as u64;

/// Runs `f` with moves counting short on this thread, and page tables unreadable where
/// `unreadable`; both off after, also on a panic. Asserts that at least `at_least` moves
/// were made short: the moves of the path the test is for.
fn with_short_moves<T>(unreadable: bool, at_least: u64, f: impl FnOnce() -> T) -> T {
    struct Off;
    impl Drop for Off {
        fn drop(&mut self) {
            hooks::short_moves(false);
            hooks::unreadable_page_tables(false);
        }
    }
    let before = hooks::moves_shortened();
    let _off = Off;
    hooks::short_moves(true);
    hooks::unreadable_page_tables(unreadable);
    let r = f();
    let made = hooks::moves_shortened() - before;
    assert!(
        made >= at_least,
        "{made} moves made short, not the {at_least} of the path under test"
    );
    r
}

/// Asserts that every page of `mem` reads `page(p, 1)`.
fn check_all(mem: &Mem, what: &str) {
    for p in 0..mem.pages {
        mem.check(p, &page(p, 1), what);
    }
}

/// Pages out the whole of `region` with moves made short (at least one a batch), asserts
/// that every page left memory, and gives the stats after.
fn page_out_whole(pager: &Pager, region: &Region, unreadable: bool) -> Stats {
    let moved = with_short_moves(unreadable, BATCHES, || {
        region.page_out(0, region.len()).unwrap()
    });
    let s = pager.stats();
    assert_eq!(moved, PAGES, "{s:?}");
    s
}

/// The pager over a tier with `budget` bytes, where the kernel moves pages (the tests
/// need `UFFDIO_MOVE`); `None` (the test returns) where it does not or userfaultfd is
/// refused.
fn pager_that_moves(budget: u64) -> Option<Pager> {
    // One page-out thread: every batch on the test's thread, which the hook is.
    let pager = common::build(Pager::builder(common::tier_of(budget)).page_out_threads(1))?;
    if !pager.moves_pages() {
        eprintln!("SKIPPED: the kernel has no UFFDIO_MOVE");
        return None;
    }
    Some(pager)
}

fn pages_moved_out_uncounted_are_stored(unreadable: bool) {
    let Some(pager) = pager_that_moves(64 << 20) else {
        return;
    };
    let (region, mem) = common::written(&pager, PAGES);
    // At least one move out a batch.
    let s = page_out_whole(&pager, &region, unreadable);
    assert_eq!(
        (
            s.paged_out_pages,
            s.resident_pages,
            s.swap_outs,
            s.zero_swap_outs
        ),
        (PAGES as u64, 0, PAGES as u64, 0),
        "paged out, resident, swap-outs, zero swap-outs: {s:?}"
    );
    assert_eq!(pager.tier().stats().stored_pages, PAGES as u64);
    check_all(&mem, "paged out by moves that counted short");
    assert_eq!(pager.stats().swap_ins, PAGES as u64);
}

#[test]
fn pages_moved_out_uncounted_are_stored_not_dropped() {
    let _w = common::watchdog("short moves out", 240);
    for unreadable in [false, true] {
        pages_moved_out_uncounted_are_stored(unreadable);
    }
}

fn pages_put_back_uncounted_are_back(unreadable: bool) {
    // A pool of one page: the tier refuses every page (`PoolFull`), and the page-out puts
    // the first batch's pages, moved out, back into the region.
    let Some(pager) = pager_that_moves(PAGE_SIZE as u64) else {
        return;
    };
    let (region, mem) = common::written(&pager, PAGES);
    let faults = pager.stats().faults;
    // The first batch's move out (its first shape: every page moved, the last uncounted),
    // then a move back of each of its 32 pages.
    let r = with_short_moves(unreadable, 1 + 32, || region.page_out(0, region.len()));
    assert!(
        matches!(r, Err(Error::TierRefused { .. })),
        "a tier of one page took the pages: {r:?}"
    );
    let s = pager.stats();
    assert_eq!(
        (
            s.resident_pages,
            s.paged_out_pages,
            s.swap_outs,
            s.zero_swap_outs
        ),
        (PAGES as u64, 0, 0, 0),
        "resident, paged out, swap-outs, zero swap-outs: {s:?}"
    );
    check_all(&mem, "put back by moves that counted short");
    let s = pager.stats();
    assert_eq!(
        (s.faults - faults, s.swap_ins),
        (0, 0),
        "a page put back faulted: {s:?}"
    );
}

#[test]
fn pages_put_back_uncounted_are_back_in_the_region() {
    let _w = common::watchdog("short moves back", 240);
    for unreadable in [false, true] {
        pages_put_back_uncounted_are_back(unreadable);
    }
}

fn clean_pages_dropped_uncounted_leave_memory(unreadable: bool) {
    let Some(pager) = pager_that_moves(64 << 20) else {
        return;
    };
    let (region, mem) = common::written(&pager, PAGES);
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    // Read back: each keeps its copy, so the next page-out drops it without a store, by
    // the drop's moves (not moved out first: a clean page is write-protected in place).
    check_all(&mem, "read back");
    assert_eq!(pager.stats().clean_pages, PAGES as u64);
    // At least one drop's move a batch (nothing is moved out first).
    let s = page_out_whole(&pager, &region, unreadable);
    assert_eq!(
        (
            s.paged_out_pages,
            s.resident_pages,
            s.clean_swap_outs,
            s.zero_swap_outs
        ),
        (PAGES as u64, 0, PAGES as u64, 0),
        "paged out, resident, clean swap-outs, zero swap-outs: {s:?}"
    );
    check_all(&mem, "dropped by moves that counted short");
    let s = pager.stats();
    assert_eq!(
        (s.swap_ins, s.resident_pages, s.paged_out_pages),
        (2 * PAGES as u64, PAGES as u64, 0),
        "each page swapped back in from its copy: {s:?}"
    );
}

#[test]
fn clean_pages_dropped_by_moves_that_count_short_leave_memory() {
    let _w = common::watchdog("short drops", 240);
    for unreadable in [false, true] {
        clean_pages_dropped_uncounted_leave_memory(unreadable);
    }
}
