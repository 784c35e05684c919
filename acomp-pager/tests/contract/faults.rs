//! Faults are served with their own page's bytes, from many threads at once, on distinct
//! and on the same pages.

use rand::seq::SliceRandom;

use crate::common::{self, page};

#[test]
fn concurrent_faults_are_each_served_their_own_page() {
    let _w = common::watchdog("concurrent faults", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    const PAGES: usize = 128;
    const THREADS: usize = 6;
    let (region, mem) = common::written(&pager, PAGES);
    let read_all = |overlap: bool, generation: u32| {
        std::thread::scope(|s| {
            for t in 0..THREADS {
                s.spawn(move || {
                    let mut order: Vec<usize> = if overlap {
                        (0..PAGES).collect()
                    } else {
                        (t..PAGES).step_by(THREADS).collect()
                    };
                    order.shuffle(&mut rand::rng());
                    for p in order {
                        mem.check(p, &page(p, generation), "a concurrent fault");
                    }
                });
            }
        });
    };

    // Every thread reads every page, each in its own order.
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    read_all(true, 1);
    let s = pager.stats();
    assert_eq!(
        s.swap_ins, PAGES as u64,
        "each page faulted in from the tier once"
    );
    // Two threads' faults on one page give two messages: the second, read after the first
    // was served, finds the page mapped and changes nothing (it once turned the clean page
    // resident, leaving its copy in the tier for good, and counted a zero fault).
    assert_eq!(
        (s.clean_pages, s.resident_pages),
        (PAGES as u64, PAGES as u64),
        "clean pages turned resident by a second fault on them"
    );
    assert_eq!(s.zero_faults, PAGES as u64, "the first writes only");
    assert_eq!((s.failed_faults, s.panics), (0, 0));
    let t = pager.tier().stats();
    assert_eq!(
        (t.stored_pages, t.clean_pages),
        (PAGES as u64, PAGES as u64)
    );

    // New bytes, then threads on distinct pages.
    for p in 0..PAGES {
        mem.write(p, &page(p, 2));
    }
    assert_eq!(pager.stats().write_protect_faults, PAGES as u64);
    assert_eq!(
        pager.tier().stats().stored_pages,
        0,
        "copies of written pages left"
    );
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    read_all(false, 2);
    let s = pager.stats();
    assert_eq!(s.swap_ins, 2 * PAGES as u64);
    assert_eq!(
        (s.clean_pages, s.resident_pages),
        (PAGES as u64, PAGES as u64)
    );
    drop(region);
    let t = pager.tier().stats();
    assert_eq!((t.stored_pages, t.clean_pages), (0, 0));
}
