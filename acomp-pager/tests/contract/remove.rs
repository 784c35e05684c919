//! The program's `madvise(MADV_DONTNEED)` over a region works as on anonymous memory: the
//! pages read as zeros, and the tier holds none of them. `MADV_REMOVE` is refused by the
//! kernel on a private anonymous mapping (a region is one): `EINVAL`, nothing changes.

use acomp_pager::PAGE_SIZE;

use crate::common::{self, Mem, ZEROS, key, page};

const PAGES: usize = 16;

/// Pages 0-3 paged out, 4-7 clean (read back after a page-out), 8-11 resident (written,
/// never paged out), 12-15 never touched.
fn four_kinds(pager: &acomp_pager::Pager) -> (acomp_pager::Region, Mem) {
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    for p in 0..12 {
        mem.write(p, &page(p, 1));
    }
    assert_eq!(region.page_out(0, 8 * PAGE_SIZE).unwrap(), 8);
    for p in 4..8 {
        mem.check(p, &page(p, 1), "read back");
    }
    let s = pager.stats();
    assert_eq!(
        (s.paged_out_pages, s.clean_pages, s.resident_pages),
        (4, 4, 8)
    );
    let t = pager.tier().stats();
    assert_eq!((t.stored_pages, t.clean_pages), (8, 4));
    (region, mem)
}

#[test]
fn dontneed_drops_paged_out_clean_and_resident_pages_to_zeros() {
    let _w = common::watchdog("MADV_DONTNEED", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    let (region, mem) = four_kinds(&pager);
    mem.advise(0, PAGES, libc::MADV_DONTNEED).unwrap();
    // The reads of the paged-out pages fault, and their faults are mapped only after the
    // remove event was handled (the pager's map lock): from here on the tier is settled.
    for p in 0..PAGES {
        mem.check(p, &ZEROS, "after MADV_DONTNEED");
    }
    let tier = pager.tier();
    for p in 0..PAGES {
        assert!(
            !tier.contains(key(&region, p)),
            "the tier still holds page {p}"
        );
    }
    let t = tier.stats();
    assert_eq!(
        (t.stored_pages, t.clean_pages, t.pool_total_size),
        (0, 0, 0)
    );
    let s = pager.stats();
    assert_eq!((s.paged_out_pages, s.clean_pages), (0, 0));
    assert_eq!(
        s.resident_pages, PAGES as u64,
        "every page read: the zero page mapped"
    );
    assert_eq!(
        s.swap_ins, 4,
        "only the reads before the drop came from the tier"
    );

    // The region works on: written, paged out, read back.
    for p in 0..PAGES {
        mem.write(p, &page(p, 2));
    }
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    assert_eq!(tier.stats().stored_pages, PAGES as u64);
    for p in 0..PAGES {
        mem.check(p, &page(p, 2), "written after the drop");
    }
    assert_eq!(pager.stats().swap_ins, 4 + PAGES as u64);

    // A drop of part of the region: only those pages go.
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    mem.advise(2, 3, libc::MADV_DONTNEED).unwrap();
    for p in 0..PAGES {
        let want = if (2..5).contains(&p) {
            ZEROS
        } else {
            page(p, 2)
        };
        mem.check(p, &want, "after a partial MADV_DONTNEED");
    }
    for p in 0..PAGES {
        assert_eq!(
            tier.contains(key(&region, p)),
            !(2..5).contains(&p),
            "page {p} in the tier"
        );
    }
}

#[test]
fn madv_remove_on_a_region_is_einval_and_changes_nothing() {
    let _w = common::watchdog("MADV_REMOVE", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    let (_region, mem) = four_kinds(&pager);
    // mm/madvise.c's madvise_remove: a mapping with no file is EINVAL, before any remove
    // event is raised.
    let e = mem.advise(0, PAGES, libc::MADV_REMOVE).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
    let t = pager.tier().stats();
    assert_eq!((t.stored_pages, t.clean_pages), (8, 4));
    for p in 0..PAGES {
        let want = if p < 12 { page(p, 1) } else { ZEROS };
        mem.check(p, &want, "after a refused MADV_REMOVE");
    }
}

const FREE: &str = "madv-free";

/// `MADV_FREE` raises the same remove event as `MADV_DONTNEED` (the pager drops the copies
/// and takes the pages for zeros), but the kernel leaves the pages mapped until it reclaims
/// them, and a write keeps a page: a clean page stays mapped write-protected, and its
/// write once faulted forever. In a child process, for that hang.
#[test]
fn writes_after_madv_free_land_and_do_not_hang() {
    if common::is_child(FREE) {
        return madv_free_child();
    }
    let Some(end) = common::in_child_process(
        module_path!(),
        "writes_after_madv_free_land_and_do_not_hang",
        FREE,
        60,
    ) else {
        return;
    };
    assert!(
        end.stdout.contains("CHILD: the remove event handled"),
        "{end:?}"
    );
    assert!(
        end.stdout.contains("CHILD: written after MADV_FREE"),
        "{end:?}"
    );
    assert_eq!((end.code, end.signal), (Some(0), None), "{end:?}");
}

fn madv_free_child() {
    let pager = common::pager(common::tier()).expect("userfaultfd, as in the parent");
    let (region, mem) = four_kinds(&pager);
    mem.advise(0, PAGES, libc::MADV_FREE).unwrap();
    // madvise returns once the event is read; the handler drops the pages after that.
    let handled = common::wait_until(20, || {
        pager.stats().resident_pages == 0 && pager.tier().stats().stored_pages == 0
    });
    assert!(handled, "the remove event not handled: {:?}", pager.stats());
    println!("CHILD: the remove event handled");
    // Page 5 was clean (write-protected), 9 resident, 13 never touched.
    for p in [5, 9, 13] {
        mem.write(p, &page(p, 2));
    }
    println!("CHILD: written after MADV_FREE");
    // The pages not written since are the old bytes or zeros, as the kernel chose.
    let check = |what: &str| {
        for p in 0..PAGES {
            if [5, 9, 13].contains(&p) {
                mem.check(p, &page(p, 2), what);
            } else {
                let got = mem.read(p);
                assert!(*got == ZEROS || *got == page(p, 1), "{what}: page {p}");
            }
        }
    };
    check("after MADV_FREE and the writes");
    region.page_out(0, region.len()).unwrap();
    check("after a page-out");
    assert_eq!(pager.stats().failed_faults, 0);
}

/// The program's `MADV_DONTNEED` over a page while a page-out drops the batch around it:
/// whichever comes first, the page reads zeros after both (the kernel's remove event of the
/// program's call is never taken for the page-out's own, whose events tile its range).
#[test]
fn dontneed_racing_a_page_out_of_its_batch_reads_zeros() {
    let _w = common::watchdog("dontneed racing page-out", 300);
    dontneed_racing_a_page_out(common::tier(), 1500);
}

/// The same with a tier that refuses the pages (its pool full at once): the page-out moves
/// them out, is refused, and puts them back, but not the one the program dropped meanwhile
/// (it would read its old bytes).
#[test]
fn dontneed_racing_a_refused_page_out_reads_zeros() {
    let _w = common::watchdog("dontneed racing a refused page-out", 300);
    dontneed_racing_a_page_out(common::tier_of(4096), 1000);
}

fn dontneed_racing_a_page_out(tier: std::sync::Arc<acomp_zswap::Zswap>, rounds: u32) {
    let Some(pager) = common::pager(tier) else {
        return;
    };
    const PAGES: usize = 32;
    const ZAPPED: usize = 5;
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    let mut wrong = Vec::new();
    for round in 0..rounds {
        for p in 0..PAGES {
            mem.write(p, &page(p, round));
        }
        let start = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                start.wait();
                // Refused or not: the bytes are checked below.
                let _ = region.page_out(0, region.len());
            });
            start.wait();
            mem.advise(ZAPPED, 1, libc::MADV_DONTNEED).unwrap();
        });
        if *mem.read(ZAPPED) != ZEROS {
            wrong.push(round);
        }
        for p in (0..PAGES).filter(|&p| p != ZAPPED) {
            mem.check(p, &page(p, round), "another page of the batch");
        }
    }
    assert!(
        wrong.is_empty(),
        "page {ZAPPED} read its old bytes after the program's MADV_DONTNEED in rounds {wrong:?}"
    );
}
