//! Recompression into units (`Builder::recompress_unit_pages`): which pages join, the exact
//! bytes and counters, each page loading, leaving and being written back by itself, the
//! frame decoded once for a run of loads, and the races of the swap (a test hook holds the
//! pass after the pages were read and before they are compressed).

use super::*;
use acomp_zswap::FolioInfo;
use acomp_zswap::hooks::while_recompressing;

/// A tier of lz4 recompressing with zstd in units of `unit` pages, with a device.
fn unit_tier(unit: usize) -> (Zswap, Arc<common::MemDevice>) {
    let dev = Arc::new(common::MemDevice::default());
    let z = Zswap::builder(Acomp::new("lz4").unwrap())
        .max_pool_bytes(64 << 20)
        .device(Arc::clone(&dev))
        .recompress(Acomp::new("zstd").unwrap())
        .recompress_unit_pages(unit)
        .build()
        .unwrap();
    (z, dev)
}

/// Stores `page(o, 1)` at each of `offsets` and marks everything idle.
fn stored_idle(z: &Zswap, offsets: impl IntoIterator<Item = u64>) {
    for o in offsets {
        z.store(o, &page(o, 1)).unwrap();
    }
    z.mark_idle();
}

/// The zstd frame of `first..first + span`'s pages, with zero pages at `holes`.
fn unit_frame(first: u64, span: u64, holes: &[u64]) -> usize {
    let src: Vec<u8> = (first..first + span)
        .flat_map(|o| {
            if holes.contains(&o) {
                [0u8; PAGE_SIZE]
            } else {
                page(o, 1)
            }
        })
        .collect();
    let mut dst = vec![0u8; src.len()];
    Acomp::new("zstd")
        .unwrap()
        .compress(&[IoSlice::new(&src)], &mut [IoSliceMut::new(&mut dst)])
        .unwrap()
}

fn lz4_len(o: u64) -> usize {
    compressed_len(&Acomp::new("lz4").unwrap(), &page(o, 1))
}

/// 64 idle pages in one window, one loaded (hot): the other 63 become one unit whose frame
/// has a zero page in the hot page's slot; each loads back, the hot one stays lz4's.
#[test]
fn idle_pages_of_a_window_become_one_unit() {
    let (z, _) = unit_tier(64);
    stored_idle(&z, 0..64);
    let mut out = [0u8; PAGE_SIZE];
    z.load(5, &mut out).unwrap();
    assert_eq!(z.recompress_idle(usize::MAX), 63);
    let frame = unit_frame(0, 64, &[5]);
    let s = z.stats();
    assert_eq!(
        (
            s.stored_units,
            s.recompressed_unit_pages,
            s.recompressed_pages
        ),
        (1, 63, 63)
    );
    assert_eq!(
        (s.stored_folios, s.folio_pages, s.stored_pages),
        (1, 63, 64)
    );
    assert_eq!(s.stored_bytes, (frame + lz4_len(5)) as u64);
    let info = |o| match z.entry(o) {
        Some(EntryInfo::Folio(f)) => f,
        other => panic!("{o}: {other:?}"),
    };
    let f = info(63);
    assert_eq!((f.first, f.pages, f.length), (0, 64, frame));
    assert_eq!(info(0), f);
    assert_eq!(
        z.entry(5),
        Some(EntryInfo::Compressed { length: lz4_len(5) })
    );
    assert!(z.is_recompressed(0) && !z.is_recompressed(5));
    for o in (0..64).rev() {
        z.load(o, &mut out).unwrap();
        assert_eq!(check(o, &out), 1);
    }
    // The first of its 63 pages to leave makes the frame held.
    z.invalidate(0);
    let s = z.stats();
    assert_eq!((s.held_unit_pages, s.held_unit_bytes), (1, frame as u64));
    assert_eq!((s.held_folio_pages, s.held_folio_bytes), (1, frame as u64));
}

/// Windows are aligned: 60..68 idle in units of 64 gives a unit of 60..64 and one of
/// 64..68; a window with one idle page recompresses it alone.
#[test]
fn windows_are_aligned_and_a_lone_page_stays_single() {
    let (z, _) = unit_tier(64);
    stored_idle(&z, (60..68).chain([200]));
    assert_eq!(z.recompress_idle(usize::MAX), 9);
    let s = z.stats();
    assert_eq!((s.stored_units, s.recompressed_unit_pages), (2, 8));
    let first = |o| match z.entry(o) {
        Some(EntryInfo::Folio(FolioInfo { first, pages, .. })) => (first, pages),
        other => panic!("{o}: {other:?}"),
    };
    assert_eq!((first(63), first(64)), ((60, 4), (64, 4)));
    let zstd = compressed_len(&Acomp::new("zstd").unwrap(), &page(200, 1));
    assert_eq!(z.entry(200), Some(EntryInfo::Compressed { length: zstd }));
    assert!(z.is_recompressed(200));
}

/// Units of 1 page are recompression page by page; 0 and 65 are refused by the builder.
#[test]
fn unit_sizes_the_builder_takes() {
    let (z, _) = unit_tier(1);
    stored_idle(&z, 0..4);
    assert_eq!(z.recompress_idle(usize::MAX), 4);
    assert_eq!(z.stats().stored_units, 0);
    for n in [0, 65] {
        let e = Zswap::builder(Acomp::new("lz4").unwrap())
            .recompress_unit_pages(n)
            .build()
            .unwrap_err();
        assert_eq!(e, acomp_zswap::BuildError::BadUnit(n));
        assert_eq!(
            e.to_string(),
            format!("recompress_unit_pages {n} is not 1..=64 pages")
        );
    }
}

/// Pages leave a unit one by one (invalidated, taken, stored again, written back): the
/// held gauges count them and the frame's bytes until the last leaves, then all is freed.
#[test]
fn pages_leave_a_unit_by_themselves() {
    let (z, dev) = unit_tier(8);
    stored_idle(&z, 8..16);
    assert_eq!(z.recompress_idle(usize::MAX), 8);
    let frame = unit_frame(8, 8, &[]) as u64;
    let mut out = [0u8; PAGE_SIZE];
    z.invalidate(8);
    let s = z.stats();
    assert_eq!(
        (s.held_unit_pages, s.held_unit_bytes, s.stored_units),
        (1, frame, 1)
    );
    assert_eq!((s.held_folio_pages, s.held_folio_bytes), (1, frame));
    z.take(9, &mut out).unwrap();
    assert_eq!(check(9, &out), 1);
    z.store(10, &page(10, 2)).unwrap();
    // The LRU, coldest first: 11..16, then 10 (stored again).
    assert_eq!(z.writeback(3).unwrap(), 3);
    assert_eq!(z.stats().held_unit_pages, 6);
    assert_eq!(z.writeback(8).unwrap(), 3);
    for o in 11..16 {
        z.load(o, &mut out).unwrap();
        assert_eq!(check(o, &out), 1);
        assert!(z.on_device(o));
    }
    let s = z.stats();
    assert_eq!(
        (
            s.held_unit_pages,
            s.held_unit_bytes,
            s.stored_units,
            s.stored_folios
        ),
        (0, 0, 0, 0)
    );
    for o in 8..16 {
        z.invalidate(o);
    }
    let s = z.stats();
    assert_eq!(
        (s.stored_pages, s.stored_bytes, s.pool_used_size),
        (0, 0, 0)
    );
    assert_eq!(dev.pages.lock().len(), 0);
}

/// A page's load decodes the unit up to it (one range read); a second load from the
/// unit decodes the whole frame once (one decompression); further loads copy.
#[test]
fn a_run_of_loads_decodes_the_unit_once() {
    let (z, _) = unit_tier(16);
    stored_idle(&z, 16..32);
    assert_eq!(z.recompress_idle(usize::MAX), 16);
    let zstd = z.recompress_acomp().unwrap();
    let before = zstd.stats();
    let mut out = [0u8; PAGE_SIZE];
    let mut count = |o: u64| {
        z.load(o, &mut out).unwrap();
        assert_eq!(check(o, &out), 1);
        let s = zstd.stats();
        (s.decompress - before.decompress, s.range - before.range)
    };
    assert_eq!(count(20), (1, 1));
    assert_eq!(count(18), (1, 1)); // decoded already
    assert_eq!(count(21), (2, 1)); // the whole frame
    for o in 16..32 {
        assert_eq!(count(o), (2, 1));
    }
}

/// One race of the swap: `pages` idle pages in a window, and while the pass holds (after
/// reading them), `race` does something to page 1. Returns the tier after the pass.
fn raced(
    base: u64,
    pages: u64,
    race: impl Fn(&Zswap, u64) + Send + Sync + 'static,
) -> (Arc<Zswap>, usize) {
    let _hook = crate::RECOMPRESS_HOOK.lock();
    let (z, _) = unit_tier(64);
    let z = Arc::new(z);
    stored_idle(&z, base..base + pages);
    let hooked = Arc::downgrade(&z);
    while_recompressing(Some(Arc::new(move |o| {
        if o == base {
            if let Some(z) = hooked.upgrade() {
                race(&z, base + 1);
            }
        }
    })));
    let done = z.recompress_idle(usize::MAX);
    while_recompressing(None);
    (z, done)
}

/// The pages a unit serves, by offset.
fn unit_members(z: &Zswap, offsets: std::ops::Range<u64>) -> Vec<u64> {
    offsets
        .filter(|&o| matches!(z.entry(o), Some(EntryInfo::Folio(_))))
        .collect()
}

/// Offsets of the race tests, apart from every other test's (the hook is global).
const RACE: u64 = 0x4000_0000;

#[test]
fn a_store_during_the_pass_keeps_its_page_out_of_the_unit() {
    let (z, done) = raced(RACE, 8, |z, o| {
        z.store(o, &page(o, 2)).unwrap();
    });
    assert_eq!(done, 7);
    let mut members: Vec<u64> = (RACE..RACE + 8).collect();
    members.remove(1);
    assert_eq!(unit_members(&z, RACE..RACE + 8), members);
    let mut out = [0u8; PAGE_SIZE];
    z.load(RACE + 1, &mut out).unwrap();
    assert_eq!(check(RACE + 1, &out), 2);
    assert_eq!(z.stats().stored_units, 1);
}

#[test]
fn an_invalidate_during_the_pass_keeps_its_page_out_of_the_unit() {
    let b = RACE + 64;
    let (z, done) = raced(b, 8, |z, o| assert!(z.invalidate(o)));
    assert_eq!(done, 7);
    assert!(!z.contains(b + 1));
    let mut members: Vec<u64> = (b..b + 8).collect();
    members.remove(1);
    assert_eq!(unit_members(&z, b..b + 8), members);
    // The frame's bytes are the unit's alone: seven pages' entries, one frame (which holds
    // the page read before the invalidate, not served).
    let s = z.stats();
    assert_eq!((s.stored_pages, s.folio_pages), (7, 7));
    assert_eq!(s.stored_bytes, unit_frame(b, 8, &[]) as u64);
}

#[test]
fn a_load_during_the_pass_keeps_its_page_out_of_the_unit() {
    let b = RACE + 128;
    let (z, done) = raced(b, 8, |z, o| {
        let mut out = [0u8; PAGE_SIZE];
        z.load(o, &mut out).unwrap();
    });
    assert_eq!(done, 7);
    let mut members: Vec<u64> = (b..b + 8).collect();
    members.remove(1);
    assert_eq!(unit_members(&z, b..b + 8), members);
    assert_eq!(
        z.entry(b + 1),
        Some(EntryInfo::Compressed {
            length: lz4_len(b + 1)
        })
    );
}

#[test]
fn a_writeback_during_the_pass_keeps_its_page_out_of_the_unit() {
    let b = RACE + 192;
    // The LRU's coldest is b (stored first): write back two, b and b + 1.
    let (z, done) = raced(b, 8, |z, _| assert_eq!(z.writeback(2).unwrap(), 2));
    assert_eq!(done, 6);
    assert_eq!(
        unit_members(&z, b..b + 8),
        (b + 2..b + 8).collect::<Vec<_>>()
    );
    assert!(z.on_device(b) && z.on_device(b + 1));
    let mut out = [0u8; PAGE_SIZE];
    for o in b..b + 8 {
        z.load(o, &mut out).unwrap();
        assert_eq!(check(o, &out), 1);
    }
}

/// With fewer than two pages left unchanged, no unit: the frame is freed and the page
/// that stayed idle is tried again on the next pass (alone, a window of one).
#[test]
fn a_unit_of_one_is_not_kept() {
    let b = RACE + 256;
    let (z, done) = raced(b, 2, |z, o| {
        z.invalidate(o);
    });
    assert_eq!(done, 0);
    let s = z.stats();
    assert_eq!(
        (s.stored_units, s.stored_folios, s.pool_used_size),
        (0, 0, class(lz4_len(b)) as u64)
    );
    assert_eq!(z.recompress_idle(usize::MAX), 1);
    assert!(z.is_recompressed(b));
}

/// While a unit is compressed (the hook holds the pass there), loads and stores of its own
/// pages (its first page's too) and of other offsets of its first page's shard go on: the
/// pass holds no entry's lock and no shard's there. Each must complete while the hook waits (it gives up after 3 s, and the
/// test fails then rather than hangs). The page loaded and the page stored again leave the
/// unit: it is made of the other six.
#[test]
fn others_go_on_while_a_unit_compresses() {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::sync::mpsc::sync_channel;
    let _hook = crate::RECOMPRESS_HOOK.lock();
    let b = RACE + 512;
    let (z, _) = unit_tier(64);
    let z = Arc::new(z);
    stored_idle(&z, b..b + 8);
    z.store(b + 64, &page(b + 64, 1)).unwrap(); // b's shard, another window
    let (held_tx, held_rx) = sync_channel::<()>(1);
    let (go_tx, go_rx) = sync_channel::<()>(1);
    let (go_rx, gave_up) = (
        parking_lot::Mutex::new(go_rx),
        Arc::new(AtomicBool::new(false)),
    );
    let flag = Arc::clone(&gave_up);
    while_recompressing(Some(Arc::new(move |o| {
        if o == b {
            held_tx.send(()).unwrap();
            if go_rx.lock().recv_timeout(Duration::from_secs(3)).is_err() {
                flag.store(true, Relaxed);
            }
        }
    })));
    let pass = {
        let z = Arc::clone(&z);
        std::thread::spawn(move || z.recompress_idle(usize::MAX))
    };
    held_rx.recv().unwrap();
    let mut out = [0u8; PAGE_SIZE];
    z.load(b + 1, &mut out).unwrap();
    z.store(b, &page(b, 2)).unwrap();
    z.load(b + 64, &mut out).unwrap();
    z.store(b + 128, &page(b + 128, 1)).unwrap();
    assert!(z.invalidate(b + 128));
    let in_time = !gave_up.load(Relaxed);
    let _ = go_tx.send(());
    let done = pass.join().unwrap();
    while_recompressing(None);
    assert!(in_time, "a load or store waited for the unit's compression");
    assert_eq!(done, 6);
    assert_eq!(
        unit_members(&z, b..b + 8),
        (b + 2..b + 8).collect::<Vec<_>>()
    );
    z.load(b, &mut out).unwrap();
    assert_eq!(check(b, &out), 2);
}
