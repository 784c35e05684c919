//! `Zswap::store_batch`: each page's outcome its own, the result that of storing the pages one
//! after another.

mod common;

use acomp::Acomp;
use acomp_zswap::{EntryInfo, PAGE_SIZE, Page, STORE_BATCH, StoreKind, Zswap};
use common::{check, mix, page};

fn tier(alg: &str) -> Zswap {
    Zswap::builder(Acomp::new(alg).unwrap()).build().unwrap()
}

fn noise(seed: u64) -> Page {
    let mut p = [0u8; PAGE_SIZE];
    let mut s = seed;
    for w in p.chunks_exact_mut(8) {
        s = mix(s);
        w.copy_from_slice(&s.to_le_bytes());
    }
    p
}

#[test]
fn a_duplicate_offset_in_one_batch_keeps_the_last_page() {
    let z = tier("lz4");
    let (a, b, c) = (page(5, 1), page(6, 2), page(5, 3));
    let kinds = z.store_batch(&[(5, &a), (6, &b), (5, &c)]);
    assert!(kinds.iter().all(|k| matches!(k, Ok(StoreKind::Compressed))));
    let mut back = [0u8; PAGE_SIZE];
    z.load(5, &mut back).unwrap();
    assert_eq!(check(5, &back), 3, "the last page at offset 5");
    z.load(6, &mut back).unwrap();
    assert_eq!(check(6, &back), 2);
    let s = z.stats();
    assert_eq!(s.stored_pages, 2);
    assert_eq!(
        z.pool_stats().objects,
        2,
        "the first page's object was freed"
    );
    assert_eq!(z.lru_len(), 2);
}

#[test]
fn each_page_of_a_batch_is_counted_as_its_kind() {
    let z = tier("lz4");
    let mut word = [0u8; PAGE_SIZE];
    word.chunks_exact_mut(8)
        .for_each(|w| w.copy_from_slice(&0x0123_4567_89ab_cdef_u64.to_ne_bytes()));
    let (rand, text) = (noise(9), page(3, 4));
    let kinds = z.store_batch(&[(1, &rand), (2, &word), (3, &text)]);
    let kinds: Vec<_> = kinds.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        kinds,
        [
            StoreKind::Incompressible,
            StoreKind::SameFilled,
            StoreKind::Compressed
        ]
    );
    let s = z.stats();
    assert_eq!(
        (
            s.stored_pages,
            s.same_filled_pages,
            s.stored_incompressible_pages
        ),
        (3, 1, 1)
    );
    let Some(EntryInfo::Compressed { length }) = z.entry(3) else {
        panic!("offset 3 is compressed: {:?}", z.entry(3));
    };
    assert_eq!(s.stored_bytes, (PAGE_SIZE + length) as u64);
    assert_eq!(
        z.entry(2),
        Some(EntryInfo::SameFilledWord(0x0123_4567_89ab_cdef))
    );
    assert_eq!(z.entry(1), Some(EntryInfo::Incompressible));
    let mut back = [0u8; PAGE_SIZE];
    for (o, p) in [(1, &rand), (2, &word), (3, &text)] {
        z.load(o, &mut back).unwrap();
        assert!(back == *p, "offset {o}");
    }
}

#[test]
fn a_batch_leaves_what_stores_one_by_one_leave() {
    for alg in ["lz4", "zstd"] {
        let (batched, alone) = (tier(alg), tier(alg));
        // Three batches longer than one acomp batch, over 40 offsets of every shard: most
        // offsets come back, some inside one batch; every kind of page.
        let mut s = 17u64;
        for round in 0..3u64 {
            let pages: Vec<(u64, Page)> = (0..STORE_BATCH as u64 + 9)
                .map(|i| {
                    s = mix(s);
                    let o = s % 40 * 61;
                    let id = round * 1000 + i;
                    let p = match s % 7 {
                        0 => noise(id),
                        1 => [(s >> 8) as u8; PAGE_SIZE],
                        _ => page(o, id),
                    };
                    (o, p)
                })
                .collect();
            let refs: Vec<(u64, &Page)> = pages.iter().map(|(o, p)| (*o, p)).collect();
            let got = batched.store_batch(&refs);
            for ((o, p), k) in pages.iter().zip(got) {
                assert_eq!(k.unwrap(), alone.store(*o, p).unwrap(), "{alg}: offset {o}");
            }
        }
        let (a, b) = (batched.stats(), alone.stats());
        assert_eq!(a, b, "{alg}");
        let (mut x, mut y) = ([0u8; PAGE_SIZE], [0u8; PAGE_SIZE]);
        for o in (0..40).map(|o| o * 61) {
            let (ra, rb) = (batched.load(o, &mut x), alone.load(o, &mut y));
            assert_eq!(ra.is_ok(), rb.is_ok(), "{alg}: offset {o}");
            assert!(x == y, "{alg}: offset {o}");
        }
        assert_eq!(batched.lru_len(), alone.lru_len(), "{alg}");
    }
}
