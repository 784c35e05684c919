//! Same-filled pages (zswap's `zswap_is_page_same_filled`, zram's `page_same_filled`): a page
//! that repeats one word is kept as that word, nothing in the pool.

use crate::Page;

/// Bytes compared per step: wide enough that the compiler compares them as vectors, short
/// enough that a page that is not same-filled (most pages) stops at its first step.
const STEP: usize = 64;

/// The word a page repeats, if it repeats one: its first 8 bytes as a native-endian `u64`,
/// where every 8-byte word of the page equals them, as zswap keeps a same-filled page as one
/// `unsigned long`. A page whose bytes are all equal repeats a word too: [`same_filled`] tells
/// those apart.
///
/// Compares the page 64 bytes at a time, without a branch inside a step, so that it runs as
/// vector compares; a page that is not same-filled is left at the first step that differs.
pub fn same_filled_word(page: &Page) -> Option<u64> {
    let word = u64::from_ne_bytes(page[..8].try_into().expect("8 bytes"));
    for step in page.chunks_exact(STEP) {
        let diff = step.chunks_exact(8).fold(0, |d, w| {
            d | (u64::from_ne_bytes(w.try_into().expect("8 bytes")) ^ word)
        });
        if diff != 0 {
            return None;
        }
    }
    Some(word)
}

/// The value every byte of `page` has, if they all have the same one (zram's notion; the
/// tier keeps the wider one, [`same_filled_word`]).
pub fn same_filled(page: &Page) -> Option<u8> {
    same_filled_word(page)
        .filter(|w| *w == u64::from_ne_bytes([page[0]; 8]))
        .map(|_| page[0])
}

/// Fills `page` with `word`, the inverse of [`same_filled_word`].
pub(crate) fn fill_word(page: &mut Page, word: u64) {
    let bytes = word.to_ne_bytes();
    if bytes == [bytes[0]; 8] {
        page.fill(bytes[0]);
    } else {
        page.chunks_exact_mut(8)
            .for_each(|w| w.copy_from_slice(&bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PAGE_SIZE;

    fn repeating(word: u64) -> Page {
        let mut p = [0; PAGE_SIZE];
        fill_word(&mut p, word);
        p
    }

    #[test]
    fn words_and_bytes() {
        let w = 0x0123_4567_89ab_cdef;
        let p = repeating(w);
        assert_eq!(same_filled_word(&p), Some(w));
        assert_eq!(same_filled(&p), None);
        let z = repeating(0x5a5a_5a5a_5a5a_5a5a);
        assert_eq!(same_filled_word(&z), Some(0x5a5a_5a5a_5a5a_5a5a));
        assert_eq!(same_filled(&z), Some(0x5a));
        assert_eq!(same_filled(&[0; PAGE_SIZE]), Some(0));
    }

    #[test]
    fn one_byte_off_anywhere_is_not_same_filled() {
        for word in [0, 0x0123_4567_89ab_cdef, u64::MAX] {
            for at in 0..PAGE_SIZE {
                let mut p = repeating(word);
                p[at] ^= 0x10;
                assert_eq!(same_filled_word(&p), None, "word {word:#x}, byte {at}");
                assert_eq!(same_filled(&p), None, "word {word:#x}, byte {at}");
            }
        }
    }
}
