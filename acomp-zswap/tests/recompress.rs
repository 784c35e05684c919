//! Recompression of idle entries (the crate docs' recompression lines): exact counts
//! computed from the transforms and the pool's size classes, on pages the tests make.
//! Recompression racing loads, stores, invalidates and writeback is in `contract.rs`'s
//! model test and `model.rs`; here, the same offsets raced at random, and other offsets
//! made to go on while recompression compresses (a test hook holds it there).

mod common;

use std::io::{IoSlice, IoSliceMut};
use std::sync::Arc;
use std::time::Duration;

use acomp::Acomp;
use acomp_zswap::pool::Pool;
use acomp_zswap::{EntryInfo, PAGE_SIZE, Page, Zswap};
use common::{check, page};

fn tier(recomp: &str) -> Zswap {
    Zswap::builder(Acomp::new("lz4").unwrap())
        .max_pool_bytes(64 << 20)
        .recompress(Acomp::new(recomp).unwrap())
        .build()
        .unwrap()
}

fn compressed_len(tfm: &Acomp, p: &Page) -> usize {
    let mut dst = [0u8; PAGE_SIZE];
    tfm.compress(&[IoSlice::new(p)], &mut [IoSliceMut::new(&mut dst)])
        .unwrap()
}

/// The class size of an object of `n` bytes.
fn class(n: usize) -> usize {
    Pool::new(None).class_info(n).unwrap().size
}

/// Idle pages whose zstd frame is a size class smaller than their lz4 frame are
/// recompressed, and only those; hot pages (loaded after the mark) are not; every page
/// loads back byte for byte, through the transform that wrote it; the counters are exact.
#[test]
fn idle_pages_are_recompressed_and_load_back() {
    const N: u64 = 200;
    let z = tier("zstd");
    let (lz4, zstd) = (Acomp::new("lz4").unwrap(), Acomp::new("zstd").unwrap());
    for o in 0..N {
        z.store(o, &page(o, 1)).unwrap();
    }
    assert_eq!(z.recompress_idle(usize::MAX), 0, "nothing idle yet");
    z.mark_idle();
    let mut out = [0u8; PAGE_SIZE];
    // Every third page is hot: loaded after the mark.
    for o in (0..N).step_by(3) {
        z.load(o, &mut out).unwrap();
        assert!(!z.is_idle(o));
    }
    let (mut want, mut skipped, mut saved, mut bytes) = (0, 0, 0, 0);
    for o in 0..N {
        let p = page(o, 1);
        let (a, b) = (compressed_len(&lz4, &p), compressed_len(&zstd, &p));
        if o % 3 != 0 && class(b) < class(a) {
            want += 1;
            saved += class(a) - class(b);
            bytes += b;
        } else {
            skipped += usize::from(o % 3 != 0);
            bytes += a;
        }
    }
    assert!(want > 50, "the test's pages must recompress: {want}");
    let before = z.stats();
    assert_eq!(z.recompress_idle(usize::MAX), want);
    let s = z.stats();
    assert_eq!(s.recompressed_pages, want as u64);
    assert_eq!(s.recompress_skipped_pages, skipped as u64);
    assert_eq!(s.recompress_saved_bytes, saved as u64);
    assert_eq!(s.stored_bytes, bytes as u64);
    assert_eq!(before.pool_used_size - s.pool_used_size, saved as u64);
    assert!(s.recompress_cpu_ns > 0);
    for o in 0..N {
        let p = page(o, 1);
        let recompressed =
            o % 3 != 0 && class(compressed_len(&zstd, &p)) < class(compressed_len(&lz4, &p));
        assert_eq!(z.is_recompressed(o), recompressed, "offset {o}");
        if recompressed {
            assert_eq!(
                z.entry(o),
                Some(EntryInfo::Compressed {
                    length: compressed_len(&zstd, &p)
                })
            );
        }
        z.load(o, &mut out).unwrap();
        assert_eq!(check(o, &out), 1);
    }
    // Nothing is left to try: every page was tried, or loaded since the mark.
    assert_eq!(z.recompress_idle(usize::MAX), 0);
    assert_eq!(z.stats().recompress_skipped_pages, skipped as u64);
    for o in 0..N {
        z.invalidate(o);
    }
    let s = z.stats();
    assert_eq!(
        (s.stored_bytes, s.pool_used_size, s.stored_pages),
        (0, 0, 0)
    );
}

/// A frame that is not a size class smaller is thrown away: the entry stays as it was and
/// is not tried again until its offset is stored again. `max_pages` bounds the pages tried.
#[test]
fn a_frame_not_a_class_smaller_is_left_and_not_tried_again() {
    const N: u64 = 40;
    // lz4 again: the same frame, the same class.
    let z = tier("lz4");
    for o in 0..N {
        z.store(o, &page(o, 1)).unwrap();
    }
    z.mark_idle();
    let before = z.stats();
    assert_eq!(z.recompress_idle(10), 0);
    assert_eq!(z.stats().recompress_skipped_pages, 10);
    assert_eq!(z.recompress_idle(usize::MAX), 0);
    let s = z.stats();
    assert_eq!(s.recompress_skipped_pages, N);
    assert_eq!((s.recompressed_pages, s.recompress_saved_bytes), (0, 0));
    assert_eq!(
        (s.stored_bytes, s.pool_used_size),
        (before.stored_bytes, before.pool_used_size)
    );
    // Not tried again...
    z.mark_idle();
    assert_eq!(z.recompress_idle(usize::MAX), 0);
    assert_eq!(z.stats().recompress_skipped_pages, N);
    // ...until stored again.
    z.store(7, &page(7, 2)).unwrap();
    assert!(!z.is_idle(7), "a store leaves the entry not idle");
    z.mark_idle();
    assert_eq!(z.recompress_idle(usize::MAX), 0);
    assert_eq!(z.stats().recompress_skipped_pages, N + 1);
    let mut out = [0u8; PAGE_SIZE];
    z.load(7, &mut out).unwrap();
    assert_eq!(check(7, &out), 2);
}

/// Without a recompression transform nothing happens; same-filled and incompressible pages
/// are never recompressed.
#[test]
fn only_compressed_frames_of_the_first_transform_are_tried() {
    let plain = Zswap::builder(Acomp::new("lz4").unwrap())
        .max_pool_bytes(1 << 20)
        .build()
        .unwrap();
    plain.store(1, &page(1, 1)).unwrap();
    plain.mark_idle();
    assert_eq!(plain.recompress_idle(usize::MAX), 0);
    assert_eq!(plain.stats().recompress_skipped_pages, 0);

    let z = tier("zstd");
    z.store(1, &[9; PAGE_SIZE]).unwrap();
    let mut noise = [0u8; PAGE_SIZE];
    for (i, b) in noise.iter_mut().enumerate() {
        *b = (common::mix(i as u64) >> 7) as u8;
    }
    z.store(2, &noise).unwrap();
    assert_eq!(z.entry(2), Some(EntryInfo::Incompressible));
    z.mark_idle();
    assert_eq!(z.recompress_idle(usize::MAX), 0);
    let s = z.stats();
    assert_eq!((s.recompressed_pages, s.recompress_skipped_pages), (0, 0));
    let mut out = [0u8; PAGE_SIZE];
    z.load(2, &mut out).unwrap();
    assert_eq!(out, noise);
}

/// The background thread recompresses pages left alone for an interval or two, and stops
/// when its handle is dropped.
#[test]
fn the_background_thread_recompresses_idle_pages() {
    let z = Arc::new(tier("zstd"));
    for o in 0..64 {
        z.store(o, &page(o, 1)).unwrap();
    }
    let bg = z.recompress_every(Duration::from_millis(5)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while z.stats().recompressed_pages + z.stats().recompress_skipped_pages < 64 {
        assert!(std::time::Instant::now() < deadline, "{:?}", z.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(bg);
    let n = z.stats().recompressed_pages;
    assert!(n > 0);
    let mut out = [0u8; PAGE_SIZE];
    for o in 0..64 {
        z.load(o, &mut out).unwrap();
        assert_eq!(check(o, &out), 1);
    }
    assert_eq!(Arc::strong_count(&z), 1);
}

/// Stopping the background thread stops a pass under way after the entry it is
/// recompressing, not after every idle entry: of 2,000 idle pages recompressed at zstd's
/// slowest level, the pass seen to start counts at most one more page once `stop` has
/// returned (the one it was recompressing), whatever the machine's speed.
#[test]
fn dropping_the_background_thread_stops_its_pass() {
    const N: u64 = 2000;
    let z = Arc::new(
        Zswap::builder(Acomp::new("lz4").unwrap())
            .max_pool_bytes(64 << 20)
            .recompress(Acomp::with_zstd(acomp::ZstdParams::default().level(19)).unwrap())
            .build()
            .unwrap(),
    );
    for o in 0..N {
        z.store(o, &page(o, 1)).unwrap();
    }
    let bg = z.recompress_every(Duration::from_millis(1)).unwrap();
    let tried = |z: &Zswap| {
        let s = z.stats();
        s.recompressed_pages + s.recompress_skipped_pages
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while tried(&z) == 0 {
        assert!(std::time::Instant::now() < deadline, "{:?}", z.stats());
        std::thread::yield_now();
    }
    bg.stop();
    // The pass asks its stop flag before each entry: after this read, only the entry it
    // was recompressing when `stop` returned may still be counted.
    let at_stop = tried(&z);
    drop(bg);
    assert!(
        tried(&z) - at_stop <= 1,
        "the pass went on after the stop: {at_stop} tried at the stop, {} of {N} after",
        tried(&z)
    );
    // Nothing moves once the handle is gone, and every page loads back.
    let after = tried(&z);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(tried(&z), after);
    let mut out = [0u8; PAGE_SIZE];
    for o in 0..N {
        z.load(o, &mut out).unwrap();
        assert_eq!(check(o, &out), 1);
    }
}

/// Recompression racing stores, invalidates, takes, loads and writeback of the same few
/// offsets: every load gives a whole page of its offset, and once every offset is
/// invalidated the tier holds nothing (an object swapped into an entry that was replaced,
/// invalidated or written back meanwhile would be left behind).
#[test]
fn recompression_racing_the_same_offsets_leaves_nothing_behind() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    const OFFSETS: u64 = 6;
    let dev = Arc::new(common::MemDevice::default());
    let z = Zswap::builder(Acomp::new("lz4").unwrap())
        .max_pool_bytes(64 * PAGE_SIZE as u64)
        .device(Arc::clone(&dev))
        .recompress(Acomp::new("zstd").unwrap())
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
                            0..=2 => z.store(o, &page(o, next_id.fetch_add(1, Relaxed))).unwrap(),
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
