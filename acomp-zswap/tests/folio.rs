//! The contract for folios (`Zswap::store_folio`): each line of the crate docs holds for
//! the pages of a folio as for pages stored alone.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use acomp::Acomp;
use acomp_pages::cases;
use acomp_zswap::{
    EntryInfo, FolioKind, LoadError, LoadKind, MAX_FOLIO_PAGES, PAGE_SIZE, Page, StoreError, Zswap,
};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use common::{MemDevice, check, mix, page, page_with, within_budget};

fn zero() -> Page {
    [0; PAGE_SIZE]
}

/// The pages of store `id` of the folio at `first`: [`page`]s, each naming its offset.
fn folio(first: u64, n: usize, id: u64) -> Vec<Page> {
    (0..n as u64).map(|k| page(first + k, id)).collect()
}

fn tier(alg: &str, budget: u64) -> Zswap {
    Zswap::builder(Acomp::new(alg).unwrap())
        .max_pool_bytes(budget)
        .build()
        .unwrap()
}

/// Line 1 for folios: every page loads back by its own offset (a range read with zstd, a
/// decode with lz4), alone or as the folio; a page invalidated or stored again leaves the
/// frame, which stays for the others and goes with the last. Sparse offsets: 2^40.
#[test]
fn folio_pages_load_back_by_their_offsets() {
    for alg in ["zstd", "lz4"] {
        let z = tier(alg, 64 << 20);
        let first = 1u64 << 40;
        let n = 16;
        assert_eq!(
            z.store_folio(first, &folio(first, n, 1)).unwrap(),
            FolioKind::Frame
        );
        let s = z.stats();
        assert_eq!(
            (s.stored_pages, s.stored_folios, s.folio_pages),
            (16, 1, 16)
        );
        let Some(EntryInfo::Folio(info)) = z.entry(first + 5) else {
            panic!("{:?}", z.entry(first + 5))
        };
        assert_eq!((info.first, info.pages), (first, n));
        assert_eq!(s.stored_bytes, info.length as u64);
        // More than a page: a chain of page-sized objects and a tail.
        assert!(
            PAGE_SIZE < info.length && info.length < n * PAGE_SIZE * 6 / 10,
            "{alg}: {}",
            info.length
        );
        let mut out = zero();
        for k in (0..n as u64).rev() {
            assert_eq!(z.load_kind(first + k, &mut out).unwrap(), LoadKind::Folio);
            assert_eq!(check(first + k, &out), 1);
        }
        let mut all = vec![zero(); n];
        z.load_folio(first, &mut all).unwrap();
        assert_eq!(all, folio(first, n, 1));
        let mut whole = vec![zero(); n];
        assert_eq!(z.read_folio(first + 9, &mut whole).unwrap(), info);
        assert_eq!(whole, all);
        assert!(matches!(
            z.read_folio(first, &mut whole[..3]),
            Err(LoadError::ShortBuffer { needed: 16 })
        ));

        // Page 3 invalidated, page 5 stored again alone: both leave the frame.
        assert!(z.invalidate(first + 3));
        z.store(first + 5, &page(first + 5, 2)).unwrap();
        let s = z.stats();
        assert_eq!(
            (s.stored_pages, s.folio_pages, s.stored_folios),
            (15, 14, 1)
        );
        assert_eq!(
            (s.held_folio_pages, s.held_folio_bytes),
            (2, info.length as u64)
        );
        assert!(matches!(
            z.load(first + 3, &mut out),
            Err(LoadError::NotFound)
        ));
        z.load(first + 5, &mut out).unwrap();
        assert_eq!(check(first + 5, &out), 2);
        assert_eq!(z.folio(first + 5), None);
        assert_eq!(z.folio(first + 6), Some(info));
        // The folio load now goes page by page and finds page 3 gone.
        assert!(matches!(
            z.load_folio(first, &mut all),
            Err(LoadError::NotFound)
        ));
        z.load_folio(first + 4, &mut all[..4]).unwrap();
        assert_eq!(check(first + 5, &all[1]), 2);
        assert_eq!(check(first + 7, &all[3]), 1);
        // take leaves it too; the last page to leave frees the frame.
        z.take(first, &mut out).unwrap();
        assert_eq!(check(first, &out), 1);
        for k in 0..n as u64 {
            if k != 5 {
                z.invalidate(first + k);
            }
            let s = z.stats();
            if k < 15 {
                assert_eq!(s.stored_folios, 1, "{alg}: freed early at {k}");
                z.load(first + 15, &mut out).unwrap();
                assert_eq!(check(first + 15, &out), 1);
            }
        }
        let s = z.stats();
        assert_eq!(
            (
                s.stored_folios,
                s.folio_pages,
                s.held_folio_pages,
                s.held_folio_bytes
            ),
            (0, 0, 0, 0)
        );
        assert_eq!(s.stored_pages, 1);
        z.invalidate(first + 5);
        let s = z.stats();
        assert_eq!((s.pool_total_size, s.stored_bytes), (0, 0), "{alg}");
    }
}

/// A folio stored again over itself replaces every page; folios of other sizes over
/// part of it replace those pages only.
/// lz4 has no range reads: a folio's pages loaded one by one in a row decode its frame
/// once (the thread keeps the last folio it decoded), each page still its own; another
/// folio in between is decoded anew, and a page stored again is its own entry.
#[test]
fn lz4_folio_pages_loaded_in_a_row_decode_the_frame_once() {
    let z = tier("lz4", 64 << 20);
    let (a, b) = (folio(1 << 40, 64, 1), folio(2 << 40, 64, 2));
    assert_eq!(z.store_folio(1 << 40, &a).unwrap(), FolioKind::Frame);
    assert_eq!(z.store_folio(2 << 40, &b).unwrap(), FolioKind::Frame);
    let decodes = || z.acomp().stats().decompress;
    let mut out = zero();
    let before = decodes();
    for k in 0..64 {
        z.load((1 << 40) + k, &mut out).unwrap();
        assert_eq!(check((1 << 40) + k, &out), 1);
    }
    assert_eq!(decodes() - before, 1, "one decode for the folio's 64 pages");
    // Alternating folios: a decode each time the folio changes.
    let before = decodes();
    for k in 0..4 {
        z.load((2 << 40) + k, &mut out).unwrap();
        assert_eq!(check((2 << 40) + k, &out), 2);
        z.load((1 << 40) + k, &mut out).unwrap();
        assert_eq!(check((1 << 40) + k, &out), 1);
    }
    assert_eq!(decodes() - before, 8);
    // A page stored again leaves the folio: its new bytes, not the decoded copy's.
    z.store((1 << 40) + 5, &page((1 << 40) + 5, 9)).unwrap();
    z.load((1 << 40) + 5, &mut out).unwrap();
    assert_eq!(check((1 << 40) + 5, &out), 9);
    z.load((1 << 40) + 6, &mut out).unwrap();
    assert_eq!(check((1 << 40) + 6, &out), 1);
}

#[test]
fn folios_stored_again_replace_page_by_page() {
    let z = tier("zstd", 64 << 20);
    z.store_folio(100, &folio(100, 8, 1)).unwrap();
    z.store_folio(100, &folio(100, 8, 2)).unwrap();
    z.store_folio(104, &folio(104, 8, 3)).unwrap();
    let s = z.stats();
    assert_eq!(
        (s.stored_pages, s.stored_folios, s.held_folio_pages),
        (12, 2, 4)
    );
    let mut out = zero();
    for o in 100..112 {
        z.load(o, &mut out).unwrap();
        assert_eq!(check(o, &out), if o < 104 { 2 } else { 3 });
    }
    // The first folio's pages, half of them now the second's: page by page, not one decode.
    let mut eight = vec![zero(); 8];
    z.load_folio(100, &mut eight).unwrap();
    for (o, p) in (100..).zip(&eight) {
        assert_eq!(check(o, p), if o < 104 { 2 } else { 3 });
    }
    for o in 100..112 {
        z.invalidate(o);
    }
    assert_eq!(z.stats().pool_total_size, 0);
}

/// Line 3 for folios: a folio that does not compress keeps its pages as they are, one
/// that is all same-filled its fill values; both counted as pages alone are.
#[test]
fn incompressible_and_same_filled_folios_are_kept_page_by_page() {
    let z = tier("lz4", 64 << 20);
    let mut r = 1;
    let mut noise = vec![zero(); 4];
    for p in &mut noise {
        for b in p.iter_mut() {
            r = mix(r);
            *b = r as u8;
        }
    }
    assert_eq!(z.store_folio(0, &noise).unwrap(), FolioKind::Pages);
    assert_eq!(
        z.store_folio(10, &[[7; PAGE_SIZE], [0; PAGE_SIZE]])
            .unwrap(),
        FolioKind::SameFilled
    );
    let s = z.stats();
    assert_eq!(
        (
            s.stored_pages,
            s.stored_incompressible_pages,
            s.same_filled_pages,
            s.stored_folios
        ),
        (6, 4, 2, 0)
    );
    assert_eq!(z.entry(11), Some(EntryInfo::SameFilled(0)));
    assert_eq!(z.entry(1), Some(EntryInfo::Incompressible));
    let mut out = zero();
    for (o, want) in noise.iter().enumerate() {
        z.load(o as u64, &mut out).unwrap();
        assert_eq!(&out, want);
    }
    z.load(10, &mut out).unwrap();
    assert_eq!(out, [7; PAGE_SIZE]);
}

/// Bad folios are refused with what was given, and nothing changes.
#[test]
fn bad_folios_are_refused() {
    let z = tier("lz4", 64 << 20);
    z.store(u64::MAX, &page(u64::MAX, 1)).unwrap();
    for (offset, n) in [(0, 0), (0, MAX_FOLIO_PAGES + 1), (u64::MAX, 2)] {
        match z.store_folio(offset, &folio(offset.min(1 << 20), n, 2)) {
            Err(e @ StoreError::BadFolio { .. }) => {
                assert!(
                    matches!(e, StoreError::BadFolio { offset: o, pages } if o == offset && pages == n)
                );
            }
            other => panic!("{other:?}"),
        }
    }
    let mut out = zero();
    z.load(u64::MAX, &mut out).unwrap();
    assert_eq!(check(u64::MAX, &out), 1);
    assert_eq!(z.stats().stored_pages, 1);
    // The last two offsets hold a folio; the largest folio is taken.
    z.store_folio(u64::MAX - 1, &folio(u64::MAX - 1, 2, 3))
        .unwrap();
    z.load(u64::MAX, &mut out).unwrap();
    assert_eq!(check(u64::MAX, &out), 3);
    // Loads of the last offsets: the folio whole, its pages alone, none past u64::MAX.
    let mut two = [zero(); 3];
    z.load_folio(u64::MAX - 1, &mut two[..2]).unwrap();
    assert!(two[..2] == folio(u64::MAX - 1, 2, 3));
    z.store(u64::MAX - 1, &page(u64::MAX - 1, 5)).unwrap();
    z.load_folio(u64::MAX - 1, &mut two[..2]).unwrap();
    assert_eq!(
        (check(u64::MAX - 1, &two[0]), check(u64::MAX, &two[1])),
        (5, 3)
    );
    assert!(matches!(
        z.load_folio(u64::MAX - 1, &mut two),
        Err(LoadError::NotFound)
    ));
    z.store_folio(0, &folio(0, MAX_FOLIO_PAGES, 4)).unwrap();
    let mut all = vec![zero(); MAX_FOLIO_PAGES];
    z.load_folio(0, &mut all).unwrap();
    assert_eq!(all, folio(0, MAX_FOLIO_PAGES, 4));
}

/// Lines 2 and 5 for folios: under a budget the coldest folio pages go to the device, the
/// budget holds after every store, and every page loads back; a device that fails every
/// third batch and every fourth read loses nothing.
#[test]
fn folios_write_back_within_the_budget_and_device_faults_lose_nothing() {
    let dev = Arc::new(MemDevice::default());
    dev.fail_write_every.store(3, Relaxed);
    dev.fail_read_every.store(4, Relaxed);
    let z = Zswap::builder(Acomp::new("zstd").unwrap())
        .max_pool_bytes(64 * PAGE_SIZE as u64)
        .device(Arc::clone(&dev))
        .build()
        .unwrap();
    let mut kept = HashMap::new();
    for f in 0..100u64 {
        let first = f * 16;
        match z.store_folio(first, &folio(first, 16, f)) {
            Ok(kind) => {
                assert_eq!(kind, FolioKind::Frame);
                (first..first + 16).for_each(|o| {
                    kept.insert(o, f);
                });
            }
            Err(StoreError::Writeback(e)) => assert_eq!(e.to_string(), "planted write fault"),
            Err(e) => panic!("{e}"),
        }
        within_budget(&z);
    }
    let s = z.stats();
    assert!(s.written_back_pages > 0 && s.device_write_fail > 0, "{s:?}");
    assert_eq!(s.stored_pages + s.device_pages, kept.len() as u64);
    assert!(kept.len() > 1000, "{}", kept.len());
    let mut out = zero();
    let mut io_errors = 0;
    for (&o, &id) in &kept {
        loop {
            match z.load(o, &mut out) {
                Ok(()) => break,
                Err(LoadError::Io(_)) => io_errors += 1,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(check(o, &out), id);
    }
    assert!(io_errors > 0);
    // Written back page by page, a folio's frame goes once its last page has.
    dev.fail_write_every.store(0, Relaxed);
    dev.fail_read_every.store(0, Relaxed);
    z.writeback(usize::MAX).unwrap();
    let s = z.stats();
    assert_eq!(
        (
            s.stored_pages,
            s.stored_folios,
            s.held_folio_pages,
            s.pool_total_size
        ),
        (0, 0, 0, 0)
    );
    for (&o, &id) in &kept {
        assert_eq!(z.load_kind(o, &mut out).unwrap(), LoadKind::Device);
        assert_eq!(check(o, &out), id);
    }
}

/// Line 4 for folios: threads store folios and single pages over the same offsets, load
/// pages and folios and invalidate; every page loaded is one store's whole page of its
/// offset, and nothing is left when all is invalidated.
#[test]
fn threads_on_overlapping_folios_never_mix_pages() {
    let z = tier("zstd", 64 << 20);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let z = &z;
            s.spawn(move || {
                let mut r = t + 1;
                let mut out = zero();
                let mut four = vec![zero(); 4];
                for i in 0..3000u64 {
                    r = mix(r);
                    let first = r % 60;
                    let id = (t << 32) | i;
                    match r >> 60 {
                        0..=3 => {
                            let n = 2 + (r >> 8) as usize % 7;
                            z.store_folio(first, &folio(first, n, id)).unwrap();
                        }
                        4..=5 => z.store(first, &page(first, id)).unwrap(),
                        6 => {
                            z.invalidate(first);
                        }
                        7..=8 => match z.load_folio(first, &mut four) {
                            Ok(()) => {
                                for (k, p) in four.iter().enumerate() {
                                    check(first + k as u64, p);
                                }
                            }
                            Err(LoadError::NotFound) => {}
                            Err(e) => panic!("{e}"),
                        },
                        9 => {
                            z.compact();
                        }
                        _ => match z.load(first, &mut out) {
                            Ok(()) => {
                                check(first, &out);
                            }
                            Err(LoadError::NotFound) => {}
                            Err(e) => panic!("{e}"),
                        },
                    }
                }
            });
        }
    });
    for o in 0..70 {
        z.invalidate(o);
    }
    let s = z.stats();
    assert_eq!(
        (
            s.stored_pages,
            s.stored_folios,
            s.folio_pages,
            s.held_folio_pages,
            s.held_folio_bytes,
            s.stored_bytes,
            s.pool_total_size
        ),
        (0, 0, 0, 0, 0, 0, 0)
    );
}

/// Line 6 for folios: compaction moves the objects of folio frames too, and they load back.
#[test]
fn compaction_moves_folio_frames() {
    let z = tier("lz4", 256 << 20);
    let n = 1500u64;
    let body = |o: u64| page_with(o, 1, 100 + 40 * (o % 8) as usize);
    for f in 0..n {
        let pages: Vec<Page> = (0..4).map(|k| body(f * 4 + k)).collect();
        assert_eq!(z.store_folio(f * 4, &pages).unwrap(), FolioKind::Frame);
    }
    let mut r = 3;
    let mut gone = Vec::new();
    for f in 0..n {
        r = mix(r);
        if r % 2 == 0 {
            (0..4).for_each(|k| {
                z.invalidate(f * 4 + k);
            });
            gone.push(f);
        }
    }
    let churned = z.stats();
    assert!(churned.packing() < 0.8, "{}", churned.packing());
    assert!(z.compact() > 0);
    let after = z.stats();
    assert!(after.packing() >= 0.9, "packing {}", after.packing());
    let mut out = zero();
    for o in 0..n * 4 {
        let got = z.load(o, &mut out);
        if gone.binary_search(&(o / 4)).is_ok() {
            assert!(matches!(got, Err(LoadError::NotFound)));
        } else {
            got.unwrap();
            assert_eq!(out, body(o));
        }
    }
}

/// A tier for units: zstd frames of page-sized blocks (`block_size_max(4096)`), no budget.
fn unit_store() -> Zswap {
    let params = acomp::ZstdParams::default().block_size_max(4096);
    Zswap::builder(Acomp::with_zstd(params).unwrap())
        .max_pool_bytes(u64::MAX)
        .build()
        .unwrap()
}

#[test]
fn units_of_every_size_come_back_page_by_page_and_whole() {
    // Not whole units: the last unit of every size is cut short.
    let pages = cases::units(16 * 6 + 7);
    let n = pages.len();
    for unit_pages in [1, 2, 4, 8, 16, 32, 64] {
        let store = unit_store();
        let units = n.div_ceil(unit_pages);
        let unit_len = |u: usize| unit_pages.min(n - u * unit_pages);
        let mut kinds = Vec::new();
        for u in 0..units {
            let first = u * unit_pages;
            kinds.push(
                store
                    .store_folio(first as u64, &pages[first..first + unit_len(u)])
                    .unwrap(),
            );
        }
        assert!(kinds.contains(&FolioKind::Frame), "{unit_pages}");
        if unit_pages <= 16 {
            assert!(kinds.contains(&FolioKind::SameFilled), "{unit_pages}");
            assert!(kinds.contains(&FolioKind::Pages), "{unit_pages}");
        }
        let c = store.stats();
        assert_eq!(c.stored_pages, n as u64);
        assert_eq!(c.held_folio_pages, 0);
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut StdRng::seed_from_u64(unit_pages as u64));
        for i in order {
            let mut page = Box::new([0x5A; PAGE_SIZE]);
            store.load(i as u64, &mut page).unwrap();
            assert_eq!(*page, pages[i], "{unit_pages}-page units, page {i}");
        }
        let mut buf = vec![[0x5A; PAGE_SIZE]; unit_pages];
        for u in 0..units {
            let first = u * unit_pages;
            store
                .load_folio(first as u64, &mut buf[..unit_len(u)])
                .unwrap();
            assert!(
                buf[..unit_len(u)] == pages[first..first + unit_len(u)],
                "{unit_pages}-page units, unit {u}"
            );
        }
        let mut page = Box::new([0; PAGE_SIZE]);
        assert!(matches!(
            store.load(n as u64, &mut page),
            Err(LoadError::NotFound)
        ));
        for i in 0..n {
            assert!(store.invalidate(i as u64));
        }
        assert!(!store.invalidate(0));
        let c = store.stats();
        assert_eq!(
            (
                c.stored_pages,
                c.stored_folios,
                c.stored_bytes,
                c.pool_total_size
            ),
            (0, 0, 0, 0)
        );
    }
}

#[test]
fn frames_larger_than_a_page_are_kept_in_page_sized_objects() {
    let pages = cases::units(16);
    let store = unit_store();
    assert_eq!(store.store_folio(0, &pages).unwrap(), FolioKind::Frame);
    let c = store.stats();
    assert!(c.stored_bytes > PAGE_SIZE as u64, "{c:?}");
    // A backing page for each whole page of the frame, and the tail's class's zspage (of up
    // to 8 pages, most of it free for other tails).
    let whole = c.stored_bytes / PAGE_SIZE as u64;
    let backing = c.pool_total_size / PAGE_SIZE as u64;
    assert!((whole + 1..=whole + 8).contains(&backing), "{c:?}");
    for k in [0, 7, 15] {
        let mut page = Box::new([0; PAGE_SIZE]);
        store.load(k, &mut page).unwrap();
        assert_eq!(*page, pages[k as usize]);
    }
}

#[test]
fn invalidating_a_page_keeps_its_unit_until_all_are_gone() {
    let pages = cases::units(48);
    let store = unit_store();
    for u in 0..3 {
        store
            .store_folio(u * 16, &pages[u as usize * 16..][..16])
            .unwrap();
    }
    // Unit 0 is a frame: held, counted, until its last page goes.
    let full = store.stats();
    let frame_bytes = full.stored_bytes - 16 * PAGE_SIZE as u64;
    for k in 0..15 {
        assert!(store.invalidate(k));
        let c = store.stats();
        assert_eq!(c.held_folio_pages, k + 1);
        assert_eq!(c.held_folio_bytes, frame_bytes);
        assert_eq!(c.pool_total_size, full.pool_total_size);
        assert_eq!(c.stored_pages, 48 - k - 1);
        let mut page = Box::new([0; PAGE_SIZE]);
        assert!(matches!(store.load(k, &mut page), Err(LoadError::NotFound)));
        store.load(15, &mut page).unwrap();
        assert_eq!(*page, pages[15]);
    }
    assert!(store.invalidate(15));
    let c = store.stats();
    assert_eq!(
        (c.held_folio_pages, c.held_folio_bytes, c.stored_folios),
        (0, 0, 0)
    );
    // Unit 2 is random: page by page, each freed at once.
    assert_eq!(c.stored_incompressible_pages, 16);
    let total = c.pool_total_size;
    assert!(store.invalidate(32));
    let c = store.stats();
    assert_eq!(
        (
            c.stored_incompressible_pages,
            c.pool_total_size,
            c.held_folio_pages
        ),
        (15, total - PAGE_SIZE as u64, 0)
    );
    // Unit 1 is zeros: no memory at all.
    assert_eq!(c.same_filled_pages, 16);
    for i in 16..48 {
        store.invalidate(i);
    }
    let c = store.stats();
    assert_eq!((c.stored_pages, c.pool_total_size), (0, 0));
}
