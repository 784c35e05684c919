//! The arena: whole chunks mapped, reused, given back and populated again; stale bytes of
//! reused pages.

use super::*;

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
