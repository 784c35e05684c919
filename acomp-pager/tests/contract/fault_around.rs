//! Fault-around: a sweep in order over pages out takes one fault for each window (1, 2, 4
//! up to 16 pages after the faulting one), each page right; accesses out of order take a
//! fault each and bring in nothing more; on the handler threads and on the faulting
//! thread alike.

use acomp_pager::Pager;

use crate::common::{self, page};

const PAGES: usize = 1024;

fn run(signal: bool) {
    let Some(pager) = common::build(Pager::builder(common::tier()).signal_faults(signal)) else {
        return;
    };
    let (region, mem) = common::written(&pager, PAGES);
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    let before = pager.stats();
    for p in 0..PAGES {
        mem.check(p, &page(p, 1), "a sweep in order");
    }
    let s = pager.stats();
    let faults = s.faults - before.faults;
    assert_eq!(s.swap_ins - before.swap_ins, PAGES as u64, "{s:?}");
    // Windows of 0, 1, 2, 4, 8 and then 16 pages: 1 + 2 + 3 + 5 + 9 = 20 pages in 5
    // faults, then 17 a fault; a thread of the sweep may fault on a page the handler is
    // still bringing in (deferred, and counted when served), which closes a window early.
    assert!(
        faults <= PAGES as u64 / 8,
        "{faults} faults for a sweep over {PAGES} pages: {s:?}"
    );
    // Every page but those its own fault brought in came in around another's. On the
    // faulting thread exactly so; with the handler threads, a fault deferred on a page
    // being brought in is served as already mapped.
    let around = s.swap_readahead - before.swap_readahead;
    if signal {
        assert_eq!(around, PAGES as u64 - faults, "{s:?}");
    } else {
        assert!(
            around + faults >= PAGES as u64 && around < PAGES as u64,
            "{s:?}"
        );
    }
    // Out of order: a fault each, nothing brought in around them.
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    let before = pager.stats();
    for i in 0..PAGES {
        let p = (i * 389) % PAGES;
        mem.check(p, &page(p, 1), "out of order");
    }
    let s = pager.stats();
    assert_eq!(s.swap_readahead, before.swap_readahead, "{s:?}");
    assert_eq!(s.faults - before.faults, PAGES as u64, "{s:?}");
}

#[test]
fn a_sweep_in_order_takes_a_fault_a_window() {
    let _w = common::watchdog("fault-around", 120);
    run(false);
}

#[test]
fn a_sweep_in_order_takes_a_fault_a_window_on_the_faulting_thread() {
    let _w = common::watchdog("fault-around, signal faults", 120);
    run(true);
}
