//! Folios under the budget and device faults, threads on overlapping folios, compaction.

use super::*;

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
                Ok(_) => break,
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
        assert_eq!(z.load(o, &mut out).unwrap(), LoadKind::Device);
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
                        4..=5 => {
                            z.store(first, &page(first, id)).unwrap();
                        }
                        6 => {
                            z.invalidate(first);
                        }
                        7..=8 => match z.load_pages(first, &mut four) {
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
                            Ok(_) => {
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
