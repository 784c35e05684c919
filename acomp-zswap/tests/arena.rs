//! The pool's arena seen from the tier: backing pages reused without zeroing, whole chunks
//! given back to the kernel after mass invalidation (mapped still, not resident: the
//! kernel's own count, `mincore`, says so), and chunks added ahead of the stores. The tests
//! that count chunks exactly turn growth ahead off, whose chunk comes when its thread adds
//! it.

mod common;

use acomp::Acomp;
use std::time::{Duration, Instant};

use acomp_zswap::pool::{ARENA_HIGH_PAGES, CHUNK_PAGES, CHUNK_SIZE, GROW_AHEAD_PAGES, TRIM_SLACK};
use acomp_zswap::{PAGE_SIZE, Page, PoolStats, StoreKind, Zswap};
use common::{check, mix, page};

/// A tier whose stores map the chunks they need (no growth ahead): chunk counts are exact.
fn tier() -> Zswap {
    Zswap::builder(Acomp::new("lz4").unwrap())
        .arena_thread(false)
        .build()
        .unwrap()
}

/// A tier with growth ahead, the default.
fn ahead_tier() -> Zswap {
    Zswap::builder(Acomp::new("lz4").unwrap()).build().unwrap()
}

/// The pool's counters once `done` holds of them, or after 20 s (a thread maps the chunk).
fn settled(z: &Zswap, done: impl Fn(&PoolStats) -> bool) -> PoolStats {
    let start = Instant::now();
    loop {
        let s = z.pool_stats();
        if done(&s) || start.elapsed() > Duration::from_secs(20) {
            return s;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A page of random bytes: kept as it is, a whole backing page.
fn noise(seed: u64) -> Page {
    let mut p = [0u8; PAGE_SIZE];
    let mut s = seed;
    for w in p.chunks_exact_mut(8) {
        s = mix(s);
        w.copy_from_slice(&s.to_le_bytes());
    }
    p
}

/// The kernel's count of the arena's resident pages (`mincore`): the pages in zspages and
/// the free pages kept resident, and none of the chunks given back whole. Pages given back
/// one by one may be resident again, as zeros, where the system's THP setting is `always`
/// and khugepaged collapsed their chunk into a huge page meanwhile (it fills a huge page's
/// missing pages, up to `max_ptes_none`, 511 by default): so at most those too.
fn assert_resident(z: &Zswap, s: &PoolStats) {
    let resident = z.pool_resident_pages();
    let kept = s.pages + s.cached_pages;
    assert!(
        (kept..=kept + s.released_pages).contains(&resident),
        "{resident} pages resident: {s:?}"
    );
}

#[test]
fn stale_bytes_of_reused_pages_never_load_as_a_page() {
    let z = tier();
    // Two chunks of backing pages full of random bytes, then all invalidated: the pages go
    // back to the arena as they are.
    for offset in 0..2 * CHUNK_PAGES as u64 {
        assert_eq!(
            z.store(offset, &noise(offset)).unwrap(),
            StoreKind::Incompressible
        );
    }
    assert_eq!(z.pool_stats().chunks, 2);
    for offset in 0..2 * CHUNK_PAGES as u64 {
        z.invalidate(offset);
    }
    let s = z.pool_stats();
    assert_eq!((s.chunks, s.released_chunks), (1, 1));
    // Frames shorter than their objects, in pages that held other bytes: each loads whole.
    let n = 400;
    for offset in 0..n {
        assert_eq!(
            z.store(offset, &page(offset, 1)).unwrap(),
            StoreKind::Compressed
        );
    }
    let s = z.pool_stats();
    assert_eq!(
        (s.chunks, s.released_chunks),
        (1, 1),
        "the kept chunk served the stores"
    );
    let mut back = [0u8; PAGE_SIZE];
    for offset in 0..n {
        z.load(offset, &mut back).unwrap();
        assert_eq!(check(offset, &back), 1);
    }
}

#[test]
fn mass_invalidation_gives_whole_chunks_back() {
    let z = tier();
    let n = 20_000u64;
    for offset in 0..n {
        z.store(offset, &page(offset, 7)).unwrap();
    }
    let full = z.pool_stats();
    assert!(full.chunks >= 16, "{full:?}");
    // The arena's memory is the pool's plus the free pages it keeps, whole chunks.
    assert_eq!(full.released_chunks, 0);
    assert_eq!(full.arena_size(), full.chunks * CHUNK_SIZE);
    assert_eq!(
        full.pages + full.cached_pages + full.released_pages,
        full.chunks * CHUNK_PAGES
    );
    assert_eq!(
        z.pool_resident_pages(),
        full.pages + full.cached_pages,
        "{full:?}"
    );
    for offset in 0..n {
        z.invalidate(offset);
    }
    let s = z.pool_stats();
    assert_eq!((s.pages, s.objects), (0, 0));
    // The kernel has the rest back: every chunk given back whole but the one kept below the
    // mark, still mapped for the next growth.
    assert_eq!((s.chunks, s.released_chunks), (1, full.chunks - 1));
    assert_eq!(s.cached_pages + s.released_pages, CHUNK_PAGES);
    assert!(s.cached_pages <= ARENA_HIGH_PAGES, "{s:?}");
    assert_eq!(s.arena_size(), full.arena_size());
    // RSS fell: of all those chunks, only the kept chunk's pages may be resident.
    assert_resident(&z, &s);
}

#[test]
fn scattered_invalidation_gives_free_pages_back() {
    // Every other page invalidated, then compaction: zspages empty, but no chunk does. The
    // free pages beyond the mark go back to the kernel one by one; the resident memory of
    // the backing pages stays within a chunk of the pool's size.
    let z = tier();
    let full = invalidate_every_other(&z);
    let s = z.pool_stats();
    assert!(
        s.pages < full.pages * 6 / 10,
        "compaction freed zspages: {s:?}"
    );
    assert_eq!(
        (s.chunks, s.released_chunks),
        (full.chunks, 0),
        "no chunk emptied: {s:?}"
    );
    assert!(s.cached_pages <= ARENA_HIGH_PAGES, "{s:?}");
    assert_eq!(
        s.pages + s.cached_pages + s.released_pages,
        s.chunks * CHUNK_PAGES
    );
    assert!(
        s.resident_size() <= s.total_size() + CHUNK_SIZE,
        "resident {} against a pool of {}",
        s.resident_size(),
        s.total_size()
    );
    assert_resident(&z, &s);
    stores_after_invalidation_load_whole(&z);
}

/// Pages stored by the scattered-invalidation tests (seed 5).
const SCATTERED: u64 = 20_000;

/// [`SCATTERED`] pages stored, every other by a hash invalidated, then compaction (which
/// empties zspages but no chunk); the counters with every page stored.
fn invalidate_every_other(z: &Zswap) -> PoolStats {
    for offset in 0..SCATTERED {
        z.store(offset, &page(offset, 5)).unwrap();
    }
    let full = z.pool_stats();
    for offset in (0..SCATTERED).filter(|o| mix(*o) % 2 == 0) {
        z.invalidate(offset);
    }
    z.compact();
    full
}

/// After [`invalidate_every_other`]: the free pages (resident or given back) serve 4,000 new
/// stores, which load whole, and the pages kept load as stored.
fn stores_after_invalidation_load_whole(z: &Zswap) {
    let n = SCATTERED;
    let mut back = [0u8; PAGE_SIZE];
    for offset in n..n + 4000 {
        z.store(offset, &page(offset, 6)).unwrap();
    }
    for offset in n..n + 4000 {
        z.load(offset, &mut back).unwrap();
        assert_eq!(check(offset, &back), 6);
    }
    for offset in (0..n).filter(|o| mix(*o) % 2 != 0) {
        z.load(offset, &mut back).unwrap();
        assert_eq!(check(offset, &back), 5);
    }
}

#[test]
fn growth_ahead_maps_the_next_chunk_before_a_store_needs_it() {
    // Whole pages until fewer than GROW_AHEAD_PAGES of the first chunk are free: the next
    // chunk is mapped by the arena's thread, with no store waiting for it.
    let z = ahead_tier();
    let n = (CHUNK_PAGES - GROW_AHEAD_PAGES + 1) as u64;
    for offset in 0..n {
        z.store(offset, &noise(offset)).unwrap();
    }
    let s = settled(&z, |s| s.chunks == 2);
    assert_eq!((s.pages, s.chunks), (n as usize, 2), "{s:?}");
    assert_eq!(s.cached_pages, 2 * CHUNK_PAGES - n as usize);
    assert!(s.resident_size() < s.total_size() + 2 * CHUNK_SIZE);
    // The stores that take its pages find them there: no third chunk.
    for offset in n..CHUNK_PAGES as u64 + 100 {
        z.store(offset, &noise(offset)).unwrap();
    }
    assert_eq!(z.pool_stats().chunks, 2);
    let mut back = [0u8; PAGE_SIZE];
    for offset in 0..CHUNK_PAGES as u64 + 100 {
        z.load(offset, &mut back).unwrap();
        assert!(back == noise(offset), "page {offset}");
    }
    // Without growth ahead, nothing is mapped before a store needs it.
    let z = tier();
    for offset in 0..n {
        z.store(offset, &noise(offset)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(z.pool_stats().chunks, 1);
}

#[test]
fn the_arenas_thread_gives_free_pages_back_in_runs() {
    // Scattered invalidation and compaction with the arena's thread on: the frees keep their
    // pages, and the thread gives those beyond the mark back (in runs, outside the frees).
    // A free asks it once more than the mark and its slack are resident, so that frees
    // made while it trims may leave up to that many.
    let z = ahead_tier();
    invalidate_every_other(&z);
    let bound = ARENA_HIGH_PAGES + TRIM_SLACK;
    let s = settled(&z, |s| s.cached_pages <= bound);
    assert!(s.cached_pages <= bound, "{s:?}");
    assert!(s.released_pages > 0, "{s:?}");
    assert_eq!(
        s.pages + s.cached_pages + s.released_pages,
        s.chunks * CHUNK_PAGES
    );
    assert_resident(&z, &s);
    stores_after_invalidation_load_whole(&z);
}

#[test]
fn chunks_come_and_go_under_threads() {
    let z = tier();
    chunks_come_and_go(&z);
    let s = z.pool_stats();
    assert_eq!((s.pages, s.objects), (0, 0));
    assert_eq!(s.chunks, 1);
    assert_eq!(s.cached_pages + s.released_pages, CHUNK_PAGES);
    assert_resident(&z, &s);
    // With growth ahead, a chunk may be mapped ahead at the end: every page still loads as
    // stored while the arena's thread maps and the takers wait for it.
    let z = ahead_tier();
    chunks_come_and_go(&z);
    let s = settled(&z, |s| s.chunks <= 2);
    assert_eq!((s.pages, s.objects), (0, 0));
    assert!(s.chunks <= 2, "{s:?}");
}

/// Two threads each store and invalidate more than a chunk's worth of whole pages, ten
/// rounds, loading each page back before it goes: chunks are mapped, shared and given back
/// while the other thread reads and writes its own pages in them.
fn chunks_come_and_go(z: &Zswap) {
    std::thread::scope(|s| {
        for t in 0..2u64 {
            s.spawn(move || {
                let mut back = [0u8; PAGE_SIZE];
                for round in 0..10u64 {
                    let base = t << 32 | round << 16;
                    for i in 0..CHUNK_PAGES as u64 + 100 {
                        z.store(base + i, &noise(base + i)).unwrap();
                    }
                    for i in 0..CHUNK_PAGES as u64 + 100 {
                        z.load(base + i, &mut back).unwrap();
                        assert!(
                            back == noise(base + i),
                            "thread {t}, round {round}, page {i}"
                        );
                        z.invalidate(base + i);
                    }
                }
            });
        }
    });
}
