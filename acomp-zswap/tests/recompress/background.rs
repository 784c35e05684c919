//! The background thread of `recompress_every`: it recompresses, and it stops.

use super::*;

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

/// `recompress_pressure_percent`: the thread recompresses the idle pages as soon as the
/// pool passes the share of its budget, without waiting for its interval (an hour here),
/// once until its next mark; below the share it waits.
#[test]
fn pool_pressure_recompresses_before_the_interval() {
    let z = Arc::new(
        Zswap::builder(Acomp::new("lz4").unwrap())
            .max_pool_bytes(1024 * PAGE_SIZE as u64)
            .recompress(Acomp::new("zstd").unwrap())
            .recompress_pressure_percent(50)
            .build()
            .unwrap(),
    );
    for o in 0..8 {
        z.store(o, &page(o, 1)).unwrap();
    }
    z.mark_idle();
    let bg = z.recompress_every(Duration::from_secs(3600)).unwrap();
    // Three polls below the threshold (8 objects: 8 zspages at most, 64 backing pages):
    // nothing.
    std::thread::sleep(acomp_zswap::PRESSURE_POLL * 3);
    let s = z.stats();
    assert_eq!((s.recompressed_pages, s.recompress_pressure_passes), (0, 0));
    let mut o = 1000;
    while z.stats().pool_total_size < 512 * PAGE_SIZE as u64 {
        z.store(o, &page(o, 1)).unwrap();
        o += 1;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while z.stats().recompressed_pages < 8 {
        assert!(std::time::Instant::now() < deadline, "{:?}", z.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(acomp_zswap::PRESSURE_POLL * 3);
    let s = z.stats();
    // The 8 idle pages only (the pages stored since are not idle), in one pass.
    assert_eq!((s.recompressed_pages, s.recompress_pressure_passes), (8, 1));
    drop(bg);
    let e = Zswap::builder(Acomp::new("lz4").unwrap())
        .recompress_pressure_percent(0)
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "recompress_pressure_percent 0 is not 1..=100"
    );
}
