//! The pool's unit tests.

use std::collections::BTreeSet;

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
fn objects_straddling_neighbouring_pages_read_as_one_fragment() {
    let pool = Pool::default();
    // 3000-byte objects: the second starts at 3008 and crosses into the next page. A new
    // pool's first zspage takes pages 0, 1, 2 of its first chunk: neighbours.
    let info = pool.class_info(3000).unwrap();
    assert!(info.pages_per_zspage > 1);
    let mut handles: Vec<_> = (0..info.objs_per_zspage)
        .map(|_| pool.alloc(3000, 0).unwrap())
        .collect();
    let data = |i: usize| -> Vec<u8> { (0..3000).map(|j| (i * 7 + j) as u8).collect() };
    let mut straddlers = 0;
    for (i, h) in handles.iter_mut().enumerate() {
        pool.write(h, &data(i));
        assert_eq!(read(&pool, h, 3000), (1, data(i)), "object {i}");
        assert!(!pool.two_fragments(h, 3000));
        straddlers += usize::from(pool.straddles(h, 3000));
    }
    assert_eq!(straddlers, info.pages_per_zspage - 1);
    let s = pool.stats();
    assert_eq!((s.straddled_reads, s.joined_reads), (2, 2));
    // Neighbours survive each other's writes.
    for (i, h) in handles.iter().enumerate() {
        assert_eq!(read(&pool, h, 3000).1, data(i));
    }
    // The test hook splits them, with the same bytes: two fragments, cut at the boundary.
    pool.set_split_reads(true);
    let h = &handles[1];
    assert!(pool.straddles(h, 3000) && pool.two_fragments(h, 3000));
    let cut = pool.read_sg(h, 3000, |frags| {
        frags.iter().map(|f| f.len()).collect::<Vec<_>>()
    });
    assert_eq!(cut, [PAGE_SIZE - 3008, 3000 - (PAGE_SIZE - 3008)]);
    assert_eq!(read(&pool, h, 3000), (2, data(1)));
    pool.set_split_reads(false);
    // A short read of a straddling object may fit its first page.
    assert_eq!(read(&pool, h, 10), (1, data(1)[..10].to_vec()));
    let s = pool.stats();
    assert_eq!((s.straddled_reads, s.joined_reads), (6, 4));
}

/// A pool whose first `chunks` chunks are full of page-sized objects (each a one-page
/// zspage, the pages in order), and those objects.
fn full_chunks(chunks: usize) -> (Pool, Vec<Handle>) {
    let pool = Pool::default();
    let pages: Vec<_> = (0..chunks * CHUNK_PAGES)
        .map(|_| pool.alloc(PAGE_SIZE, 0).unwrap())
        .collect();
    for (i, h) in pages.iter().enumerate() {
        assert_eq!(h.first.0 as usize, i);
    }
    assert_eq!(
        (pool.stats().chunks, pool.stats().cached_pages),
        (chunks, 0)
    );
    (pool, pages)
}

/// Frees the objects of `pages` at `at`, then fills a zspage of the 3000-byte class (three
/// pages: the free ones) with patterns: its objects and their data.
fn zspage_on(pool: &Pool, pages: &mut Vec<Handle>, at: &[usize]) -> Vec<(Handle, Vec<u8>)> {
    for &i in at.iter().rev() {
        pool.free(pages.remove(i));
    }
    let info = pool.class_info(3000).unwrap();
    assert_eq!(info.pages_per_zspage, at.len());
    (0..info.objs_per_zspage)
        .map(|i| {
            let mut h = pool.alloc(3000, 0).unwrap();
            let data: Vec<u8> = (0..3000).map(|j| (i * 13 + j * 5) as u8).collect();
            pool.write(&mut h, &data);
            (h, data)
        })
        .collect()
}

/// The backing pages of the zspage of `h`, by number.
fn zspage_pages(pool: &Pool, h: &Handle) -> Vec<u32> {
    let class = pool.classes[h.class as usize].state.lock();
    class.zspage(h.zspage).pages.iter().map(|p| p.0).collect()
}

#[test]
fn objects_straddling_pages_apart_read_as_two_fragments() {
    let (pool, mut pages) = full_chunks(1);
    let objs = zspage_on(&pool, &mut pages, &[10, 20, 30]);
    let mut straddlers = 0;
    for (i, (h, data)) in objs.iter().enumerate() {
        let frags = if pool.straddles(h, 3000) { 2 } else { 1 };
        straddlers += frags - 1;
        assert_eq!(read(&pool, h, 3000), (frags, data.clone()), "object {i}");
        assert_eq!(pool.two_fragments(h, 3000), frags == 2);
    }
    assert_eq!(straddlers, 2);
    let s = pool.stats();
    assert_eq!((s.straddled_reads, s.joined_reads), (2, 0));
}

#[test]
fn a_chunks_last_page_and_the_next_chunks_first_are_not_neighbours() {
    // Pages 510 and 511 of chunk 0 and page 0 of chunk 1 (512): numbers in a row, two
    // mappings. Taken from the chunk with the fewest free pages first (chunk 1), they are
    // handed out in the order of their numbers.
    let (pool, mut pages) = full_chunks(2);
    let at = [CHUNK_PAGES - 2, CHUNK_PAGES - 1, CHUNK_PAGES];
    let objs = zspage_on(&pool, &mut pages, &at);
    assert_eq!(zspage_pages(&pool, &objs[0].0), at.map(|p| p as u32));
    let (mut joined, mut apart) = (0, 0);
    for (i, (h, data)) in objs.iter().enumerate() {
        if !pool.straddles(h, 3000) {
            assert_eq!(read(&pool, h, 3000), (1, data.clone()), "object {i}");
            continue;
        }
        let across = h.first.0 as usize == CHUNK_PAGES - 1;
        assert_eq!(h.second.0, h.first.0 + 1, "object {i}");
        let frags = if across { 2 } else { 1 };
        assert_eq!(read(&pool, h, 3000), (frags, data.clone()), "object {i}");
        assert_eq!(pool.two_fragments(h, 3000), across);
        (joined, apart) = (joined + 2 - frags, apart + frags - 1);
    }
    assert_eq!((joined, apart), (1, 1));
    let s = pool.stats();
    assert_eq!((s.straddled_reads, s.joined_reads), (2, 1));
}

#[test]
fn a_zspage_takes_free_pages_in_a_row_where_a_chunk_has_them() {
    // Free pages 10 and 62, 63, 64 (a run across two words of the chunk's bitmap): a
    // zspage of three pages takes the run, not the lowest pages; another, with no run of
    // three left, takes the lowest ones, in order.
    let (pool, mut pages) = full_chunks(1);
    for i in [64, 63, 62, 30, 20, 10] {
        pool.free(pages.remove(i));
    }
    let per = pool.class_info(3000).unwrap().objs_per_zspage;
    // A whole zspage's objects, so that the next call opens a new one.
    let zspage = |pool: &Pool| {
        let hs: Vec<_> = (0..per).map(|_| pool.alloc(3000, 0).unwrap()).collect();
        assert!(hs.iter().all(|h| h.zspage == hs[0].zspage));
        zspage_pages(pool, &hs[0])
    };
    assert_eq!(zspage(&pool), [62, 63, 64]);
    assert_eq!(zspage(&pool), [10, 20, 30]);
}

#[test]
fn chains_join_pieces_on_neighbouring_pages() {
    let pool = Pool::default();
    // A page-sized piece, then a 3000-byte tail that straddles pages 2 and 3 (the second
    // object of a zspage on pages 1, 2, 3).
    let mut head = pool.alloc(PAGE_SIZE, 0).unwrap();
    let first = pool.alloc(3000, 0).unwrap();
    let mut tail = pool.alloc(3000, 0).unwrap();
    assert!(pool.straddles(&tail, 3000));
    let data: Vec<u8> = (0..PAGE_SIZE + 3000).map(|j| (j * 3 + 1) as u8).collect();
    pool.write(&mut head, &data[..PAGE_SIZE]);
    pool.write(&mut tail, &data[PAGE_SIZE..]);
    let chain = [head, tail];
    let read_chain = |pool: &Pool| {
        pool.read_chain_sg(&chain, data.len(), |frags| {
            (
                frags.iter().map(|f| f.len()).collect::<Vec<_>>(),
                frags
                    .iter()
                    .flat_map(|f| f.iter().copied())
                    .collect::<Vec<u8>>(),
            )
        })
    };
    assert_eq!(read_chain(&pool), (vec![PAGE_SIZE, 3000], data.clone()));
    pool.set_split_reads(true);
    let cut = PAGE_SIZE - 3008;
    assert_eq!(
        read_chain(&pool),
        (vec![PAGE_SIZE, cut, 3000 - cut], data.clone())
    );
    let s = pool.stats();
    assert_eq!((s.straddled_reads, s.joined_reads), (2, 1));
    pool.free(first);
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
    // Every chunk went back to the kernel but one, kept below the high-water mark; the
    // others stay mapped, not resident.
    let full = s;
    let s = pool.stats();
    assert_eq!((s.pages, s.objects), (0, 0));
    assert_eq!((s.chunks, s.released_chunks), (1, full.chunks - 1));
    assert_eq!(s.cached_pages + s.released_pages, CHUNK_PAGES);
    assert!(s.cached_pages <= ARENA_HIGH_PAGES, "{s:?}");
    assert_eq!(s.arena_size(), full.arena_size());
    // The kernel agrees: only the kept chunk's free pages may be resident (those it gave
    // back one by one too where khugepaged collapsed the chunk meanwhile: `tests/arena.rs`).
    let resident = pool.resident_pages();
    assert!(
        (s.cached_pages..=CHUNK_PAGES).contains(&resident),
        "{resident}: {s:?}"
    );
}

#[test]
fn reused_pages_keep_stale_bytes_that_never_read_as_an_object() {
    let pool = Pool::default();
    // Fill the first chunk's pages with a pattern, then free them all: they go back unzeroed.
    let mut old: Vec<_> = (0..CHUNK_PAGES)
        .map(|_| pool.alloc(PAGE_SIZE, 0).unwrap())
        .collect();
    for h in &mut old {
        pool.write(h, &[0xee; PAGE_SIZE]);
    }
    old.into_iter().for_each(|h| pool.free(h));
    assert_eq!(pool.stats().chunks, 1);
    // Short objects (shorter than their class) of every length, straddling or not: each
    // reads back as written, whatever the page held before.
    let short: Vec<_> = (1..600)
        .map(|len| {
            let mut h = pool.alloc(len + 15, len as u64).unwrap();
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8 | 1).collect();
            pool.write(&mut h, &data);
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
    for (i, h) in handles.iter_mut().enumerate() {
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
fn a_handle_is_16_bytes() {
    assert_eq!(std::mem::size_of::<Handle>(), 16);
    assert!(!std::mem::needs_drop::<Handle>());
}

#[test]
fn fullness_groups_are_zsmallocs() {
    // get_fullness_group over 127 objects (a class of 32-byte objects... any class).
    assert_eq!(fullness_group(0, 127), 0);
    assert_eq!(fullness_group(1, 127), ZS_INUSE_RATIO_10);
    assert_eq!(fullness_group(12, 127), ZS_INUSE_RATIO_10);
    assert_eq!(fullness_group(13, 127), 2);
    assert_eq!(fullness_group(64, 127), 6);
    assert_eq!(fullness_group(126, 127), ZS_INUSE_RATIO_99);
    assert_eq!(fullness_group(127, 127), ZS_INUSE_RATIO_100);
    assert_eq!(fullness_group(1, 2), 6);
}

/// Zspages of the 100-byte class, each full, then freed down to `kept[i]` objects.
fn zspages_kept(pool: &Pool, kept: &[usize]) -> Vec<Vec<Handle>> {
    let per = pool.class_info(100).unwrap().objs_per_zspage;
    let mut all: Vec<Vec<Handle>> = kept
        .iter()
        .map(|_| (0..per).map(|_| pool.alloc(100, 0).unwrap()).collect())
        .collect();
    for (hs, &k) in all.iter_mut().zip(kept) {
        assert!(hs.iter().all(|h| h.zspage == hs[0].zspage));
        for h in hs.drain(k..) {
            pool.free(h);
        }
    }
    all
}

#[test]
fn alloc_takes_from_the_fullest_group() {
    let pool = Pool::default();
    let per = pool.class_info(100).unwrap().objs_per_zspage;
    assert!(per >= 10, "{per} objects a zspage");
    // Three zspages: one object in use, half in use, all but one: three groups apart.
    let zs = zspages_kept(&pool, &[1, per / 2, per - 1]);
    let ids: Vec<u32> = zs.iter().map(|hs| hs[0].zspage).collect();
    // The fullest (all but one in use) takes the next object, then, full, the half one.
    let a = pool.alloc(100, 0).unwrap();
    assert_eq!(a.zspage, ids[2]);
    let b = pool.alloc(100, 0).unwrap();
    assert_eq!(b.zspage, ids[1]);
    // Filling the half one takes its free objects before the emptiest gets one.
    let rest: Vec<_> = (0..per - per / 2 - 1)
        .map(|_| pool.alloc(100, 0).unwrap())
        .collect();
    assert!(rest.iter().all(|h| h.zspage == ids[1]));
    assert_eq!(pool.alloc(100, 0).unwrap().zspage, ids[0]);
}

#[test]
fn compaction_drains_the_emptiest_group_into_the_fullest() {
    let pool = Pool::default();
    let per = pool.class_info(100).unwrap().objs_per_zspage;
    // One object in use, and three quarters in use: the first moves into the second.
    let mut zs = zspages_kept(&pool, &[1, per * 3 / 4]);
    let (sparse, full) = (zs[0][0].zspage, zs[1][0].zspage);
    let candidates = pool.compaction_candidates();
    assert_eq!(candidates.len(), 1);
    assert_eq!(candidates[0].1, zs[0][0].place());
    pool.write(&mut zs[0][0], &[7; 100]);
    assert!(pool.migrate(&mut zs[0][0], 100));
    assert_eq!(zs[0][0].zspage, full);
    assert_ne!(full, sparse);
    assert_eq!(read(&pool, &zs[0][0], 100).1, vec![7; 100]);
    assert_eq!(
        pool.stats().pages,
        pool.class_info(100).unwrap().pages_per_zspage
    );
}

#[test]
fn a_released_chunk_is_populated_again_before_a_new_one_is_mapped() {
    let pool = Pool::default();
    // Three chunks of page-sized objects, then all freed: two go back whole.
    let handles: Vec<_> = (0..3 * CHUNK_PAGES)
        .map(|_| pool.alloc(PAGE_SIZE, 0).unwrap())
        .collect();
    handles.into_iter().for_each(|h| pool.free(h));
    let s = pool.stats();
    assert_eq!((s.chunks, s.released_chunks), (1, 2));
    assert_eq!(pool.resident_pages(), CHUNK_PAGES);
    // Two chunks' worth again: the kept one and a released one, populated anew; no chunk
    // mapped.
    let handles: Vec<_> = (0..2 * CHUNK_PAGES)
        .map(|_| pool.alloc(PAGE_SIZE, 0).unwrap())
        .collect();
    let s = pool.stats();
    assert_eq!((s.chunks, s.released_chunks, s.cached_pages), (2, 1, 0));
    assert_eq!(s.arena_size(), 3 * CHUNK_SIZE);
    assert_eq!(pool.resident_pages(), 2 * CHUNK_PAGES);
    drop(handles);
}

#[test]
fn a_straddling_object_reads_both_pages_after_a_neighbour_chunk_is_reused() {
    // Two chunks full of page-sized objects but the last page of chunk 0 and the first two
    // of chunk 1, where a zspage of the 3000-byte class (three pages) goes: no chunk has
    // three free pages in a row, so it takes pages of both chunks.
    let (pool, mut fill) = full_chunks(2);
    let objs: Vec<_> = zspage_on(
        &pool,
        &mut fill,
        &[CHUNK_PAGES - 1, CHUNK_PAGES, CHUNK_PAGES + 1],
    )
    .into_iter()
    .enumerate()
    .map(|(i, (mut h, _))| {
        pool.write(&mut h, &vec![i as u8 | 0x80; 3000]);
        h
    })
    .collect();
    assert_eq!(pool.stats().chunks, 2);
    let straddler = objs
        .iter()
        .find(|h| {
            pool.straddles(h, 3000)
                && h.first.0 as usize / CHUNK_PAGES != h.second.0 as usize / CHUNK_PAGES
        })
        .expect("an object across the two chunks");
    // More chunks of pages, freed: the chunks go back whole and are taken again.
    let mut more: Vec<_> = (0..2 * CHUNK_PAGES)
        .map(|_| pool.alloc(PAGE_SIZE, 0).unwrap())
        .collect();
    for h in &mut more {
        pool.write(h, &[0x11; PAGE_SIZE]);
    }
    more.into_iter().for_each(|h| pool.free(h));
    assert!(pool.stats().released_chunks >= 1);
    let mut again: Vec<_> = (0..2 * CHUNK_PAGES)
        .map(|_| pool.alloc(PAGE_SIZE, 0).unwrap())
        .collect();
    for h in &mut again {
        pool.write(h, &[0x22; PAGE_SIZE]);
    }
    let i = objs.iter().position(|h| h == straddler).unwrap();
    let (frags, back) = read(&pool, straddler, 3000);
    assert_eq!(frags, 2);
    assert_eq!(back, vec![i as u8 | 0x80; 3000]);
    for (i, h) in objs.iter().enumerate() {
        assert_eq!(read(&pool, h, 3000).1, vec![i as u8 | 0x80; 3000]);
    }
    drop((fill, again));
}
