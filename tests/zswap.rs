//! The zswap example's store, load and invalidate over real, random and zero pages, and the
//! example's pool's own unit tests (its modules are compiled in here, so that plain
//! `cargo test` runs them).

#[allow(dead_code)]
#[path = "../examples/zswap/input.rs"]
mod input;
#[allow(dead_code)]
#[path = "../examples/zswap/pool.rs"]
mod pool;
#[allow(dead_code)]
#[path = "../examples/zswap/workload.rs"]
mod workload;
#[allow(dead_code)]
#[path = "../examples/zswap/zswap.rs"]
mod zswap;

use std::path::PathBuf;

use acomp::Acomp;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::input::Input;
use crate::pool::{AllocError, PAGE_SIZE};
use crate::zswap::{Entry, LoadError, LoadKind, Page, Reject, StoreKind, Zswap};

fn zswap() -> Zswap {
    Zswap::new(Acomp::new("zstd").unwrap(), None)
}

/// `../shared/testdata/cases`, or `None` (saying the tests that need it are skipped).
fn cases() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata/cases");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: {} is absent; the zswap tests over real pages need the shared test data",
            dir.display()
        );
        None
    }
}

/// Pages of every file under `cases` (the last of each zero-padded), and of random and zero
/// bytes.
fn test_pages() -> Vec<Box<Page>> {
    let mut pages = Vec::new();
    if let Some(dir) = cases() {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for path in files {
            let input = Input::read(&path).unwrap();
            pages.extend((0..input.len()).map(|i| Box::new(*input.page(i))));
        }
    }
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..64 {
        let mut page = Box::new([0u8; PAGE_SIZE]);
        rng.fill(&mut page[..]);
        pages.push(page);
    }
    // Pages that compress to every size: random bytes, then zeros.
    for random in (0..PAGE_SIZE).step_by(61) {
        let mut page = Box::new([0u8; PAGE_SIZE]);
        rng.fill(&mut page[..random]);
        pages.push(page);
    }
    pages.push(Box::new([0; PAGE_SIZE]));
    pages.push(Box::new([0xAB; PAGE_SIZE]));
    pages
}

fn load(z: &Zswap, offset: u64) -> Result<(LoadKind, Box<Page>), LoadError> {
    let mut page = Box::new([0x5Au8; PAGE_SIZE]);
    z.load(offset, &mut page).map(|kind| (kind, page))
}

#[test]
fn every_page_comes_back() {
    let pages = test_pages();
    let z = zswap();
    let mut kinds = [0usize; 3];
    for (i, page) in pages.iter().enumerate() {
        match z.store(i as u64, page).unwrap() {
            StoreKind::Compressed => kinds[0] += 1,
            StoreKind::Incompressible => kinds[1] += 1,
            StoreKind::SameFilled => kinds[2] += 1,
        }
    }
    assert!(
        kinds.iter().all(|&k| k > 0),
        "every kind of store: {kinds:?}"
    );
    let before = z.acomp().stats();
    let (mut one, mut two) = (0, 0);
    for (i, page) in pages.iter().enumerate().rev() {
        let straddles = z.straddles(i as u64);
        let (kind, back) = load(&z, i as u64).unwrap();
        assert_eq!(back, *page, "page {i}");
        match kind {
            LoadKind::OneFragment => one += 1,
            LoadKind::Straddling => two += 1,
            _ => {}
        }
        assert_eq!(kind == LoadKind::Straddling, straddles, "page {i}");
    }
    assert!(two > 0, "some objects straddle backing pages");
    let after = z.acomp().stats();
    assert_eq!(after.one_shot - before.one_shot, one);
    assert_eq!(
        after.stream - before.stream,
        two,
        "every straddling load takes the stream path"
    );

    let c = z.counters();
    assert_eq!(c.stored_pages, pages.len() as u64);
    assert_eq!(c.same_filled_pages, kinds[2] as u64);
    assert_eq!(c.stored_incompressible_pages, kinds[1] as u64);
    assert_eq!(c.reject_compress_poor, kinds[1] as u64);
    assert_eq!((c.reject_compress_fail, c.decompress_fail), (0, 0));
    for i in 0..pages.len() {
        assert!(z.invalidate(i as u64));
    }
    let c = z.counters();
    assert_eq!(
        (c.stored_pages, c.stored_bytes, c.pool.objects, c.pool.pages),
        (0, 0, 0, 0)
    );
}

#[test]
fn same_filled_pages_keep_only_their_value() {
    let z = zswap();
    for (i, v) in [0u8, 1, 0xAB, 0xFF].into_iter().enumerate() {
        assert_eq!(
            z.store(i as u64, &[v; PAGE_SIZE]),
            Ok(StoreKind::SameFilled)
        );
        assert_eq!(z.entry(i as u64), Some(Entry::SameFilled(v)));
        assert_eq!(
            load(&z, i as u64).unwrap(),
            (LoadKind::Filled, Box::new([v; PAGE_SIZE]))
        );
    }
    assert_eq!(z.counters().pool.pages, 0);
    // One differing byte, anywhere, makes a page not same-filled.
    for at in [0, 7, 8, PAGE_SIZE - 1] {
        let mut page = [3u8; PAGE_SIZE];
        page[at] = 4;
        assert_eq!(zswap::same_filled(&page), None, "byte {at}");
    }
}

#[test]
fn incompressible_pages_are_copied() {
    let z = zswap();
    let mut page = Box::new([0u8; PAGE_SIZE]);
    StdRng::seed_from_u64(1).fill(&mut page[..]);
    assert_eq!(z.store(9, &page), Ok(StoreKind::Incompressible));
    assert!(matches!(z.entry(9), Some(Entry::Incompressible { .. })));
    assert_eq!(load(&z, 9).unwrap(), (LoadKind::Copied, page));
    let c = z.counters();
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
    assert_eq!(z.store(5, &a), Ok(StoreKind::Compressed));
    assert_eq!(z.store(5, &b), Ok(StoreKind::Compressed));
    assert_eq!(*load(&z, 5).unwrap().1, b);
    assert_eq!(z.counters().stored_pages, 1);
    assert_eq!(z.counters().pool.objects, 1);
    assert!(z.invalidate(5));
    assert!(!z.invalidate(5));
    assert_eq!(load(&z, 5), Err(LoadError::NotFound));
    assert_eq!(z.counters().pool.objects, 0);
}

#[test]
fn pool_limit_rejects_the_page() {
    let z = Zswap::new(Acomp::new("zstd").unwrap(), Some(1));
    let mut page = Box::new([0u8; PAGE_SIZE]);
    StdRng::seed_from_u64(2).fill(&mut page[..]);
    assert_eq!(z.store(0, &page), Ok(StoreKind::Incompressible));
    page[0] ^= 1;
    assert_eq!(z.store(1, &page), Err(Reject::Alloc(AllocError::LimitHit)));
    assert_eq!(z.counters().reject_alloc_fail, 1);
    assert_eq!(load(&z, 1), Err(LoadError::NotFound));
}

#[test]
fn input_pads_the_last_page() {
    let input = Input::from_bytes("odd".into(), vec![7; PAGE_SIZE + 10]);
    assert_eq!(
        (input.len(), input.padding, input.file_len()),
        (2, PAGE_SIZE - 10, PAGE_SIZE + 10)
    );
    assert!(input.page(1)[..10].iter().all(|&b| b == 7));
    assert!(input.page(1)[10..].iter().all(|&b| b == 0));
    let empty = Input::from_bytes("empty".into(), vec![]);
    assert!(empty.is_empty());
    assert_eq!(empty.len(), 0);
    let missing = Input::read("/nonexistent/zswap-input".as_ref()).unwrap_err();
    assert!(
        missing.to_string().contains("/nonexistent/zswap-input"),
        "{missing}"
    );
    assert!(Input::read(env!("CARGO_MANIFEST_DIR").as_ref()).is_err());
}

#[test]
fn workload_verifies_every_page_on_threads() {
    let mut bytes: Vec<u8> = test_pages()
        .iter()
        .flat_map(|p| p.iter().copied())
        .collect();
    bytes.truncate(bytes.len() - 100);
    let input = Input::from_bytes("test pages".into(), bytes);
    let z = zswap();
    let opts = workload::Options {
        threads: 3,
        seed: 5,
        level: 3,
        progress: None,
    };
    let report = workload::run(&z, &input, &opts);
    assert!(report.ok(), "{:?}", report.failures);
    assert_eq!(report.verified, 2 * input.len() as u64);
    assert_eq!(report.pool_pages_at_end, 0);
    assert_eq!(report.load_paths.1, report.load_straddling.len());
    assert_eq!(report.load_paths.0, report.load_one.len());
    assert!(!report.load_straddling.is_empty());
}
