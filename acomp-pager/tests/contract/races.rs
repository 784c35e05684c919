//! `page_out` write-protects each page before it reads it: a write racing a page-out is
//! never lost.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

use acomp_pager::PAGE_SIZE;

use crate::common::{self, Mem, page};

#[test]
fn writes_racing_page_out_are_never_lost() {
    let _w = common::watchdog("racing writers", 400);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    const WRITERS: usize = 3;
    const PAGES: usize = 96;
    const GENERATIONS: u32 = 60;
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    let cycles = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            // Page-out cycles over the whole region until every writer is done.
            while !stop.load(SeqCst) {
                region.page_out(0, region.len()).unwrap();
                cycles.fetch_add(1, SeqCst);
            }
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let (cycles, done) = (&cycles, &done);
                s.spawn(move || {
                    let own: Vec<usize> = (t..PAGES).step_by(WRITERS).collect();
                    for generation in 1..=GENERATIONS {
                        for &p in &own {
                            mem.write(p, &page(p, generation));
                        }
                        for &p in &own {
                            mem.check(p, &page(p, generation), "right after the write");
                        }
                        // Two more cycles: one that began after the writes went through them all.
                        let c0 = cycles.load(SeqCst);
                        while cycles.load(SeqCst) < c0 + 2 {
                            std::thread::yield_now();
                        }
                        for &p in &own {
                            mem.check(p, &page(p, generation), "after a page-out cycle");
                        }
                    }
                    done.fetch_add(1, SeqCst);
                })
            })
            .collect();
        for w in writers {
            if let Err(e) = w.join() {
                stop.store(true, SeqCst);
                std::panic::resume_unwind(e);
            }
        }
        stop.store(true, SeqCst);
    });
    assert_eq!(done.load(SeqCst), WRITERS as u64);
    assert!(cycles.load(SeqCst) >= 2 * u64::from(GENERATIONS));
    region.page_out(0, region.len()).unwrap();
    for p in 0..PAGES {
        mem.check(p, &page(p, GENERATIONS), "at the end");
    }
    let s = pager.stats();
    assert_eq!((s.failed_faults, s.panics), (0, 0));
}

/// Page-outs of one region from two threads at once, while the program drops pages of
/// another region of the pager with `MADV_DONTNEED`: every page-out moves all its pages.
/// (Each `MADV_DONTNEED`, the page-outs' own included, raises a remove event, and the
/// kernel refuses write-protection with `EAGAIN` until a handler has read it: page-out once
/// took that for the tier's refusal, `StorageFull`.)
#[test]
fn page_outs_from_threads_beside_madvise_all_succeed() {
    let _w = common::watchdog("concurrent page-outs", 400);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    const PAGES: usize = 256;
    const HALF: usize = PAGES / 2;
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let other = pager.region(16 * PAGE_SIZE).unwrap();
    let (mem, other_mem) = (Mem::of(&region), Mem::of(&other));
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0u32;
            while !stop.load(SeqCst) {
                other_mem.write(0, &page(0, i));
                other_mem.advise(0, 16, libc::MADV_DONTNEED).unwrap();
                i += 1;
            }
        });
        for round in 1..=30 {
            for p in 0..PAGES {
                mem.write(p, &page(p, round));
            }
            let (a, b) = std::thread::scope(|s| {
                let a = s.spawn(|| region.page_out(0, HALF * PAGE_SIZE));
                let b = s.spawn(|| region.page_out(HALF * PAGE_SIZE, HALF * PAGE_SIZE));
                (a.join().unwrap(), b.join().unwrap())
            });
            let moved = (a, b);
            if !matches!(moved, (Ok(HALF), Ok(HALF))) {
                stop.store(true, SeqCst);
                panic!("round {round}: the page-outs gave {moved:?}, not {HALF} pages each");
            }
            for p in 0..PAGES {
                mem.check(p, &page(p, round), "after the concurrent page-outs");
            }
        }
        stop.store(true, SeqCst);
    });
    let s = pager.stats();
    assert_eq!(s.swap_outs, 30 * PAGES as u64);
    assert_eq!((s.failed_faults, s.panics), (0, 0));
}
