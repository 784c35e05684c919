//! Same-filled pages: a page that repeats one 8-byte word is kept as that word (zswap's
//! notion), a page of one byte as that byte, and each loads back whole.

use acomp::Acomp;
use acomp_zswap::{EntryInfo, LoadKind, PAGE_SIZE, Page, StoreKind, Zswap, same_filled};

fn repeating(word: u64) -> Page {
    let mut p = [0; PAGE_SIZE];
    p.chunks_exact_mut(8)
        .for_each(|w| w.copy_from_slice(&word.to_ne_bytes()));
    p
}

#[test]
fn a_page_repeating_one_word_is_kept_as_that_word() {
    let z = Zswap::builder(Acomp::new("lz4").unwrap()).build().unwrap();
    let words = [
        0x0123_4567_89ab_cdef,
        0xff00_ff00_ff00_ff00,
        1,
        0x4242_4242_4242_4242,
    ];
    for (offset, &w) in words.iter().enumerate() {
        let o = offset as u64;
        assert_eq!(z.store(o, &repeating(w)).unwrap(), StoreKind::SameFilled);
        let want = if w == 0x4242_4242_4242_4242 {
            EntryInfo::SameFilled(0x42)
        } else {
            EntryInfo::SameFilledWord(w)
        };
        assert_eq!(z.entry(o), Some(want));
    }
    // One byte off, in the page's last word: compressed, not same-filled.
    let mut off = repeating(words[0]);
    off[PAGE_SIZE - 1] ^= 1;
    assert_eq!(same_filled(&off), None);
    assert_eq!(z.store(9, &off).unwrap(), StoreKind::Compressed);
    let s = z.stats();
    assert_eq!((s.stored_pages, s.same_filled_pages), (5, 4));
    assert_eq!(
        s.stored_bytes,
        z.entry(9).map_or(0, |e| match e {
            EntryInfo::Compressed { length } => length as u64,
            _ => 0,
        })
    );
    let mut back = [0u8; PAGE_SIZE];
    for (offset, &w) in words.iter().enumerate() {
        assert_eq!(z.load(offset as u64, &mut back).unwrap(), LoadKind::Filled);
        assert!(back == repeating(w), "word {w:#x}");
    }
    z.load(9, &mut back).unwrap();
    assert!(back == off);
    for o in 0..words.len() as u64 {
        z.invalidate(o);
    }
    assert_eq!(z.stats().same_filled_pages, 0);
}
