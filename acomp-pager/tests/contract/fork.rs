//! `fork`: a region is not inherited (`MADV_DONTFORK`): touching it in the child is
//! SIGSEGV, never zeros in place of its data; the parent's region goes on.

use acomp_pager::PAGE_SIZE;

use crate::common::{self, page};

#[test]
fn a_forked_child_touching_a_region_gets_sigsegv_and_the_parent_goes_on() {
    let _w = common::watchdog("fork", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    const PAGES: usize = 8;
    let (region, mem) = common::written(&pager, PAGES);
    // Pages 0-3 paged out, 4-7 resident.
    assert_eq!(region.page_out(0, 4 * PAGE_SIZE).unwrap(), 4);
    for (p, write) in [(0, false), (6, false), (1, true), (7, true)] {
        let end = common::fork_child(60, || {
            let at = mem.addr(p) as *mut u8;
            // SAFETY: in the child the range is unmapped: the access is meant to fault.
            unsafe {
                if write {
                    at.write_volatile(1);
                } else {
                    at.read_volatile();
                }
            }
            0
        });
        assert_eq!(
            end,
            (None, Some(libc::SIGSEGV)),
            "the child's {} of page {p} (code, signal)",
            if write { "write" } else { "read" }
        );
    }
    for p in 0..PAGES {
        mem.check(p, &page(p, 1), "the parent's region after the children");
    }
    let s = pager.stats();
    assert_eq!((s.swap_ins, s.failed_faults), (4, 0));
    mem.write(2, &page(2, 2));
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    mem.check(2, &page(2, 2), "written after the children");
}
