//! A page of zeros paged out costs nothing in the tier and reads back as zeros.

use acomp_pager::PAGE_SIZE;
use acomp_zswap::Page;

use crate::common::{self, Mem, ZEROS, page};

#[test]
fn zero_pages_are_dropped_not_stored() {
    let _w = common::watchdog("zero pages", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    let tier = pager.tier().clone();
    const PAGES: usize = 16;
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    // 0-7 written as zeros; 8-11 written with data, then zeros; 12 one nonzero word over
    // and over (same-filled: the tier keeps the word); 13-15 never touched.
    let mut filled: Page = [0; PAGE_SIZE];
    for w in filled.chunks_exact_mut(8) {
        w.copy_from_slice(&0x0123_4567_89ab_cdefu64.to_le_bytes());
    }
    for p in 0..8 {
        mem.write(p, &ZEROS);
    }
    for p in 8..12 {
        mem.write(p, &page(p, 1));
        mem.write(p, &ZEROS);
    }
    mem.write(12, &filled);
    assert_eq!(region.page_out(0, region.len()).unwrap(), 13);
    let s = pager.stats();
    assert_eq!(
        (s.zero_swap_outs, s.swap_outs, s.clean_swap_outs),
        (12, 1, 0)
    );
    assert_eq!((s.paged_out_pages, s.resident_pages), (1, 0));
    let t = tier.stats();
    assert_eq!(
        (t.stored_pages, t.same_filled_pages, t.pool_total_size),
        (1, 1, 0),
        "zero pages stored in the tier"
    );
    for p in 0..PAGES {
        let want = if p == 12 { filled } else { ZEROS };
        mem.check(p, &want, "read back");
    }
    let s = pager.stats();
    assert_eq!((s.swap_ins, s.zero_faults), (1, 13 + 15));
    // Written again after reading as zeros: the zero page is replaced, nothing faults to
    // the tier, and a page-out stores the new bytes.
    mem.write(0, &page(0, 2));
    assert_eq!(region.page_out(0, PAGE_SIZE).unwrap(), 1);
    assert_eq!(tier.stats().stored_pages, 2);
    mem.check(0, &page(0, 2), "written after reading as zeros");
}
