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

/// Under a limit, a page written in one residency is faulted in writable, without its copy,
/// at its next `WRITTEN_FAULT_INS` (3) read fault-ins, then clean again; a clean page's first
/// write (a write-protect fault) starts the count again.
#[test]
fn under_a_limit_a_written_page_is_read_back_writable_three_times() {
    let _w = common::watchdog("written pages read back writable", 300);
    let b = acomp_pager::Pager::builder(common::tier())
        .resident_limit(1024 * PAGE_SIZE as u64)
        .fault_around(0);
    let Some(pager) = common::build(b) else {
        return;
    };
    const PAGES: usize = 8;
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    for p in 0..PAGES {
        mem.write(p, &page(p, 1));
    }
    for round in 0..3 {
        assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
        for p in 0..PAGES {
            mem.check(p, &page(p, 1), "read back writable");
        }
        let s = pager.stats();
        assert_eq!(s.clean_pages, 0, "round {round}: {s:?}");
        // The handler drops the tier's copy after the mapping has woken the reader: the
        // last page's may still be in the tier for a moment.
        common::wait_until(5, || pager.tier().stats().stored_pages == 0);
        assert_eq!(pager.tier().stats().stored_pages, 0, "round {round}");
    }
    // The fourth read fault-in keeps the copy; the first write is a write-protect fault.
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    for p in 0..PAGES {
        mem.check(p, &page(p, 1), "read back clean");
    }
    assert_eq!(pager.stats().clean_pages, PAGES as u64);
    mem.write(3, &page(3, 2));
    assert_eq!(pager.stats().write_protect_faults, 1);
    // Paged out and read back: page 3 writable (its write counted again), the rest clean.
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    for p in 0..PAGES {
        let want = if p == 3 { page(3, 2) } else { page(p, 1) };
        mem.check(p, &want, "after the write");
    }
    assert_eq!(pager.stats().clean_pages, PAGES as u64 - 1);
    assert!(!pager.tier().contains(key(&region, 3)));
    mem.write(3, &page(3, 3));
    assert_eq!(pager.stats().write_protect_faults, 1);
}
