//! Units of pages stored as folios, as the main job's `--unit` rows store them: every unit
//! size comes back page by page and whole, frames larger than a page, and a unit kept until
//! its last page is invalidated (moved here from the main job's tests).

use super::*;
use acomp_pages::cases;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

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
                .load_pages(first as u64, &mut buf[..unit_len(u)])
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
