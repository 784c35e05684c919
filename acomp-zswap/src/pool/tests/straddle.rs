//! Objects straddling two backing pages: one fragment where the pages are neighbours in one
//! chunk, two where they are apart or across a chunk's end; zspages taking runs of
//! neighbouring pages.

use super::*;

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
    let class = pool.classes[h.class()].state.lock();
    let nr = pool.classes[h.class()].info.pages_per_zspage;
    (0..nr).map(|i| class.page(h.zspage, i).0).collect()
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
        assert_eq!(pool.second_page(h).unwrap().0, h.first.0 + 1, "object {i}");
        // The handle names a second page in its first's chunk; one in the next chunk is
        // found in the zspage's row.
        assert_eq!(h.second() == Second::OtherChunk, across, "object {i}");
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
                && h.first.0 as usize / CHUNK_PAGES
                    != pool.second_page(h).unwrap().0 as usize / CHUNK_PAGES
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
