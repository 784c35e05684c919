//! The pool's unit tests.

use super::*;

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
    let a = pool.alloc(100, 0).unwrap();
    let b = pool.alloc(100, 0).unwrap();
    assert_ne!(a, b);
    pool.write(&a, &[1; 100]);
    pool.write(&b, &[2; 100]);
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
    let freed: BTreeSet<_> = [h3.obj, h7.obj].into();
    pool.free(h3);
    pool.free(h7);
    let again: BTreeSet<_> = (0..2).map(|_| pool.alloc(500, 0).unwrap().obj).collect();
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
fn straddling_objects_read_as_two_fragments() {
    let pool = Pool::default();
    // 3000-byte objects: the second starts at 3008 and crosses into the next page.
    let info = pool.class_info(3000).unwrap();
    assert!(info.pages_per_zspage > 1);
    let handles: Vec<_> = (0..info.objs_per_zspage)
        .map(|_| pool.alloc(3000, 0).unwrap())
        .collect();
    let mut straddlers = 0;
    for (i, h) in handles.iter().enumerate() {
        let data: Vec<u8> = (0..3000).map(|j| (i * 7 + j) as u8).collect();
        pool.write(h, &data);
        let (frags, back) = read(&pool, h, 3000);
        assert_eq!(back, data);
        assert_eq!(frags == 2, pool.straddles(h, 3000));
        straddlers += usize::from(frags == 2);
    }
    assert!(straddlers > 0);
    assert_eq!(pool.stats().straddled_reads, straddlers as u64);
    // Neighbours survive each other's writes.
    for (i, h) in handles.iter().enumerate() {
        let data: Vec<u8> = (0..3000).map(|j| (i * 7 + j) as u8).collect();
        assert_eq!(read(&pool, h, 3000).1, data);
    }
    // A short read of a straddling object may fit its first page.
    let h = &handles[1];
    assert!(pool.straddles(h, 3000));
    assert_eq!(read(&pool, h, 10).0, 1);
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
fn arena_maps_whole_chunks_and_reuses_free_pages() {
    let pool = Pool::default();
    // Page-sized objects: one backing page each.
    let n = 3 * CHUNK_PAGES + 10;
    let handles: Vec<_> = (0..n).map(|_| pool.alloc(PAGE_SIZE, 0).unwrap()).collect();
    let s = pool.stats();
    assert_eq!((s.pages, s.chunks), (n, 4));
    assert_eq!(s.cached_pages, CHUNK_PAGES - 10);
    assert_eq!(s.arena_size(), 4 * CHUNK_SIZE);
    // Freed pages are kept and serve new zspages: no chunk is mapped for them.
    let mut handles = handles.into_iter();
    for h in handles.by_ref().take(100) {
        pool.free(h);
    }
    let again: Vec<_> = (0..100 + CHUNK_PAGES - 10)
        .map(|_| pool.alloc(PAGE_SIZE, 0).unwrap())
        .collect();
    let s = pool.stats();
    assert_eq!((s.chunks, s.cached_pages, s.released_pages), (4, 0, 0));
    drop(again);
}

#[test]
fn arena_gives_whole_chunks_back_after_mass_invalidation() {
    let pool = Pool::default();
    // Objects of every size, so that every class's zspages share the chunks.
    let handles: Vec<_> = (0..20_000)
        .map(|i| pool.alloc(32 + i * 97 % 4064, i as u64).unwrap())
        .collect();
    let s = pool.stats();
    assert!(s.chunks >= 8, "{s:?}");
    assert_eq!(
        s.pages + s.cached_pages + s.released_pages,
        s.chunks * CHUNK_PAGES
    );
    for h in handles {
        pool.free(h);
    }
    // Every chunk went back to the kernel but one, kept below the high-water mark.
    let s = pool.stats();
    assert_eq!((s.pages, s.objects), (0, 0));
    assert_eq!(s.chunks, 1);
    assert_eq!(s.cached_pages + s.released_pages, CHUNK_PAGES);
    assert!(s.cached_pages <= ARENA_HIGH_PAGES, "{s:?}");
    assert_eq!(s.arena_size(), CHUNK_SIZE);
}

#[test]
fn reused_pages_keep_stale_bytes_that_never_read_as_an_object() {
    let pool = Pool::default();
    // Fill the first chunk's pages with a pattern, then free them all: they go back unzeroed.
    let old: Vec<_> = (0..CHUNK_PAGES)
        .map(|_| pool.alloc(PAGE_SIZE, 0).unwrap())
        .collect();
    for h in &old {
        pool.write(h, &[0xee; PAGE_SIZE]);
    }
    old.into_iter().for_each(|h| pool.free(h));
    assert_eq!(pool.stats().chunks, 1);
    // Short objects (shorter than their class) of every length, straddling or not: each
    // reads back as written, whatever the page held before.
    let short: Vec<_> = (1..600)
        .map(|len| {
            let h = pool.alloc(len + 15, len as u64).unwrap();
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8 | 1).collect();
            pool.write(&h, &data);
            (h, data)
        })
        .collect();
    assert_eq!(pool.stats().chunks, 1, "the chunk was reused");
    for (h, data) in &short {
        assert_eq!(&read(&pool, h, data.len()).1, data);
    }
}

#[test]
fn compaction_moves_objects_out_of_the_emptiest_zspages() {
    let pool = Pool::default();
    let info = pool.class_info(1000).unwrap();
    let n = info.objs_per_zspage * 4;
    let mut handles: Vec<_> = (0..n)
        .map(|i| pool.alloc(1000, i as u64).unwrap())
        .collect();
    for (i, h) in handles.iter().enumerate() {
        pool.write(h, &[i as u8; 1000]);
    }
    // Free three of every four objects: four zspages a quarter full.
    let mut kept = Vec::new();
    for (i, h) in handles.drain(..).enumerate() {
        if i % 4 == 0 {
            kept.push((i, h));
        } else {
            pool.free(h);
        }
    }
    assert_eq!(pool.stats().pages, 4 * info.pages_per_zspage);
    let candidates = pool.compaction_candidates();
    assert!(!candidates.is_empty());
    for (owner, place) in candidates {
        let (i, h) = kept.iter_mut().find(|(i, _)| *i as u64 == owner).unwrap();
        assert_eq!(h.place(), place);
        assert!(pool.migrate(h, 1000));
        assert_eq!(read(&pool, h, 1000).1, vec![*i as u8; 1000]);
    }
    // All fit one zspage now.
    assert_eq!(pool.stats().pages, info.pages_per_zspage);
    assert!(pool.compaction_candidates().is_empty());
    for (i, h) in &kept {
        assert_eq!(read(&pool, h, 1000).1, vec![*i as u8; 1000]);
    }
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
                    let h = pool.alloc(len, 0).unwrap();
                    let data = vec![t ^ round as u8; len];
                    pool.write(&h, &data);
                    assert_eq!(read(pool, &h, len).1, data);
                    pool.free(h);
                }
            });
        }
    });
    assert_eq!(pool.stats().pages, 0);
}
