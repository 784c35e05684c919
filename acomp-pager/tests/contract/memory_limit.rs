//! `memory_limit`: the regions' resident pages and the tier's pool together stay within
//! the limit (and a batch the reclaimer stored since it last read the pool's size); a page faulted in under it gives up its
//! copy (memory counted once), so that its first write takes no fault; with the faults
//! served by the handler threads or on the faulting thread alike; on the faulting thread,
//! the faults page out what the limit needs themselves (`direct_reclaim`), unless told not
//! to.

use acomp_pager::{PAGE_SIZE, Pager};

use crate::common::{self, Mem, noisy_page};

/// The pages, the resident pages the limit leaves beside the pool of them all, and what the
/// crate docs let the memory go past the limit: a batch of 32 pages the reclaimer stored
/// since it last read the pool's size.
const PAGES: usize = 2048;
const ROOM: usize = 512;
const SLACK: usize = 32;

fn body(p: usize, generation: u32) -> acomp_zswap::Page {
    noisy_page(p, generation, 1000)
}

/// How the faults are served: by the handler threads, or on the faulting thread with
/// direct reclaim on or off.
#[derive(Clone, Copy, PartialEq)]
enum Faults {
    Threads,
    Signal { direct: bool },
}

fn run(faults: Faults) {
    let signal = faults != Faults::Threads;
    // The limit: the pool of every page, and room for ROOM pages beside it.
    let probe = common::tier();
    for p in 0..PAGES {
        probe.store(p as u64, &body(p, 2)).unwrap();
    }
    let limit = probe.stats().pool_total_size as usize / PAGE_SIZE + ROOM;
    let tier = common::tier();
    let b = Pager::builder(tier.clone())
        .memory_limit((limit * PAGE_SIZE) as u64)
        .signal_faults(signal)
        .direct_reclaim(faults != Faults::Signal { direct: false });
    let Some(pager) = common::build(b) else {
        return;
    };
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    // The pool first, then the resident pages: meanwhile only the reclaimer runs (and, with
    // handler threads, the end of this thread's last fault), and each makes a page's new
    // copy before it drops the old one, so the sum is no more than memory held at one
    // moment, to within a page. Read the other way round, a thread preempted between the
    // reads added the pool of batches stored since to resident pages they had dropped:
    // 1,280 pages counted against a limit of 1,196, never held at once.
    let memory = || {
        let pool = tier.stats().pool_total_size as usize;
        (pager.stats().resident_pages as usize * PAGE_SIZE + pool) / PAGE_SIZE
    };
    let mut most = 0;
    for p in 0..PAGES {
        mem.write(p, &body(p, 1));
        most = most.max(memory());
    }
    // Reads in a scattered order, then every fourth page written.
    let mut x = 1u64;
    for _ in 0..PAGES {
        x = common::mix(x);
        let p = x as usize % PAGES;
        mem.check(p, &body(p, 1), "read under the limit");
        most = most.max(memory());
    }
    let before = pager.stats();
    for p in (0..PAGES).step_by(4) {
        mem.write(p, &body(p, 2));
        most = most.max(memory());
    }
    let s = pager.stats();
    assert!(
        most <= limit + SLACK,
        "{most} pages of memory at most (resident and pool), over the limit {limit} and its \
         slack {SLACK}: {s:?}"
    );
    assert!(s.reclaimed > 0 && s.swap_ins > 0, "{s:?}");
    if faults == (Faults::Signal { direct: true }) {
        // One thread faulting under the limit: its faults page out what it needs, the
        // reclaim thread woken only past the limit (a batch stored since the pool's size
        // was read).
        assert!(
            s.direct_reclaimed * 10 >= s.reclaimed * 9,
            "{} of {} pages reclaimed by the faults themselves: {s:?}",
            s.direct_reclaimed,
            s.reclaimed
        );
    } else {
        assert_eq!(s.direct_reclaimed, 0, "{s:?}");
    }
    // Over two thousand reads past the limit: a copy is kept only while the pages are under
    // the low watermark (room for both), so few are; and only such a page's first write
    // faults.
    assert!(
        before.clean_pages < ROOM as u64 / 4,
        "{} clean copies kept under the limit: {before:?}",
        before.clean_pages
    );
    assert!(
        s.write_protect_faults - before.write_protect_faults <= before.clean_pages,
        "a page faulted in without its copy is writable: its first write takes no fault: \
         {s:?}"
    );
    assert_eq!((s.failed_faults, s.panics), (0, 0));
    for p in 0..PAGES {
        let generation = if p % 4 == 0 { 2 } else { 1 };
        mem.check(p, &body(p, generation), "at the end");
    }
}

#[test]
fn memory_stays_within_the_limit_with_faults_on_handler_threads() {
    let _w = common::watchdog("memory limit", 300);
    run(Faults::Threads);
}

#[test]
fn memory_stays_within_the_limit_with_faults_on_the_faulting_thread() {
    let _w = common::watchdog("memory limit, signal faults", 300);
    run(Faults::Signal { direct: true });
}

#[test]
fn memory_stays_within_the_limit_with_faults_waiting_for_the_reclaim_thread() {
    let _w = common::watchdog("memory limit, signal faults, no direct reclaim", 300);
    run(Faults::Signal { direct: false });
}
