//! Recompression racing the same offsets, and other offsets going on while it compresses
//! (a test hook holds it there).

use super::*;

/// Recompression racing stores, invalidates, takes, loads and writeback of the same few
/// offsets: every load gives a whole page of its offset, and once every offset is
/// invalidated the tier holds nothing (an object swapped into an entry that was replaced,
/// invalidated or written back meanwhile would be left behind).
#[test]
fn recompression_racing_the_same_offsets_leaves_nothing_behind() {
    racing_the_same_offsets(1);
}

/// The same, recompressing into units of 8 pages (the 6 offsets share one window).
#[test]
fn units_racing_the_same_offsets_leave_nothing_behind() {
    racing_the_same_offsets(8);
}

fn racing_the_same_offsets(unit: usize) {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    const OFFSETS: u64 = 6;
    let dev = Arc::new(common::MemDevice::default());
    let z = Zswap::builder(Acomp::new("lz4").unwrap())
        .max_pool_bytes(64 * PAGE_SIZE as u64)
        .device(Arc::clone(&dev))
        .recompress(Acomp::new("zstd").unwrap())
        .recompress_unit_pages(unit)
        .build()
        .unwrap();
    let stop = AtomicBool::new(false);
    let next_id = AtomicU64::new(1);
    std::thread::scope(|s| {
        let (z, stop) = (&z, &stop);
        s.spawn(move || {
            while !stop.load(Relaxed) {
                z.mark_idle();
                z.recompress_idle(usize::MAX);
            }
        });
        let workers: Vec<_> = (0..3u64)
            .map(|t| {
                let next_id = &next_id;
                s.spawn(move || {
                    let mut r = common::mix(t + 7);
                    let mut out = [0u8; PAGE_SIZE];
                    for _ in 0..20_000 {
                        r = common::mix(r);
                        let o = r % OFFSETS;
                        match (r >> 8) % 8 {
                            0..=2 => {
                                z.store(o, &page(o, next_id.fetch_add(1, Relaxed))).unwrap();
                            }
                            3 => {
                                z.invalidate(o);
                            }
                            4 => {
                                if z.take(o, &mut out).is_ok() {
                                    check(o, &out);
                                }
                            }
                            5 => {
                                let _ = z.writeback(2);
                            }
                            _ => {
                                if z.load(o, &mut out).is_ok() {
                                    check(o, &out);
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        // Stop the recompressor whatever the workers did, then report their panics.
        let joined: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        stop.store(true, Relaxed);
        for j in joined {
            j.unwrap();
        }
    });
    assert!(z.stats().recompressed_pages > 0, "{:?}", z.stats());
    if unit > 1 {
        assert!(z.stats().recompressed_unit_pages > 0, "{:?}", z.stats());
    }
    for o in 0..OFFSETS {
        z.invalidate(o);
    }
    let s = z.stats();
    assert_eq!(
        (
            s.stored_pages,
            s.device_pages,
            s.pool_used_size,
            s.stored_bytes
        ),
        (0, 0, 0, 0)
    );
    assert_eq!(dev.pages.lock().len(), 0);
    let s = z.stats();
    assert_eq!(
        (
            s.stored_units,
            s.held_unit_pages,
            s.held_unit_bytes,
            s.stored_folios
        ),
        (0, 0, 0, 0)
    );
}

/// Issue 31: recompression, in the caller's thread and in the thread of `recompress_every`,
/// holds no lock that loads, stores and invalidates of other offsets need while it
/// compresses. A test hook holds recompression inside that window (the entry's page
/// decompressed, not yet compressed again) while this thread loads, stores and invalidates
/// offsets of the same shard, the same size class and the same backing page (a shard lock, the
/// LRU's, a class lock or a page lock held there would stop them), and loads the entry itself
/// (its lock is not held for writing there). Each must complete while recompression waits;
/// after 3 s the hook gives up and the test fails, so that a fault fails it rather than hangs
/// it. The faults planted to check it are listed in TESTING.md.
#[test]
fn others_go_on_while_recompression_compresses() {
    let _hook = crate::RECOMPRESS_HOOK.lock();
    others_go_on(false);
    others_go_on(true);
}

/// One run of the test above: recompression in a thread calling `recompress_idle`, or in
/// the thread of `recompress_every`.
fn others_go_on(background: bool) {
    use acomp_zswap::LoadError;
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::mpsc::sync_channel;
    use std::time::Instant;

    const WAIT: Duration = Duration::from_secs(3);
    // The offset the hook holds: no other test's; the others share its shard (offset % 64).
    const T: u64 = 0x5eed_0000_0000_0031;
    let [s1, s2, b, n1, n2, m] = [1u64, 2, 3, 4, 5, 6].map(|i| T + 64 * i);
    let (lz4, zstd) = (Acomp::new("lz4").unwrap(), Acomp::new("zstd").unwrap());
    // T's page: a zstd frame a class smaller than its lz4 frame (it is recompressed), in a
    // class under half a page, so that the next two objects of its class (stored after it)
    // begin on its backing page. Its twins (the same bytes at other offsets) take
    // T's class.
    let twin = (0..=1200)
        .step_by(25)
        .map(|noise| common::page_with(T, 1, noise))
        .find(|p| {
            let (l, z) = (compressed_len(&lz4, p), compressed_len(&zstd, p));
            class(z) < class(l) && 2 * class(l) < PAGE_SIZE
        })
        .expect("a page that recompresses, in a small class");
    let new_class = class(compressed_len(&zstd, &twin));
    // A page whose lz4 frame takes the class T's zstd frame will take: random bytes, then
    // zeros.
    let other = (16..PAGE_SIZE)
        .map(|k| {
            let mut p = [0u8; PAGE_SIZE];
            for (i, x) in p[..k].iter_mut().enumerate() {
                *x = (common::mix(i as u64) >> 11) as u8;
            }
            p
        })
        .find(|p| class(compressed_len(&lz4, p)) == new_class)
        .expect("a page in the new frame's class");

    let z = Arc::new(tier("zstd"));
    z.store(T, &twin).unwrap();
    z.mark_idle();
    // Not idle: only T is recompressed.
    for (o, p) in [(s1, &twin), (s2, &twin), (n1, &other), (n2, &other)] {
        z.store(o, p).unwrap();
    }

    let (in_window_tx, in_window) = sync_channel::<()>(1);
    let (done, done_rx) = sync_channel::<()>(1);
    let (verdict_tx, verdict) = sync_channel::<Result<(), &str>>(1);
    // What this thread is doing, for the hook to name where it was stuck.
    const STEPS: [&str; 8] = [
        "load s1 (T's shard, class and page)",
        "load n1 (the new frame's class)",
        "invalidate s2 (T's class and page)",
        "store b (T's class, on T's backing page)",
        "invalidate n2 (the new frame's class)",
        "store m (the new frame's class)",
        "load T itself",
        "done",
    ];
    let step = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let at = Arc::clone(&step);
    let once = std::sync::Mutex::new(Some((in_window_tx, done_rx, verdict_tx)));
    let hook = move |o: u64| {
        if o != T {
            return;
        }
        let taken = once.lock().map(|mut g| g.take()).unwrap_or(None);
        if let Some((in_window_tx, done_rx, verdict_tx)) = taken {
            let _ = in_window_tx.send(());
            let res = done_rx.recv_timeout(WAIT);
            let _ = verdict_tx.send(res.map_err(|_| STEPS[at.load(Relaxed)]));
        }
    };
    acomp_zswap::hooks::while_recompressing(Some(Arc::new(hook)));

    let mut out = [0u8; PAGE_SIZE];
    let mut others = |z: &Zswap| {
        let t = Instant::now();
        let next = || step.fetch_add(1, Relaxed);
        z.load(s1, &mut out).unwrap();
        assert!(out == twin, "{s1:#x}");
        next();
        z.load(n1, &mut out).unwrap();
        assert!(out == other, "{n1:#x}");
        next();
        assert!(z.invalidate(s2));
        next();
        z.store(b, &twin).unwrap();
        next();
        assert!(z.invalidate(n2));
        next();
        z.store(m, &other).unwrap();
        next();
        z.load(T, &mut out).unwrap();
        assert!(out == twin, "the entry being recompressed");
        next();
        let _ = done.send(());
        t.elapsed()
    };
    let (took, waited, recompressed) = if background {
        let bg = z.recompress_every(Duration::from_millis(1)).unwrap();
        in_window
            .recv_timeout(Duration::from_secs(60))
            .expect("recompression reaches the hook (the test-hooks feature is on)");
        let took = others(&z);
        let waited = verdict.recv_timeout(Duration::from_secs(60)).unwrap();
        drop(bg);
        (took, waited, None)
    } else {
        std::thread::scope(|s| {
            let z2 = Arc::clone(&z);
            let pass = s.spawn(move || z2.recompress_idle(usize::MAX));
            in_window
                .recv_timeout(Duration::from_secs(60))
                .expect("recompression reaches the hook (the test-hooks feature is on)");
            let took = others(&z);
            let waited = verdict.recv_timeout(Duration::from_secs(60)).unwrap();
            (took, waited, Some(pass.join().unwrap()))
        })
    };
    acomp_zswap::hooks::while_recompressing(None);
    if let Err(stuck) = waited {
        panic!(
            "background {background}: loads, stores and invalidates of other offsets waited for \
             recompression's compression ({took:?}; when the hook gave up after {WAIT:?}, this \
             thread was stuck in {stuck})"
        );
    }

    if !background {
        // T was loaded in the window: no longer idle, so its new frame was thrown away.
        assert_eq!(recompressed, Some(0));
        assert!(!z.is_recompressed(T));
        z.mark_idle();
        assert!(z.recompress_idle(usize::MAX) >= 1);
        assert!(z.is_recompressed(T));
    }
    for (o, p) in [
        (T, &twin),
        (s1, &twin),
        (b, &twin),
        (n1, &other),
        (m, &other),
    ] {
        z.load(o, &mut out).unwrap();
        assert!(out == *p, "background {background}: offset {o:#x}");
    }
    for o in [s2, n2] {
        assert!(matches!(z.load(o, &mut out), Err(LoadError::NotFound)));
    }
}
