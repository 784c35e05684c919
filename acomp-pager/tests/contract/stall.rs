//! `resident_limit` when the reclaimer cannot keep it: a pool too small for the limit, or a
//! panic in the reclaimer. Faults go past the limit rather than wait for good, the stall is
//! counted once (and logged once), the victims it could not page out stay on its lists, and
//! once the tier has room again the limit holds again.

use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use acomp::Acomp;
use acomp_pager::{Error, PAGE_SIZE, Pager, Stats};
use acomp_zswap::{StoreError, Zswap};

use crate::common::{self, FailingReads, Mem, noisy_page};

/// The limit in pages (the least the builder takes) and the slack past it that faults take
/// before they wait (the crate docs: a sixteenth of the limit, at least 128 pages).
const LIMIT: usize = 64;
const SLACK: usize = 128;
/// Pages of each region: more than the limit and its slack, and their copies (about
/// 768 KiB) fit the 1 MiB pool once the filler has left it.
const PAGES: usize = 256;
/// Pages of the filler, and of the panic test's region: more than the pool holds.
const MANY: usize = 512;
/// Bytes of noise a page: about 3 KiB a page compressed.
const NOISE: usize = 3000;

/// Polls `pager`'s counters until `done` holds, for at most `secs`; the last snapshot.
fn wait_for(pager: &Pager, secs: u64, done: impl Fn(&Stats) -> bool) -> Stats {
    let mut s = pager.stats();
    common::wait_until(secs, || {
        s = pager.stats();
        done(&s)
    });
    s
}

#[test]
fn a_pool_too_small_for_the_limit_stalls_the_reclaimer_until_the_tier_has_room() {
    stalls_until_the_tier_has_room(false);
}

/// The same with faults served on the faulting thread, whose default direct reclaim pages
/// out a batch before each fault past the limit: stalled, the faults go past it without
/// each trying a batch the tier refuses again (a new user's trial took 2.2 s for what took
/// 0.4 s on the handler threads, 80,022 victims kept for 2,048 faults).
#[test]
fn a_stall_is_no_batch_a_fault_on_the_faulting_thread() {
    stalls_until_the_tier_has_room(true);
}

fn stalls_until_the_tier_has_room(signal: bool) {
    let _w = common::watchdog("stall", 300);
    let tier = common::tier_of(1 << 20);
    let b = Pager::builder(tier.clone())
        .resident_limit((LIMIT * PAGE_SIZE) as u64)
        .signal_faults(signal);
    let Some(pager) = common::build(b) else {
        return;
    };
    // A filler region of a second pager on the same tier, with no limit, takes the whole
    // pool: its page-out is refused with the tier's reason.
    let other = common::pager(tier.clone()).unwrap();
    let filler = other.region(MANY * PAGE_SIZE).unwrap();
    let fill = Mem::of(&filler);
    for p in 0..MANY {
        fill.write(p, &noisy_page(p, 9, NOISE));
    }
    match filler.page_out(0, filler.len()) {
        Err(Error::TierRefused {
            paged_out,
            source: StoreError::PoolFull,
        }) => assert!(
            paged_out > 100,
            "{paged_out} pages paged out before the refusal"
        ),
        other => panic!("the filler's page-out: {other:?}, not TierRefused(PoolFull)"),
    }

    // The second region's writes go past the limit: the reclaimer is refused, and stalls.
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    for p in 0..PAGES {
        mem.write(p, &noisy_page(p, 1, NOISE));
    }
    let s = wait_for(&pager, 10, |s| s.reclaim_stalls >= 1);
    assert_eq!(s.reclaim_stalls, 1, "{s:?}");
    assert!(s.reclaim_kept > 0, "{s:?}");
    assert!(
        s.resident_pages as usize > LIMIT + SLACK,
        "the faults went past the limit: {s:?}"
    );
    // Stalled, it retries every 50 ms without counting (or logging) a new stall each time.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(pager.stats().reclaim_stalls, 1);
    // Faults past the limit meanwhile (first writes of a region of their own) are served
    // without a refused batch each: the victims kept grow by the reclaimer's retries alone
    // (a batch every 50 ms at most), not by a batch a fault.
    let more = pager.region(PAGES * PAGE_SIZE).unwrap();
    let more_mem = Mem::of(&more);
    let kept = pager.stats().reclaim_kept;
    for p in 0..PAGES {
        more_mem.write(p, &noisy_page(p, 2, NOISE));
    }
    let s = pager.stats();
    assert!(
        s.reclaim_kept - kept < PAGES as u64,
        "{} victims kept for {PAGES} faults: {s:?}",
        s.reclaim_kept - kept
    );
    drop(more);

    // Room in the tier again (the filler's pages dropped): the limit holds again, its
    // victims taken from its lists as before.
    drop(filler);
    let s = wait_for(&pager, 20, |s| s.resident_pages as usize <= LIMIT);
    assert!(
        s.resident_pages as usize <= LIMIT,
        "the reclaimer did not resume: {s:?}"
    );
    for p in 0..PAGES {
        mem.check(p, &noisy_page(p, 1, NOISE), "after the stall");
    }
}

#[test]
fn a_panic_in_the_reclaimer_is_caught_and_loses_nothing() {
    let _w = common::watchdog("reclaimer panic", 300);
    let dev = Arc::new(FailingReads::default());
    // zstd at level 19 (about a millisecond a page): the reclaimer falls behind the writes,
    // so that faults wait for it before its first write-back panics.
    let slow = Acomp::with_zstd(acomp::ZstdParams::default().level(19)).unwrap();
    let tier = Arc::new(
        Zswap::builder(slow)
            .max_pool_bytes(256 << 10)
            .device(dev.clone())
            .build()
            .unwrap(),
    );
    let b = Pager::builder(tier).resident_limit((LIMIT * PAGE_SIZE) as u64);
    let Some(pager) = common::build(b) else {
        return;
    };
    // Every write-back to the device panics: the reclaimer's stores at the budget panic.
    dev.panic_writes.store(true, SeqCst);
    let region = pager.region(MANY * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    for p in 0..MANY {
        mem.write(p, &noisy_page(p, 1, NOISE));
    }
    let s = wait_for(&pager, 10, |s| s.panics >= 1);
    assert!(s.panics >= 1, "{s:?}");
    for p in 0..MANY {
        mem.check(p, &noisy_page(p, 1, NOISE), "after the reclaimer's panic");
    }
    // The faults it throttled were woken (with the thread gone they would sleep for good,
    // and the watchdog end the run); the region and the pager drop.
    assert!(
        s.throttled_faults > 0,
        "no fault waited for the reclaimer: {s:?}"
    );
    dev.panic_writes.store(false, SeqCst);
    drop(region);
    drop(pager);
}
