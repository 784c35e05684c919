//! `resident_limit`: a sweep over four times the limit leaves the regions within the limit
//! and its slack, and a hot set touched throughout comes back once and then stays.

use std::sync::Arc;

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
