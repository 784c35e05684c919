//! `resident_limit`: a sweep over four times the limit leaves the regions within the limit
//! and its slack, and a hot set touched throughout comes back once and then stays.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use acomp::{Acomp, ZstdParams};
use acomp_pager::{PAGE_SIZE, Pager};
use acomp_zswap::Zswap;

use crate::common::{self, Mem, page};

/// The limit in pages, and the slack the crate docs give faults past it before they wait
/// for the reclaimer: a sixteenth of the limit, at least 128 pages.
const LIMIT: usize = 256;
const SLACK: usize = 128;
const HOT: usize = 32;
const COLD: usize = 4 * LIMIT;

/// A tier whose stores are slow (zstd at level 19: about a millisecond a page), so that the
/// reclaimer falls behind the sweep and faults reach the slack and wait.
fn slow_tier() -> Arc<Zswap> {
    let tfm = Acomp::with_zstd(ZstdParams::default().level(19)).unwrap();
    Arc::new(
        Zswap::builder(tfm)
            .max_pool_bytes(64 << 20)
            .build()
            .unwrap(),
    )
}

#[test]
fn a_sweep_stays_within_the_limit_and_a_hot_set_stays_resident() {
    let _w = common::watchdog("resident limit", 400);
    // Fault-around off: the hot pages are read in order, and fault-around would bring the
    // cold pages after them back in too (counted in `swap_ins`), which is not what this
    // test counts.
    let b = Pager::builder(slow_tier())
        .resident_limit((LIMIT * PAGE_SIZE) as u64)
        .fault_around(0);
    let Some(pager) = common::build(b) else {
        return;
    };
    let region = pager.region((HOT + COLD) * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    for p in 0..HOT {
        mem.write(p, &page(p, 1));
    }
    let mut most = 0;
    for (i, p) in (HOT..HOT + COLD).enumerate() {
        mem.write(p, &page(p, 1));
        most = most.max(pager.stats().resident_pages);
        if i % 64 == 63 {
            for h in 0..HOT {
                mem.check(h, &page(h, 1), "a hot page during the sweep");
                most = most.max(pager.stats().resident_pages);
            }
        }
    }
    let s = pager.stats();
    assert!(
        s.resident_pages <= (LIMIT + SLACK) as u64,
        "{} resident after the sweep, over the limit {LIMIT} and its slack {SLACK}",
        s.resident_pages
    );
    assert!(
        most <= (LIMIT + SLACK) as u64,
        "{most} resident during the sweep, over the limit {LIMIT} and its slack {SLACK}"
    );
    assert!(s.reclaimed > 0);
    // The cold pages are touched once: every swap-in is a hot page coming back, and each
    // comes back once at most.
    assert!(
        s.swap_ins <= HOT as u64,
        "{} swap-ins for {HOT} hot pages: a hot page was reclaimed again {s:?}",
        s.swap_ins,
    );
    assert_eq!(s.failed_faults, 0);
    for p in 0..HOT + COLD {
        mem.check(p, &page(p, 1), "after the sweep");
    }
}

/// Faults on four threads at once, each served on its own thread (`signal_faults`) and
/// reclaiming there first (its default direct reclaim), under the least limit: their
/// reclaims take every victim off the lists at times, which the reclaim thread once took
/// for a stall ("no resident page is on its lists"), turning direct reclaim and the
/// throttle off until the faults stopped (a new user's trial: 6,000-15,800 pages resident
/// under a 64-page limit). No stall, and the limit and its slack hold throughout.
#[test]
fn faults_reclaiming_on_many_threads_are_no_stall_and_the_limit_holds() {
    const LEAST: usize = 64;
    const THREADS: usize = 4;
    const PAGES: usize = 4096;
    let _w = common::watchdog("direct reclaim on many threads", 300);
    let b = Pager::builder(common::tier_of(256 << 20))
        .resident_limit((LEAST * PAGE_SIZE) as u64)
        .signal_faults(true);
    let Some(pager) = common::build(b) else {
        return;
    };
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    let most = AtomicU64::new(0);
    for generation in 1..=2 {
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (mem, pager, most) = (&mem, &pager, &most);
                s.spawn(move || {
                    for p in (t..PAGES).step_by(THREADS) {
                        mem.write(p, &page(p, generation));
                        most.fetch_max(pager.stats().resident_pages, Relaxed);
                    }
                    for p in (t..PAGES).step_by(THREADS).rev() {
                        mem.check(p, &page(p, generation), "read back by its writer");
                    }
                });
            }
        });
    }
    let s = pager.stats();
    assert_eq!(s.reclaim_stalls, 0, "{s:?}");
    assert_eq!(s.failed_faults, 0, "{s:?}");
    assert!(s.direct_reclaimed > 0, "{s:?}");
    let most = most.load(Relaxed);
    assert!(
        most <= (LEAST + SLACK) as u64,
        "{most} resident while the threads faulted, over the limit {LEAST} and its slack {SLACK}: {s:?}"
    );
}
