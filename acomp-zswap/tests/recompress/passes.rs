//! What a pass recompresses, and what it leaves: exact counts from the transforms and the
//! pool's size classes.

use super::*;

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

/// A pass returns with the backing pages it freed given back to the kernel: none of them
/// still resident, left to the arena's thread to give back beside the loads that follow
/// (issue 51: their `MADV_DONTNEED`s made the hot loads after a pass up to half as fast).
#[test]
fn a_pass_returns_with_its_freed_pages_given_back() {
    // A live heap's page, stamped with its offset: about 1.2 KiB in lz4, 0.7 KiB in zstd,
    // so that a pass over 16,384 of them frees thousands of backing pages, well past what
    // the arena keeps resident (`ARENA_HIGH_PAGES` and its slack).
    let heap = acomp_pages::kinds::heap();
    let stamped = |o: u64| {
        let mut p: Page = heap.as_slice().try_into().unwrap();
        p[..8].copy_from_slice(&o.to_le_bytes());
        p
    };
    let z = tier("zstd");
    const N: u64 = 16_384;
    for o in 0..N {
        z.store(o, &stamped(o)).unwrap();
    }
    z.mark_idle();
    let before = z.pool_stats();
    // The arena's thread held in each give-back: a pass that returned without waiting
    // would find its pages still resident.
    acomp_zswap::hooks::while_trimming(Some(Arc::new(|_| {
        std::thread::sleep(Duration::from_millis(50))
    })));
    let done = z.recompress_idle(usize::MAX);
    let s = z.pool_stats();
    let resident = z.pool_resident_pages();
    acomp_zswap::hooks::while_trimming(None);
    assert!(done > N as usize / 2, "{done} recompressed");
    let freed = before.pages - s.pages;
    let bound = acomp_zswap::pool::ARENA_HIGH_PAGES + acomp_zswap::pool::TRIM_SLACK;
    assert!(
        freed > 2 * bound,
        "the pass must free pages: {before:?} {s:?}"
    );
    assert!(s.cached_pages <= bound, "{s:?}");
    // The kernel's count: the pool's pages and the free pages kept, none being given back.
    // (Where THP is `always`, khugepaged may fill pages given back one by one again.)
    let thp_always = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|t| t.contains("[always]"));
    if !thp_always {
        assert!(
            resident <= s.pages + s.cached_pages,
            "{resident} pages resident after the pass, {s:?}"
        );
    }
    let mut out = [0u8; PAGE_SIZE];
    for o in 0..N {
        z.load(o, &mut out).unwrap();
        assert!(out == stamped(o), "page {o}");
    }
}
