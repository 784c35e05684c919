//! The tier with zstd over real pages (the shared test cases, or the test binary's pages
//! in a plain clone: `acomp_pages::cases`), random, partly random and same-filled ones:
//! every page back by its load path, the counters, and each kind of page on its own.

use acomp::Acomp;
use acomp_pages::cases;
use acomp_zswap::{EntryInfo, LoadError, LoadKind, PAGE_SIZE, Page, StoreKind, Zswap, same_filled};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn zswap() -> Zswap {
    Zswap::builder(Acomp::new("zstd").unwrap())
        .max_pool_bytes(u64::MAX)
        .build()
        .unwrap()
}

fn load(z: &Zswap, offset: u64) -> Result<(LoadKind, Box<Page>), LoadError> {
    let mut page = Box::new([0x5Au8; PAGE_SIZE]);
    z.load(offset, &mut page).map(|kind| (kind, page))
}

#[test]
fn every_page_comes_back() {
    let pages = cases::pages();
    let z = zswap();
    let mut kinds = [0usize; 3];
    for (i, page) in pages.iter().enumerate() {
        match z.store(i as u64, page).unwrap() {
            StoreKind::Compressed => kinds[0] += 1,
            StoreKind::Incompressible => kinds[1] += 1,
            StoreKind::SameFilled => kinds[2] += 1,
            other => panic!("a kind this test does not know: {other:?}"),
        }
    }
    assert!(
        kinds.iter().all(|&k| k > 0),
        "every kind of store: {kinds:?}"
    );
    // Objects that straddle neighbouring backing pages come to acomp in one fragment, those
    // on pages apart in two; with the test hook (`split`), every straddling object in two.
    for split in [false, true] {
        z.pool_split_reads(split);
        let before = (z.acomp().stats(), z.pool_stats());
        let (mut one, mut two) = (0, 0);
        for (i, page) in pages.iter().enumerate().rev() {
            let straddles = z.straddles(i as u64);
            let (kind, back) = load(&z, i as u64).unwrap();
            assert_eq!(back, *page, "page {i}");
            match (kind, straddles) {
                (LoadKind::Decompressed, false) => one += 1,
                (LoadKind::Decompressed, true) => two += 1,
                (_, s) => assert!(!s, "page {i}: only a compressed object straddles"),
            }
        }
        let after = (z.acomp().stats(), z.pool_stats());
        let (joined, straddled) = (
            after.1.joined_reads - before.1.joined_reads,
            after.1.straddled_reads - before.1.straddled_reads,
        );
        assert_eq!(straddled - joined, two);
        if split {
            assert!(
                two > 0 && joined == 0,
                "some objects straddle backing pages"
            );
        } else {
            assert!(joined > 0, "some objects straddle neighbouring pages");
        }
        assert_eq!(after.0.one_shot - before.0.one_shot, one);
        assert_eq!(
            (after.0.stream + after.0.linearised) - (before.0.stream + before.0.linearised),
            two,
            "every two-fragment load takes the multi-fragment path (zstd's stream, lz4's \
             linearised)"
        );
    }

    let c = z.stats();
    assert_eq!(c.stored_pages, pages.len() as u64);
    assert_eq!(c.same_filled_pages, kinds[2] as u64);
    assert_eq!(c.stored_incompressible_pages, kinds[1] as u64);
    assert_eq!(c.reject_compress_poor, kinds[1] as u64);
    assert_eq!((c.reject_compress_fail, c.decompress_fail), (0, 0));
    for i in 0..pages.len() {
        assert!(z.invalidate(i as u64));
    }
    let (c, pool) = (z.stats(), z.pool_stats());
    assert_eq!(
        (c.stored_pages, c.stored_bytes, pool.objects, pool.pages),
        (0, 0, 0, 0)
    );
}

#[test]
fn same_filled_pages_keep_only_their_value() {
    let z = zswap();
    for (i, v) in [0u8, 1, 0xAB, 0xFF].into_iter().enumerate() {
        assert_eq!(
            z.store(i as u64, &[v; PAGE_SIZE]).unwrap(),
            StoreKind::SameFilled
        );
        assert_eq!(z.entry(i as u64), Some(EntryInfo::SameFilled(v)));
        assert_eq!(
            load(&z, i as u64).unwrap(),
            (LoadKind::Filled, Box::new([v; PAGE_SIZE]))
        );
    }
    assert_eq!(z.pool_stats().pages, 0);
    // One differing byte, anywhere, makes a page not same-filled.
    for at in [0, 7, 8, PAGE_SIZE - 1] {
        let mut page = [3u8; PAGE_SIZE];
        page[at] = 4;
        assert_eq!(same_filled(&page), None, "byte {at}");
    }
}

#[test]
fn incompressible_pages_are_copied() {
    let z = zswap();
    let mut page = Box::new([0u8; PAGE_SIZE]);
    StdRng::seed_from_u64(1).fill(&mut page[..]);
    assert_eq!(z.store(9, &page).unwrap(), StoreKind::Incompressible);
    assert!(matches!(z.entry(9), Some(EntryInfo::Incompressible)));
    assert_eq!(load(&z, 9).unwrap(), (LoadKind::Incompressible, page));
    let c = z.stats();
    assert_eq!(
        (c.reject_compress_poor, c.stored_bytes),
        (1, PAGE_SIZE as u64)
    );
}

#[test]
fn store_replaces_and_invalidate_frees() {
    let z = zswap();
    let text = b"a swapped-out page of text ".repeat(200);
    let mut a = [0u8; PAGE_SIZE];
    a.copy_from_slice(&text[..PAGE_SIZE]);
    let mut b = a;
    b[100] = b'!';
    assert_eq!(z.store(5, &a).unwrap(), StoreKind::Compressed);
    assert_eq!(z.store(5, &b).unwrap(), StoreKind::Compressed);
    assert_eq!(*load(&z, 5).unwrap().1, b);
    assert_eq!(z.stats().stored_pages, 1);
    assert_eq!(z.pool_stats().objects, 1);
    assert!(z.invalidate(5));
    assert!(!z.invalidate(5));
    assert!(matches!(load(&z, 5), Err(LoadError::NotFound)));
    assert_eq!(z.pool_stats().objects, 0);
}
