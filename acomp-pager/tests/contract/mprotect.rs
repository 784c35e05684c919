//! `mprotect`: a region made read-only still has its faults served and its pages paged
//! out; made writable again, writes work.

use crate::common::{self, page};

#[test]
fn a_read_only_region_faults_in_exact_pages_and_is_writable_again() {
    let _w = common::watchdog("mprotect", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    const PAGES: usize = 16;
    let (region, mem) = common::written(&pager, PAGES);
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    mem.protect(libc::PROT_READ).unwrap();
    for p in 0..PAGES {
        mem.check(p, &page(p, 1), "read-only, faulted in");
    }
    assert_eq!(pager.stats().swap_ins, PAGES as u64);
    // Paged out while read-only: the clean copies serve, nothing is compressed.
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    let s = pager.stats();
    assert_eq!(
        (s.swap_outs, s.clean_swap_outs),
        (PAGES as u64, PAGES as u64)
    );
    for p in 0..PAGES {
        mem.check(p, &page(p, 1), "read-only, faulted in again");
    }
    mem.protect(libc::PROT_READ | libc::PROT_WRITE).unwrap();
    for p in (0..PAGES).step_by(2) {
        mem.write(p, &page(p, 2));
    }
    let s = pager.stats();
    assert_eq!((s.write_protect_faults, s.clean_pages), (8, 8));
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    for p in 0..PAGES {
        let want = page(p, if p % 2 == 0 { 2 } else { 1 });
        mem.check(p, &want, "writable again");
    }
    let s = pager.stats();
    assert_eq!((s.swap_outs, s.swap_ins, s.failed_faults), (24, 48, 0));
}
