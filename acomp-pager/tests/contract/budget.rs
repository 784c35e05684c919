//! The tier drops clean copies first at its budget: a page-out that needs their room gets
//! it, and the pages they belonged to are still in memory.

use acomp_pager::PAGE_SIZE;
use acomp_zswap::Page;

use crate::common::{self, Mem, noisy_page};

const A: usize = 64;
const B: usize = 48;
/// Pages of one size class (the same length of noise), so that any freed object's room
/// fits any page.
fn body(p: usize, generation: u32) -> Page {
    noisy_page(p, generation, 1500)
}

#[test]
fn clean_copies_are_dropped_before_a_page_out_is_refused() {
    let _w = common::watchdog("budget", 300);
    // The budget: A's pages and half as much again, so that B's (three quarters of A's)
    // fit only once clean copies are dropped, and fit under the accept threshold then.
    let probe = common::tier();
    for p in 0..A {
        probe.store(p as u64, &body(p, 1)).unwrap();
    }
    let size_a = probe.stats().pool_total_size;
    let tier = common::tier_of(size_a * 3 / 2);
    let Some(pager) = common::pager(tier.clone()) else {
        return;
    };
    let region = pager.region((A + B) * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    for p in 0..A + B {
        mem.write(p, &body(p, 1));
    }
    assert_eq!(region.page_out(0, A * PAGE_SIZE).unwrap(), A);
    assert_eq!(tier.stats().pool_limit_hit, 0, "A alone fits");
    for p in 0..A {
        mem.check(p, &body(p, 1), "A read back");
    }
    assert_eq!(tier.stats().clean_pages, A as u64);

    // B needs the room of some of A's clean copies.
    assert_eq!(
        region.page_out(A * PAGE_SIZE, B * PAGE_SIZE).unwrap(),
        B,
        "every page of B paged out"
    );
    let t = tier.stats();
    assert!(
        t.clean_dropped > 0,
        "B fitted without dropping a clean copy: {t:?}"
    );
    assert_eq!(t.reject_reclaim_fail, 0);
    assert!(t.pool_total_size <= t.max_pool_size);
    let dropped = t.clean_dropped;
    assert_eq!(t.stored_pages, (A + B) as u64 - dropped);
    assert_eq!(t.clean_pages, A as u64 - dropped);
    let s = pager.stats();
    assert_eq!((s.swap_outs, s.paged_out_pages), ((A + B) as u64, B as u64));

    // A is still in memory: no fault reads it.
    let swap_ins = pager.stats().swap_ins;
    for p in 0..A {
        mem.check(p, &body(p, 1), "A after its copies were dropped");
    }
    assert_eq!(
        pager.stats().swap_ins,
        swap_ins,
        "A's clean pages were resident"
    );
    for p in A..A + B {
        mem.check(p, &body(p, 1), "B read back");
    }
    assert_eq!(pager.stats().swap_ins, swap_ins + B as u64);

    // A paged out again: the pages whose copy went are stored again, the others kept.
    let before = pager.stats();
    assert_eq!(region.page_out(0, A * PAGE_SIZE).unwrap(), A);
    let s = pager.stats();
    let (stored, kept) = (
        s.swap_outs - before.swap_outs,
        s.clean_swap_outs - before.clean_swap_outs,
    );
    assert_eq!(stored + kept, A as u64);
    assert!(
        stored >= dropped,
        "{stored} stored again, {dropped} copies had been dropped"
    );
    assert_eq!(tier.stats().reject_reclaim_fail, 0);
    for p in 0..A + B {
        mem.check(p, &body(p, 1), "everything at the end");
    }
}
