//! A region split into several mappings (VMAs) by the program's own calls over part of it
//! (`madvise(MADV_HUGEPAGE)`, `mprotect`, `mlock`): a page-out across the split loses
//! nothing, and a page it cannot take stays in memory as it was.

use std::io;

use acomp_pager::PAGE_SIZE;

use crate::common::{self, Mem, ZEROS, page};

const PAGES: usize = 128;
/// The part the program changes: pages 40..60, so that batches 32..64 cross two splits.
const FIRST: usize = 40;
const N: usize = 20;

fn range(mem: &Mem, f: impl Fn(*mut libc::c_void, usize) -> libc::c_int) -> io::Result<()> {
    // The range lies inside the region.
    if f(mem.addr(FIRST) as *mut _, N * PAGE_SIZE) == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Makes the changed part readable and writable again, as the region was mapped.
fn writable(mem: &Mem) {
    // SAFETY: mprotect over pages of the region.
    range(mem, |a, l| unsafe {
        libc::mprotect(a, l, libc::PROT_READ | libc::PROT_WRITE)
    })
    .unwrap();
}

/// Writes every page, splits the region with `split`, pages it all out, and checks every
/// page; `stay` pages (those of the split) may not leave memory.
fn page_out_across(what: &'static str, split: impl Fn(&Mem) -> io::Result<()>, stay: usize) {
    let _w = common::watchdog(what, 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    let (region, mem) = common::written(&pager, PAGES);
    split(&mem).unwrap();
    assert_eq!(
        region.page_out(0, region.len()).unwrap(),
        PAGES - stay,
        "{what}"
    );
    let s = pager.stats();
    assert_eq!(
        (s.paged_out_pages, s.resident_pages, s.swap_outs),
        ((PAGES - stay) as u64, stay as u64, (PAGES - stay) as u64),
        "{what}: paged out, resident, swap-outs"
    );
    for p in 0..PAGES {
        mem.check(p, &page(p, 1), what);
    }
    // Written again (the part made writable again where it was not) and paged out again:
    // the new bytes, and the program's own MADV_DONTNEED over the whole region after it
    // reads zeros everywhere.
    writable(&mem);
    for p in 0..PAGES {
        mem.write(p, &page(p, 2));
    }
    region.page_out(0, region.len()).unwrap();
    for p in 0..PAGES {
        mem.check(p, &page(p, 2), what);
    }
    region.page_out(0, region.len()).unwrap();
    if stay == 0 {
        mem.advise(0, PAGES, libc::MADV_DONTNEED).unwrap();
        for p in 0..PAGES {
            mem.check(p, &ZEROS, what);
        }
        assert_eq!(pager.tier().stats().stored_pages, 0, "{what}");
    }
}

#[test]
fn madv_hugepage_over_part_of_a_region_loses_nothing() {
    page_out_across(
        "MADV_HUGEPAGE over part",
        // SAFETY (in `range`): madvise over pages of the region.
        |mem| {
            range(mem, |a, l| unsafe {
                libc::madvise(a, l, libc::MADV_HUGEPAGE)
            })
        },
        0,
    );
}

#[test]
fn read_only_part_of_a_region_loses_nothing() {
    page_out_across(
        "PROT_READ over part",
        // SAFETY: mprotect over pages of the region, which the test reads only after.
        |mem| range(mem, |a, l| unsafe { libc::mprotect(a, l, libc::PROT_READ) }),
        0,
    );
}

#[test]
fn locked_pages_stay_in_memory_and_stay_writable() {
    page_out_across(
        "mlock over part",
        // SAFETY: mlock over pages of the region.
        |mem| range(mem, |a, l| unsafe { libc::mlock(a, l) }),
        N,
    );
}

/// Pages made unreadable (`PROT_NONE`) cannot be read for compression: a page-out leaves
/// them in memory, takes the rest, and the process goes on.
#[test]
fn unreadable_pages_stay_and_the_rest_go() {
    let _w = common::watchdog("PROT_NONE over part", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    let (region, mem) = common::written(&pager, PAGES);
    // SAFETY: mprotect over pages of the region, made readable again before they are read.
    range(&mem, |a, l| unsafe {
        libc::mprotect(a, l, libc::PROT_NONE)
    })
    .unwrap();
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES - N);
    writable(&mem);
    for p in 0..PAGES {
        mem.check(p, &page(p, 1), "after a page-out over PROT_NONE pages");
    }
    let s = pager.stats();
    assert_eq!(s.swap_ins as usize, PAGES - N);
}
