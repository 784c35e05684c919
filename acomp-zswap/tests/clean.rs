//! Clean copies ([`Zswap::load_clean`]): a page faulted back in for reading keeps its entry,
//! which the tier drops first at its budget, never writes back, and hands back with
//! `clear_clean` only while it still holds it.

mod common;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Barrier, mpsc};
use std::time::Duration;

use acomp::Acomp;
use acomp_zswap::{LoadError, PAGE_SIZE, Page, Zswap};
use parking_lot::Mutex;

use common::{MemDevice, page_with, within_budget};

/// Pages of one size class, so that any freed object fits any page: one body, the
/// offset in the first 8 bytes.
fn one_class(o: u64) -> Page {
    let mut p = page_with(0, 0, 1000);
    p[..8].copy_from_slice(&o.to_le_bytes());
    p
}

fn tier(pages: u64, device: Option<Arc<MemDevice>>) -> Zswap {
    let b = Zswap::builder(Acomp::new("lz4").unwrap()).max_pool_bytes(pages * PAGE_SIZE as u64);
    match device {
        Some(d) => b.device(d).build().unwrap(),
        None => b.build().unwrap(),
    }
}

/// Stores [`one_class`] pages at `from..` until the pool has hit its budget once (with a
/// device) or a store is refused (without one); returns the first offset not stored.
fn fill(z: &Zswap, from: u64) -> u64 {
    let mut o = from;
    while z.stats().pool_limit_hit == 0 {
        if z.store(o, &one_class(o)).is_err() {
            return o;
        }
        o += 1;
    }
    o
}

/// A tier of 40 pages with no device, filled from `base` until a store is refused
/// ([`fill`]), its first ten pages then loaded as clean copies; and the offset refused.
fn full_of_clean_copies(base: u64) -> (Arc<Zswap>, u64) {
    let z = Arc::new(tier(40, None));
    let mut out = [0u8; PAGE_SIZE];
    let refused = fill(&z, base);
    for o in base..base + 10 {
        z.load_clean(o, &mut out).unwrap();
    }
    (z, refused)
}

/// With a device: at the budget, the oldest clean copies go before anything is written
/// back; each `clear_clean` says whether its copy is still there.
#[test]
fn clean_copies_are_dropped_before_anything_is_written_back() {
    let dev = Arc::new(MemDevice::default());
    let z = tier(40, Some(Arc::clone(&dev)));
    const CLEAN: u64 = 20;
    let mut out = [0u8; PAGE_SIZE];
    for o in 0..CLEAN {
        z.store(o, &one_class(o)).unwrap();
    }
    for o in 0..CLEAN {
        z.load_clean(o, &mut out).unwrap();
        assert!(out == one_class(o));
    }
    // A load of a clean copy keeps it clean.
    z.load(3, &mut out).unwrap();
    assert_eq!(z.stats().clean_pages, CLEAN);
    let next = fill(&z, CLEAN);
    let s = z.stats();
    assert_eq!(s.pool_limit_hit, 1);
    assert_eq!(
        s.written_back_pages, 0,
        "an ordinary page went before a clean copy"
    );
    assert_eq!(dev.writes.load(Relaxed), 0);
    within_budget(&z);
    // The seven oldest: the objects of the first zspage (4 pages of 7 objects of the 2320-byte
    // class), whose emptying takes the pool from 40 pages to the threshold, 36.
    let dropped = s.clean_dropped;
    assert_eq!(dropped, 7);
    assert_eq!(s.clean_pages, CLEAN - dropped);
    assert_eq!(s.stored_pages, next - dropped);
    // Oldest first: the first marked went first.
    for o in 0..CLEAN {
        let held = o >= dropped;
        assert_eq!(z.clear_clean(o), held, "offset {o}");
        assert_eq!(z.load(o, &mut out).is_ok(), held, "offset {o}");
    }
    assert_eq!(z.stats().clean_pages, 0);
    // Not clean: true; absent: false.
    assert!(z.clear_clean(CLEAN));
    assert!(!z.clear_clean(1 << 40));
    // Cleared copies are ordinary entries again: written back, not dropped.
    z.writeback(4).unwrap();
    assert_eq!(z.stats().written_back_pages, 4);
    assert_eq!(z.stats().clean_dropped, dropped);
}

/// `writeback` on demand never writes a clean copy.
#[test]
fn writeback_leaves_clean_copies() {
    let z = tier(64, Some(Arc::new(MemDevice::default())));
    let mut out = [0u8; PAGE_SIZE];
    for o in 0..10 {
        z.store(o, &one_class(o)).unwrap();
    }
    for o in 0..4 {
        z.load_clean(o, &mut out).unwrap();
    }
    assert_eq!(z.writeback(100).unwrap(), 6);
    for o in 0..4 {
        assert!(!z.on_device(o) && z.clear_clean(o), "offset {o}");
    }
    assert_eq!(z.writeback(100).unwrap(), 4);
}

/// Without a device: a store at the budget drops clean copies rather than being refused.
#[test]
fn without_a_device_clean_copies_make_room() {
    let z = tier(40, None);
    let refused = fill(&z, 0);
    assert_eq!(z.stats().reject_reclaim_fail, 1);
    let mut out = [0u8; PAGE_SIZE];
    for o in 0..10 {
        z.load_clean(o, &mut out).unwrap();
    }
    z.store(refused, &one_class(refused)).unwrap();
    let s = z.stats();
    assert_eq!(
        s.reject_reclaim_fail, 1,
        "refused with clean copies to drop"
    );
    // As above: the first zspage's 7 objects.
    assert_eq!(s.clean_dropped, 7);
    assert_eq!(s.clean_pages, 10 - s.clean_dropped);
    within_budget(&z);
    z.load(refused, &mut out).unwrap();
    assert!(out == one_class(refused));
    for o in 0..10 {
        assert_eq!(z.clear_clean(o), o >= s.clean_dropped, "offset {o}");
    }
}

/// A store at the offset, `invalidate` and `take` end the mark with the entry: the new page
/// is an ordinary entry, never dropped as clean.
#[test]
fn a_store_invalidate_or_take_ends_the_mark() {
    let z = tier(40, None);
    let mut out = [0u8; PAGE_SIZE];
    for o in 0..3 {
        z.store(o, &one_class(o)).unwrap();
        z.load_clean(o, &mut out).unwrap();
    }
    assert_eq!(z.stats().clean_pages, 3);
    let mut new = one_class(0);
    new[100] ^= 1;
    z.store(0, &new).unwrap();
    assert!(z.invalidate(1));
    z.take(2, &mut out).unwrap();
    assert_eq!(z.stats().clean_pages, 0);
    // At the budget: nothing clean to drop, so the store is refused and offset 0 stays.
    let refused = fill(&z, 10);
    assert!(z.store(refused, &one_class(refused)).is_err());
    let s = z.stats();
    assert_eq!((s.clean_dropped, s.reject_reclaim_fail), (0, 2));
    z.load(0, &mut out).unwrap();
    assert!(out == new);
}

/// `clear_clean` racing the shrinker's drop of the same entry, held in the drop's window
/// (after the shrinker found the entry clean, before it takes it out) by a test hook:
/// `clear_clean` waits for the drop and says the copy is gone.
#[test]
fn clear_clean_waits_for_a_drop_under_way() {
    const BASE: u64 = 1 << 50;
    let (z, refused) = full_of_clean_copies(BASE);
    let mut out = [0u8; PAGE_SIZE];
    let (tx, rx) = mpsc::channel();
    let once = Arc::new(AtomicBool::new(false));
    let hook = {
        let (z, once) = (Arc::clone(&z), Arc::clone(&once));
        let tx = Mutex::new(tx);
        move |o: u64| {
            if o != BASE || once.swap(true, Relaxed) {
                return;
            }
            let z = Arc::clone(&z);
            let tx = tx.lock().clone();
            std::thread::spawn(move || tx.send(z.clear_clean(BASE)).unwrap());
            // Long enough for a clear_clean that does not wait to return before the drop.
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    acomp_zswap::hooks::while_dropping_clean(Some(Arc::new(hook)));
    let stored = z.store(refused, &one_class(refused));
    acomp_zswap::hooks::while_dropping_clean(None);
    stored.unwrap();
    assert!(once.load(Relaxed), "the hook ran");
    assert!(
        !rx.recv().unwrap(),
        "clear_clean said a dropped copy is held"
    );
    assert!(matches!(z.load(BASE, &mut out), Err(LoadError::NotFound)));
    assert!(z.stats().clean_dropped >= 1);
}

/// `clear_clean` completing after the shrinker took the copy out of the clean list and
/// before it locked the entry (a test hook holds it there): the shrinker finds the mark
/// cleared under the lock and keeps the entry, which `clear_clean` said is held.
#[test]
fn a_copy_cleared_before_the_drop_locks_it_stays() {
    const BASE: u64 = 1 << 51;
    let (z, refused) = full_of_clean_copies(BASE);
    let mut out = [0u8; PAGE_SIZE];
    let cleared = Arc::new(Mutex::new(None));
    let hook = {
        let (z, cleared) = (Arc::clone(&z), Arc::clone(&cleared));
        move |o: u64| {
            let mut c = cleared.lock();
            if o == BASE && c.is_none() {
                *c = Some(z.clear_clean(BASE));
            }
        }
    };
    acomp_zswap::hooks::before_dropping_clean(Some(Arc::new(hook)));
    let stored = z.store(refused, &one_class(refused));
    acomp_zswap::hooks::before_dropping_clean(None);
    stored.unwrap();
    assert_eq!(*cleared.lock(), Some(true));
    z.load(BASE, &mut out).unwrap();
    assert!(out == one_class(BASE));
    let s = z.stats();
    // Seven others went instead (the first zspage's six others and the next one); the
    // kept entry was moved out of its zspage by the compaction that ends the drop.
    assert_eq!(
        (s.clean_dropped, s.compacted_objects, s.clean_pages),
        (7, 1, 2)
    );
}

/// Many `clear_clean`s racing stores at the budget that drop clean copies: each `true` is an
/// entry still held (it loads, whole), each `false` one dropped; the counts match.
#[test]
fn clear_clean_racing_the_shrinker_never_claims_a_dropped_copy() {
    const N: u64 = 100;
    for round in 0..8 {
        let z = tier(64, None);
        let mut out = [0u8; PAGE_SIZE];
        for o in 0..N {
            z.store(o, &one_class(o)).unwrap();
            z.load_clean(o, &mut out).unwrap();
        }
        let go = Barrier::new(2);
        let held: Vec<bool> = std::thread::scope(|s| {
            s.spawn(|| {
                go.wait();
                for o in 1000..1400 {
                    let _ = z.store(o, &one_class(o));
                }
            });
            go.wait();
            // From the end, so that the shrinker (oldest first) and this meet.
            let mut held: Vec<bool> = (0..N).rev().map(|o| z.clear_clean(o)).collect();
            held.reverse();
            held
        });
        let s = z.stats();
        let lost = held.iter().filter(|h| !**h).count() as u64;
        assert_eq!(s.clean_dropped, lost, "round {round}");
        assert_eq!(s.clean_pages, 0, "round {round}");
        for (o, h) in (0..N).zip(held) {
            match z.load(o, &mut out) {
                Ok(_) => {
                    assert!(h, "round {round}: offset {o} held but cleared as dropped");
                    assert!(out == one_class(o));
                }
                Err(LoadError::NotFound) => {
                    assert!(
                        !h,
                        "round {round}: offset {o} dropped after clear_clean said held"
                    )
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
}

/// An entry marked clean after writeback took it out of the LRU and before writeback locked
/// it (a test hook holds it there): writeback sees the mark under the entry's lock and
/// leaves it, a clean copy, in the pool.
#[test]
fn an_entry_marked_clean_while_isolated_is_not_written_back() {
    const BASE: u64 = 1 << 52;
    let z = Arc::new(tier(64, Some(Arc::new(MemDevice::default()))));
    for o in BASE..BASE + 4 {
        z.store(o, &one_class(o)).unwrap();
    }
    let marked = Arc::new(AtomicBool::new(false));
    let hook = {
        let (z, marked) = (Arc::clone(&z), Arc::clone(&marked));
        move |o: u64| {
            if o == BASE && !marked.swap(true, Relaxed) {
                let mut out = [0u8; PAGE_SIZE];
                z.load_clean(BASE, &mut out).unwrap();
            }
        }
    };
    acomp_zswap::hooks::before_writing_back(Some(Arc::new(hook)));
    let written = z.writeback(1);
    acomp_zswap::hooks::before_writing_back(None);
    assert!(marked.load(Relaxed), "the hook ran");
    // The first batch held only the clean copy and wrote nothing; the next took the next
    // coldest entry.
    assert_eq!(written.unwrap(), 1);
    assert!(!z.on_device(BASE) && z.on_device(BASE + 1));
    let s = z.stats();
    assert_eq!((s.written_back_pages, s.clean_pages), (1, 1));
    // It went to the clean list: writeback takes only the ordinary entries left.
    assert_eq!(z.writeback(10).unwrap(), 2);
    assert!(!z.on_device(BASE) && z.clear_clean(BASE));
}

/// A batch of stores one of whose offsets is a clean copy the shrinker is dropping (a test
/// hook holds the drop, with the entry's lock, for 200 ms): the batch stores its other
/// pages, waits for that one's slot outside the index's lock (the drop needs it to take the
/// copy out) and stores it after the drop, so that every page of the batch is there.
#[test]
fn a_batch_waits_for_a_slot_the_shrinker_holds_and_stores_into_it_after() {
    const BASE: u64 = 1 << 52;
    let (z, refused) = full_of_clean_copies(BASE);
    let mut out = [0u8; PAGE_SIZE];
    // Same-filled pages need no room in the pool, which is at its budget.
    let word = |o: u64| -> Page {
        let mut p = [0u8; PAGE_SIZE];
        p.chunks_exact_mut(8)
            .for_each(|w| w.copy_from_slice(&(o ^ 0x5a5a).to_ne_bytes()));
        p
    };
    // Offsets of one block (one shard): the first, then the held one, then the last.
    let batch = [BASE + 100, BASE, BASE + 101];
    let stored = Arc::new(Mutex::new(None));
    let hook = {
        let (z, stored) = (Arc::clone(&z), Arc::clone(&stored));
        move |o: u64| {
            let mut s = stored.lock();
            if o != BASE || s.is_some() {
                return;
            }
            let z = Arc::clone(&z);
            *s = Some(std::thread::spawn(move || {
                let pages: Vec<Page> = batch.iter().map(|&o| word(o)).collect();
                let items: Vec<(u64, &Page)> = batch.iter().copied().zip(&pages).collect();
                z.store_batch(&items)
            }));
            drop(s);
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    acomp_zswap::hooks::while_dropping_clean(Some(Arc::new(hook)));
    let refused_store = z.store(refused, &one_class(refused));
    acomp_zswap::hooks::while_dropping_clean(None);
    refused_store.unwrap();
    let batch_thread = stored
        .lock()
        .take()
        .expect("the hook ran on the held offset");
    let kinds = batch_thread.join().unwrap();
    assert!(
        kinds
            .iter()
            .all(|k| matches!(k, Ok(acomp_zswap::StoreKind::SameFilled))),
        "{kinds:?}"
    );
    for o in batch {
        z.load(o, &mut out).unwrap();
        assert!(out == word(o), "offset {o:#x}");
    }
    let s = z.stats();
    assert!(s.clean_dropped >= 1);
    // BASE's copy dropped, counted once; the page stored there after it is no copy.
    assert_eq!(s.clean_pages + s.clean_dropped, 10);
    assert_eq!(s.same_filled_pages, 3);
}
