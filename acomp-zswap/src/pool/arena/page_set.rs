//! A set of a chunk's pages as a bitmap (`ArenaState`'s free pages of each chunk): taken
//! lowest or highest first, or as a run of pages in a row.

use super::CHUNK_PAGES;

/// A set of a chunk's pages, a bit each: which pages are in it, taken lowest first or as a
/// run of pages in a row.
#[derive(Default)]
pub(super) struct PageSet {
    bits: [u64; CHUNK_PAGES / 64],
    len: u16,
}

impl PageSet {
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    pub(super) fn contains(&self, index: u16) -> bool {
        self.bits[index as usize / 64] & (1 << (index % 64)) != 0
    }

    pub(super) fn insert(&mut self, index: u16) {
        debug_assert!(!self.contains(index));
        self.bits[index as usize / 64] |= 1 << (index % 64);
        self.len += 1;
    }

    /// Every page of the chunk.
    pub(super) fn fill(&mut self) {
        self.bits = [u64::MAX; CHUNK_PAGES / 64];
        self.len = CHUNK_PAGES as u16;
    }

    pub(super) fn clear(&mut self) {
        *self = PageSet::default();
    }

    /// Takes the lowest page out.
    pub(super) fn pop_lowest(&mut self) -> Option<u16> {
        let (w, bits) = self.bits.iter().enumerate().find(|(_, b)| **b != 0)?;
        let index = (w * 64) as u16 + bits.trailing_zeros() as u16;
        self.bits[w] &= bits - 1;
        self.len -= 1;
        Some(index)
    }

    /// Takes the highest page out.
    pub(super) fn pop_highest(&mut self) -> Option<u16> {
        let (w, bits) = self.bits.iter().enumerate().rfind(|(_, b)| **b != 0)?;
        let bit = 63 - bits.leading_zeros() as u16;
        self.bits[w] &= !(1 << bit);
        self.len -= 1;
        Some((w * 64) as u16 + bit)
    }

    /// The lowest first page of `n` (1..=64) pages in a row, all in the set.
    pub(super) fn find_run(&self, n: usize) -> Option<u16> {
        debug_assert!((1..=64).contains(&n));
        (0..self.bits.len()).find_map(|w| {
            // This word and the next: a run may start here and end in the next.
            let next = self.bits.get(w + 1).copied().unwrap_or(0);
            let window = (next as u128) << 64 | self.bits[w] as u128;
            let starts = (1..n).fold(window, |m, k| m & (window >> k)) as u64;
            (starts != 0).then(|| (w * 64) as u16 + starts.trailing_zeros() as u16)
        })
    }

    /// Takes pages `first..first + n` out, all in the set.
    pub(super) fn remove_run(&mut self, first: u16, n: usize) {
        for index in first..first + n as u16 {
            debug_assert!(self.contains(index));
            self.bits[index as usize / 64] &= !(1 << (index % 64));
        }
        self.len -= n as u16;
    }
}

#[cfg(test)]
mod tests {
    use super::{CHUNK_PAGES, PageSet};

    fn set(pages: &[u16]) -> PageSet {
        let mut s = PageSet::default();
        pages.iter().for_each(|&p| s.insert(p));
        s
    }

    #[test]
    fn page_sets_take_lowest_highest_and_runs() {
        let mut s = set(&[3, 5, 64, 200, 500, 511]);
        assert_eq!(s.len(), 6);
        assert!(s.contains(64) && !s.contains(63));
        assert_eq!((s.pop_highest(), s.pop_highest()), (Some(511), Some(500)));
        assert_eq!((s.pop_lowest(), s.pop_lowest()), (Some(3), Some(5)));
        assert_eq!((s.pop_lowest(), s.pop_highest()), (Some(64), Some(200)));
        assert_eq!((s.len(), s.pop_lowest(), s.pop_highest()), (0, None, None));
        // Runs: within a word, across two words, up to the chunk's last page, none past it.
        let s = set(&[1, 2, 10, 11, 12, 62, 63, 64, 65, 509, 510, 511]);
        assert_eq!(s.find_run(1), Some(1));
        assert_eq!(s.find_run(2), Some(1));
        assert_eq!(s.find_run(3), Some(10));
        assert_eq!(s.find_run(4), Some(62));
        assert_eq!(s.find_run(5), None);
        let s = set(&[509, 510, 511]);
        assert_eq!((s.find_run(3), s.find_run(4)), (Some(509), None));
        let mut s = PageSet::default();
        s.fill();
        assert_eq!((s.len(), s.find_run(64)), (CHUNK_PAGES, Some(0)));
        s.remove_run(0, 63);
        assert_eq!(
            (s.len(), s.find_run(64), s.pop_lowest()),
            (CHUNK_PAGES - 63, Some(63), Some(63))
        );
        s.clear();
        assert_eq!((s.len(), s.find_run(1)), (0, None));
    }
}
