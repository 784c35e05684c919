//! A page faulted in by a read keeps its tier copy: paged out again unwritten, it costs no
//! compression; its first write drops the copy.

use acomp_pager::PAGE_SIZE;

use crate::common::{self, Mem, key, page};

#[test]
fn a_page_read_back_keeps_its_copy_until_its_first_write() {
    let _w = common::watchdog("clean copies", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    const PAGES: usize = 8;
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    let tier = pager.tier().clone();
    for p in 0..PAGES {
        mem.write(p, &page(p, 1));
    }
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    let compressed = tier.acomp().stats().compress;
    assert_eq!(tier.stats().stored_pages, PAGES as u64);

    // Read back: clean, the tier's copies kept.
    for p in 0..PAGES {
        mem.check(p, &page(p, 1), "read back");
    }
    let s = pager.stats();
    assert_eq!((s.swap_ins, s.clean_pages, s.resident_pages), (8, 8, 8));
    let t = tier.stats();
    assert_eq!((t.stored_pages, t.clean_pages), (8, 8));

    // Paged out again unwritten: no compression, nothing stored anew.
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    let s = pager.stats();
    assert_eq!((s.swap_outs, s.clean_swap_outs), (8, 8));
    assert_eq!(
        (s.paged_out_pages, s.clean_pages, s.resident_pages),
        (8, 0, 0)
    );
    assert_eq!(
        tier.acomp().stats().compress,
        compressed,
        "a clean page-out compressed"
    );
    let t = tier.stats();
    assert_eq!((t.stored_pages, t.clean_pages), (8, 0));

    // Read back again, then the first write to page 3: one write-protect fault, the copy
    // dropped.
    for p in 0..PAGES {
        mem.check(p, &page(p, 1), "read back again");
    }
    assert_eq!(pager.stats().write_protect_faults, 0);
    mem.write(3, &page(3, 2));
    let s = pager.stats();
    assert_eq!(s.write_protect_faults, 1);
    assert_eq!((s.clean_pages, s.resident_pages), (7, 8));
    assert!(
        !tier.contains(key(&region, 3)),
        "the first write left the page's copy in the tier"
    );
    let t = tier.stats();
    assert_eq!((t.stored_pages, t.clean_pages), (7, 7));
    // A second write to it is not a fault.
    mem.write(3, &page(3, 3));
    assert_eq!(pager.stats().write_protect_faults, 1);

    // Paged out: seven clean page-outs and one compression of the new bytes.
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    let s = pager.stats();
    assert_eq!(
        (s.swap_outs, s.clean_swap_outs, s.paged_out_pages),
        (9, 15, 8)
    );
    assert_eq!(tier.acomp().stats().compress, compressed + 1);
    assert_eq!(tier.stats().stored_pages, 8);
    for p in 0..PAGES {
        let want = if p == 3 { page(3, 3) } else { page(p, 1) };
        mem.check(p, &want, "after the write and a page-out");
    }
    assert_eq!(pager.stats().swap_ins, 24);
}
