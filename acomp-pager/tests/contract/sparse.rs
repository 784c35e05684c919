//! A region costs memory for the pages it holds, not for its length: "a page never written
//! reads as zeros and costs nothing". A region of 1 TiB with 64 pages touched grows the
//! process's RSS by those pages, the tier's pool and under 8 MiB, with a resident limit or
//! without, and a page-out over all of it moves exactly those 64 pages.
//!
//! Each test runs in a process of its own (`run_child`), so that the RSS is its own, one
//! at a time (they map a terabyte each, and on a pager that keeps state per page of the
//! length, allocate gigabytes).

use std::time::Instant;

use acomp_pager::{PAGE_SIZE, Pager, Region};
use parking_lot::Mutex;

use crate::common::{self, Mem, page};

const LEN: usize = 1 << 40;
const TOUCHED: usize = 64;
const SLACK: u64 = 8 << 20;

/// One test (its child process) at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The process's resident set, in bytes (`/proc/self/statm`).
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * PAGE_SIZE as u64
}

/// The touched pages, spread evenly over the region.
fn touched() -> impl Iterator<Item = usize> {
    let stride = LEN / PAGE_SIZE / TOUCHED;
    (0..TOUCHED).map(move |i| i * stride + i)
}

/// Runs `name` of this module in a child process as `role` and asserts it passed.
fn in_a_process(name: &str, role: &str) {
    let _one = ONE_AT_A_TIME.lock();
    // From here: the wait for the lock is the other tests' time.
    let _w = common::watchdog("a sparse terabyte, in a child process", 300);
    let Some(end) = common::in_child_process(module_path!(), name, role, 280) else {
        return;
    };
    for line in end.stdout.lines().filter(|l| l.contains("CHILD: ")) {
        println!("{line}");
    }
    assert!(
        end.stdout.contains("CHILD: done"),
        "the child process failed: {}",
        end.stderr
    );
    assert_eq!((end.code, end.signal), (Some(0), None), "{end:?}");
}

/// Asserts that the RSS grew by at most `pages` pages, the tier's pool and [`SLACK`] since
/// `base`.
fn assert_rss(pager: &Pager, base: u64, pages: usize, when: &str) {
    let pool = pager.tier().stats().pool_total_size;
    let grown = rss().saturating_sub(base);
    println!(
        "CHILD: {when}: RSS grew {} KiB (pool {} KiB)",
        grown >> 10,
        pool >> 10
    );
    assert!(
        grown <= (pages * PAGE_SIZE) as u64 + pool + SLACK,
        "{when}: the RSS grew by {} KiB, more than {pages} pages, the pool's {} KiB and \
         {} KiB",
        grown >> 10,
        pool >> 10,
        SLACK >> 10
    );
}

/// A terabyte region of `pager` with 64 pages written and read back, the RSS checked once
/// it is made (with `check_rss`) and once they are.
fn touch_a_terabyte(pager: &Pager, base: u64, check_rss: bool) -> (Region, Mem) {
    let region = pager.region(LEN).unwrap();
    if check_rss {
        assert_rss(pager, base, 0, "a terabyte region made");
    }
    let mem = Mem::of(&region);
    for p in touched() {
        mem.write(p, &page(p, 1));
    }
    for p in touched() {
        mem.check(p, &page(p, 1), "a touched page");
    }
    if check_rss {
        assert_rss(pager, base, TOUCHED, "64 pages written and read");
    }
    (region, mem)
}

const PLAIN: &str = "sparse-plain";

#[test]
fn a_terabyte_region_costs_its_touched_pages() {
    if !common::is_child(PLAIN) {
        return in_a_process("a_terabyte_region_costs_its_touched_pages", PLAIN);
    }
    let _w = common::watchdog("a sparse terabyte", 240);
    let pager = common::pager(common::tier()).unwrap();
    let base = rss();
    let (region, _mem) = touch_a_terabyte(&pager, base, true);
    drop(region);
    assert_rss(&pager, base, 0, "dropped");
    println!("CHILD: done");
}

const LIMITED: &str = "sparse-limited";

#[test]
fn a_terabyte_region_under_a_resident_limit_costs_its_touched_pages() {
    if !common::is_child(LIMITED) {
        return in_a_process(
            "a_terabyte_region_under_a_resident_limit_costs_its_touched_pages",
            LIMITED,
        );
    }
    let _w = common::watchdog("a sparse terabyte under a limit", 240);
    let pager = common::build(Pager::builder(common::tier()).resident_limit(64 << 20)).unwrap();
    let base = rss();
    let (region, _mem) = touch_a_terabyte(&pager, base, true);
    drop(region);
    assert_rss(&pager, base, 0, "dropped");
    println!("CHILD: done");
}

const PAGED_OUT: &str = "sparse-page-out";

#[test]
fn a_page_out_over_a_terabyte_moves_its_touched_pages() {
    if !common::is_child(PAGED_OUT) {
        return in_a_process(
            "a_page_out_over_a_terabyte_moves_its_touched_pages",
            PAGED_OUT,
        );
    }
    let _w = common::watchdog("a page-out over a sparse terabyte", 240);
    let pager = common::pager(common::tier()).unwrap();
    let base = rss();
    let (region, mem) = touch_a_terabyte(&pager, base, false);
    let start = Instant::now();
    let moved = region.page_out(0, LEN).unwrap();
    // Printed, not asserted: the time is the benchmarks'.
    println!("CHILD: page_out over 1 TiB took {:?}", start.elapsed());
    assert_eq!(moved, TOUCHED, "pages paged out");
    let s = pager.stats();
    assert_eq!(
        (s.swap_outs, s.paged_out_pages, s.resident_pages),
        (TOUCHED as u64, TOUCHED as u64, 0)
    );
    assert_rss(&pager, base, TOUCHED, "64 pages written and paged out");
    for p in touched() {
        mem.check(p, &page(p, 1), "a page paged out over the terabyte");
    }
    assert_eq!(pager.stats().swap_ins, TOUCHED as u64);
    println!("CHILD: done");
}
