//! Lines 5 and 7: device faults lose nothing, corrupt pages are caught, the shrinker writes
//! in batches, `SwapFile`.

use super::*;

/// What a chain printer (anyhow's `{:#}`) prints of `e`: its message and its sources'.
/// The tier's errors hold the device's message in their own and give its source (none for
/// the planted faults), so each cause is said once.
fn chain(e: &dyn std::error::Error) -> String {
    assert!(e.source().is_none(), "{e}: the planted fault has no source");
    e.to_string()
}

/// Line 5: a device that fails every k-th write batch and every k-th read loses nothing.
#[test]
fn device_faults_lose_nothing() {
    let dev = Arc::new(MemDevice::default());
    dev.fail_write_every.store(3, Relaxed);
    dev.fail_read_every.store(4, Relaxed);
    let z = Zswap::builder(lz4())
        .max_pool_bytes(32 * PAGE_SIZE as u64)
        .device(Arc::clone(&dev))
        .build()
        .unwrap();
    let mut kept = HashMap::new();
    let mut refused = 0;
    for o in 0..1500u64 {
        match z.store(o, &page(o, 3)) {
            Ok(_) => {
                kept.insert(o, 3);
            }
            Err(StoreError::Writeback(e)) => {
                assert_eq!(e.to_string(), "planted write fault");
                let err = StoreError::Writeback(e);
                assert_eq!(
                    chain(&err),
                    "page refused: the pool is at its budget and writeback failed: planted write fault"
                );
                refused += 1;
            }
            Err(e) => panic!("{e}"),
        }
        within_budget(&z);
    }
    let s = z.stats();
    assert!(s.device_write_fail > 0 && refused > 0, "{s:?}");
    assert_eq!(s.stored_pages + s.device_pages, kept.len() as u64);
    // Every page kept loads back; a failed read is Io and the same load then succeeds.
    let mut out = zero();
    let mut io_errors = 0;
    for &o in kept.keys() {
        loop {
            match z.load(o, &mut out) {
                Ok(_) => break,
                Err(LoadError::Io(e)) => {
                    assert_eq!(e.to_string(), "planted read fault");
                    assert_eq!(
                        chain(&LoadError::Io(e)),
                        "reading the page from the device failed: planted read fault"
                    );
                    io_errors += 1;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(check(o, &out), 3);
    }
    assert!(io_errors > 0);
    assert_eq!(z.stats().device_read_fail, io_errors);
    // take keeps the entry on a failed read too.
    let on_dev: Vec<u64> = kept.keys().copied().filter(|&o| z.on_device(o)).collect();
    assert!(!on_dev.is_empty());
    dev.fail_read_every.store(1, Relaxed);
    assert!(matches!(z.take(on_dev[0], &mut out), Err(LoadError::Io(_))));
    dev.fail_read_every.store(0, Relaxed);
    z.take(on_dev[0], &mut out).unwrap();
    assert_eq!(check(on_dev[0], &out), 3);
    assert!(matches!(
        z.take(on_dev[0], &mut out),
        Err(LoadError::NotFound)
    ));
    // A device that refuses every write: writeback fails and every page stays in the pool.
    dev.refuse.store(true, Relaxed);
    let before = z.stats();
    assert!(z.writeback(10).is_err());
    let after = z.stats();
    assert_eq!(after.stored_pages, before.stored_pages);
    assert_eq!(
        after.device_write_fail,
        before.device_write_fail + before.stored_pages.min(10)
    );
    dev.refuse.store(false, Relaxed);
    for &o in kept.keys().filter(|&&o| o != on_dev[0]) {
        z.load(o, &mut out).unwrap();
        assert_eq!(check(o, &out), 3);
    }
}

/// Line 5: a writeback whose third batch fails says how many pages went before it: the
/// first two batches' (which stay written back), and the failed batch's pages stay in the
/// pool and load.
#[test]
fn a_failed_writeback_counts_the_batches_written_before_it() {
    let dev = Arc::new(MemDevice::default());
    let z = Zswap::builder(lz4())
        .max_pool_bytes(u64::MAX)
        .device(Arc::clone(&dev))
        .build()
        .unwrap();
    let n = 4 * WRITEBACK_BATCH as u64;
    for o in 0..n {
        z.store(o, &page(o, 5)).unwrap();
    }
    dev.fail_write_every.store(3, Relaxed);
    match z.writeback(n as usize) {
        Err(WritebackError::Io { error, written }) => {
            assert_eq!(written, 2 * WRITEBACK_BATCH);
            assert_eq!(error.to_string(), "planted write fault");
            assert_eq!(
                chain(&WritebackError::Io { error, written }),
                "writing back to the device failed after 64 pages: planted write fault"
            );
        }
        other => panic!("{other:?}"),
    }
    let s = z.stats();
    assert_eq!(s.written_back_pages, 2 * WRITEBACK_BATCH as u64);
    assert_eq!(s.device_pages, 2 * WRITEBACK_BATCH as u64);
    assert_eq!(s.stored_pages, n - 2 * WRITEBACK_BATCH as u64);
    let mut out = zero();
    for o in 0..n {
        z.load(o, &mut out).unwrap();
        assert_eq!(check(o, &out), 5);
    }
}

/// Line 5: a flipped bit or a torn write is Corrupt, never the page; the entry is kept.
#[test]
fn corrupt_device_pages_are_caught() {
    for tear in [false, true] {
        let dev = Arc::new(MemDevice::default());
        let z = Zswap::builder(lz4())
            .max_pool_bytes(1 << 20)
            .device(Arc::clone(&dev))
            .build()
            .unwrap();
        dev.tear.store(tear, Relaxed);
        for o in 0..40 {
            z.store(o, &page(o, 9)).unwrap();
        }
        assert_eq!(z.writeback(40).unwrap(), 40);
        dev.flip.store(!tear, Relaxed);
        let mut out = zero();
        for o in 0..40 {
            match z.load(o, &mut out) {
                Err(LoadError::Corrupt {
                    expected, found, ..
                }) => assert_ne!(expected, found),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(z.stats().device_corrupt, 40);
        if !tear {
            // The device heals (a reread of a transient flip): the same loads succeed.
            dev.flip.store(false, Relaxed);
            for o in 0..40 {
                z.load(o, &mut out).unwrap();
                assert_eq!(check(o, &out), 9);
            }
        }
    }
}

/// Line 7: the shrinker writes batches through `write_pages`.
#[test]
fn the_shrinker_writes_in_batches() {
    let (z, dev) = with_mem_device(1 << 20);
    for o in 0..100 {
        z.store(o, &page(o, 0)).unwrap();
    }
    assert_eq!(z.writeback(100).unwrap(), 100);
    assert_eq!(
        dev.batches.load(Relaxed),
        100_u64.div_ceil(WRITEBACK_BATCH as u64)
    );
    assert_eq!(dev.single_writes.load(Relaxed), 0);
    assert_eq!(dev.writes.load(Relaxed), 100);
}

/// Line 7: SwapFile: positional batched writes, reads back, discard frees the slot.
#[test]
fn swap_file_slots_are_written_read_and_reused() {
    let path = common::temp_path("slots");
    let f = SwapFile::create(&path).unwrap();
    let pages: Vec<Page> = (0..40).map(|k| page(k, 5)).collect();
    let batch: Vec<(u64, &Page)> = pages
        .iter()
        .enumerate()
        .map(|(k, p)| (k as u64 * 1000, p))
        .collect();
    f.write_pages(&batch).unwrap();
    assert_eq!((f.pages(), f.slots()), (40, 40));
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        40 * PAGE_SIZE as u64
    );
    let mut out = zero();
    for (k, p) in &batch {
        f.read_page(*k, &mut out).unwrap();
        assert_eq!(&out, *p);
    }
    for k in 0..10u64 {
        f.discard(k * 1000).unwrap();
    }
    assert_eq!(f.pages(), 30);
    assert_eq!(
        f.read_page(0, &mut out).unwrap_err().kind(),
        std::io::ErrorKind::NotFound
    );
    // New keys take the freed slots: the file does not grow.
    for k in 0..10u64 {
        f.write_page(u64::MAX - k, &pages[k as usize]).unwrap();
    }
    assert_eq!((f.pages(), f.slots()), (40, 40));
    for k in 0..10u64 {
        f.read_page(u64::MAX - k, &mut out).unwrap();
        assert_eq!(out, pages[k as usize]);
    }
    for (k, p) in &batch[10..] {
        f.read_page(*k, &mut out).unwrap();
        assert_eq!(&out, *p);
    }
    drop(f);
    std::fs::remove_file(&path).unwrap();
}

/// The tier over a SwapFile, end to end.
#[test]
fn a_tier_over_a_swap_file() {
    let path = common::temp_path("tier");
    let z = Zswap::builder(lz4())
        .max_pool_bytes(32 * PAGE_SIZE as u64)
        .device(SwapFile::create(&path).unwrap())
        .build()
        .unwrap();
    for o in 0..500u64 {
        z.store(o << 20, &page(o << 20, 4)).unwrap();
    }
    let mut out = zero();
    for o in 0..500u64 {
        z.load(o << 20, &mut out).unwrap();
        assert_eq!(check(o << 20, &out), 4);
    }
    assert!(z.stats().device_pages > 300);
    drop(z);
    std::fs::remove_file(&path).unwrap();
}
