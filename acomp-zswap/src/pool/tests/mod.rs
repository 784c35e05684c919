//! The pool's unit tests: here allocation, reads and writes, sizes and threads; by concept
//! in the files beside it.

use std::collections::BTreeSet;

use super::*;

mod arena;
mod fullness;
mod straddle;

fn read(pool: &Pool, h: &Handle, len: usize) -> (usize, Vec<u8>) {
    pool.read_sg(h, len, |frags| {
        (
            frags.len(),
            frags.iter().flat_map(|f| f.iter().copied()).collect(),
        )
    })
}

#[test]
fn classes_cover_every_size() {
    assert_eq!(NR_CLASSES, 255);
    let pool = Pool::default();
    for size in 1..=PAGE_SIZE {
        let info = pool.class_info(size).unwrap();
        assert!(info.size >= size && info.size < size.max(MIN_ALLOC_SIZE) + CLASS_DELTA);
        assert!((1..=MAX_PAGES_PER_ZSPAGE).contains(&info.pages_per_zspage));
        assert!(info.objs_per_zspage >= 1);
    }
    assert_eq!(pool.class_info(0), None);
    assert_eq!(pool.class_info(PAGE_SIZE + 1), None);
    // A page-sized object gets a zspage of one page to itself.
    let page = pool.class_info(PAGE_SIZE).unwrap();
    assert_eq!((page.pages_per_zspage, page.objs_per_zspage), (1, 1));
}

#[test]
fn alloc_write_read_free() {
    let pool = Pool::default();
    let mut a = pool.alloc(100, 0).unwrap();
    let mut b = pool.alloc(100, 0).unwrap();
    assert_ne!(a, b);
    pool.write(&mut a, &[1; 100]);
    pool.write(&mut b, &[2; 100]);
    assert_eq!(read(&pool, &a, 100), (1, vec![1; 100]));
    assert_eq!(read(&pool, &b, 100), (1, vec![2; 100]));
    let info = pool.class_info(100).unwrap();
    assert_eq!(pool.stats().pages, info.pages_per_zspage);
    assert_eq!(pool.stats().objects, 2);
    assert_eq!(pool.stats().straddled_reads, 0);
    pool.free(a);
    pool.free(b);
    // The zspage is empty: its backing pages went back to the arena, which keeps its one
    // chunk.
    assert_eq!(pool.stats().pages, 0);
    assert_eq!(pool.stats().objects, 0);
    assert_eq!(pool.stats().cached_pages, CHUNK_PAGES);
    assert_eq!(pool.stats().chunks, 1);
}

#[test]
fn freed_objects_are_reused() {
    let pool = Pool::default();
    // One full zspage of 512-byte objects.
    let n = pool.class_info(500).unwrap().objs_per_zspage;
    assert!(n > 7);
    let handles: Vec<_> = (0..n).map(|_| pool.alloc(500, 0).unwrap()).collect();
    let pages = pool.stats().pages;
    let mut handles = handles;
    let (h7, h3) = (handles.remove(7), handles.remove(3));
    let freed: BTreeSet<_> = [h3.obj(), h7.obj()].into();
    pool.free(h3);
    pool.free(h7);
    let again: BTreeSet<_> = (0..2).map(|_| pool.alloc(500, 0).unwrap().obj()).collect();
    assert_eq!(again, freed);
    assert_eq!(
        pool.stats().pages,
        pages,
        "no new zspage while one has room"
    );
}

#[test]
fn zspages_fill_before_new_ones_and_ids_are_reused() {
    let pool = Pool::default();
    let info = pool.class_info(1000).unwrap();
    let n = info.objs_per_zspage;
    let first: Vec<_> = (0..n).map(|_| pool.alloc(1000, 0).unwrap()).collect();
    assert!(first.iter().all(|h| h.zspage == first[0].zspage));
    assert_eq!(pool.stats().pages, info.pages_per_zspage);
    let next = pool.alloc(1000, 0).unwrap();
    assert_ne!(next.zspage, first[0].zspage);
    assert_eq!(pool.stats().pages, 2 * info.pages_per_zspage);
    let first_id = first[0].zspage;
    for h in first {
        pool.free(h);
    }
    assert_eq!(pool.stats().pages, info.pages_per_zspage);
    // The first zspage's id is vacant; a zspage made later takes it.
    let more: Vec<_> = (0..n).map(|_| pool.alloc(1000, 0).unwrap()).collect();
    assert!(more.iter().any(|h| h.zspage == first_id));
}

#[test]
fn bad_sizes_and_limit() {
    let pool = Pool::new(Some(2));
    assert_eq!(pool.alloc(0, 0).unwrap_err(), AllocError::BadSize(0));
    assert_eq!(
        pool.alloc(PAGE_SIZE + 1, 0).unwrap_err(),
        AllocError::BadSize(PAGE_SIZE + 1)
    );
    let a = pool.alloc(PAGE_SIZE, 0).unwrap();
    let _b = pool.alloc(PAGE_SIZE, 0).unwrap();
    assert_eq!(pool.alloc(PAGE_SIZE, 0).unwrap_err(), AllocError::LimitHit);
    assert_eq!(pool.stats().pages, 2);
    pool.free(a);
    assert!(pool.alloc(PAGE_SIZE, 0).is_ok());
}

#[test]
fn threads_share_a_pool() {
    let pool = Pool::default();
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let pool = &pool;
            s.spawn(move || {
                for round in 0..200usize {
                    let len = 40 + (round * 37 + t as usize * 11) % 4000;
                    let mut h = pool.alloc(len, 0).unwrap();
                    let data = vec![t ^ round as u8; len];
                    pool.write(&mut h, &data);
                    assert_eq!(read(pool, &h, len).1, data);
                    pool.free(h);
                }
            });
        }
    });
    assert_eq!(pool.stats().pages, 0);
}

#[test]
fn a_handle_is_12_bytes() {
    assert_eq!(std::mem::size_of::<Handle>(), 12);
    assert!(!std::mem::needs_drop::<Handle>());
}
