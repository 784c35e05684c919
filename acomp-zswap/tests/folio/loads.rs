//! Folio pages load back by their offsets, one decode for pages loaded in a row, folios
//! stored again, kept page by page, or refused.

use super::*;

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
            assert_eq!(z.load(first + k, &mut out).unwrap(), LoadKind::Folio);
            assert_eq!(check(first + k, &out), 1);
        }
        let mut all = vec![zero(); n];
        z.load_pages(first, &mut all).unwrap();
        assert_eq!(all, folio(first, n, 1));
        let mut whole = vec![zero(); n];
        assert_eq!(z.decode_folio(first + 9, &mut whole).unwrap(), info);
        assert_eq!(whole, all);
        assert!(matches!(
            z.decode_folio(first, &mut whole[..3]),
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
            z.load_pages(first, &mut all),
            Err(LoadError::NotFound)
        ));
        z.load_pages(first + 4, &mut all[..4]).unwrap();
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
    z.load_pages(100, &mut eight).unwrap();
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
    z.load_pages(u64::MAX - 1, &mut two[..2]).unwrap();
    assert!(two[..2] == folio(u64::MAX - 1, 2, 3));
    z.store(u64::MAX - 1, &page(u64::MAX - 1, 5)).unwrap();
    z.load_pages(u64::MAX - 1, &mut two[..2]).unwrap();
    assert_eq!(
        (check(u64::MAX - 1, &two[0]), check(u64::MAX, &two[1])),
        (5, 3)
    );
    assert!(matches!(
        z.load_pages(u64::MAX - 1, &mut two),
        Err(LoadError::NotFound)
    ));
    z.store_folio(0, &folio(0, MAX_FOLIO_PAGES, 4)).unwrap();
    let mut all = vec![zero(); MAX_FOLIO_PAGES];
    z.load_pages(0, &mut all).unwrap();
    assert_eq!(all, folio(0, MAX_FOLIO_PAGES, 4));
}
