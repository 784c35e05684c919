//! Dropping a region: nothing of it stays in the tier, and threads touching it get their
//! bytes or SIGSEGV, never zeros.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use acomp_pager::PAGE_SIZE;

use crate::common::{self, Mem, key, page};

#[test]
fn a_dropped_region_leaves_nothing_in_the_tier() {
    let _w = common::watchdog("region drop", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    let tier = pager.tier().clone();
    const PAGES: usize = 24;
    let (region, mem) = common::written(&pager, PAGES);
    assert_eq!(region.page_out(0, 16 * PAGE_SIZE).unwrap(), 16);
    for p in 8..16 {
        mem.check(p, &page(p, 1), "read back");
    }
    // 0-7 out, 8-15 clean, 16-23 resident.
    let t = tier.stats();
    assert_eq!((t.stored_pages, t.clean_pages), (16, 8));
    assert!(t.pool_total_size > 0);
    let keys: Vec<u64> = (0..PAGES).map(|p| key(&region, p)).collect();
    drop(region);
    let t = tier.stats();
    assert_eq!(
        (t.stored_pages, t.clean_pages, t.pool_total_size),
        (0, 0, 0),
        "the dropped region's pages stayed in the tier"
    );
    for k in keys {
        assert!(!tier.contains(k));
    }
    let s = pager.stats();
    assert_eq!(
        (s.paged_out_pages, s.clean_pages, s.resident_pages),
        (0, 0, 0)
    );

    // The pager goes on: a new region's pages round-trip.
    let region = pager.region(4 * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    for p in 0..4 {
        mem.write(p, &page(p, 2));
    }
    assert_eq!(region.page_out(0, region.len()).unwrap(), 4);
    assert!(tier.contains(key(&region, 0)));
    for p in 0..4 {
        mem.check(p, &page(p, 2), "a region made after the drop");
    }
}

const DROP_IN_FLIGHT: &str = "drop-in-flight";

/// Threads faulting pages in (reads of paged-out pages, and `MADV_DONTNEED` with reads
/// after it) while the region is dropped: the drop does not hang, and the threads, touching
/// the range after it is unmapped, get SIGSEGV (the crate docs). In a child process.
#[test]
fn dropping_a_region_with_faults_in_flight_ends_in_sigsegv_not_a_hang() {
    if common::is_child(DROP_IN_FLIGHT) {
        return drop_in_flight_child();
    }
    let Some(end) = common::in_child_process(
        module_path!(),
        "dropping_a_region_with_faults_in_flight_ends_in_sigsegv_not_a_hang",
        DROP_IN_FLIGHT,
        120,
    ) else {
        return;
    };
    assert!(
        end.stdout.contains("CHILD: faults in flight") && end.stdout.contains("CHILD: dropping"),
        "the child did not get to the drop: {end:?}"
    );
    assert_eq!(
        (end.code, end.signal),
        (None, Some(libc::SIGSEGV)),
        "the child's end: {end:?}"
    );
}

fn drop_in_flight_child() {
    let pager = common::pager(common::tier()).expect("userfaultfd, as in the parent");
    const PAGES: usize = 256;
    let (region, mem) = common::written(&pager, PAGES);
    region.page_out(0, region.len()).unwrap();
    let touched = Arc::new(AtomicU64::new(0));
    for t in 0..4 {
        let touched = touched.clone();
        std::thread::spawn(move || {
            let mut p = t;
            loop {
                if t % 2 == 1 {
                    // Dropped by the program, then faulted again: a fault every time.
                    let _ = mem.advise(p, 1, libc::MADV_DONTNEED);
                }
                mem.touch(p);
                touched.fetch_add(1, Relaxed);
                p = (p + 7) % PAGES;
            }
        });
    }
    while touched.load(Relaxed) < 2000 {
        std::thread::yield_now();
    }
    println!(
        "CHILD: faults in flight ({} touches)",
        touched.load(Relaxed)
    );
    println!("CHILD: dropping");
    drop(region);
    // The touching threads fault on the unmapped range: SIGSEGV ends the process. Should
    // they not, the child ends with a code the parent names.
    std::thread::sleep(std::time::Duration::from_secs(20));
    println!("CHILD: still alive after the drop");
    std::process::exit(3);
}

const DROP_READERS: &str = "drop-readers";

/// Threads reading paged-out pages (each names its index) while the region is dropped:
/// every read they finish has the page's bytes, and the first access after the drop made
/// the range inaccessible is SIGSEGV (the crate docs), never zeros. A reader that reads a
/// wrong word says which on stderr and `_exit`s with 3. In a child process.
#[test]
fn readers_racing_a_drop_read_their_bytes_or_get_sigsegv_never_zeros() {
    if common::is_child(DROP_READERS) {
        return drop_readers_child();
    }
    let Some(end) = common::in_child_process(
        module_path!(),
        "readers_racing_a_drop_read_their_bytes_or_get_sigsegv_never_zeros",
        DROP_READERS,
        120,
    ) else {
        return;
    };
    assert!(
        end.stdout.contains("CHILD: reading") && end.stdout.contains("CHILD: dropping"),
        "the child did not get to the drop: {end:?}"
    );
    assert!(
        !end.stderr.contains("CHILD: wrong"),
        "a reader read a wrong page while the region was dropped: {end:?}"
    );
    assert_eq!(
        (end.code, end.signal),
        (None, Some(libc::SIGSEGV)),
        "the child's end (3: a reader read a wrong page): {end:?}"
    );
}

/// Ends the process at once with code 3, saying on stderr that page `p` read `got`.
fn wrong(p: usize, got: u64) -> ! {
    let msg = format!("CHILD: wrong word {got:#x} at page {p}\n");
    // SAFETY: writes a live buffer to stderr, then ends the process without unwinding or
    // running anything else (the region's memory is not to be touched again).
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::_exit(3)
    }
}

fn drop_readers_child() {
    let pager = common::pager(common::tier_of(256 << 20)).expect("userfaultfd, as in the parent");
    const PAGES: usize = 32768;
    let (region, mem) = common::written(&pager, PAGES);
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    let read = Arc::new(AtomicU64::new(0));
    // Two readers, from the first page and from the middle, each reading the first word
    // and a word in the middle of every page once, then again in circles (the pages then
    // in memory).
    for start in [0, PAGES / 2] {
        let read = read.clone();
        std::thread::spawn(move || {
            let mut p = start;
            loop {
                let at = mem.addr(p);
                for off in [0, PAGE_SIZE / 2] {
                    // SAFETY: the word lies inside the region; after its drop the read is
                    // meant to get SIGSEGV.
                    let got = unsafe { std::ptr::read_volatile((at + off) as *const u64) };
                    if got != ((p as u64) << 32) | 1 {
                        wrong(p, got);
                    }
                }
                read.fetch_add(1, Relaxed);
                p = (p + 1) % PAGES;
            }
        });
    }
    while read.load(Relaxed) < 400 {
        std::thread::yield_now();
    }
    println!("CHILD: reading ({} pages read)", read.load(Relaxed));
    println!("CHILD: dropping");
    drop(region);
    // The readers fault on the inaccessible range: SIGSEGV ends the process. Should they
    // not, the child ends with a code the parent names.
    std::thread::sleep(std::time::Duration::from_secs(20));
    println!("CHILD: still alive after the drop");
    std::process::exit(4);
}

const DROP_RECLAIMING: &str = "drop-reclaiming";
const ROUNDS: u32 = 100;

/// Regions dropped while the reclaimer pages them out (each written past the resident
/// limit by four threads, faster than the reclaimer, then dropped at once), again and
/// again: nothing crashes (a pager thread reading a page the drop made inaccessible would
/// die of SIGSEGV, and the process with it), nothing hangs, and no page is left counted. The
/// window it aims at is a few hundred nanoseconds: the drop without its wait for page-outs
/// passes it too (TESTING.md). In a child process.
#[test]
fn regions_dropped_while_the_reclaimer_pages_them_out_crash_nothing() {
    if common::is_child(DROP_RECLAIMING) {
        return drop_reclaiming_child();
    }
    let Some(end) = common::in_child_process(
        module_path!(),
        "regions_dropped_while_the_reclaimer_pages_them_out_crash_nothing",
        DROP_RECLAIMING,
        240,
    ) else {
        return;
    };
    assert!(
        end.stdout
            .contains(&format!("CHILD: {ROUNDS} regions dropped")),
        "the child did not get through its drops: {end:?}"
    );
    assert_eq!((end.code, end.signal), (Some(0), None), "{end:?}");
}

fn drop_reclaiming_child() {
    const LIMIT: usize = 128;
    const PAGES: usize = 8 * LIMIT;
    let b = acomp_pager::Pager::builder(common::tier()).resident_limit((LIMIT * PAGE_SIZE) as u64);
    let pager = common::build(b).expect("userfaultfd, as in the parent");
    // Drops that found the regions over the limit: the reclaimer at work on them.
    let mut behind = 0;
    for round in 0..ROUNDS {
        let region = pager.region(PAGES * PAGE_SIZE).unwrap();
        let mem = Mem::of(&region);
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    for p in (t..PAGES).step_by(4) {
                        mem.write(p, &page(p, round));
                    }
                });
            }
        });
        if pager.stats().resident_pages > LIMIT as u64 {
            behind += 1;
        }
        drop(region);
    }
    let s = pager.stats();
    assert_eq!((s.resident_pages, s.paged_out_pages), (0, 0), "{s:?}");
    println!("CHILD: {ROUNDS} regions dropped, {behind} with the reclaimer behind");
    std::process::exit(0);
}
