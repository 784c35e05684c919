//! Line 2: the budget, the LRU's second chance, refusals without a device and their
//! hysteresis.

use super::*;

/// Line 2: the budget, read after every store, with and without a device, on threads too.
#[test]
fn the_pool_never_passes_its_budget() {
    for with_device in [false, true] {
        let mut b = Zswap::builder(lz4()).max_pool_bytes(100 * PAGE_SIZE as u64 + 123);
        if with_device {
            b = b.device(MemDevice::default());
        }
        let z = b.build().unwrap();
        assert_eq!(z.stats().max_pool_size, 100 * PAGE_SIZE as u64);
        let (mut ok, mut refused) = (0, 0);
        for o in 0..2000u64 {
            match z.store(o, &page(o, 0)) {
                Ok(_) => ok += 1,
                Err(StoreError::PoolFull) => refused += 1,
                Err(e) => panic!("{e}"),
            }
            within_budget(&z);
        }
        let s = z.stats();
        if with_device {
            assert_eq!((ok, refused), (2000, 0));
            assert_eq!(s.stored_pages + s.device_pages, 2000);
            assert!(s.written_back_pages > 1000, "{s:?}");
        } else {
            // Refused from the first limit hit on: nothing frees the pool.
            assert_eq!(ok + refused, 2000);
            assert_eq!(
                (s.stored_pages, s.pool_limit_hit, s.reject_reclaim_fail),
                (ok, 1, refused)
            );
        }
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let z = &z;
                s.spawn(move || {
                    for o in 0..500u64 {
                        let _ = z.store(10_000 + t * 1000 + o, &page(o, t));
                        within_budget(z);
                    }
                });
            }
        });
    }
}

/// Line 2: the coldest go first; a page loaded again and again gets its second chance and
/// stays in memory while cold pages go to the device.
#[test]
fn a_hot_page_stays_while_cold_ones_go() {
    let z = Zswap::builder(lz4())
        .max_pool_bytes(64 * PAGE_SIZE as u64)
        .device(MemDevice::default())
        .build()
        .unwrap();
    let mut out = zero();
    // Pages of one size class (one body, each with its offset in front), so that the
    // pages written back free backing pages in order.
    let p = |o: u64| {
        let mut p = page_with(0, 0, 700);
        p[..8].copy_from_slice(&o.to_le_bytes());
        p
    };
    z.store(0, &p(0)).unwrap();
    for o in 1..2000u64 {
        z.store(o, &p(o)).unwrap();
        z.load(0, &mut out).unwrap();
        assert_eq!(out, p(0));
    }
    let s = z.stats();
    assert!(s.written_back_pages > 1000, "{s:?}");
    assert!(!z.on_device(0), "the hot page was written back");
    // Cold pages went oldest first: the first stored are on the device, the last are not.
    assert!((1..100).all(|o| z.on_device(o)));
    assert!((1990..2000).all(|o| !z.on_device(o)));
    // On demand: writeback takes the coldest, and the hot page only once passed over unloaded.
    let left = z.lru_len();
    assert_eq!(z.writeback(left - 1).unwrap(), left - 1);
    assert!(!z.on_device(0));
    assert_eq!(z.writeback(10).unwrap(), 1);
    assert!(z.on_device(0));
    z.load(0, &mut out).unwrap();
    assert_eq!(out, p(0));
    assert_eq!(z.writeback(10).unwrap(), 0);
}

/// Page `o` of the tests without a device: pages of one size class, so that any freed
/// object fits any page.
fn one_class(o: u64) -> Page {
    page_with(o, 0, 1000)
}

/// A tier of `pages` pages and no device, stored [`one_class`] pages at offsets 0, 1, ...
/// until a store is refused; returns it and that offset.
fn full_without_a_device(pages: u64) -> (Zswap, u64) {
    let z = Zswap::builder(lz4())
        .max_pool_bytes(pages * PAGE_SIZE as u64)
        .build()
        .unwrap();
    let mut o = 0;
    while z.store(o, &one_class(o)).is_ok() {
        o += 1;
    }
    (z, o)
}

/// Line 2: without a device the store is refused, the page stays with the caller, the old
/// entry is invalidated, and stores stay refused until the pool falls below the accept
/// threshold.
#[test]
fn without_a_device_stores_are_refused_with_hysteresis() {
    let (z, first_refused) = full_without_a_device(40);
    let p = one_class;
    let mut out = zero();
    assert!(matches!(
        z.load(first_refused, &mut out),
        Err(LoadError::NotFound)
    ));
    let s = z.stats();
    assert_eq!((s.pool_limit_hit, s.reject_reclaim_fail), (1, 1));
    assert_eq!(s.stored_pages, first_refused);
    // A refused store at a stored offset invalidates it.
    assert!(matches!(z.store(0, &p(0)), Err(StoreError::PoolFull)));
    assert!(matches!(z.load(0, &mut out), Err(LoadError::NotFound)));
    // Room for a page or two, but the pool is above the threshold: still refused.
    z.invalidate(1);
    z.invalidate(2);
    assert!(matches!(z.store(1, &p(1)), Err(StoreError::PoolFull)));
    assert!(z.stats().pool_total_size > 36 * PAGE_SIZE as u64);
    // Below 90% of the budget: admitted again.
    let mut k = 3;
    while z.stats().pool_total_size > 36 * PAGE_SIZE as u64 {
        z.invalidate(k);
        k += 1;
    }
    z.store(1, &p(1)).unwrap();
    z.load(1, &mut out).unwrap();
    assert_eq!(out, p(1));
    assert_eq!(z.stats().pool_limit_hit, 1);
    // Same-filled pages take no pool memory: never refused.
    z.store(5000, &[7; PAGE_SIZE]).unwrap();
}

/// Line 2, without a device: invalidated pages free their objects but not the backing pages
/// of zspages still in use, so a pool that hit its budget could stay above the threshold for
/// good; a refused store compacts first where that can make the room (as zsmalloc's
/// shrinker does in the kernel).
#[test]
fn without_a_device_compaction_gives_back_what_invalidation_left() {
    let (z, n) = full_without_a_device(64);
    let p = one_class;
    // Every other page invalidated: half of every zspage's objects free, no zspage empty.
    for o in (0..n).step_by(2) {
        assert!(z.invalidate(o));
    }
    let s = z.stats();
    // The threshold: 90% of 64 pages, 57 pages.
    assert!(
        s.pool_total_size > 57 * PAGE_SIZE as u64,
        "the premise: invalidation left the pool above the threshold ({} bytes)",
        s.pool_total_size
    );
    assert_eq!(s.compacted_objects, 0);
    // The next store compacts, falls under the threshold and is admitted.
    z.store(1 << 40, &p(1 << 40)).unwrap();
    let s = z.stats();
    assert!(s.compacted_objects > 0);
    assert!(s.pool_total_size <= 57 * PAGE_SIZE as u64);
    let mut out = [0u8; PAGE_SIZE];
    for o in (1..n).step_by(2).chain([1 << 40]) {
        z.load(o, &mut out).unwrap();
        assert!(out == p(o), "offset {o}");
    }
}

/// Line 2 with a device, where a store meets the budget while another store's new zspage
/// is being set up: its pages are counted, its object not yet, so the pool may hold the
/// budget in pages and no object. The shrinker waits for it (and then writes that object
/// back) rather than refuse the store. A test hook holds the other store inside the setup
/// until 200 ms after the store began; a pool of one page, so that the two stores, each
/// of an incompressible page (a zspage of one page), cannot both fit.
#[test]
fn a_store_at_the_budget_waits_for_a_zspage_being_set_up() {
    use std::sync::mpsc::sync_channel;
    let (z, dev) = with_mem_device(PAGE_SIZE as u64);
    let random = |seed: u64| -> Page {
        let mut p = zero();
        for (i, b) in p.iter_mut().enumerate() {
            *b = mix(seed ^ i as u64) as u8;
        }
        p
    };
    // Offsets no other test of this binary stores: the hook is process-wide.
    let (held, late) = (0x5eed_0000_0000_0031, 0x5eed_0000_0000_0032);
    let (in_setup_tx, in_setup) = sync_channel::<()>(0);
    let (release, release_rx) = sync_channel::<()>(0);
    let hold = Mutex::new(Some((in_setup_tx, release_rx)));
    acomp_zswap::hooks::setting_up_zspage(Some(Arc::new(move |owner: u64| {
        if owner == held {
            if let Some((tx, rx)) = hold.lock().take() {
                tx.send(()).unwrap();
                rx.recv().unwrap();
            }
        }
    })));
    let got = std::thread::scope(|s| {
        let z = &z;
        let first = s.spawn(move || z.store(held, &random(1)));
        in_setup
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the store reaches the hook (the test-hooks feature is on)");
        s.spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            release.send(()).unwrap();
        });
        let second = z.store(late, &random(2));
        (first.join().unwrap(), second)
    });
    acomp_zswap::hooks::setting_up_zspage(None);
    assert_eq!(got.0.unwrap(), StoreKind::Incompressible);
    assert_eq!(
        got.1.unwrap(),
        StoreKind::Incompressible,
        "the store was refused"
    );
    let mut out = zero();
    for (offset, seed) in [(held, 1), (late, 2)] {
        z.load(offset, &mut out).unwrap();
        assert!(out == random(seed), "offset {offset:#x}");
    }
    assert_eq!(z.stats().written_back_pages, 1);
    assert_eq!(dev.writes.load(Relaxed), 1);
}
