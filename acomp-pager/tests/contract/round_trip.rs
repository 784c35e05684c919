//! Pages come back as written, whatever is paged out, from any thread, in any order.

use std::sync::Arc;

use acomp_pager::PAGE_SIZE;
use rand::seq::SliceRandom;

use crate::common::{self, Mem, ZEROS, page};

/// Page `i`'s kind in the round trip: data, written zeros, or never written.
fn kind(i: usize) -> u8 {
    match i % 8 {
        7 => 0, // never written
        6 => 1, // written as zeros
        _ => 2, // data
    }
}

#[test]
fn pages_read_back_exact_from_threads_in_random_order() {
    let _w = common::watchdog("round trip", 300);
    let Some(pager) = common::pager_without_around(common::tier()) else {
        return;
    };
    const PAGES: usize = 96;
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    let (mut data, mut zeros) = (0u64, 0u64);
    for i in 0..PAGES {
        match kind(i) {
            1 => {
                mem.write(i, &ZEROS);
                zeros += 1;
            }
            2 => {
                mem.write(i, &page(i, 1));
                data += 1;
            }
            _ => {}
        }
    }
    assert_eq!((data, zeros), (72, 12));
    let s = pager.stats();
    assert_eq!((s.faults, s.zero_faults, s.resident_pages), (84, 84, 84));

    // Moved: the data pages and the written zeros; the untouched pages were not in memory.
    let moved = region.page_out(0, region.len()).unwrap();
    assert_eq!(moved, 84);
    let s = pager.stats();
    assert_eq!(s.swap_outs, data, "pages compressed into the tier");
    assert_eq!(
        s.zero_swap_outs, zeros,
        "zero pages dropped, nothing stored"
    );
    assert_eq!(s.clean_swap_outs, 0);
    assert_eq!(s.paged_out_pages, data);
    assert_eq!(s.resident_pages, 0);
    assert_eq!(pager.tier().stats().stored_pages, data);

    // Four threads, each its own shuffled quarter of the pages.
    let mut order: Vec<usize> = (0..PAGES).collect();
    order.shuffle(&mut rand::rng());
    let order = Arc::new(order);
    std::thread::scope(|s| {
        for t in 0..4 {
            let order = order.clone();
            s.spawn(move || {
                for &i in order.iter().skip(t).step_by(4) {
                    let want = if kind(i) == 2 { page(i, 1) } else { ZEROS };
                    mem.check(i, &want, "read back after page_out");
                }
            });
        }
    });
    let s = pager.stats();
    assert_eq!(s.swap_ins, data, "each data page faulted in once");
    assert_eq!(
        s.zero_faults,
        84 + zeros + 12,
        "zero pages and untouched pages"
    );
    assert_eq!(s.faults, 84 + PAGES as u64);
    assert_eq!(s.resident_pages, PAGES as u64);
    assert_eq!(s.clean_pages, data, "read faults keep the tier's copy");
    assert_eq!(s.paged_out_pages, 0);
    assert_eq!((s.failed_faults, s.deferred_faults, s.panics), (0, 0, 0));
    // And again from memory: nothing faults.
    for i in 0..PAGES {
        let want = if kind(i) == 2 { page(i, 1) } else { ZEROS };
        mem.check(i, &want, "read again");
    }
    assert_eq!(pager.stats().faults, 84 + PAGES as u64);
}

/// `write_at` and `read_at` are accesses of the program's: bytes written across a page
/// boundary come back exactly after both pages are paged out (each read faults its page
/// back in), and the bytes around them stay zero.
#[test]
fn write_at_and_read_at_cross_pages_and_fault_them_back() {
    let _w = common::watchdog("round_trip", 300);
    let Some(pager) = common::pager_without_around(common::tier()) else {
        return;
    };
    let region = pager.region(4 * PAGE_SIZE).unwrap();
    let data: Vec<u8> = (0..3000u32).map(|i| (i * 7 + 1) as u8).collect();
    let at = 2 * PAGE_SIZE - 1000;
    region.write_at(at, &data).unwrap();
    assert_eq!(region.page_out(0, region.len()).unwrap(), 2);
    let mut back = vec![0u8; data.len() + 2];
    region.read_at(at - 1, &mut back).unwrap();
    assert_eq!(back[0], 0);
    assert_eq!(&back[1..=data.len()], &data[..]);
    assert_eq!(back[data.len() + 1], 0);
    assert_eq!(pager.stats().swap_ins, 2, "each page faulted back in once");
}
